// kIq4Nlx16 / kIq4Xsx16 tiles (kernels/cpu/fast/int4_x16.h: GGUF IQ4_NL and IQ4_XS nibbles read
// through kvalues_iq4nl) from random blocks:
//  * the tiles take the file's bytes plus IQ4_XS's int8 scales per block (IQ4_NL: Q4_0's 4.5 bits
//    per weight; IQ4_XS: 4.375 against the file's 4.25);
//  * the portable loop equals a double sum of the reference dequantizer's weights
//    (dequantize_row_iq4_nl / _xs, golden-tested against gguf-py) times the dequantized int8
//    activations within f32 rounding: every block integer Σ kv·x is exact, so only the scale
//    products and the accumulation round;
//  * every kernel this CPU runs (AVX-512 VNNI, AVX-VNNI, AVX2 with its sign trick on the signed
//    table) equals the portable loop bit for bit, for column counts that are not multiples of 16
//    and row counts across row tiles.
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


TEST(Iq4x16Test, TileBytes) {
  for (const int64_t k : {256, 2816, 5632}) {
    EXPECT_EQ(GgmlX16Bytes(GgmlBlockType::kIq4Nl, 32, k), Q4_0x16Bytes(32, k)) << k;
    // Per super-block and column: 2 bytes of d, 8 int8 scales, 128 bytes of nibbles, and the
    // record's padding (32 bytes per 16 columns).
    EXPECT_EQ(GgmlX16Bytes(GgmlBlockType::kIq4Xs, 32, k), 32 * (k / 256) * (2 + 8 + 128 + 2))
        << k;
  }
  EXPECT_TRUE(HasGgmlX16(GgmlBlockType::kIq4Nl));
  EXPECT_TRUE(HasGgmlX16(GgmlBlockType::kIq4Xs));
}

TEST(Iq4x16Test, PortableMatchesTheReferenceAndKernelsMatchPortable) {
  std::mt19937 rng(13);
  for (const GgmlBlockType type : {GgmlBlockType::kIq4Nl, GgmlBlockType::kIq4Xs}) {
    for (const int64_t n : {16, 37}) {
      const int64_t k = 768;
      // A sane f16 d of either sign first; IQ4_XS's 6-bit scales random.
      const std::vector<uint8_t> src = testing::RandomGgmlBlocks(type, n, k, {0}, rng);
      auto tiles = hwy::AllocateAligned<uint8_t>(GgmlX16Bytes(type, n, k));
      const FastWeights fw = RepackGgmlX16(type, src.data(), n, k, tiles.get());
      ASSERT_EQ(fw.format, type == GgmlBlockType::kIq4Nl ? FastFormat::kIq4Nlx16
                                                         : FastFormat::kIq4Xsx16);
      std::vector<float> w(n * k);
      DequantizeGgmlBlocks(type, src.data(), n * k / GetGgmlBlockInfo(type).elements, w.data());
      for (const int64_t rows : {1, 5, 11}) {
        const std::string what = std::string(type == GgmlBlockType::kIq4Nl ? "IQ4_NL" : "IQ4_XS") +
                                 " n=" + std::to_string(n) + " rows=" + std::to_string(rows);
        // Per block: the scale product, one fma and the running sum round, each within 2^-24 of
        // a magnitude below the bound's.
        testing::ExpectTilesFollowDequantized(fw, w, rows, 3 * (k / 32 + 2), 0.0, rng, what);
        ASSERT_FALSE(HasFatalFailure()) << what;
      }
    }
  }
}

}  // namespace
}  // namespace tessera::kernels::cpu::fast
