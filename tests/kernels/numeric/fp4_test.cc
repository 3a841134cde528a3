// Exhaustive tests of kernels/numeric/fp4.h: all 16 E2M1 codes against the table every FP4
// consumer uses (quant-formats.md §2.1), the RNE tie points of §2.2, saturation at +-6, NaN, a
// random sweep against the nearest-value oracle, and the pairwise nibble packing of §8.1.
#include "kernels/numeric/fp4.h"

#include <array>
#include <cmath>
#include <cstdint>
#include <limits>

#include <gtest/gtest.h>

#include "tests/kernels/numeric/numeric_oracle.h"

namespace tessera::numeric {
namespace {

using oracle::BuildTable;
using oracle::kE2m1Spec;

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNan = std::numeric_limits<float>::quiet_NaN();

static_assert(DecodeE2m1(0x7) == 6.0f);
static_assert(DecodeE2m1(0xF) == -6.0f);
static_assert(DecodeE2m1(0x1) == 0.5f);
static_assert(EncodeE2m1(5.0f) == 0x6);
static_assert(EncodeE2m1(5.01f) == 0x7);
static_assert(EncodeE2m1(-100.0f) == 0xF);
static_assert(EncodeE2m1(0.25f) == 0x0);
static_assert(PackE2m1Pair(0x3, 0xA) == 0xA3);
static_assert(LowNibble(0xA3) == 0x3 && HighNibble(0xA3) == 0xA);

uint32_t E2m1(float x) { return EncodeE2m1(x); }
float DecE2m1(uint32_t c) { return DecodeE2m1(static_cast<uint8_t>(c)); }

TEST(E2m1Test, DecodesAll16CodesLikeTheSpecTable) {
  // The literal table from the spec, independent of the bit layout.
  constexpr std::array<float, 8> kMagnitudes = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
  for (int c = 0; c < 16; ++c) {
    const float want = (c & 8) ? -kMagnitudes[c & 7] : kMagnitudes[c & 7];
    EXPECT_EQ(oracle::Bits(DecodeE2m1(static_cast<uint8_t>(c))), oracle::Bits(want)) << c;
  }
  oracle::CheckDecodeAll(kE2m1Spec, DecE2m1);
  // Only the low nibble counts: 0xF5 is code 5, 0xAD is code 0xD.
  EXPECT_EQ(DecodeE2m1(0xF5), 3.0f);
  EXPECT_EQ(DecodeE2m1(0xAD), -3.0f);
}

TEST(E2m1Test, EveryCodeRoundTrips) {
  oracle::CheckRoundTrip(kE2m1Spec, DecE2m1, E2m1, /*include_inf=*/false);
}

TEST(E2m1Test, SpecTiePoints) {
  // quant-formats.md §2.2: the code at each tie point, just above it and just below it.
  const struct {
    float x;
    uint8_t at, above, below;
  } kTies[] = {{0.25f, 0x0, 0x1, 0x0}, {0.75f, 0x2, 0x2, 0x1}, {1.25f, 0x2, 0x3, 0x2},
               {1.75f, 0x4, 0x4, 0x3}, {2.5f, 0x4, 0x5, 0x4},  {3.5f, 0x6, 0x6, 0x5},
               {5.0f, 0x6, 0x7, 0x6}};
  for (const auto& t : kTies) {
    EXPECT_EQ(EncodeE2m1(t.x), t.at) << t.x;
    EXPECT_EQ(EncodeE2m1(oracle::Up(t.x)), t.above) << t.x;
    EXPECT_EQ(EncodeE2m1(oracle::Down(t.x)), t.below) << t.x;
    EXPECT_EQ(EncodeE2m1(-t.x), t.at | 0x8) << -t.x;
    EXPECT_EQ(EncodeE2m1(-oracle::Up(t.x)), t.above | 0x8) << -t.x;
  }
}

TEST(E2m1Test, EveryMidpointRoundsToEven) {
  oracle::CheckAllMidpoints(kE2m1Spec, BuildTable(kE2m1Spec, false), E2m1);
}

TEST(E2m1Test, SaturatesAtSixAndNanGivesPlusSix) {
  for (float x : {5.0001f, 6.0f, 6.5f, 7.0f, 100.0f, std::numeric_limits<float>::max(), kInf}) {
    EXPECT_EQ(EncodeE2m1(x), 0x7) << x;
    EXPECT_EQ(EncodeE2m1(-x), 0xF) << -x;
  }
  EXPECT_EQ(EncodeE2m1(kNan), 0x7);
  EXPECT_EQ(EncodeE2m1(-kNan), 0x7);
  EXPECT_EQ(EncodeE2m1(-0.0f), 0x8);
  EXPECT_EQ(EncodeE2m1(-0.1f), 0x8);
}

TEST(E2m1Test, RandomSweepMatchesNearestValueOracle) {
  oracle::CheckRandomSweep(kE2m1Spec, BuildTable(kE2m1Spec, false), E2m1,
                           oracle::FloatSampler(0xE2A1, -4, 4), 1000000);
}

TEST(E2m1Test, PairwiseNibblePacking) {
  // A 33-element row (odd length: the last byte's high nibble stays whatever it was).
  std::array<uint8_t, 17> packed{};
  packed[16] = 0xB0;
  for (size_t i = 0; i < 33; ++i) SetE2m1Nibble(packed.data(), i, static_cast<uint8_t>(i * 7 % 16));
  for (size_t i = 0; i < 33; ++i) {
    const uint8_t code = static_cast<uint8_t>(i * 7 % 16);
    EXPECT_EQ(GetE2m1Nibble(packed.data(), i), code) << i;
    EXPECT_EQ(oracle::Bits(DecodeE2m1At(packed.data(), i)), oracle::Bits(DecodeE2m1(code)));
  }
  for (size_t j = 0; j < 16; ++j) {
    EXPECT_EQ(packed[j], PackE2m1Pair(static_cast<uint8_t>(2 * j * 7 % 16),
                                      static_cast<uint8_t>((2 * j + 1) * 7 % 16)));
    EXPECT_EQ(LowNibble(packed[j]), GetE2m1Nibble(packed.data(), 2 * j));
    EXPECT_EQ(HighNibble(packed[j]), GetE2m1Nibble(packed.data(), 2 * j + 1));
  }
  EXPECT_EQ(packed[16], 0xB0 | (32 * 7 % 16));
  // Element 0 is the low nibble, as compressed-tensors `idx[0] | idx[1] << 4` writes it.
  EXPECT_EQ(PackE2m1Pair(EncodeE2m1(1.0f), EncodeE2m1(-6.0f)), 0xF2);
}

}  // namespace
}  // namespace tessera::numeric
