// kQ2_Kx16 tiles (kernels/cpu/fast/int4_x16.h: GGUF Q2_K in its own 2-bit codes and scale bytes)
// from random Q2_K blocks:
//  * the tiles take the file's bytes per weight (2.625 bits) for whole column groups;
//  * the portable loop equals a double sum of the reference dequantizer's weights (ggml-quants.c
//    dequantize_row_q2_K, golden-tested against gguf-py) times the dequantized int8 activations,
//    within f32 rounding of the canonical order: the layout puts every code, scale and min where
//    the kernels read it, and the affine form per half block is GGUF's;
//  * every kernel this CPU runs (AVX-512 VNNI, AVX-VNNI, AVX2) equals the portable loop bit for bit
//    for column counts that are not multiples of 16 and row counts across row tiles (so a row's
//    result does not depend on the rows beside it).
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "hwy/aligned_allocator.h"
#include "kernels/cpu/fast/int4_x16.h"
#include "kernels/cpu/ggml_dequant.h"
#include "kernels/numeric/half.h"
#include "tests/kernels/cpu/int4_x16_test_util.h"

namespace tessera::kernels::cpu::fast {
namespace {

constexpr int64_t kBlockBytes = 84;

// n x k random Q2_K weights: random codes and scale bytes, f16 d and dmin of either sign; the
// first block of each row has scale and min bytes 0x0F / 0xF0 / 0xFF / 0x00 (the nibble edges).
std::vector<uint8_t> RandomQ2K(int64_t n, int64_t k, std::mt19937& rng) {
  const int64_t blocks = n * k / 256;
  std::vector<uint8_t> src(blocks * kBlockBytes);
  for (auto& b : src) b = static_cast<uint8_t>(rng());
  std::uniform_real_distribution<float> scale(-0.004f, 0.004f);
  for (int64_t i = 0; i < blocks; ++i) {
    uint8_t* blk = src.data() + i * kBlockBytes;
    for (int64_t at : {80, 82}) {
      const uint16_t h = numeric::FloatToHalf(scale(rng));
      std::memcpy(blk + at, &h, 2);
    }
    if (i % (k / 256) == 0) {
      constexpr uint8_t kEdges[4] = {0x0F, 0xF0, 0xFF, 0x00};
      for (int j = 0; j < 16; ++j) blk[j] = kEdges[j % 4];
    }
  }
  return src;
}

TEST(Q2Kx16Test, TilesTakeTheFilesBytes) {
  for (const int64_t k : {256, 2816, 5632}) {
    EXPECT_EQ(Q2_Kx16Bytes(32, k), 32 * (k / 256) * kBlockBytes) << k;
    EXPECT_EQ(Q2_Kx16Bytes(17, k), Q2_Kx16Bytes(32, k)) << k;  // a padded second column group
    EXPECT_EQ(GgmlX16Bytes(GgmlBlockType::kQ2_K, 32, k), Q2_Kx16Bytes(32, k));
  }
  EXPECT_TRUE(HasGgmlX16(GgmlBlockType::kQ2_K));
}

TEST(Q2Kx16Test, PortableMatchesTheReferenceAndKernelsMatchPortable) {
  std::mt19937 rng(11);
  for (const int64_t n : {16, 37}) {
    const int64_t k = 768;
    const std::vector<uint8_t> src = RandomQ2K(n, k, rng);
    auto tiles = hwy::AllocateAligned<uint8_t>(Q2_Kx16Bytes(n, k));
    const FastWeights fw = RepackGgmlX16(GgmlBlockType::kQ2_K, src.data(), n, k, tiles.get());
    ASSERT_EQ(fw.format, FastFormat::kQ2_Kx16);
    std::vector<float> w(n * k);
    DequantizeGgmlBlocks(GgmlBlockType::kQ2_K, src.data(), n * k / 256, w.data());
    for (const int64_t rows : {1, 5, 11}) {
      const std::string what = "n=" + std::to_string(n) + " rows=" + std::to_string(rows);
      std::normal_distribution<float> nd(0.0f, 1.0f);
      std::vector<float> x(rows * k), bias(n);
      for (auto& v : x) v = nd(rng);
      for (auto& v : bias) v = nd(rng);
      const testing::Acts a = testing::Quantize(x.data(), rows, k, /*halves=*/true);
      // Per half block one product, one fma and one accumulation rounding, each within 2^-24 of
      // a running magnitude below the bound's (the min term |x|·dmin·m is at most 0.06·|x|).
      testing::ExpectPortableFollowsDequantized(fw, a, w, bias, 4 * (k / 16 + 2), 0.06, what);
      ASSERT_FALSE(HasFatalFailure()) << what;
      testing::ExpectKernelsMatchPortable(fw, a.view, bias.data(), what);
      ASSERT_FALSE(HasFatalFailure()) << what;
    }
  }
}

}  // namespace
}  // namespace tessera::kernels::cpu::fast
