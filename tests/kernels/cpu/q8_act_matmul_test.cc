// Int8-activation Q4_0/Q8_0 products (kernels/cpu/fast/q8_act_matmul.h) on random data:
//  * the kernel (VNNI on this CPU) equals the scalar reference of the same int8 math bit for bit:
//    the integer block sums are exact and both follow the canonical float order;
//  * a row's result is bit-identical whatever rows share its call and however columns are split;
//  * against float activations (the exact dot of the decoded weights with x) the error is within
//    Σ_b |d_w|·Σ_j|w_q|·d_x/2 (each activation code is off by at most half a step) plus 1e-5 of
//    Σ|x·w| for the f32 summation.
#include "kernels/cpu/fast/q8_act_matmul.h"

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "hwy/aligned_allocator.h"
#include "kernels/cpu/fast/ggml_repack.h"
#include "kernels/cpu/quant/fp4_matmul.h"
#include "kernels/numeric/fp4.h"
#include "kernels/numeric/fp8.h"
#include "kernels/numeric/half.h"

namespace tessera::kernels::cpu::fast {
namespace {

struct Shape {
  int64_t n, k;
};

std::vector<uint8_t> RandomRows(GgmlBlockType type, int64_t n, int64_t k, std::mt19937& rng) {
  const bool q4 = type == GgmlBlockType::kQ4_0;
  const int64_t bb = q4 ? 18 : 34, blocks = k / 32;
  std::vector<uint8_t> w(n * blocks * bb);
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_real_distribution<float> scale(-0.05f, 0.05f);
  for (int64_t i = 0; i < n * blocks; ++i) {
    uint8_t* b = w.data() + i * bb;
    const uint16_t h = numeric::FloatToHalf(scale(rng));
    std::memcpy(b, &h, 2);
    for (int j = 2; j < bb; ++j) b[j] = static_cast<uint8_t>(byte(rng));
  }
  return w;
}

struct Prepared {
  hwy::AlignedFreeUniquePtr<uint8_t[]> repacked;
  FastWeights fw;
};

Prepared Repack(GgmlBlockType type, const std::vector<uint8_t>& rows, int64_t n, int64_t k) {
  Prepared p;
  p.repacked = hwy::AllocateAligned<uint8_t>(n * RepackedRowStride(type, k));
  p.fw = RepackGgmlRows(type, rows.data(), n, k, p.repacked.get());
  return p;
}

std::vector<float> RunFast(const FastWeights& fw, const float* x, int64_t rows, const float* bias,
                           int64_t nb, int64_t ne, std::vector<float>* y_inout = nullptr) {
  auto scratch = hwy::AllocateAligned<uint8_t>(Q8ActScratchBytes(rows, fw.k));
  const Q8Acts a = QuantizeActsQ8Block32(fw.format, x, rows, fw.k, scratch.get());
  std::vector<float> y = y_inout ? *y_inout : std::vector<float>(rows * fw.n, -1.0f);
  Q8ActMatmul(fw, a, bias, y.data(), nb, ne);
  return y;
}

class Q8ActTest : public ::testing::TestWithParam<GgmlBlockType> {};

TEST_P(Q8ActTest, MatchesScalarReferenceBitForBit) {
  const GgmlBlockType type = GetParam();
  std::mt19937 rng(7);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  for (const Shape s : {Shape{37, 32}, Shape{19, 96}, Shape{8, 544}, Shape{33, 1056},
                        Shape{5, 2048}, Shape{3, 5632}}) {
    const auto rows_w = RandomRows(type, s.n, s.k, rng);
    const Prepared p = Repack(type, rows_w, s.n, s.k);
    for (int64_t rows : {1, 2, 3, 4, 5, 9}) {
      std::vector<float> x(rows * s.k), bias(s.n);
      for (auto& v : x) v = nd(rng);
      for (auto& v : bias) v = nd(rng);
      x[0] = 0.0f;  // a block with one zero and (for k = 32, rows = 1) nothing else special
      const std::vector<float> y = RunFast(p.fw, x.data(), rows, bias.data(), 0, s.n);
      std::vector<int8_t> q(rows * s.k);
      std::vector<float> d(rows * s.k / 32);
      for (int64_t m = 0; m < rows; ++m) {
        QuantizeRowQ8Block32(x.data() + m * s.k, s.k, q.data() + m * s.k, d.data() + m * s.k / 32);
      }
      std::vector<float> ref(rows * s.n);
      Q8ActMatmulReference(type, rows_w.data(), s.n, s.k, q.data(), d.data(), rows, bias.data(),
                           ref.data());
      for (int64_t i = 0; i < rows * s.n; ++i) {
        ASSERT_EQ(std::memcmp(&y[i], &ref[i], 4), 0)
            << Q8ActKernelName() << " n=" << s.n << " k=" << s.k << " rows=" << rows << " i=" << i
            << ": " << y[i] << " vs " << ref[i];
      }
    }
  }
}

TEST_P(Q8ActTest, BatchAndColumnSplitInvariant) {
  const GgmlBlockType type = GetParam();
  std::mt19937 rng(11);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  const int64_t n = 45, k = 1088, rows = 17;
  const auto rows_w = RandomRows(type, n, k, rng);
  const Prepared p = Repack(type, rows_w, n, k);
  std::vector<float> x(rows * k);
  for (auto& v : x) v = nd(rng);
  const std::vector<float> all = RunFast(p.fw, x.data(), rows, nullptr, 0, n);
  // Split columns at odd points.
  std::vector<float> split(rows * n, -1.0f);
  for (auto [b, e] : {std::pair<int64_t, int64_t>{0, 7}, {7, 30}, {30, 45}}) {
    split = RunFast(p.fw, x.data(), rows, nullptr, b, e, &split);
  }
  ASSERT_EQ(std::memcmp(all.data(), split.data(), all.size() * 4), 0);
  for (int64_t m = 0; m < rows; ++m) {
    const std::vector<float> one = RunFast(p.fw, x.data() + m * k, 1, nullptr, 0, n);
    ASSERT_EQ(std::memcmp(one.data(), all.data() + m * n, n * 4), 0) << "row " << m;
  }
}

TEST_P(Q8ActTest, CloseToFloatActivations) {
  const GgmlBlockType type = GetParam();
  const bool q4 = type == GgmlBlockType::kQ4_0;
  std::mt19937 rng(3);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  const int64_t n = 16, k = 2048, rows = 3, blocks = k / 32, bb = q4 ? 18 : 34;
  const auto w = RandomRows(type, n, k, rng);
  const Prepared p = Repack(type, w, n, k);
  std::vector<float> x(rows * k);
  for (auto& v : x) v = nd(rng);
  const std::vector<float> y = RunFast(p.fw, x.data(), rows, nullptr, 0, n);
  for (int64_t m = 0; m < rows; ++m) {
    std::vector<int8_t> q(k);
    std::vector<float> d(blocks);
    QuantizeRowQ8Block32(x.data() + m * k, k, q.data(), d.data());
    for (int64_t c = 0; c < n; ++c) {
      double exact = 0, bound = 0, mag = 0;
      for (int64_t b = 0; b < blocks; ++b) {
        const uint8_t* blk = w.data() + (c * blocks + b) * bb;
        uint16_t h;
        std::memcpy(&h, blk, 2);
        const double dw = numeric::HalfToFloat(h);
        double wsum = 0;
        for (int j = 0; j < 32; ++j) {
          const int wq = q4 ? ((j < 16 ? blk[2 + j] & 0xF : blk[2 + j - 16] >> 4) - 8)
                            : static_cast<int8_t>(blk[2 + j]);
          const double xv = x[m * k + b * 32 + j];
          exact += dw * wq * xv;
          mag += std::fabs(dw * wq * xv);
          wsum += std::abs(wq);
        }
        bound += std::fabs(dw) * wsum * d[b] / 2;
      }
      EXPECT_NEAR(y[m * n + c], exact, bound * 1.0001 + 1e-5 * mag) << "m=" << m << " c=" << c;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Formats, Q8ActTest,
                         ::testing::Values(GgmlBlockType::kQ4_0, GgmlBlockType::kQ8_0),
                         [](const auto& info) {
                           return info.param == GgmlBlockType::kQ4_0 ? "Q4_0" : "Q8_0";
                         });

// ---- 4-bit integer weights with per-group scales and zero points (FastFormat::kU4Groups). ----
struct U4Matrix {
  std::vector<uint8_t> pairs;
  std::vector<float> scales, zeros;
  FastWeights fw;
};

U4Matrix RandomU4(int64_t n, int64_t k, int64_t group, bool integer_zeros, std::mt19937& rng) {
  U4Matrix m;
  m.pairs.resize(n * k / 2);
  for (auto& b : m.pairs) b = static_cast<uint8_t>(rng());
  const int64_t groups = k / group;
  std::uniform_real_distribution<float> scale(0.001f, 0.05f), zero(0.0f, 15.0f);
  for (int64_t i = 0; i < n * groups; ++i) {
    m.scales.push_back(scale(rng));
    m.zeros.push_back(integer_zeros ? std::round(zero(rng)) : zero(rng));
  }
  m.fw.format = FastFormat::kU4Groups;
  m.fw.data = m.pairs.data();
  m.fw.n = n;
  m.fw.k = k;
  m.fw.row_stride = k / 2;
  m.fw.group_scales = m.scales.data();
  m.fw.group_zeros = m.zeros.data();
  m.fw.group_size = group;
  return m;
}

struct U4Case {
  int64_t n, k, group;
};

TEST(Q8ActU4Test, MatchesScalarReferenceBitForBit) {
  std::mt19937 rng(5);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  for (const U4Case c : {U4Case{37, 128, 128}, U4Case{19, 384, 128}, U4Case{8, 544, 32},
                         U4Case{33, 1024, 64}, U4Case{5, 2048, 128}, U4Case{3, 5632, 128},
                         U4Case{7, 640, 640}, U4Case{6, 96, 32}}) {
    for (bool integer_zeros : {true, false}) {
      const U4Matrix w = RandomU4(c.n, c.k, c.group, integer_zeros, rng);
      for (int64_t rows : {1, 2, 3, 4, 5, 9}) {
        std::vector<float> x(rows * c.k), bias(c.n);
        for (auto& v : x) v = nd(rng);
        for (auto& v : bias) v = nd(rng);
        const std::vector<float> y = RunFast(w.fw, x.data(), rows, bias.data(), 0, c.n);
        std::vector<int8_t> q(rows * c.k);
        std::vector<float> d(rows * c.k / 32);
        for (int64_t m = 0; m < rows; ++m) {
          QuantizeRowQ8Block32(x.data() + m * c.k, c.k, q.data() + m * c.k, d.data() + m * c.k / 32);
        }
        std::vector<float> ref(rows * c.n);
        Q8ActMatmulU4Reference(w.pairs.data(), w.scales.data(), w.zeros.data(), c.group, c.n, c.k,
                               q.data(), d.data(), rows, bias.data(), ref.data());
        for (int64_t i = 0; i < rows * c.n; ++i) {
          ASSERT_EQ(std::memcmp(&y[i], &ref[i], 4), 0)
              << Q8ActKernelName() << " n=" << c.n << " k=" << c.k << " g=" << c.group
              << " rows=" << rows << " i=" << i << ": " << y[i] << " vs " << ref[i];
        }
      }
    }
  }
}

TEST(Q8ActU4Test, BatchAndColumnSplitInvariant) {
  std::mt19937 rng(13);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  const int64_t n = 45, k = 1152, rows = 17;
  const U4Matrix w = RandomU4(n, k, 128, true, rng);
  std::vector<float> x(rows * k);
  for (auto& v : x) v = nd(rng);
  const std::vector<float> all = RunFast(w.fw, x.data(), rows, nullptr, 0, n);
  std::vector<float> split(rows * n, -1.0f);
  for (auto [b, e] : {std::pair<int64_t, int64_t>{0, 7}, {7, 30}, {30, 45}}) {
    split = RunFast(w.fw, x.data(), rows, nullptr, b, e, &split);
  }
  ASSERT_EQ(std::memcmp(all.data(), split.data(), all.size() * 4), 0);
  for (int64_t m = 0; m < rows; ++m) {
    const std::vector<float> one = RunFast(w.fw, x.data() + m * k, 1, nullptr, 0, n);
    ASSERT_EQ(std::memcmp(one.data(), all.data() + m * n, n * 4), 0) << "row " << m;
  }
}

// Against float activations and the reference dequantization (u − z)·s: each activation code is
// off by at most half a step, so the error is within Σ_b d_b/2 · Σ_j |(u − z)·s| plus the f32
// summation (1e-5 of Σ|x·w|).
TEST(Q8ActU4Test, CloseToFloatActivations) {
  std::mt19937 rng(17);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  const int64_t n = 16, k = 2048, rows = 3, blocks = k / 32, group = 128;
  const U4Matrix w = RandomU4(n, k, group, false, rng);
  std::vector<float> x(rows * k);
  for (auto& v : x) v = nd(rng);
  const std::vector<float> y = RunFast(w.fw, x.data(), rows, nullptr, 0, n);
  for (int64_t m = 0; m < rows; ++m) {
    std::vector<int8_t> q(k);
    std::vector<float> d(blocks);
    QuantizeRowQ8Block32(x.data() + m * k, k, q.data(), d.data());
    for (int64_t c = 0; c < n; ++c) {
      double exact = 0, bound = 0, mag = 0;
      for (int64_t b = 0; b < blocks; ++b) {
        double wsum = 0;
        for (int j = 0; j < 32; ++j) {
          const int64_t i = b * 32 + j, g = c * (k / group) + i / group;
          const uint8_t byte = w.pairs[c * k / 2 + i / 2];
          const int u = (i % 2 == 0) ? (byte & 0xF) : (byte >> 4);
          const double wv = (static_cast<float>(u) - w.zeros[g]) * w.scales[g];
          const double xv = x[m * k + i];
          exact += wv * xv;
          mag += std::fabs(wv * xv);
          wsum += std::fabs(wv);
        }
        bound += wsum * d[b] / 2;
      }
      EXPECT_NEAR(y[m * n + c], exact, bound * 1.0001 + 1e-5 * mag) << "m=" << m << " c=" << c;
    }
  }
}

// ---- NVFP4 weights (FastFormat::kNvfp4Pairs): W4A16 with int8 activations, and W4A4. ----
struct Nvfp4Matrix {
  std::vector<uint8_t> pairs, sf;
  FastWeights fw;
};

Nvfp4Matrix RandomNvfp4(int64_t n, int64_t k, float alpha, std::mt19937& rng) {
  Nvfp4Matrix m;
  m.pairs.resize(n * k / 2);
  for (auto& b : m.pairs) b = static_cast<uint8_t>(rng());
  m.sf.resize(n * k / 16);
  for (auto& b : m.sf) b = static_cast<uint8_t>(rng() % 0x7F);  // every UE4M3 code but NaN
  m.sf[0] = 0x01;                                                // a subnormal scale
  m.fw.format = FastFormat::kNvfp4Pairs;
  m.fw.data = m.pairs.data();
  m.fw.n = n;
  m.fw.k = k;
  m.fw.row_stride = k / 2;
  m.fw.block_scales = m.sf.data();
  m.fw.alpha = alpha;
  return m;
}

// W4A4 activations from QuantizeNvfp4-like random codes and scales.
struct Nvfp4ActsData {
  std::vector<uint8_t> pairs, sf;
  std::vector<float> alpha;
};

Nvfp4ActsData RandomNvfp4Acts(int64_t rows, int64_t k, std::mt19937& rng) {
  Nvfp4ActsData a;
  a.pairs.resize(rows * k / 2);
  for (auto& b : a.pairs) b = static_cast<uint8_t>(rng());
  a.sf.resize(rows * k / 16);
  for (auto& b : a.sf) b = static_cast<uint8_t>(0x20 + rng() % 0x40);
  std::uniform_real_distribution<float> al(1e-4f, 1e-2f);
  for (int64_t r = 0; r < rows; ++r) a.alpha.push_back(al(rng));
  return a;
}

std::vector<float> RunNvfp4W4A4(const FastWeights& fw, const Nvfp4ActsData& d, int64_t row0,
                                int64_t rows, const float* bias, int64_t nb, int64_t ne,
                                bool portable, std::vector<float>* y_inout = nullptr) {
  auto scratch = hwy::AllocateAligned<uint8_t>(Q8ActScratchBytes(rows, fw.k));
  const Q8Acts a = PackNvfp4Acts(d.pairs.data() + row0 * fw.k / 2, d.sf.data() + row0 * fw.k / 16,
                                 rows, fw.k, d.alpha.data() + row0, 1, scratch.get());
  std::vector<float> y = y_inout ? *y_inout : std::vector<float>(rows * fw.n, -1.0f);
  if (portable) {
    Q8ActMatmulPortable(fw, a, bias, y.data(), nb, ne);
  } else {
    Q8ActMatmul(fw, a, bias, y.data(), nb, ne);
  }
  return y;
}

TEST(Q8ActNvfp4Test, W4A16MatchesPortableBitForBit) {
  std::mt19937 rng(23);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  for (const Shape s : {Shape{37, 32}, Shape{19, 96}, Shape{8, 544}, Shape{5, 2048}, Shape{3, 5632}}) {
    const Nvfp4Matrix w = RandomNvfp4(s.n, s.k, 3.7e-3f, rng);
    for (int64_t rows : {1, 2, 3, 4, 5, 9}) {
      std::vector<float> x(rows * s.k), bias(s.n);
      for (auto& v : x) v = nd(rng);
      for (auto& v : bias) v = nd(rng);
      auto scratch = hwy::AllocateAligned<uint8_t>(Q8ActScratchBytes(rows, s.k));
      const Q8Acts a = QuantizeActsQ8Block32(FastFormat::kNvfp4Pairs, x.data(), rows, s.k, scratch.get());
      std::vector<float> y(rows * s.n), ref(rows * s.n);
      Q8ActMatmul(w.fw, a, bias.data(), y.data(), 0, s.n);
      Q8ActMatmulPortable(w.fw, a, bias.data(), ref.data(), 0, s.n);
      for (int64_t i = 0; i < rows * s.n; ++i) {
        ASSERT_EQ(std::memcmp(&y[i], &ref[i], 4), 0) << Q8ActKernelName() << " n=" << s.n
                                                     << " k=" << s.k << " rows=" << rows << " i=" << i;
      }
    }
  }
}

// W4A16 against float activations and the reference dequantization (e2m1 · sf) · alpha.
TEST(Q8ActNvfp4Test, W4A16CloseToFloatActivations) {
  std::mt19937 rng(29);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  const int64_t n = 16, k = 2048, rows = 3, blocks = k / 32;
  const Nvfp4Matrix w = RandomNvfp4(n, k, 3.7e-3f, rng);
  std::vector<float> x(rows * k);
  for (auto& v : x) v = nd(rng);
  auto scratch = hwy::AllocateAligned<uint8_t>(Q8ActScratchBytes(rows, k));
  const Q8Acts a = QuantizeActsQ8Block32(FastFormat::kNvfp4Pairs, x.data(), rows, k, scratch.get());
  std::vector<float> y(rows * n);
  Q8ActMatmul(w.fw, a, nullptr, y.data(), 0, n);
  for (int64_t m = 0; m < rows; ++m) {
    std::vector<int8_t> q(k);
    std::vector<float> d(blocks);
    QuantizeRowQ8Block32(x.data() + m * k, k, q.data(), d.data());
    for (int64_t c = 0; c < n; ++c) {
      double exact = 0, bound = 0, mag = 0;
      for (int64_t i = 0; i < k; ++i) {
        const float e2m1 = numeric::DecodeE2m1At(w.pairs.data() + c * k / 2, i);
        const double wv = (e2m1 * numeric::DecodeUe4m3(w.sf[c * k / 16 + i / 16])) * w.fw.alpha;
        exact += wv * x[m * k + i];
        mag += std::fabs(wv * x[m * k + i]);
        bound += std::fabs(wv) * d[i / 32] / 2;
      }
      EXPECT_NEAR(y[m * n + c], exact, bound * 1.0001 + 1e-5 * mag) << "m=" << m << " c=" << c;
    }
  }
}

// W4A4: the integer path is exact per half block, so against the reference MatmulNvfp4W4A4 only
// the f32 accumulation order differs: within 2(K/16 + 16)·u·Σ|terms|.
TEST(Q8ActNvfp4Test, W4A4MatchesReferenceAndPortable) {
  std::mt19937 rng(31);
  for (const Shape s : {Shape{37, 32}, Shape{19, 96}, Shape{8, 544}, Shape{5, 2048}, Shape{3, 5632}}) {
    const Nvfp4Matrix w = RandomNvfp4(s.n, s.k, 1.0f, rng);
    const int64_t rows = 9;
    const Nvfp4ActsData d = RandomNvfp4Acts(rows, s.k, rng);
    std::vector<float> bias(s.n, 0.25f);
    const std::vector<float> y = RunNvfp4W4A4(w.fw, d, 0, rows, bias.data(), 0, s.n, false);
    const std::vector<float> portable = RunNvfp4W4A4(w.fw, d, 0, rows, bias.data(), 0, s.n, true);
    for (size_t i = 0; i < y.size(); ++i) {
      ASSERT_EQ(std::memcmp(&y[i], &portable[i], 4), 0)
          << "n=" << s.n << " k=" << s.k << " i=" << i << ": " << y[i] << " vs " << portable[i];
    }
    Nvfp4Weights rw{w.pairs.data(), w.sf.data(), 1.0f};
    Nvfp4Activations ra{d.pairs.data(), d.sf.data(), d.alpha.data(), 1};
    std::vector<float> ref(rows * s.n);
    ASSERT_TRUE(MatmulNvfp4W4A4(rw, s.n, s.k, ra, rows, bias.data(), ref.data(), 0, s.n));
    for (int64_t m = 0; m < rows; ++m) {
      for (int64_t c = 0; c < s.n; ++c) {
        double mag = 0;
        for (int64_t i = 0; i < s.k; ++i) {
          mag += std::fabs(numeric::DecodeE2m1At(w.pairs.data() + c * s.k / 2, i) *
                           numeric::DecodeUe4m3(w.sf[c * s.k / 16 + i / 16]) *
                           numeric::DecodeE2m1At(d.pairs.data() + m * s.k / 2, i) *
                           numeric::DecodeUe4m3(d.sf[m * s.k / 16 + i / 16]));
        }
        const double tol = 2.0 * (s.k / 16 + 16) * std::ldexp(1.0, -24) * mag * d.alpha[m] +
                           std::ldexp(1.0, -23) * (std::fabs(ref[m * s.n + c]) + 0.25);
        ASSERT_NEAR(y[m * s.n + c], ref[m * s.n + c], tol) << "m=" << m << " c=" << c;
      }
    }
  }
}

TEST(Q8ActNvfp4Test, W4A4BatchAndColumnSplitInvariant) {
  std::mt19937 rng(37);
  const int64_t n = 45, k = 1088, rows = 17;
  const Nvfp4Matrix w = RandomNvfp4(n, k, 1.0f, rng);
  const Nvfp4ActsData d = RandomNvfp4Acts(rows, k, rng);
  const std::vector<float> all = RunNvfp4W4A4(w.fw, d, 0, rows, nullptr, 0, n, false);
  std::vector<float> split(rows * n, -1.0f);
  for (auto [b, e] : {std::pair<int64_t, int64_t>{0, 7}, {7, 30}, {30, 45}}) {
    split = RunNvfp4W4A4(w.fw, d, 0, rows, nullptr, b, e, false, &split);
  }
  ASSERT_EQ(std::memcmp(all.data(), split.data(), all.size() * 4), 0);
  for (int64_t m = 0; m < rows; ++m) {
    const std::vector<float> one = RunNvfp4W4A4(w.fw, d, m, 1, nullptr, 0, n, false);
    ASSERT_EQ(std::memcmp(one.data(), all.data() + m * n, n * 4), 0) << "row " << m;
  }
}

}  // namespace
}  // namespace tessera::kernels::cpu::fast
