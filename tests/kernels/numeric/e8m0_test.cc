// Tests of kernels/numeric/e8m0.h: all 256 E8M0 codes against 2^(e-127) from std::ldexp, and the
// MX FLOOR scale rule of quant-formats.md §9.1 against std::ilogb over every binade and at random.
#include "kernels/numeric/e8m0.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>

#include <gtest/gtest.h>

#include "tests/kernels/numeric/numeric_oracle.h"

namespace tessera::numeric {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNan = std::numeric_limits<float>::quiet_NaN();

static_assert(DecodeE8m0(127) == 1.0f);
static_assert(DecodeE8m0(128) == 2.0f);
static_assert(DecodeE8m0(0) > 0.0f);
static_assert(EncodeE8m0Floor(6.0f, kE2m1EmaxPow2) == 127);  // floor(log2 6) = 2
static_assert(EncodeE8m0Floor(448.0f, kE4m3EmaxPow2) == 127);
static_assert(EncodeE8m0Floor(kInf, kE2m1EmaxPow2) == 0xFF);
static_assert(EncodeE8m0FromExponent(-300) == 0 && EncodeE8m0FromExponent(300) == 254);

// floor(log2(amax)) - emax, clamped, biased: written with std::ilogb.
uint8_t RefFloorScale(float amax, int emax) {
  if (!std::isfinite(amax)) return 0xFF;
  if (amax == 0.0f) return 0;
  const int e = std::clamp(std::ilogb(amax) - emax, -127, 127);
  return static_cast<uint8_t>(e + 127);
}

TEST(E8m0Test, DecodesAll256Codes) {
  for (int e = 0; e < 255; ++e) {
    const float want = static_cast<float>(std::ldexp(1.0, e - 127));
    EXPECT_EQ(oracle::Bits(DecodeE8m0(static_cast<uint8_t>(e))), oracle::Bits(want)) << e;
  }
  EXPECT_TRUE(std::isnan(DecodeE8m0(0xFF)));
  EXPECT_EQ(DecodeE8m0(254), std::ldexp(1.0f, 127));
}

TEST(E8m0Test, FloorRuleOverEveryBinade) {
  for (int emax : {kE2m1EmaxPow2, kE3m2EmaxPow2, kE2m3EmaxPow2, kE4m3EmaxPow2, kE5m2EmaxPow2}) {
    for (int k = -149; k <= 127; ++k) {
      const float p = std::ldexp(1.0f, k);
      for (float amax : {p, p * 1.5f, oracle::Down(2.0f * p), -p}) {
        if (!std::isfinite(amax) || amax == 0.0f) continue;
        // Binary32 subnormal amax: torchao reads exponent field 0; either way the result clamps.
        EXPECT_EQ(EncodeE8m0Floor(amax, emax), RefFloorScale(std::fabs(amax), emax))
            << amax << " emax " << emax;
      }
    }
  }
}

TEST(E8m0Test, FloorRuleKeepsScaledAmaxInRange) {
  oracle::FloatSampler sampler(0xE8E8, -100, 100);
  for (int i = 0; i < 100000; ++i) {
    const float amax = std::fabs(sampler.Next());
    const uint8_t e = EncodeE8m0Floor(amax, kE2m1EmaxPow2);
    ASSERT_EQ(e, RefFloorScale(amax, kE2m1EmaxPow2)) << amax;
    if (e > 0 && e < 254 && std::isfinite(amax)) {
      // amax / X lies in [4, 8): the top binade of E2M1 (which saturates above 6).
      const double scaled = static_cast<double>(amax) / DecodeE8m0(e);
      EXPECT_GE(scaled, 4.0);
      EXPECT_LT(scaled, 8.0);
    }
  }
}

TEST(E8m0Test, SpecialAmax) {
  EXPECT_EQ(EncodeE8m0Floor(0.0f, kE2m1EmaxPow2), 0);
  EXPECT_EQ(EncodeE8m0Floor(-0.0f, kE2m1EmaxPow2), 0);
  EXPECT_EQ(EncodeE8m0Floor(kNan, kE2m1EmaxPow2), 0xFF);
  EXPECT_EQ(EncodeE8m0Floor(-kInf, kE4m3EmaxPow2), 0xFF);
  EXPECT_EQ(EncodeE8m0Floor(std::numeric_limits<float>::max(), kE2m1EmaxPow2), 127 + 125);
  EXPECT_EQ(FloorLog2Bits(1.0f), 0);
  EXPECT_EQ(FloorLog2Bits(-0.75f), -1);
  EXPECT_EQ(EncodeE8m0FromExponent(-127), 0);
  EXPECT_EQ(EncodeE8m0FromExponent(0), 127);
  EXPECT_EQ(EncodeE8m0FromExponent(127), 254);
  EXPECT_EQ(EncodeE8m0FromExponent(128), 254);
}

}  // namespace
}  // namespace tessera::numeric
