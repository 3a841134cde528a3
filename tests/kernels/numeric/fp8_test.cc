// Exhaustive tests of kernels/numeric/fp8.h against the spec-derived oracle: all 256 codes of
// E4M3FN and E5M2, every rounding midpoint, saturation, NaN, and a random sweep.
#include "kernels/numeric/fp8.h"

#include <cmath>
#include <cstdint>
#include <limits>

#include <gtest/gtest.h>

#include "tests/kernels/numeric/numeric_oracle.h"

namespace tessera::numeric {
namespace {

using oracle::BuildTable;
using oracle::kE4m3Spec;
using oracle::kE5m2Spec;

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNan = std::numeric_limits<float>::quiet_NaN();

// Evaluated at compile time: the encoders and decoders are constexpr.
static_assert(DecodeE4m3(0x7E) == 448.0f);
static_assert(DecodeE4m3(0xFE) == -448.0f);
static_assert(DecodeE4m3(0x01) == 0.001953125f);  // 2^-9
static_assert(DecodeE4m3(0x08) == 0.015625f);     // 2^-6
static_assert(DecodeE4m3(0x38) == 1.0f);
static_assert(EncodeE4m3(448.0f) == 0x7E);
static_assert(EncodeE4m3(480.0f) == 0x7E);
static_assert(EncodeE4m3(-1e30f) == 0xFE);
static_assert(EncodeE4m3(1.0f) == 0x38);
static_assert(EncodeE4m3(-0.0f) == 0x80);
static_assert(EncodeE4m3(kNan) == 0x7F);
static_assert(EncodeUe4m3(-3.0f) == 0x00);
static_assert(DecodeUe4m3GgufNvfp4(0x7F) == 0.0f);
static_assert(DecodeE5m2(0x7B) == 57344.0f);
static_assert(EncodeE5m2(61440.0f) == 0x7C);
static_assert(EncodeE5m2Sat(61440.0f) == 0x7B);

uint32_t E4m3(float x) { return EncodeE4m3(x); }
float DecE4m3(uint32_t c) { return DecodeE4m3(static_cast<uint8_t>(c)); }
uint32_t E5m2(float x) { return EncodeE5m2(x); }
uint32_t E5m2Sat(float x) { return EncodeE5m2Sat(x); }
float DecE5m2(uint32_t c) { return DecodeE5m2(static_cast<uint8_t>(c)); }

TEST(E4m3Test, DecodesAll256CodesLikeTheSpecFormula) { oracle::CheckDecodeAll(kE4m3Spec, DecE4m3); }

TEST(E4m3Test, DecodeTableLandmarks) {
  EXPECT_EQ(DecodeE4m3(0x00), 0.0f);
  EXPECT_TRUE(std::signbit(DecodeE4m3(0x80)));
  EXPECT_EQ(DecodeE4m3(0x07), std::ldexp(7.0f, -9));  // largest subnormal
  EXPECT_EQ(DecodeE4m3(0x77), 240.0f);
  EXPECT_TRUE(std::isnan(DecodeE4m3(0x7F)));
  EXPECT_TRUE(std::isnan(DecodeE4m3(0xFF)));
  EXPECT_TRUE(std::signbit(DecodeE4m3(0xFF)));
  int nan_codes = 0;
  for (int c = 0; c < 256; ++c) nan_codes += std::isnan(DecodeE4m3(static_cast<uint8_t>(c)));
  EXPECT_EQ(nan_codes, 2);
}

TEST(E4m3Test, EveryFiniteCodeRoundTrips) {
  oracle::CheckRoundTrip(kE4m3Spec, DecE4m3, E4m3, /*include_inf=*/false);
}

TEST(E4m3Test, EveryMidpointRoundsToEven) {
  oracle::CheckAllMidpoints(kE4m3Spec, BuildTable(kE4m3Spec, false), E4m3);
}

TEST(E4m3Test, SubnormalRounding) {
  EXPECT_EQ(EncodeE4m3(std::ldexp(1.0f, -10)), 0x00);  // tie 0 / 2^-9 -> even 0
  EXPECT_EQ(EncodeE4m3(std::ldexp(1.5f, -10)), 0x01);
  EXPECT_EQ(EncodeE4m3(std::ldexp(3.0f, -10)), 0x02);   // tie 1 / 2 -> even 2
  EXPECT_EQ(EncodeE4m3(std::ldexp(15.0f, -10)), 0x08);  // tie 7*2^-9 / 2^-6 -> 0x08
  EXPECT_EQ(EncodeE4m3(std::ldexp(1.0f, -126)), 0x00);
  EXPECT_EQ(EncodeE4m3(-std::ldexp(1.0f, -140)), 0x80);  // binary32 subnormal, sign kept
}

TEST(E4m3Test, SaturatesAt448) {
  for (float x : {448.0f, 448.5f, 463.99f, 464.0f, 479.0f, 479.99f, 480.0f, 500.0f, 1e9f,
                  std::numeric_limits<float>::max(), kInf}) {
    EXPECT_EQ(EncodeE4m3(x), 0x7E) << x;
    EXPECT_EQ(EncodeE4m3(-x), 0xFE) << -x;
  }
  EXPECT_EQ(EncodeE4m3(416.0f), 0x7D);
  EXPECT_EQ(EncodeE4m3(431.99f), 0x7D);
  EXPECT_EQ(EncodeE4m3(432.0f), 0x7E);  // tie 416 (0x7D, odd) / 448 (0x7E, even)
}

TEST(E4m3Test, NanKeepsSign) {
  EXPECT_EQ(EncodeE4m3(kNan), 0x7F);
  EXPECT_EQ(EncodeE4m3(-kNan), 0xFF);
  EXPECT_EQ(EncodeE4m3(std::bit_cast<float>(0x7F800001u)), 0x7F);  // signalling NaN
}

TEST(E4m3Test, RandomSweepMatchesNearestValueOracle) {
  oracle::CheckRandomSweep(kE4m3Spec, BuildTable(kE4m3Spec, false), E4m3,
                           oracle::FloatSampler(0xE4A3, -14, 10), 1000000);
}

TEST(Ue4m3Test, DecodeIsE4m3AndGgufVariantZeroesTheSentinel) {
  for (int c = 0; c < 256; ++c) {
    const uint8_t code = static_cast<uint8_t>(c);
    const float e4m3 = DecodeE4m3(code);
    if (std::isnan(e4m3)) {
      EXPECT_TRUE(std::isnan(DecodeUe4m3(code)));
    } else {
      EXPECT_EQ(oracle::Bits(DecodeUe4m3(code)), oracle::Bits(e4m3));
    }
    // ggml: bit 7 ignored, 0x7F means 0.
    const float want_gguf = (c & 0x7F) == 0x7F ? 0.0f : std::fabs(DecodeE4m3(code & 0x7F));
    EXPECT_EQ(oracle::Bits(DecodeUe4m3GgufNvfp4(code)), oracle::Bits(want_gguf)) << c;
  }
}

TEST(Ue4m3Test, EncodeIsNonNegativeAndSaturating) {
  for (int c = 0; c <= 0x7E; ++c) {
    EXPECT_EQ(EncodeUe4m3(DecodeUe4m3(static_cast<uint8_t>(c))), c);
  }
  EXPECT_EQ(EncodeUe4m3(-0.0f), 0x00);
  EXPECT_EQ(EncodeUe4m3(-1.0f), 0x00);
  EXPECT_EQ(EncodeUe4m3(-kInf), 0x00);
  EXPECT_EQ(EncodeUe4m3(464.0f), 0x7E);
  EXPECT_EQ(EncodeUe4m3(kInf), 0x7E);
  EXPECT_EQ(EncodeUe4m3(kNan), 0x7F);
  EXPECT_EQ(EncodeUe4m3(-kNan), 0x7F);
  EXPECT_EQ(EncodeUe4m3(2.75f), EncodeE4m3(2.75f));
}

TEST(E5m2Test, DecodesAll256CodesLikeTheSpecFormula) { oracle::CheckDecodeAll(kE5m2Spec, DecE5m2); }

TEST(E5m2Test, SpecialCodes) {
  EXPECT_EQ(DecodeE5m2(0x7C), kInf);
  EXPECT_EQ(DecodeE5m2(0xFC), -kInf);
  for (uint8_t c : {0x7D, 0x7E, 0x7F, 0xFD, 0xFE, 0xFF}) EXPECT_TRUE(std::isnan(DecodeE5m2(c)));
  EXPECT_EQ(DecodeE5m2(0x01), std::ldexp(1.0f, -16));
  EXPECT_EQ(DecodeE5m2(0x04), std::ldexp(1.0f, -14));
}

TEST(E5m2Test, EveryCodeRoundTrips) {
  oracle::CheckRoundTrip(kE5m2Spec, DecE5m2, E5m2, /*include_inf=*/true);
  oracle::CheckRoundTrip(kE5m2Spec, DecE5m2, E5m2Sat, /*include_inf=*/false);
}

TEST(E5m2Test, EveryMidpointRoundsToEven) {
  // The IEEE variant's table ends with the inf pseudo-entry, so 61440 -> inf is checked here.
  oracle::CheckAllMidpoints(kE5m2Spec, BuildTable(kE5m2Spec, true), E5m2);
  oracle::CheckAllMidpoints(kE5m2Spec, BuildTable(kE5m2Spec, false), E5m2Sat);
}

TEST(E5m2Test, OverflowAndNan) {
  EXPECT_EQ(EncodeE5m2(57344.0f), 0x7B);
  EXPECT_EQ(EncodeE5m2(61439.0f), 0x7B);
  EXPECT_EQ(EncodeE5m2(61440.0f), 0x7C);
  EXPECT_EQ(EncodeE5m2(1e30f), 0x7C);
  EXPECT_EQ(EncodeE5m2(-kInf), 0xFC);
  for (float x : {57344.0f, 61440.0f, 1e30f, kInf}) {
    EXPECT_EQ(EncodeE5m2Sat(x), 0x7B) << x;
    EXPECT_EQ(EncodeE5m2Sat(-x), 0xFB) << x;
  }
  EXPECT_EQ(EncodeE5m2(kNan), 0x7F);
  EXPECT_EQ(EncodeE5m2(-kNan), 0xFF);
  EXPECT_EQ(EncodeE5m2Sat(-kNan), 0xFF);
}

TEST(E5m2Test, RandomSweepMatchesNearestValueOracle) {
  oracle::CheckRandomSweep(kE5m2Spec, BuildTable(kE5m2Spec, true), E5m2,
                           oracle::FloatSampler(0xE5A2, -20, 17), 1000000);
  oracle::CheckRandomSweep(kE5m2Spec, BuildTable(kE5m2Spec, false), E5m2Sat,
                           oracle::FloatSampler(0xE5A3, -20, 17), 1000000);
}

}  // namespace
}  // namespace tessera::numeric
