// GGUF Q6_K in 16-column tiles with int8 activations (kernels/cpu/fast/int4_x16.h, kQ6_Kx16) on
// random ggml blocks:
//  * Q6KCodes (the repack's view of a block) times its scales is DequantizeGgmlBlocks (llama.cpp's
//    dequantize_row_q6_K) bit for bit;
//  * the kernel (VNNI here) equals the portable loop bit for bit, for column counts that are not
//    multiples of 16, row counts across one and two row tiles, and K with an odd block count;
//  * each row's result is the same alone or with other rows, and however columns are split;
//  * against the ggml block arithmetic read straight from the file's bytes (ql / qh / sc / d as
//    ggml-common.h lays them out; Σ d·sc·Σ (q − 32)·x per 16 in double, the same int8 activations)
//    it is within f32 accumulation rounding, and against float activations within the activation
//    rounding bound.
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "hwy/aligned_allocator.h"
#include "kernels/cpu/fast/int4_x16.h"
#include "kernels/cpu/fast/q8_act_matmul.h"
#include "kernels/cpu/ggml_dequant.h"
#include "kernels/numeric/half.h"
#include "tests/kernels/cpu/int4_x16_test_util.h"

namespace tessera::kernels::cpu::fast {
namespace {

constexpr int64_t kBlockBytes = 210;  // 256 values

struct Q6Matrix {
  std::vector<uint8_t> ggml;
  hwy::AlignedFreeUniquePtr<uint8_t[]> tiles;
  FastWeights fw;
};

// Random codes and scales (every byte pattern is a valid Q6_K block) with a sane f16 d.
Q6Matrix RandomQ6(int64_t n, int64_t k, std::mt19937& rng) {
  Q6Matrix m;
  const int64_t blocks = k / 256;
  m.ggml.resize(n * blocks * kBlockBytes);
  std::uniform_real_distribution<float> scale(-0.002f, 0.002f);
  for (int64_t i = 0; i < n * blocks; ++i) {
    uint8_t* b = m.ggml.data() + i * kBlockBytes;
    for (int j = 0; j < 208; ++j) b[j] = static_cast<uint8_t>(rng());
    if (i % 5 == 0) b[192] = 0x80;  // sc = −128, the scale with no positive twin
    const uint16_t h = numeric::FloatToHalf(scale(rng));
    std::memcpy(b + 208, &h, 2);
  }
  m.tiles = hwy::AllocateAligned<uint8_t>(Q6_Kx16Bytes(n, k));
  m.fw = RepackQ6_Kx16(m.ggml.data(), n, k, m.tiles.get());
  return m;
}

std::vector<float> Normal(int64_t n, std::mt19937& rng) {
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& e : v) e = nd(rng);
  return v;
}

TEST(Q6_Kx16Test, CodesTimesScalesAreTheReferenceDequantization) {
  std::mt19937 rng(5);
  const Q6Matrix w = RandomQ6(3, 512, rng);
  for (int64_t b = 0; b < 6; ++b) {
    const uint8_t* block = w.ggml.data() + b * kBlockBytes;
    uint8_t codes[256];
    float scales[16], ref[256];
    Q6KCodes(block, codes, scales);
    DequantizeGgmlBlocks(GgmlBlockType::kQ6_K, block, 1, ref);
    for (int e = 0; e < 256; ++e) {
      ASSERT_LT(codes[e], 64);
      const float got = scales[e / 16] * static_cast<float>(codes[e] - 32);
      ASSERT_EQ(std::memcmp(&got, &ref[e], 4), 0) << "block " << b << " element " << e;
    }
  }
}

TEST(Q6_Kx16Test, MatchesPortableBitForBit) {
  if (testing::FastKernels().empty()) {
    GTEST_SKIP() << "neither AVX-512 VNNI nor AVX2: Int4x16Matmul is the portable loop itself";
  }
  std::mt19937 rng(61);
  for (const auto& [n, k] :
       {std::pair<int64_t, int64_t>{37, 256}, {19, 768}, {16, 2304}, {5, 2048}, {3, 5632}}) {
    const Q6Matrix w = RandomQ6(n, k, rng);
    testing::ExpectMatchesPortable(w.fw, rng, {1, 2, 3, 5, 8, 9, 16, 17});
  }
}

TEST(Q6_Kx16Test, BatchAndColumnSplitInvariant) {
  std::mt19937 rng(67);
  const int64_t n = 45, k = 1280, rows = 17;
  const Q6Matrix w = RandomQ6(n, k, rng);
  const auto x = Normal(rows * k, rng);
  testing::ExpectBatchAndColumnSplitInvariant(w.fw, x, rows);
}

TEST(Q6_Kx16Test, MatchesGgmlBlockArithmetic) {
  std::mt19937 rng(71);
  // 72 blocks of 32: the last record is whole; 2304 = 9 super-blocks.
  const int64_t n = 21, k = 2304, rows = 3, blocks = k / 32;
  const Q6Matrix w = RandomQ6(n, k, rng);
  const auto x = Normal(rows * k, rng);
  const testing::Acts a = testing::Quantize(x.data(), rows, k, true);
  std::vector<float> y(rows * n);
  Int4x16Matmul(w.fw, a.view, nullptr, y.data(), 0, n);
  for (int64_t m = 0; m < rows; ++m) {
    for (int64_t c = 0; c < n; ++c) {
      double int8_dot = 0, int8_mag = 0, exact = 0, bound = 0, mag = 0;
      for (int64_t sb = 0; sb < k / 256; ++sb) {
        const uint8_t* blk = w.ggml.data() + (c * (k / 256) + sb) * kBlockBytes;
        uint16_t h;
        std::memcpy(&h, blk + 208, 2);
        const double d = numeric::HalfToFloat(h);
        for (int half = 0; half < 16; ++half) {
          const double ws = d * static_cast<int8_t>(blk[192 + half]);
          const int64_t b = sb * 8 + half / 2;
          const double dx = a.d[m * blocks + b];
          int64_t isum = 0, wsum = 0;
          for (int j = 0; j < 16; ++j) {
            // ggml's dequantize_row_q6_K layout: see ggml_dequant.cc DequantQ6_K.
            const int e = half * 16 + j, hh = e / 128, t = (e % 128) / 32, l = e % 32;
            const uint8_t ql = blk[64 * hh + l + (t % 2) * 32], qh = blk[128 + 32 * hh + l];
            const int wq = ((t < 2 ? ql & 0xF : ql >> 4) | (((qh >> (2 * t)) & 3) << 4)) - 32;
            const double xv = x[m * k + sb * 256 + e];
            isum += wq * a.q[m * k + sb * 256 + e];
            wsum += std::abs(wq);
            exact += ws * wq * xv;
            mag += std::fabs(ws * wq * xv);
          }
          int8_dot += ws * dx * static_cast<double>(isum);
          int8_mag += std::fabs(ws * dx * static_cast<double>(isum));
          bound += std::fabs(ws) * static_cast<double>(wsum) * dx / 2;
        }
      }
      const float got = y[m * n + c];
      EXPECT_NEAR(got, int8_dot, 1e-6 * int8_mag + 1e-30) << "m=" << m << " c=" << c;
      EXPECT_NEAR(got, exact, bound * 1.0001 + 1e-5 * mag) << "m=" << m << " c=" << c;
    }
  }
}

}  // namespace
}  // namespace tessera::kernels::cpu::fast
