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

}  // namespace
}  // namespace tessera::kernels::cpu::fast
