// kQ3_Kx16 tiles (kernels/cpu/fast/int4_x16.h: GGUF Q3_K's own codes, 2-bit chunks plus a
// third-bit plane, under Q6_K's records and zero point 4), repacked from random Q3_K blocks:
//  * they take 3.625 bits per weight (the file 3.4375; the Q6_K tiles of its rewrite 6.625);
//  * the portable loop on them equals the portable loop on the kQ6_Kx16 tiles of the blocks' Q6_K
//    rewrite (kernels/cpu/ggml_kquants_as_q6k.h) bit for bit: codes q + 4 under zero point 4 make
//    every half-block integer of q + 32 under 32, and the scales are the same, so they compute
//    what the Q6_K tiles, tested against ggml's arithmetic in q6_k_x16_test.cc, do;
//  * every kernel this CPU runs (AVX-512 VNNI, AVX-VNNI, AVX2) equals the portable loop bit for bit
//    for column counts that are not multiples of 16 and row counts across row tiles.
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "hwy/aligned_allocator.h"
#include "kernels/cpu/fast/int4_x16.h"
#include "kernels/cpu/ggml_kquants_as_q6k.h"
#include "tests/kernels/cpu/int4_x16_test_util.h"

namespace tessera::kernels::cpu::fast {
namespace {

// n x k random Q3_K weights with sane f16 scales; the first block of each row all 0xFF (codes 3
// with every third bit: u = 7, and scales 31) and the second all 0x00 (u = 0, scales −32).
std::vector<uint8_t> RandomQ3K(int64_t n, int64_t k, std::mt19937& rng) {
  std::vector<uint8_t> src = testing::RandomGgmlBlocks(GgmlBlockType::kQ3_K, n, k, {108}, rng);
  for (int64_t i = 0; i < n * k / 256; i += k / 256) {  // d (bytes 108-109) kept
    std::memset(src.data() + i * kQ3KBlockBytes, 0xFF, 108);
    std::memset(src.data() + (i + 1) * kQ3KBlockBytes, 0x00, 108);
  }
  return src;
}

TEST(Q3Kx16Test, KernelsMatchPortableAndPortableMatchesQ6KTiles) {
  std::mt19937 rng(7);
  for (const int64_t n : {16, 37}) {
    const int64_t k = 768;
    const std::vector<uint8_t> q3 = RandomQ3K(n, k, rng);
    std::vector<uint8_t> q6(n * k / 256 * kQ6KBlockBytes);
    Q3KBlocksAsQ6K(q3.data(), n * k / 256, q6.data());
    auto narrow = hwy::AllocateAligned<uint8_t>(Q3_Kx16Bytes(n, k));
    auto wide = hwy::AllocateAligned<uint8_t>(Q6_Kx16Bytes(n, k));
    const FastWeights fw3 = RepackGgmlX16(GgmlBlockType::kQ3_K, q3.data(), n, k, narrow.get());
    const FastWeights fw6 = RepackQ6_Kx16(q6.data(), n, k, wide.get());
    ASSERT_EQ(fw3.format, FastFormat::kQ3_Kx16);
    EXPECT_EQ(Q3_Kx16Bytes(32, k), 32 * k / 256 * 116);  // 3.625 bits per weight
    for (const int64_t rows : {1, 5, 11}) {
      const std::string what = "n=" + std::to_string(n) + " rows=" + std::to_string(rows);
      std::normal_distribution<float> nd(0.0f, 1.0f);
      std::vector<float> x(rows * k), bias(n);
      for (auto& v : x) v = nd(rng);
      for (auto& v : bias) v = nd(rng);
      const testing::Acts a = testing::Quantize(x.data(), rows, k, /*halves=*/true);
      std::vector<float> y3(rows * n), y6(rows * n);
      Int4x16MatmulPortable(fw3, a.view, bias.data(), y3.data(), 0, n);
      Int4x16MatmulPortable(fw6, a.view, bias.data(), y6.data(), 0, n);
      EXPECT_EQ(std::memcmp(y3.data(), y6.data(), y3.size() * 4), 0) << what;
      testing::ExpectKernelsMatchPortable(fw3, a.view, bias.data(), what);
      ASSERT_FALSE(HasFatalFailure()) << what;
    }
  }
}

}  // namespace
}  // namespace tessera::kernels::cpu::fast
