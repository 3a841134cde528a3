// kQ3_Kx16 tiles (kernels/cpu/fast/int4_x16.h: Q6_K's records with nibble codes only, zero point
// 4), repacked from the Q6_K rewrites of random GGUF Q3_K and Q2_K blocks
// (kernels/cpu/ggml_kquants_as_q6k.h):
//  * every kernel this CPU runs (AVX-512 VNNI, AVX-VNNI, AVX2) equals the portable loop bit for bit
//    for column counts that are not multiples of 16 and row counts across row tiles;
//  * the portable loop on them equals the portable loop on kQ6_Kx16 tiles of the same Q6_K blocks
//    bit for bit (codes 28 lower, zero point 28 lower: every half-block integer is the same), so
//    they compute what the Q6_K tiles, tested against ggml's arithmetic in q6_k_x16_test.cc, do.
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "hwy/aligned_allocator.h"
#include "kernels/cpu/fast/int4_x16.h"
#include "kernels/cpu/ggml_kquants_as_q6k.h"
#include "kernels/numeric/half.h"
#include "tests/kernels/cpu/int4_x16_test_util.h"

namespace tessera::kernels::cpu::fast {
namespace {

// Q6_K rewrites of n x k random Q3_K (or Q2_K) weights, with sane f16 scales.
std::vector<uint8_t> RewrittenBlocks(bool q2, int64_t n, int64_t k, std::mt19937& rng) {
  const int64_t blocks = n * k / 256;
  const int64_t bb = q2 ? kQ2KBlockBytes : kQ3KBlockBytes;
  std::vector<uint8_t> src(blocks * bb);
  for (auto& b : src) b = static_cast<uint8_t>(rng());
  std::uniform_real_distribution<float> scale(-0.004f, 0.004f);
  for (int64_t i = 0; i < blocks; ++i) {
    for (int64_t at : q2 ? std::vector<int64_t>{80, 82} : std::vector<int64_t>{108}) {
      const uint16_t h = numeric::FloatToHalf(scale(rng));
      std::memcpy(src.data() + i * bb + at, &h, 2);
    }
  }
  std::vector<uint8_t> q6(blocks * kQ6KBlockBytes);
  std::vector<float> offsets(blocks * 16);
  if (q2) {
    Q2KBlocksAsQ6K(src.data(), blocks, q6.data(), offsets.data());
  } else {
    Q3KBlocksAsQ6K(src.data(), blocks, q6.data());
  }
  return q6;
}

TEST(Q3Kx16Test, KernelsMatchPortableAndPortableMatchesQ6KTiles) {
  std::mt19937 rng(7);
  for (const bool q2 : {false, true}) {
    for (const int64_t n : {16, 37}) {
      const int64_t k = 768;
      const std::vector<uint8_t> q6 = RewrittenBlocks(q2, n, k, rng);
      auto narrow = hwy::AllocateAligned<uint8_t>(Q3_Kx16Bytes(n, k));
      auto wide = hwy::AllocateAligned<uint8_t>(Q6_Kx16Bytes(n, k));
      const FastWeights fw3 = RepackQ6_KAsQ3_Kx16(q6.data(), n, k, narrow.get());
      const FastWeights fw6 = RepackQ6_Kx16(q6.data(), n, k, wide.get());
      ASSERT_EQ(fw3.format, FastFormat::kQ3_Kx16);
      EXPECT_LT(Q3_Kx16Bytes(n, k), Q6_Kx16Bytes(n, k));
      for (const int64_t rows : {1, 5, 11}) {
        const std::string what = std::string(q2 ? "Q2_K" : "Q3_K") + " n=" + std::to_string(n) +
                                 " rows=" + std::to_string(rows);
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
}

}  // namespace
}  // namespace tessera::kernels::cpu::fast
