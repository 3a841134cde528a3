// Exhaustive tests of kernels/numeric/half.h: all 65536 BF16 and FP16 codes decoded against the
// std::ldexp formula, every code round-tripped, every midpoint between adjacent values (overflow
// to inf included), NaN handling, and random sweeps against the nearest-value oracle.
#include "kernels/numeric/half.h"

#include <cmath>
#include <cstdint>
#include <limits>

#include <gtest/gtest.h>

#include "tests/kernels/numeric/numeric_oracle.h"

namespace tessera::numeric {
namespace {

using oracle::BuildTable;
using oracle::kBf16Spec;
using oracle::kHalfSpec;

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNan = std::numeric_limits<float>::quiet_NaN();

static_assert(Bf16ToFloat(0x3F80) == 1.0f);
static_assert(FloatToBf16(1.0f) == 0x3F80);
static_assert(FloatToBf16(1.00390625f) == 0x3F80);  // 1 + 2^-8: tie, even
static_assert(FloatToBf16(kNan) == 0x7FC0);
static_assert(HalfToFloat(0x3C00) == 1.0f);
static_assert(HalfToFloat(0x7BFF) == 65504.0f);
static_assert(HalfToFloat(0x0001) == 5.9604644775390625e-8f);  // 2^-24
static_assert(FloatToHalf(65520.0f) == 0x7C00);
static_assert(FloatToHalf(-2.0f) == 0xC000);

uint32_t Bf16(float x) { return FloatToBf16(x); }
float DecBf16(uint32_t c) { return Bf16ToFloat(static_cast<uint16_t>(c)); }
uint32_t Half(float x) { return FloatToHalf(x); }
float DecHalf(uint32_t c) { return HalfToFloat(static_cast<uint16_t>(c)); }

TEST(Bf16Test, DecodesAll65536CodesLikeTheSpecFormula) {
  oracle::CheckDecodeAll(kBf16Spec, DecBf16);
}

TEST(Bf16Test, EveryCodeRoundTrips) {
  oracle::CheckRoundTrip(kBf16Spec, DecBf16, Bf16, /*include_inf=*/true);
}

TEST(Bf16Test, EveryMidpointRoundsToEven) {
  oracle::CheckAllMidpoints(kBf16Spec, BuildTable(kBf16Spec, true), Bf16);
}

TEST(Bf16Test, OverflowAndNan) {
  EXPECT_EQ(FloatToBf16(std::numeric_limits<float>::max()), 0x7F80);  // rounds up to inf
  EXPECT_EQ(FloatToBf16(std::bit_cast<float>(0x7F7F7FFFu)), 0x7F7F);
  EXPECT_EQ(FloatToBf16(-kInf), 0xFF80);
  EXPECT_EQ(FloatToBf16(-kNan), 0xFFC0);
  // A signalling NaN whose payload lives only in the low 16 bits must not become inf.
  EXPECT_EQ(FloatToBf16(std::bit_cast<float>(0x7F800001u)), 0x7FC0);
  EXPECT_EQ(FloatToBf16(std::bit_cast<float>(0xFFA12345u)), 0xFFE1);
  for (uint32_t c = 0; c < 65536; ++c) {
    const float f = Bf16ToFloat(static_cast<uint16_t>(c));
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(Bf16ToFloat(FloatToBf16(f)))) << c;
    }
  }
}

TEST(Bf16Test, RandomSweepMatchesNearestValueOracle) {
  oracle::CheckRandomSweep(kBf16Spec, BuildTable(kBf16Spec, true), Bf16,
                           oracle::FloatSampler(0xBF16, -140, 127), 1000000);
}

TEST(HalfTest, DecodesAll65536CodesLikeTheSpecFormula) {
  oracle::CheckDecodeAll(kHalfSpec, DecHalf);
}

TEST(HalfTest, EveryCodeRoundTrips) {
  oracle::CheckRoundTrip(kHalfSpec, DecHalf, Half, /*include_inf=*/true);
}

TEST(HalfTest, EveryMidpointRoundsToEven) {
  oracle::CheckAllMidpoints(kHalfSpec, BuildTable(kHalfSpec, true), Half);
}

TEST(HalfTest, OverflowSubnormalsAndNan) {
  EXPECT_EQ(FloatToHalf(65504.0f), 0x7BFF);
  EXPECT_EQ(FloatToHalf(65519.996f), 0x7BFF);
  EXPECT_EQ(FloatToHalf(65520.0f), 0x7C00);
  EXPECT_EQ(FloatToHalf(1e10f), 0x7C00);
  EXPECT_EQ(FloatToHalf(-kInf), 0xFC00);
  EXPECT_EQ(FloatToHalf(std::ldexp(1.0f, -24)), 0x0001);
  EXPECT_EQ(FloatToHalf(std::ldexp(1.0f, -25)), 0x0000);  // tie 0 / 2^-24 -> even
  EXPECT_EQ(FloatToHalf(-std::ldexp(1.5f, -25)), 0x8001);
  EXPECT_EQ(FloatToHalf(std::ldexp(1023.5f, -24)), 0x0400);  // tie into the smallest normal
  EXPECT_EQ(FloatToHalf(-std::ldexp(1.0f, -149)), 0x8000);
  EXPECT_EQ(FloatToHalf(kNan), 0x7E00);
  EXPECT_EQ(FloatToHalf(-kNan), 0xFE00);
  EXPECT_EQ(FloatToHalf(std::bit_cast<float>(0x7F800001u)), 0x7E00);  // quieted
  EXPECT_EQ(FloatToHalf(std::bit_cast<float>(0x7FA02000u)), 0x7F01);  // payload kept
  EXPECT_EQ(HalfToFloat(0x7C00), kInf);
  EXPECT_TRUE(std::isnan(HalfToFloat(0x7C01)));
  EXPECT_TRUE(std::signbit(HalfToFloat(0xFE00)));
}

TEST(HalfTest, RandomSweepMatchesNearestValueOracle) {
  oracle::CheckRandomSweep(kHalfSpec, BuildTable(kHalfSpec, true), Half,
                           oracle::FloatSampler(0xF16, -27, 17), 1000000);
}

}  // namespace
}  // namespace tessera::numeric
