// Q4_0 and per-group INT4 in 16-column tiles with int8 activations (kernels/cpu/fast/int4_x16.h)
// on random data:
//  * the kernel (VNNI here) equals the portable loop of the canonical order bit for bit, for
//    column counts that are not multiples of 16 and every row count up to two row tiles;
//  * each row's result is the same alone or with other rows, and however columns are split;
//  * against float activations and ggml's dequantization the error is within the activation
//    rounding bound Σ_b |d_w|·Σ_j|w_q|·d_x/2 plus 1e-5 of Σ|x·w|.
#include "kernels/cpu/fast/int4_x16.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <tuple>
#include <vector>

#include "gtest/gtest.h"
#include "hwy/aligned_allocator.h"
#include "kernels/cpu/fast/q8_act_matmul.h"
#include "kernels/cpu/quant/activation_quant.h"
#include "kernels/cpu/quant/fp4_matmul.h"
#include "kernels/numeric/fp4.h"
#include "kernels/numeric/fp8.h"
#include "kernels/numeric/half.h"
#include "tests/kernels/cpu/int4_x16_test_util.h"

namespace tessera::kernels::cpu::fast {
namespace {

struct Matrix {
  std::vector<uint8_t> ggml;
  hwy::AlignedFreeUniquePtr<uint8_t[]> tiles;
  FastWeights fw;
};

Matrix Random(int64_t n, int64_t k, std::mt19937& rng) {
  Matrix m;
  const int64_t blocks = k / 32;
  m.ggml.resize(n * blocks * 18);
  std::uniform_real_distribution<float> scale(-0.05f, 0.05f);
  for (int64_t i = 0; i < n * blocks; ++i) {
    uint8_t* b = m.ggml.data() + i * 18;
    const uint16_t h = numeric::FloatToHalf(scale(rng));
    std::memcpy(b, &h, 2);
    for (int j = 2; j < 18; ++j) b[j] = static_cast<uint8_t>(rng());
  }
  m.tiles = hwy::AllocateAligned<uint8_t>(Q4_0x16Bytes(n, k));
  m.fw = RepackQ4_0x16(m.ggml.data(), n, k, m.tiles.get());
  return m;
}

using testing::Acts;
using testing::Quantize;

// The (vectorized) activation quantizer equals the scalar QuantizeRowQ8Block32 bit for bit,
// including zero blocks, NaN and infinite inputs and values on rounding ties.
TEST(Q4_0x16Test, QuantizerMatchesScalar) {
  std::mt19937 rng(53);
  std::normal_distribution<float> nd(0.0f, 3.0f);
  const int64_t rows = 5, k = 320, blocks = k / 32;
  std::vector<float> x(rows * k);
  for (auto& v : x) v = nd(rng);
  for (int j = 0; j < 32; ++j) x[32 + j] = 0.0f;                            // an all-zero block
  x[70] = std::nanf("");                                                    // NaN inside a block
  x[100] = INFINITY;                                                        // infinite amax
  for (int j = 0; j < 32; ++j) x[128 + j] = static_cast<float>(j) - 15.5f;  // .5 ties
  x[160] = 127.0f;
  x[161] = -63.5f;
  x[200] = -INFINITY;                                       // and negative
  for (int j = 0; j < 32; ++j) x[256 + j] = std::nanf("");  // an all-NaN block
  std::vector<Int4x16Kernel> kernels = testing::FastKernels();
  kernels.push_back(Int4x16Kernel::kPortable);
  for (Int4x16Kernel kernel : kernels) {
    SCOPED_TRACE(Int4x16KernelName(kernel));
    Acts a;
    a.q.resize(rows * k);
    a.d.resize(rows * blocks);
    a.s.resize(rows * blocks);
    a.s2.resize(rows * blocks);
    // Once with whole-block sums, once with half-block sums: the same codes and scales.
    std::vector<int8_t> q_whole(rows * k);
    std::vector<float> d_whole(rows * blocks), s_whole(rows * blocks);
    QuantizeActsInt4x16On(kernel, x.data(), k, 0, rows, q_whole.data(), d_whole.data(),
                          s_whole.data());
    QuantizeActsInt4x16On(kernel, x.data(), k, 0, rows, a.q.data(), a.d.data(), a.s.data(),
                          a.s2.data());
    ASSERT_EQ(q_whole, a.q);
    ASSERT_EQ(std::memcmp(d_whole.data(), a.d.data(), d_whole.size() * 4), 0);
    for (int64_t r = 0; r < rows; ++r) {
      std::vector<int8_t> q(k);
      std::vector<float> d(blocks);
      QuantizeRowQ8Block32(x.data() + r * k, k, q.data(), d.data());
      for (int64_t i = 0; i < k; ++i) ASSERT_EQ(q[i], a.q[r * k + i]) << "row " << r << " i " << i;
      for (int64_t b = 0; b < blocks; ++b) {
        ASSERT_EQ(std::memcmp(&d[b], &a.d[r * blocks + b], 4), 0) << "row " << r << " block " << b;
        int lo = 0, hi = 0;
        for (int j = 0; j < 16; ++j) lo += q[b * 32 + j];
        for (int j = 16; j < 32; ++j) hi += q[b * 32 + j];
        ASSERT_EQ(static_cast<float>(lo + hi), s_whole[r * blocks + b]);
        ASSERT_EQ(static_cast<float>(lo), a.s[r * blocks + b]);
        ASSERT_EQ(static_cast<float>(hi), a.s2[r * blocks + b]);
      }
    }
  }
}

TEST(Q4_0x16Test, MatchesPortableBitForBit) {
  std::mt19937 rng(41);
  for (const auto& [n, k] : {std::pair<int64_t, int64_t>{37, 32},
                             {19, 96},
                             {16, 544},
                             {33, 1056},
                             {5, 2048},
                             {3, 5632}}) {
    const Matrix w = Random(n, k, rng);
    testing::ExpectMatchesPortable(w.fw, rng, {1, 2, 3, 4, 5, 8, 9, 16, 17});
  }
}

TEST(Q4_0x16Test, BatchAndColumnSplitInvariant) {
  std::mt19937 rng(43);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  const int64_t n = 45, k = 1088, rows = 17;
  const Matrix w = Random(n, k, rng);
  std::vector<float> x(rows * k);
  for (auto& v : x) v = nd(rng);
  testing::ExpectBatchAndColumnSplitInvariant(w.fw, x, rows);
}

TEST(Q4_0x16Test, CloseToFloatActivations) {
  std::mt19937 rng(47);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  // 65 blocks: the tile's last record holds one block (int4_x16_layout.h).
  const int64_t n = 21, k = 2080, rows = 3, blocks = k / 32;
  const Matrix w = Random(n, k, rng);
  std::vector<float> x(rows * k);
  for (auto& v : x) v = nd(rng);
  const Acts a = Quantize(x.data(), rows, k);
  std::vector<float> y(rows * n);
  Int4x16Matmul(w.fw, a.view, nullptr, y.data(), 0, n);
  for (int64_t m = 0; m < rows; ++m) {
    for (int64_t c = 0; c < n; ++c) {
      double exact = 0, bound = 0, mag = 0;
      for (int64_t b = 0; b < blocks; ++b) {
        const uint8_t* blk = w.ggml.data() + (c * blocks + b) * 18;
        uint16_t h;
        std::memcpy(&h, blk, 2);
        const double dw = numeric::HalfToFloat(h);
        double wsum = 0;
        for (int j = 0; j < 32; ++j) {
          const int wq = (j < 16 ? blk[2 + j] & 0xF : blk[2 + j - 16] >> 4) - 8;
          const double xv = x[m * k + b * 32 + j];
          exact += dw * wq * xv;
          mag += std::fabs(dw * wq * xv);
          wsum += std::abs(wq);
        }
        bound += std::fabs(dw) * wsum * a.d[m * blocks + b] / 2;
      }
      EXPECT_NEAR(y[m * n + c], exact, bound * 1.0001 + 1e-5 * mag) << "m=" << m << " c=" << c;
    }
  }
}

// ---- Per-group INT4 (kU4x16, from kU4Groups nibble pairs). ----
struct U4Matrix {
  std::vector<uint8_t> pairs;
  std::vector<float> scales, zeros;
  hwy::AlignedFreeUniquePtr<uint8_t[]> tiles;
  FastWeights fw;
};

U4Matrix RandomU4(int64_t n, int64_t k, int64_t group, std::mt19937& rng) {
  U4Matrix m;
  m.pairs.resize(n * k / 2);
  for (auto& b : m.pairs) b = static_cast<uint8_t>(rng());
  std::uniform_real_distribution<float> scale(0.001f, 0.05f), zero(0.0f, 15.0f);
  for (int64_t i = 0; i < n * (k / group); ++i) {
    m.scales.push_back(scale(rng));
    m.zeros.push_back(i % 3 == 0 ? 8.0f : zero(rng));  // integer and fractional zero points
  }
  FastWeights src;
  src.format = FastFormat::kU4Groups;
  src.data = m.pairs.data();
  src.n = n;
  src.k = k;
  src.row_stride = k / 2;
  src.group_scales = m.scales.data();
  src.group_zeros = m.zeros.data();
  src.group_size = group;
  m.tiles = hwy::AllocateAligned<uint8_t>(U4x16Bytes(n, k, group));
  m.fw = RepackU4x16(src, m.tiles.get());
  return m;
}

TEST(U4x16Test, MatchesPortableBitForBit) {
  std::mt19937 rng(59);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  for (const auto& [n, k, g] : {std::tuple<int64_t, int64_t, int64_t>{37, 128, 128},
                                {19, 384, 128},
                                {8, 544, 32},
                                {33, 1024, 64},
                                {5, 2048, 128},
                                {7, 640, 640}}) {
    const U4Matrix w = RandomU4(n, k, g, rng);
    for (int64_t rows : {1, 2, 5, 8, 9, 17}) {
      std::vector<float> x(rows * k), bias(n);
      for (auto& v : x) v = nd(rng);
      for (auto& v : bias) v = nd(rng);
      const Acts a = Quantize(x.data(), rows, k);
      testing::ExpectKernelsMatchPortable(w.fw, a.view, bias.data(), "g=" + std::to_string(g));
      ASSERT_FALSE(HasFatalFailure());
    }
  }
}

TEST(U4x16Test, BatchAndColumnSplitInvariant) {
  std::mt19937 rng(61);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  const int64_t n = 45, k = 1152, rows = 17;
  const U4Matrix w = RandomU4(n, k, 128, rng);
  std::vector<float> x(rows * k);
  for (auto& v : x) v = nd(rng);
  testing::ExpectBatchAndColumnSplitInvariant(w.fw, x, rows);
}

// ---- GGUF Q4_K as kQ4_Kx16 (RepackQ4_Kx16). Random blocks with f16 d / dmin, every 6-bit
// scale and min pattern, and sub-blocks whose d·sc is zero (sc = 0, or d = 0 in a whole block)
// with and without a min: the tiles must compute Σ w·x̂ for the reference dequantization w
// (DequantizeGgmlBlocks) and the int8-rounded activations x̂ = q·d, within f32 summation; the
// kernel equals the portable loop bit for bit and is batch and column-split invariant. ----
TEST(Q4_Kx16Test, MatchesDequantizedWeightsPortableAndIsInvariant) {
  std::mt19937 rng(71);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::uniform_real_distribution<float> scale(0.0005f, 0.02f);
  for (const auto& [n, k] :
       {std::pair<int64_t, int64_t>{37, 256}, {16, 1024}, {33, 1280}, {5, 2048}}) {
    const int64_t sb = k / 256;
    std::vector<uint8_t> rows(n * sb * 144);
    for (int64_t i = 0; i < n * sb; ++i) {
      uint8_t* b = rows.data() + i * 144;
      for (int j = 4; j < 144; ++j) b[j] = static_cast<uint8_t>(rng());
      const uint16_t d = numeric::FloatToHalf(i % 11 == 3 ? 0.0f : scale(rng));  // d = 0 blocks
      const uint16_t dmin = numeric::FloatToHalf(i % 7 == 2 ? 0.0f : scale(rng));
      std::memcpy(b, &d, 2);
      std::memcpy(b + 2, &dmin, 2);
      if (i % 5 == 1) b[4] &= 0xC0;  // sub-block 0: sc = 0 (its min stays)
    }
    auto tiles = hwy::AllocateAligned<uint8_t>(Q4_Kx16Bytes(n, k));
    const FastWeights fw = RepackQ4_Kx16(rows.data(), n, k, tiles.get());
    ASSERT_EQ(fw.format, FastFormat::kQ4_Kx16);
    ASSERT_EQ(fw.row_stride, sb * (320 + 8 * 256));  // 4.625 bits per weight
    testing::ExpectMatchesPortable(fw, rng, {1, 3, 8, 9});
    if (n >= 31) {
      std::vector<float> xs(9 * k);
      for (auto& v : xs) v = nd(rng);
      testing::ExpectBatchAndColumnSplitInvariant(fw, xs, 9);
    }
    std::vector<float> wref(n * k);
    DequantizeGgmlBlocks(GgmlBlockType::kQ4_K, rows.data(), n * sb, wref.data());
    for (int64_t rcount : {1, 7}) {
      std::vector<float> x(rcount * k);
      for (auto& v : x) v = nd(rng);
      const Acts a = Quantize(x.data(), rcount, k);
      std::vector<float> y(rcount * n);
      Int4x16Matmul(fw, a.view, nullptr, y.data(), 0, n);
      for (int64_t m = 0; m < rcount; ++m) {
        for (int64_t c = 0; c < n; ++c) {
          double exact = 0, mag = 0;
          for (int64_t i = 0; i < k; ++i) {
            const double xv = static_cast<double>(a.q[m * k + i]) * a.d[m * k / 32 + i / 32];
            exact += static_cast<double>(wref[c * k + i]) * xv;
            mag += std::fabs(static_cast<double>(wref[c * k + i]) * xv) + 16 * std::fabs(xv) * 0.02;
          }
          ASSERT_NEAR(y[m * n + c], exact, (k + 16) * std::ldexp(1.0, -24) * 4 * mag)
              << "n=" << n << " k=" << k << " m=" << m << " c=" << c;
        }
      }
    }
  }
}

// Against float activations and the reference dequantization (u − z)·s.
TEST(U4x16Test, CloseToFloatActivations) {
  std::mt19937 rng(67);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  const int64_t n = 21, k = 2048, rows = 3, blocks = k / 32, group = 128;
  const U4Matrix w = RandomU4(n, k, group, rng);
  std::vector<float> x(rows * k);
  for (auto& v : x) v = nd(rng);
  const Acts a = Quantize(x.data(), rows, k);
  std::vector<float> y(rows * n);
  Int4x16Matmul(w.fw, a.view, nullptr, y.data(), 0, n);
  for (int64_t m = 0; m < rows; ++m) {
    for (int64_t c = 0; c < n; ++c) {
      double exact = 0, bound = 0, mag = 0;
      for (int64_t i = 0; i < k; ++i) {
        const int64_t g = c * (k / group) + i / group;
        const uint8_t byte = w.pairs[c * k / 2 + i / 2];
        const int u = (i % 2 == 0) ? (byte & 0xF) : (byte >> 4);
        const double wv = (static_cast<float>(u) - w.zeros[g]) * w.scales[g];
        exact += wv * x[m * k + i];
        mag += std::fabs(wv * x[m * k + i]);
        bound += std::fabs(wv) * a.d[m * blocks + i / 32] / 2;
      }
      EXPECT_NEAR(y[m * n + c], exact, bound * 1.0001 + 1e-5 * mag) << "m=" << m << " c=" << c;
    }
  }
}

// ---- NVFP4 (kNvfp4x16): W4A16 with int8 activations and W4A4 with NVFP4 activations. ----
struct Nvfp4Matrix {
  std::vector<uint8_t> pairs, sf;
  hwy::AlignedFreeUniquePtr<uint8_t[]> tiles;
  FastWeights fw;
};

Nvfp4Matrix RandomNvfp4(int64_t n, int64_t k, float alpha, std::mt19937& rng) {
  Nvfp4Matrix m;
  m.pairs.resize(n * k / 2);
  for (auto& b : m.pairs) b = static_cast<uint8_t>(rng());
  m.sf.resize(n * k / 16);
  for (auto& b : m.sf) b = static_cast<uint8_t>(rng() % 0x7F);  // every UE4M3 code but NaN
  m.sf[0] = 0x01;                                               // a subnormal scale
  FastWeights src;
  src.format = FastFormat::kNvfp4Pairs;
  src.data = m.pairs.data();
  src.n = n;
  src.k = k;
  src.row_stride = k / 2;
  src.block_scales = m.sf.data();
  src.alpha = alpha;
  m.tiles = hwy::AllocateAligned<uint8_t>(Nvfp4x16Bytes(n, k));
  m.fw = RepackNvfp4x16(src, m.tiles.get());
  return m;
}

struct HalfActs {
  std::vector<int8_t> q;
  std::vector<float> d, d2, s, s2, alpha;
  std::vector<uint8_t> packed, sf;
  Int4x16Acts view;
};

// W4A4 activations: random E2M1 codes and scales, per-row α.
HalfActs RandomNvfp4Acts(int64_t rows, int64_t k, std::mt19937& rng) {
  HalfActs a;
  a.packed.resize(rows * k / 2);
  for (auto& b : a.packed) b = static_cast<uint8_t>(rng());
  a.sf.resize(rows * k / 16);
  for (auto& b : a.sf) b = static_cast<uint8_t>(0x20 + rng() % 0x40);
  std::uniform_real_distribution<float> al(1e-4f, 1e-2f);
  for (int64_t r = 0; r < rows; ++r) a.alpha.push_back(al(rng));
  a.q.resize(rows * k);
  for (auto* v : {&a.d, &a.d2, &a.s, &a.s2}) v->resize(rows * k / 32);
  PackNvfp4ActsInt4x16(a.packed.data(), a.sf.data(), k, 0, rows, a.q.data(), a.d.data(),
                       a.d2.data(), a.s.data(), a.s2.data());
  a.view = {rows, a.q.data(), a.d.data(), a.s.data(), a.d2.data(), a.s2.data(), a.alpha.data(), 1};
  return a;
}

TEST(Nvfp4x16Test, W4A4MatchesPortableAndReference) {
  std::mt19937 rng(71);
  for (const auto& [n, k] :
       {std::pair<int64_t, int64_t>{37, 32}, {19, 96}, {8, 544}, {5, 2048}, {3, 5632}}) {
    const Nvfp4Matrix w = RandomNvfp4(n, k, 1.0f, rng);
    for (int64_t rows : {1, 3, 9, 17}) {
      const HalfActs a = RandomNvfp4Acts(rows, k, rng);
      std::vector<float> bias(n, 0.25f), y(rows * n, -1.0f), oracle(rows * n);
      testing::ExpectKernelsMatchPortable(w.fw, a.view, bias.data(), "W4A4");
      ASSERT_FALSE(HasFatalFailure());
      Int4x16Matmul(w.fw, a.view, bias.data(), y.data(), 0, n);
      const Nvfp4Weights rw{w.pairs.data(), w.sf.data(), 1.0f};
      const Nvfp4Activations ra{a.packed.data(), a.sf.data(), a.alpha.data(), 1};
      ASSERT_TRUE(MatmulNvfp4W4A4(rw, n, k, ra, rows, bias.data(), oracle.data(), 0, n));
      for (int64_t m = 0; m < rows; ++m) {
        for (int64_t c = 0; c < n; ++c) {
          double mag = 0;
          for (int64_t i = 0; i < k; ++i) {
            mag += std::fabs(numeric::DecodeE2m1At(w.pairs.data() + c * k / 2, i) *
                             numeric::DecodeUe4m3(w.sf[c * k / 16 + i / 16]) *
                             numeric::DecodeE2m1At(a.packed.data() + m * k / 2, i) *
                             numeric::DecodeUe4m3(a.sf[m * k / 16 + i / 16]));
          }
          const double tol = 2.0 * (k / 16 + 16) * std::ldexp(1.0, -24) * mag * a.alpha[m] +
                             std::ldexp(1.0, -23) * (std::fabs(oracle[m * n + c]) + 0.25);
          ASSERT_NEAR(y[m * n + c], oracle[m * n + c], tol) << "m=" << m << " c=" << c;
        }
      }
    }
  }
}

TEST(Nvfp4x16Test, W4A16BitExactInvariantAndCloseToFloat) {
  std::mt19937 rng(73);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  const int64_t n = 45, k = 2048, rows = 17, blocks = k / 32;
  const Nvfp4Matrix w = RandomNvfp4(n, k, 3.7e-3f, rng);
  std::vector<float> x(rows * k);
  for (auto& v : x) v = nd(rng);
  auto quantize = [&](const float* xs, int64_t r, HalfActs* a) {
    a->q.resize(r * k);
    for (auto* v : {&a->d, &a->d2, &a->s, &a->s2}) v->resize(r * blocks);
    QuantizeActsInt4x16(xs, k, 0, r, a->q.data(), a->d.data(), a->s.data(), a->s2.data());
    a->d2 = a->d;
    a->view = {r, a->q.data(), a->d.data(), a->s.data(), a->d2.data(), a->s2.data()};
  };
  HalfActs a;
  quantize(x.data(), rows, &a);
  testing::ExpectKernelsMatchPortable(w.fw, a.view, nullptr, "W4A16");
  ASSERT_FALSE(HasFatalFailure());
  std::vector<float> y(rows * n, -1.0f);
  Int4x16Matmul(w.fw, a.view, nullptr, y.data(), 0, n);
  for (int64_t m = 0; m < rows; ++m) {
    HalfActs one;
    quantize(x.data() + m * k, 1, &one);
    std::vector<float> y1(n);
    Int4x16Matmul(w.fw, one.view, nullptr, y1.data(), 0, n);
    ASSERT_EQ(std::memcmp(y1.data(), y.data() + m * n, n * 4), 0) << "row " << m;
    for (int64_t c = 0; c < n; ++c) {
      double exact = 0, bound = 0, mag = 0;
      for (int64_t i = 0; i < k; ++i) {
        const float e2m1 = numeric::DecodeE2m1At(w.pairs.data() + c * k / 2, i);
        const double wv = (e2m1 * numeric::DecodeUe4m3(w.sf[c * k / 16 + i / 16])) * 3.7e-3f;
        exact += wv * x[m * k + i];
        mag += std::fabs(wv * x[m * k + i]);
        bound += std::fabs(wv) * a.d[m * blocks + i / 32] / 2;
      }
      EXPECT_NEAR(y[m * n + c], exact, bound * 1.0001 + 1e-5 * mag) << "m=" << m << " c=" << c;
    }
  }
}

// ---- MXFP4 (kMxfp4x16): E2M1 codes under E8M0 scales, int8 activations. ----
TEST(Mxfp4x16Test, MatchesPortableInvariantAndCloseToDequantized) {
  std::mt19937 rng(79);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  for (const auto& [n, k] :
       {std::pair<int64_t, int64_t>{45, 2048}, {37, 32}, {19, 96}, {8, 160}, {3, 5632}}) {
    const int64_t blocks = k / 32, rows = 17;
    std::vector<uint8_t> pairs(n * k / 2), e8m0(n * blocks);
    for (auto& b : pairs) b = static_cast<uint8_t>(rng());
    for (auto& e : e8m0) e = static_cast<uint8_t>(112 + rng() % 20);
    e8m0[0] = 0;  // 2^-127 and 2^-126: scales whose halves are f32 subnormals
    e8m0[n * blocks - 1] = 1;
    auto tiles = hwy::AllocateAligned<uint8_t>(Mxfp4x16Bytes(n, k));
    const FastWeights fw = RepackMxfp4x16(pairs.data(), e8m0.data(), n, k, tiles.get());
    testing::ExpectMatchesPortable(fw, rng, {1, 3, 8, 9, rows});
    std::vector<float> x(rows * k);
    for (auto& v : x) v = nd(rng);
    if (n >= 31) testing::ExpectBatchAndColumnSplitInvariant(fw, x, rows);
    const Acts a = Quantize(x.data(), rows, k);
    std::vector<float> y(rows * n);
    Int4x16Matmul(fw, a.view, nullptr, y.data(), 0, n);
    // Against the dequantized product in double (activations q·d, weights e2m1·2^(e − 127)):
    // every block total is exact, so only the scale products and the f32 sum round.
    std::vector<float> w_row(k);
    for (int64_t c = 0; c < n; ++c) {
      DequantizeMxfp4WeightRow({pairs.data(), e8m0.data()}, k, c, w_row.data());
      for (int64_t m = 0; m < rows; ++m) {
        double exact = 0, mag = 0;
        for (int64_t i = 0; i < k; ++i) {
          const double xv = static_cast<double>(a.q[m * k + i]) * a.d[m * blocks + i / 32];
          exact += xv * w_row[i];
          mag += std::fabs(xv * w_row[i]);
        }
        // (+ 1e-39: the subnormal scale products of the two tiny blocks round absolutely.)
        ASSERT_NEAR(y[m * n + c], exact, (blocks + 4) * std::ldexp(1.0, -24) * mag + 1e-39)
            << "m=" << m << " c=" << c << " k=" << k;
      }
    }
  }
}

}  // namespace
}  // namespace tessera::kernels::cpu::fast

