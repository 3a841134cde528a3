// GGUF Q5_K with int8 activations: Q5KSubBlock (the repack's view of a sub-block) is
// DequantizeGgmlBlocks (llama.cpp's dequantize_row_q5_K) bit for bit, and RepackQ5_Kx16's tiles
// (kQ5_Kx16: nibbles, a plane of fifth bits, the file's d / dmin / scales / mins) give, through
// the kernel, the ggml block arithmetic read from the file's dequantized values within f32
// rounding, for the same int8 activations; kernel against portable loop bit for bit and batch /
// split invariance.
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "hwy/aligned_allocator.h"
#include "kernels/cpu/fast/int4_x16.h"
#include "kernels/cpu/ggml_dequant.h"
#include "kernels/numeric/half.h"
#include "tests/kernels/cpu/int4_x16_test_util.h"

namespace tessera::kernels::cpu::fast {
namespace {

constexpr int64_t kBlockBytes = 176;  // 256 values

struct Q5Matrix {
  std::vector<uint8_t> ggml;
  hwy::AlignedFreeUniquePtr<uint8_t[]> tiles;
  FastWeights fw;
};

// Random codes and 6-bit scales / mins (every byte pattern is a valid block), sane f16 d, dmin.
Q5Matrix RandomQ5(int64_t n, int64_t k, std::mt19937& rng) {
  Q5Matrix m;
  m.ggml.resize(n * (k / 256) * kBlockBytes);
  for (int64_t i = 0; i < n * (k / 256); ++i) {
    uint8_t* b = m.ggml.data() + i * kBlockBytes;
    for (int j = 4; j < kBlockBytes; ++j) b[j] = static_cast<uint8_t>(rng());
    const uint16_t d = numeric::FloatToHalf(1e-4f * (1 + rng() % 100));
    const uint16_t dmin = numeric::FloatToHalf(i % 7 == 0 ? 0.0f : 1e-4f * (rng() % 100));
    std::memcpy(b, &d, 2);
    std::memcpy(b + 2, &dmin, 2);
    if (i % 3 == 1) b[4] &= 0xC0;  // sub-block 0: sc = 0, the constant −dmin·m
  }
  m.tiles = hwy::AllocateAligned<uint8_t>(Q5_Kx16Bytes(n, k));
  m.fw = RepackQ5_Kx16(m.ggml.data(), n, k, m.tiles.get());
  return m;
}

TEST(Q5_KTest, SubBlocksAreTheReferenceDequantization) {
  std::mt19937 rng(3);
  const Q5Matrix w = RandomQ5(2, 512, rng);
  for (int64_t b = 0; b < 4; ++b) {
    const uint8_t* block = w.ggml.data() + b * kBlockBytes;
    float ref[256];
    DequantizeGgmlBlocks(GgmlBlockType::kQ5_K, block, 1, ref);
    for (int j = 0; j < 8; ++j) {
      float s, o;
      uint8_t codes[32];
      Q5KSubBlock(block, j, &s, &o, codes);
      for (int l = 0; l < 32; ++l) {
        ASSERT_LT(codes[l], 32);
        const float got = s * static_cast<float>(codes[l]) - o;
        ASSERT_EQ(std::memcmp(&got, &ref[32 * j + l], 4), 0)
            << "block " << b << " value " << 32 * j + l;
      }
    }
  }
}

TEST(Q5_KTest, TilesMatchGgmlArithmeticPortableAndAreInvariant) {
  std::mt19937 rng(13);
  const int64_t n = 37, k = 1280, rows = 3, blocks = k / 32;
  const Q5Matrix w = RandomQ5(n, k, rng);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> x(rows * k);
  for (auto& v : x) v = nd(rng);
  const testing::Acts a = testing::Quantize(x.data(), rows, k);
  ASSERT_EQ(w.fw.format, FastFormat::kQ5_Kx16);
  ASSERT_EQ(w.fw.row_stride, (k / 256) * (320 + 8 * 320));  // 5.625 bits per weight
  std::vector<float> y(rows * n);
  Int4x16Matmul(w.fw, a.view, nullptr, y.data(), 0, n);
  for (int64_t m = 0; m < rows; ++m) {
    for (int64_t c = 0; c < n; ++c) {
      // Σ_b d_x · Σ_l (s·u − o)·q_x in double, from the file's values.
      double want = 0, mag = 0;
      std::vector<float> deq(k);
      DequantizeGgmlBlocks(GgmlBlockType::kQ5_K, w.ggml.data() + c * (k / 256) * kBlockBytes,
                           k / 256, deq.data());
      for (int64_t b = 0; b < blocks; ++b) {
        double sum = 0, smag = 0;
        for (int l = 0; l < 32; ++l) {
          sum += static_cast<double>(deq[b * 32 + l]) * a.q[m * k + b * 32 + l];
          smag += std::fabs(static_cast<double>(deq[b * 32 + l]) * a.q[m * k + b * 32 + l]);
        }
        want += a.d[m * blocks + b] * sum;
        mag += a.d[m * blocks + b] * smag;
      }
      EXPECT_NEAR(y[m * n + c], want, 1e-5 * mag + 1e-30) << "m=" << m << " c=" << c;
    }
  }
  testing::ExpectMatchesPortable(w.fw, rng, {1, 2, 9, 17});
  std::vector<float> xs(17 * k);
  for (auto& v : xs) v = nd(rng);
  testing::ExpectBatchAndColumnSplitInvariant(w.fw, xs, 17);
}

}  // namespace
}  // namespace tessera::kernels::cpu::fast
