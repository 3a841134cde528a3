// GGUF Q4_1, Q5_0 and Q5_1 with int8 activations (RepackLegacyGgmlToUx16: per-group tiles of 32,
// scale d and zero point −m / d, or 16 for Q5_0) on random ggml blocks, blocks with d = 0 (the
// constant m) included: through the kernel, Σ w·x̂ for the reference dequantization w
// (DequantizeGgmlBlocks, llama.cpp's dequantize_row_*) and the int8-rounded activations
// x̂ = q·d_x, within f32 summation plus the zero point's rounding; kernel against portable loop
// bit for bit; batch and column-split invariance.
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

class LegacyGgmlX16Test : public ::testing::TestWithParam<GgmlBlockType> {};

TEST_P(LegacyGgmlX16Test, MatchesDequantizedWeightsPortableAndIsInvariant) {
  const GgmlBlockType type = GetParam();
  const bool has_min = type != GgmlBlockType::kQ5_0;
  const int64_t n = 37, k = 352, blocks = k / 32, bb = GetGgmlBlockInfo(type).bytes;
  std::mt19937 rng(static_cast<uint32_t>(type) + 5);
  std::uniform_real_distribution<float> scale(0.0005f, 0.02f);
  std::vector<uint8_t> rows(n * blocks * bb);
  for (int64_t i = 0; i < n * blocks; ++i) {
    uint8_t* b = rows.data() + i * bb;
    for (int64_t j = 0; j < bb; ++j) b[j] = static_cast<uint8_t>(rng());
    const uint16_t d = numeric::FloatToHalf(i % 9 == 4 ? 0.0f : scale(rng));  // d = 0: constant m
    std::memcpy(b, &d, 2);
    if (has_min) {
      const uint16_t m = numeric::FloatToHalf(-scale(rng) * 8);
      std::memcpy(b + 2, &m, 2);
    }
  }
  auto tiles = hwy::AllocateAligned<uint8_t>(type == GgmlBlockType::kQ4_1 ? U4x16Bytes(n, k, 32)
                                                                          : U8x16Bytes(n, k, 32));
  const FastWeights fw = RepackLegacyGgmlToUx16(type, rows.data(), n, k, tiles.get());
  EXPECT_EQ(fw.format, type == GgmlBlockType::kQ4_1 ? FastFormat::kU4x16 : FastFormat::kU8x16);
  std::vector<float> wref(n * k);
  DequantizeGgmlBlocks(type, rows.data(), n * blocks, wref.data());
  std::normal_distribution<float> nd(0.0f, 1.0f);
  const int64_t count = 5;
  std::vector<float> x(count * k);
  for (auto& v : x) v = nd(rng);
  const testing::Acts a = testing::Quantize(x.data(), count, k);
  std::vector<float> y(count * n);
  Int4x16Matmul(fw, a.view, nullptr, y.data(), 0, n);
  for (int64_t m = 0; m < count; ++m) {
    for (int64_t c = 0; c < n; ++c) {
      double exact = 0, mag = 0;
      for (int64_t i = 0; i < k; ++i) {
        const double xv = static_cast<double>(a.q[m * k + i]) * a.d[m * blocks + i / 32];
        exact += static_cast<double>(wref[c * k + i]) * xv;
        mag += std::fabs(static_cast<double>(wref[c * k + i]) * xv) + 0.2 * std::fabs(xv);
      }
      ASSERT_NEAR(y[m * n + c], exact, (k + 16) * std::ldexp(1.0, -24) * 4 * mag)
          << "m=" << m << " c=" << c;
    }
  }
  testing::ExpectMatchesPortable(fw, rng, {1, 3, 9});
  testing::ExpectBatchAndColumnSplitInvariant(fw, x, count);
}

INSTANTIATE_TEST_SUITE_P(Types, LegacyGgmlX16Test,
                         ::testing::Values(GgmlBlockType::kQ4_1, GgmlBlockType::kQ5_0,
                                           GgmlBlockType::kQ5_1));

}  // namespace
}  // namespace tessera::kernels::cpu::fast