namespace tessera::kernels::cpu::fast {
namespace {

// The fused NVFP4 activation quantizer against QuantizeNvfp4 + PackNvfp4ActsInt4x16, bit for bit:
// values exactly on every E2M1 rounding midpoint and one ulp either side (g = 1, amax = 6, so
// sf = 1 and the multiplier is 1), signed zeros, NaN, inf (alone in its block: it saturates the
// scale), all-zero blocks, and random blocks under random global scales.
TEST(Nvfp4ActsFastTest, MatchesReferenceBitForBit) {
  std::mt19937 rng(91);
  std::vector<float> x;
  auto block = [&](std::vector<float> v) {
    v.resize(16, 0.0f);
    x.insert(x.end(), v.begin(), v.end());
  };
  const float mids[] = {0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f, 6.0f};
  for (float t : mids) {
    for (float sign : {1.0f, -1.0f}) {
      block({6.0f, sign * t, sign * std::nextafter(t, 0.0f), sign * std::nextafter(t, 10.0f), -0.0f,
             0.0f, sign * 6.0f, std::nanf(""), -std::nanf("")});
    }
  }
  block({std::numeric_limits<float>::infinity(), 1.0f, -3.0f});
  block({-std::numeric_limits<float>::infinity(), 1e30f, -1e-30f});
  block({});
  block({std::nanf(""), std::nanf("")});
  std::normal_distribution<float> nd(0.0f, 1.0f);
  while (x.size() % 32 != 0 || x.size() < 64 * 32) x.push_back(nd(rng) * (x.size() % 7 + 1));
  const int64_t len = static_cast<int64_t>(x.size()), blocks = len / 32;
  for (float g :
       {1.0f, 448.0f * 6.0f / 9.5f, 0.37f, 1e-3f, Nvfp4DynamicGlobalScale(x.data(), len)}) {
    std::vector<uint8_t> packed(len / 2), sf(len / 16);
    ASSERT_TRUE(QuantizeNvfp4(x.data(), 1, len, &g, 0, packed.data(), sf.data()));
    std::vector<int8_t> q_ref(len), q(len);
    std::vector<float> d_ref(blocks), d2_ref(blocks), s_ref(blocks), s2_ref(blocks);
    std::vector<float> d(blocks), d2(blocks), s(blocks), s2(blocks);
    PackNvfp4ActsInt4x16(packed.data(), sf.data(), len, 0, 1, q_ref.data(), d_ref.data(),
                         d2_ref.data(), s_ref.data(), s2_ref.data());
    QuantizeNvfp4ActsInt4x16(x.data(), len, g, q.data(), d.data(), d2.data(), s.data(), s2.data());
    for (int64_t i = 0; i < len; ++i) {
      ASSERT_EQ(q[i], q_ref[i]) << "g " << g << " element " << i << " x " << x[i];
    }
    for (int64_t b = 0; b < blocks; ++b) {
      EXPECT_EQ(std::memcmp(&d[b], &d_ref[b], 4), 0) << b;
      EXPECT_EQ(std::memcmp(&d2[b], &d2_ref[b], 4), 0) << b;
      EXPECT_EQ(s[b], s_ref[b]) << b;
      EXPECT_EQ(s2[b], s2_ref[b]) << b;
    }
  }
  // The vectorized amax against the scalar one on lengths around every vector width and a long
  // one, with NaNs (ignored by both) scattered inside and the largest magnitude placed anywhere.
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  if (!__builtin_cpu_supports("avx512bw")) {
    GTEST_LOG_(INFO) << "no AVX-512BW here: the fast global scale is the scalar one";
  }
#endif
  std::uniform_int_distribution<int> coin(0, 9);
  for (int64_t n : {1, 2, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 2048, 16383, 16384, 16385}) {
    for (int trial = 0; trial < 4; ++trial) {
      std::vector<float> v(n);
      for (float& e : v) e = coin(rng) == 0 ? std::nanf("") : nd(rng);
      const int64_t at = std::uniform_int_distribution<int64_t>(0, n - 1)(rng);
      v[at] = (trial % 2 ? -1.0f : 1.0f) * (50.0f + trial);  // finite amax, either sign
      const float fast = Nvfp4DynamicGlobalScaleFast(v.data(), n);
      EXPECT_EQ(fast, Nvfp4DynamicGlobalScale(v.data(), n)) << n << " trial " << trial;
      EXPECT_EQ(fast, kNvfp4GlobalScaleNumerator / (50.0f + trial)) << n << " trial " << trial;
    }
  }
  const std::vector<float> nan_only(20, std::nanf(""));
  EXPECT_EQ(Nvfp4DynamicGlobalScaleFast(nan_only.data(), 20),
            Nvfp4DynamicGlobalScale(nan_only.data(), 20));
}

}  // namespace
}  // namespace tessera::kernels::cpu::fast
