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
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "hwy/aligned_allocator.h"
#include "kernels/cpu/fast/int4_x16.h"
#include "kernels/cpu/ggml_dequant.h"
#include "tests/kernels/cpu/int4_x16_test_util.h"

namespace tessera::kernels::cpu::fast {
namespace {

constexpr int64_t kBlockBytes = 84;

// n x k random Q2_K weights: random codes and scale bytes, f16 d and dmin of either sign; the
// first block of each row has scale and min bytes 0x0F / 0xF0 / 0xFF / 0x00 (the nibble edges).
std::vector<uint8_t> RandomQ2K(int64_t n, int64_t k, std::mt19937& rng) {
  std::vector<uint8_t> src = testing::RandomGgmlBlocks(GgmlBlockType::kQ2_K, n, k, {80, 82}, rng);
  for (int64_t i = 0; i < n * k / 256; i += k / 256) {
    constexpr uint8_t kEdges[4] = {0x0F, 0xF0, 0xFF, 0x00};
    for (int j = 0; j < 16; ++j) src[i * kBlockBytes + j] = kEdges[j % 4];
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
      // Per half block one product, one fma and one accumulation rounding, each within 2^-24 of
      // a running magnitude below the bound's (the min term |x|·dmin·m is at most 0.06·|x|).
      testing::ExpectTilesFollowDequantized(fw, w, rows, 4 * (k / 16 + 2), 0.06, rng, what);
      ASSERT_FALSE(HasFatalFailure()) << what;
    }
  }
}

}  // namespace
}  // namespace tessera::kernels::cpu::fast
