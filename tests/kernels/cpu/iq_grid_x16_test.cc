// kIqGrid16x16 / kIqGrid32x16 tiles (kernels/cpu/fast/int4_x16.h: GGUF's grid and ternary types
// as one 4-bit table code per value under records of an f32 d and multipliers per 16 or per 32
// values) from random blocks of every grid and ternary type:
//  * 4.625 / 4.375 bits per weight (320- / 192-byte records of 16 columns, 2048 bytes of
//    nibbles), the per-32 form for the types whose scales cover 32 values;
//  * the portable loop equals a double sum (blocks under subnormal and zero d among them) of the reference dequantizer's weights (ggml-quants.c's
//    dequantize_row_iq*, golden-tested against gguf-py) times the dequantized int8 activations
//    within f32 rounding (every half-block integer is exact);
//  * every kernel this CPU runs (AVX-512 VNNI, AVX-VNNI, AVX2 with the sign trick on the signed
//    table) equals the portable loop bit for bit, for column counts that are not multiples of 16,
//    row counts across row tiles, and tiles whose every code is the type's largest or smallest value
//    under activations of ±127 (the sums a vpmaddubsw pair must hold).
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "hwy/aligned_allocator.h"
#include "kernels/cpu/fast/int4_x16.h"
#include "kernels/cpu/fast/int4_x16_layout.h"
#include "kernels/cpu/ggml_dequant.h"
#include "kernels/cpu/ggml_iq_dequant.h"
#include "tests/kernels/cpu/int4_x16_test_util.h"
#include "tests/kernels/cpu/iq_grid_test_util.h"

namespace tessera::kernels::cpu::fast {
namespace {

using cpu::testing::IqGridName;
using cpu::testing::kTableCodeTypes;

bool PerHalf(GgmlBlockType type) {
  return type == GgmlBlockType::kIq2Xs || type == GgmlBlockType::kIq2S ||
         type == GgmlBlockType::kIq1M;
}

TEST(IqGridx16Test, TileBytes) {
  for (const GgmlBlockType type : kTableCodeTypes) {
    ASSERT_TRUE(HasGgmlX16(type));
    for (const int64_t k : {256, 2816, 5632}) {
      // Per super-block and column: 4 bytes of d, 16 (or 8) multipliers, 128 bytes of nibbles.
      EXPECT_EQ(GgmlX16Bytes(type, 32, k), 32 * (k / 256) * (4 + (PerHalf(type) ? 16 : 8) + 128))
          << IqGridName(type) << " " << k;
    }
  }
}

TEST(IqGridx16Test, PortableMatchesTheReferenceAndKernelsMatchPortable) {
  std::mt19937 rng(17);
  for (const GgmlBlockType type : kTableCodeTypes) {
    for (const int64_t n : {16, 37}) {
      const int64_t k = 768;
      std::vector<uint8_t> src = cpu::testing::RandomIqGridBlocks(type, n, k, rng);
      // Some blocks under the smallest subnormal f16 d (2^-24) and under d = 0.
      const int64_t bytes = GetGgmlBlockInfo(type).bytes;
      for (int64_t b = 0; b < n * k / 256; b += 5) {
        cpu::testing::SetIqGridHalf(type, &src[b * bytes], b % 2 ? 0x0001 : 0x0000);
      }
      auto tiles = hwy::AllocateAligned<uint8_t>(GgmlX16Bytes(type, n, k));
      const FastWeights fw = RepackGgmlX16(type, src.data(), n, k, tiles.get());
      ASSERT_EQ(fw.format,
                PerHalf(type) ? FastFormat::kIqGrid16x16 : FastFormat::kIqGrid32x16);
      ASSERT_EQ(fw.ggml, type);
      std::vector<float> w(n * k);
      DequantizeGgmlBlocks(type, src.data(), n * k / 256, w.data());
      for (const int64_t rows : {1, 5, 11}) {
        const std::string what = std::string(IqGridName(type)) + " n=" + std::to_string(n) +
                                 " rows=" + std::to_string(rows);
        // Per half block (or block): the scale product, one fma and the running sum round.
        testing::ExpectTilesFollowDequantized(fw, w, rows, 3 * (k / 16 + 2), 0.0, rng, what);
        ASSERT_FALSE(HasFatalFailure()) << what;
      }
    }
  }
}

TEST(IqGridx16Test, LargestCodesUnderFullActivations) {
  for (const GgmlBlockType type : kTableCodeTypes) {
    const int8_t* table = IqGridTable(type);
    // The codes of the type's largest and smallest values.
    int largest = 0, smallest = 0;
    for (int c = 0; c < 16; ++c) {
      if (table[c] > table[largest]) largest = c;
      if (table[c] < table[smallest]) smallest = c;
    }
    ASSERT_GT(table[largest], 0) << IqGridName(type);
    ASSERT_LT(table[smallest], 0) << IqGridName(type);
    std::mt19937 rng(5);
    const int64_t n = 21, k = 512;
    const std::vector<uint8_t> src = cpu::testing::RandomIqGridBlocks(type, n, k, rng);
    auto tiles = hwy::AllocateAligned<uint8_t>(GgmlX16Bytes(type, n, k));
    const FastWeights fw = RepackGgmlX16(type, src.data(), n, k, tiles.get());
    const internal::X16Layout l = internal::X16Layout::Of(fw.format, 32);
    for (const int code : {largest, smallest}) {
      for (int64_t g = 0; g < 2; ++g) {
        for (int64_t b = 0; b < k / 32; ++b) {
          std::memset(tiles.get() + g * fw.row_stride + l.Codes(b), code | (code << 4), 256);
        }
      }
      for (const float sign : {1.0f, -1.0f}) {
        std::vector<float> x(3 * k, sign);  // codes ±127
        const testing::Acts a = testing::Quantize(x.data(), 3, k, testing::NeedsHalves(fw));
        std::vector<float> bias(n, 0.5f);
        testing::ExpectKernelsMatchPortable(fw, a.view, bias.data(),
                                            std::string(IqGridName(type)) + " largest codes");
        ASSERT_FALSE(HasFatalFailure());
        // And the portable loop gives that product: per weight (d·mult)·table[code] from the
        // file's scales, times the activation q·d_x, summed in double.
        std::vector<float> y(3 * n);
        Int4x16MatmulPortable(fw, a.view, nullptr, y.data(), 0, n);
        const int64_t bytes = GetGgmlBlockInfo(type).bytes;
        for (int64_t c = 0; c < n; ++c) {
          double want = 0, mag = 0;
          for (int64_t sb = 0; sb < k / 256; ++sb) {
            float d;
            uint8_t mults[16], unused[256];
            IqGridCodes(type, src.data() + (c * (k / 256) + sb) * bytes, &d, mults, unused);
            for (int e = 0; e < 256; ++e) {
              const int64_t i = sb * 256 + e;
              const double xv = double(a.q[i]) * a.d[i / 32];
              const double wv = double(d) * mults[e / 16] * table[code];
              want += xv * wv;
              mag += std::abs(xv * wv);
            }
          }
          ASSERT_NEAR(y[c], want, 1e-5 * mag) << IqGridName(type) << " column " << c;
        }
      }
    }
  }
}

}  // namespace
}  // namespace tessera::kernels::cpu::fast
