// Tests of kernels/cpu/quant/activation_quant.h: hand-computed cases (ties, zeros, saturation,
// amax = 0, the vLLM corner cases) and random rows against oracles re-written from the formulas
// of quant-formats.md §5, §6 and §8.3 with the nearest-value search of quant_test_util.h, plus
// batch invariance of every per-row quantizer.
#include "kernels/cpu/quant/activation_quant.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "tests/kernels/cpu/quant_test_util.h"

namespace tessera::kernels::cpu {
namespace {

using testing::OracleDecodeE4m3;
using testing::OracleEncodeE2m1;
using testing::OracleEncodeE4m3;
using testing::OracleRoundHalfEven;
using testing::OracleSatI8;
using testing::RandomActivations;

constexpr float kNan = std::numeric_limits<float>::quiet_NaN();

// ------------------------------------------------------------------------------- FP8 static

TEST(Fp8StaticTest, HandComputedCodes) {
  // With scale 1 the codes are sat_e4m3(x) itself.
  const std::vector<float> x = {1.0f,
                                1.0625f,
                                1.1875f,
                                -1.0625f,
                                464.0f,
                                1000.0f,
                                -1e30f,
                                0.0f,
                                -0.0f,
                                0x1p-9f,
                                0x1p-10f,
                                0x1.8p-9f,
                                -0.0009f,
                                kNan,
                                448.0f,
                                240.0f,
                                std::ldexp(1.0f, -7)};
  const std::vector<uint8_t> want = {
      0x38,                    // 1.0
      0x38,                    // 1.0625 is halfway between 1.0 (0x38, even) and 1.125: ties to even
      0x3A,                    // 1.1875 is halfway between 1.125 (0x39) and 1.25 (0x3A, even)
      0xB8,                    // sign kept
      0x7E,                    // 464 would round to 480 (the NaN code) without the clamp
      0x7E, 0xFE, 0x00, 0x80,  // -0 keeps its sign
      0x01,                    // smallest subnormal 2^-9
      0x00,                    // 2^-10 is halfway between 0 and 2^-9: ties to even (0)
      0x02,                    // 1.5 · 2^-9 is halfway between codes 1 and 2: ties to even (2)
      0x80,                    // -0.0009 is below half of 2^-9: rounds to -0
      0x7F,                    // NaN stays NaN
      0x7E, 0x77, 0x04};       // 2^-7 is the subnormal 4 · 2^-9
  std::vector<uint8_t> q(x.size());
  QuantizeFp8Static(x.data(), static_cast<int64_t>(x.size()), 1.0f, Fp8ScaleOp::kDivide, q.data());
  for (size_t i = 0; i < x.size(); ++i) EXPECT_EQ(q[i], want[i]) << "x = " << x[i];
}

TEST(Fp8StaticTest, DivisionAndReciprocalFollowTheirOwnFormula) {
  std::mt19937 rng(1);
  const std::vector<float> x = RandomActivations(rng, 4096);
  const float scale = 0.0123f;
  std::vector<uint8_t> q_div(x.size());
  std::vector<uint8_t> q_rcp(x.size());
  QuantizeFp8Static(x.data(), 4096, scale, Fp8ScaleOp::kDivide, q_div.data());
  QuantizeFp8Static(x.data(), 4096, scale, Fp8ScaleOp::kMultiplyByReciprocal, q_rcp.data());
  const float inv = 1.0f / scale;
  for (size_t i = 0; i < x.size(); ++i) {
    ASSERT_EQ(q_div[i], OracleEncodeE4m3(x[i] / scale)) << i;
    ASSERT_EQ(q_rcp[i], OracleEncodeE4m3(x[i] * inv)) << i;
  }
}

// ----------------------------------------------------------------------------- FP8 per-token

TEST(Fp8PerTokenTest, HandComputedScalesAndBounds) {
  const int64_t k = 4;
  const std::vector<float> x = {
      1.0f,    -2.0f, 4.0f,    0.5f,  // amax 4 -> s = 4/448
      0.0f,    0.0f,  -0.0f,   0.0f,  // amax 0 -> the floor
      2000.0f, -1.0f, 1200.0f, 0.0f   // amax 2000, bounded to 1200 when ub is given
  };
  std::vector<uint8_t> q(x.size());
  std::vector<float> s(3);
  QuantizeFp8PerToken(x.data(), 3, k, nullptr, kFp8PerTokenMinScale, q.data(), s.data());
  EXPECT_EQ(s[0], 4.0f / 448.0f);
  EXPECT_EQ(q[2], 0x7E);  // the amax element maps to 448 exactly
  EXPECT_EQ(s[1], 1.0f / (448.0f * 512.0f));
  for (int i = 4; i < 8; ++i) EXPECT_EQ(q[i] & 0x7F, 0) << i;
  EXPECT_EQ(s[2], 2000.0f / 448.0f);

  const float ub = 1200.0f;
  QuantizeFp8PerToken(x.data(), 3, k, &ub, kFp8PerTokenMinScale, q.data(), s.data());
  EXPECT_EQ(s[0], 4.0f / 448.0f);  // below the bound: unchanged
  EXPECT_EQ(s[2], 1200.0f / 448.0f);
  EXPECT_EQ(q[8], 0x7E);   // 2000 / s saturates at 448
  EXPECT_EQ(q[10], 0x7E);  // 1200 / s = 448

  // min_scale = 0: plain amax / 448, and an all-zero row gets s = 1.
  QuantizeFp8PerToken(x.data(), 3, k, nullptr, 0.0f, q.data(), s.data());
  EXPECT_EQ(s[1], 1.0f);
  // A tiny row is lifted to the floor only when the floor is on.
  const std::vector<float> tiny = {1e-6f, -1e-7f};
  std::vector<uint8_t> qt(2);
  float st = 0.0f;
  QuantizeFp8PerToken(tiny.data(), 1, 2, nullptr, kFp8PerTokenMinScale, qt.data(), &st);
  EXPECT_EQ(st, kFp8PerTokenMinScale);
  QuantizeFp8PerToken(tiny.data(), 1, 2, nullptr, 0.0f, qt.data(), &st);
  EXPECT_EQ(st, 1e-6f / 448.0f);
}

TEST(Fp8PerTokenTest, RandomRowsMatchOracle) {
  std::mt19937 rng(2);
  const int64_t rows = 9;
  const int64_t k = 333;
  const std::vector<float> x = RandomActivations(rng, rows * k);
  const float ub_value = 3.0f;
  for (const float* ub : {static_cast<const float*>(nullptr), &ub_value}) {
    std::vector<uint8_t> q(x.size());
    std::vector<float> s(rows);
    QuantizeFp8PerToken(x.data(), rows, k, ub, kFp8PerTokenMinScale, q.data(), s.data());
    for (int64_t m = 0; m < rows; ++m) {
      double amax = 0.0;
      for (int64_t i = 0; i < k; ++i) amax = std::fmax(amax, std::fabs(x[m * k + i]));
      float a = static_cast<float>(amax);
      if (ub != nullptr) a = std::fmin(a, *ub);
      const float want_s = std::fmax(a / 448.0f, 1.0f / 229376.0f);
      ASSERT_EQ(s[m], want_s);
      for (int64_t i = 0; i < k; ++i) {
        ASSERT_EQ(q[m * k + i], OracleEncodeE4m3(x[m * k + i] / want_s)) << m << "," << i;
      }
    }
  }
}

// ----------------------------------------------------------------------- FP8 per-token-group

TEST(Fp8PerTokenGroupTest, GroupsEpsAndPartialLastGroup) {
  std::mt19937 rng(3);
  const int64_t rows = 5;
  const int64_t k = 300;  // groups of 128, 128, 44
  const int64_t group = 128;
  std::vector<float> x = RandomActivations(rng, rows * k);
  for (int64_t i = 128; i < 256; ++i) x[2 * k + i] = 0.0f;  // row 2, group 1 all zero
  std::vector<uint8_t> q(x.size());
  std::vector<float> s(rows * 3);
  QuantizeFp8PerTokenGroup(x.data(), rows, k, group, kFp8PerTokenGroupEps, q.data(), s.data());
  EXPECT_EQ(NumGroups(k, group), 3);
  EXPECT_EQ(s[2 * 3 + 1], 1e-10f / 448.0f);
  for (int64_t m = 0; m < rows; ++m) {
    for (int64_t g = 0; g < 3; ++g) {
      float amax = 1e-10f;
      for (int64_t i = g * group; i < std::min(k, (g + 1) * group); ++i) {
        amax = std::fmax(amax, std::fabs(x[m * k + i]));
      }
      const float want_s = amax / 448.0f;
      ASSERT_EQ(s[m * 3 + g], want_s);
      for (int64_t i = g * group; i < std::min(k, (g + 1) * group); ++i) {
        ASSERT_EQ(q[m * k + i], OracleEncodeE4m3(x[m * k + i] / want_s));
      }
    }
  }
  // eps = 0: the zero group gets s = 1 rather than 0.
  QuantizeFp8PerTokenGroup(x.data(), rows, k, group, 0.0f, q.data(), s.data());
  EXPECT_EQ(s[2 * 3 + 1], 1.0f);
}

// ---------------------------------------------------------------------------------- INT8

TEST(Int8SymmetricTest, HandComputedCodes) {
  const int64_t k = 8;
  const std::vector<float> x = {127.0f, -63.5f, 0.5f, 1.5f, -127.0f, 2.5f, -0.5f, kNan,
                                0.0f,   0.0f,   0.0f, 0.0f, -0.0f,   0.0f, 0.0f,  0.0f};
  std::vector<int8_t> q(x.size(), 99);
  std::vector<float> s(2);
  QuantizeInt8PerTokenSymmetric(x.data(), 2, k, q.data(), s.data());
  EXPECT_EQ(s[0], 1.0f);
  const std::vector<int8_t> want = {127, -64, 0, 2, -127, 2, 0, 0};  // halves to even; NaN -> 0
  for (int i = 0; i < 8; ++i) EXPECT_EQ(q[i], want[i]) << i;
  EXPECT_EQ(s[1], 0.0f);  // amax = 0: vLLM stores 0 and emits zeros
  for (int i = 8; i < 16; ++i) EXPECT_EQ(q[i], 0) << i;
}

TEST(Int8SymmetricTest, MultipliesBy127OverAmaxLikeVllm) {
  std::mt19937 rng(4);
  const int64_t rows = 7;
  const int64_t k = 257;
  const std::vector<float> x = RandomActivations(rng, rows * k);
  std::vector<int8_t> q(x.size());
  std::vector<float> s(rows);
  QuantizeInt8PerTokenSymmetric(x.data(), rows, k, q.data(), s.data());
  for (int64_t m = 0; m < rows; ++m) {
    float amax = 0.0f;
    for (int64_t i = 0; i < k; ++i) amax = std::fmax(amax, std::fabs(x[m * k + i]));
    ASSERT_EQ(s[m], amax / 127.0f);
    const float mult = 127.0f / amax;
    for (int64_t i = 0; i < k; ++i) {
      ASSERT_EQ(q[m * k + i], OracleSatI8(OracleRoundHalfEven(x[m * k + i] * mult)));
    }
  }
}

TEST(Int8AsymmetricTest, HandComputedRows) {
  const int64_t k = 2;
  const std::vector<float> x = {-128.0f, 127.0f,  // s = 1, azp = 0
                                0.0f,    255.0f,  // s = 1, azp = -128
                                -2.0f,   -1.0f,   // all negative: max seeded at FLT_MIN
                                0.0f,    0.0f,    // all zero
                                3.0f,    3.0f};   // max == min: the [0, max] fallback
  std::vector<int8_t> q(x.size());
  std::vector<float> s(5);
  std::vector<int32_t> azp(5);
  QuantizeInt8PerTokenAsymmetric(x.data(), 5, k, q.data(), s.data(), azp.data());
  EXPECT_EQ(s[0], 1.0f);
  EXPECT_EQ(azp[0], 0);
  EXPECT_EQ(q[0], -128);
  EXPECT_EQ(q[1], 127);
  EXPECT_EQ(s[1], 1.0f);
  EXPECT_EQ(azp[1], -128);
  EXPECT_EQ(q[2], -128);
  EXPECT_EQ(q[3], 127);
  EXPECT_EQ(s[2], (std::numeric_limits<float>::min() + 2.0f) / 255.0f);
  EXPECT_EQ(q[4], -128);  // the range is [-2, ~0]; -2 is the bottom code
  EXPECT_EQ(s[3], std::numeric_limits<float>::min() / 255.0f);
  EXPECT_EQ(azp[3], -128);
  EXPECT_EQ(q[6], -128);
  EXPECT_EQ(q[7], -128);
  EXPECT_EQ(s[4], 3.0f / 255.0f);
  EXPECT_EQ(azp[4], -128);
  EXPECT_EQ(q[8], 127);
  // Every row reconstructs to within half a step.
  for (int m = 0; m < 5; ++m) {
    for (int i = 0; i < k; ++i) {
      const double back = (static_cast<double>(q[m * k + i]) - azp[m]) * s[m];
      EXPECT_NEAR(back, x[m * k + i], 0.501 * s[m]) << m << "," << i;
    }
  }
}

TEST(Int8AsymmetricTest, RandomRowsMatchOracle) {
  std::mt19937 rng(5);
  const int64_t rows = 6;
  const int64_t k = 199;
  std::vector<float> x = RandomActivations(rng, rows * k);
  for (int64_t i = 0; i < k; ++i) x[3 * k + i] = std::fabs(x[3 * k + i]) + 0.25f;  // min > 0
  std::vector<int8_t> q(x.size());
  std::vector<float> s(rows);
  std::vector<int32_t> azp(rows);
  QuantizeInt8PerTokenAsymmetric(x.data(), rows, k, q.data(), s.data(), azp.data());
  for (int64_t m = 0; m < rows; ++m) {
    float mx = std::numeric_limits<float>::min();
    float mn = std::numeric_limits<float>::max();
    for (int64_t i = 0; i < k; ++i) {
      mx = std::fmax(mx, x[m * k + i]);
      mn = std::fmin(mn, x[m * k + i]);
    }
    const float want_s = (mx - mn) / 255.0f;
    const double want_azp = OracleRoundHalfEven(-128.0f - mn / want_s);
    ASSERT_EQ(s[m], want_s);
    ASSERT_EQ(azp[m], static_cast<int32_t>(want_azp));
    for (int64_t i = 0; i < k; ++i) {
      ASSERT_EQ(q[m * k + i], OracleSatI8(OracleRoundHalfEven(x[m * k + i] / want_s) + want_azp));
    }
  }
}

TEST(Int8StaticTest, HandComputedAndRandom) {
  const std::vector<float> x = {2.5f, -2.5f, 1000.0f, -1000.0f, 3.5f, kNan};
  std::vector<int8_t> q(x.size());
  QuantizeInt8Static(x.data(), 6, 1.0f, 0, q.data());
  EXPECT_EQ(q, (std::vector<int8_t>{2, -2, 127, -128, 4, 0}));
  QuantizeInt8Static(x.data(), 6, 1.0f, 10, q.data());
  EXPECT_EQ(q, (std::vector<int8_t>{12, 8, 127, -128, 14, 10}));

  std::mt19937 rng(6);
  const std::vector<float> r = RandomActivations(rng, 1000);
  std::vector<int8_t> qr(r.size());
  QuantizeInt8Static(r.data(), 1000, 0.01f, -7, qr.data());
  for (size_t i = 0; i < r.size(); ++i) {
    ASSERT_EQ(qr[i], OracleSatI8(OracleRoundHalfEven(r[i] / 0.01f) - 7.0)) << i;
  }
}

// ---------------------------------------------------------------------------------- NVFP4

uint8_t Nibble(const std::vector<uint8_t>& packed, int64_t i) {
  return static_cast<uint8_t>((packed[i / 2] >> (4 * (i % 2))) & 0xF);
}

TEST(Nvfp4QuantTest, HandComputedBlock) {
  // g = 1 and amax = 6: sf = e4m3(1) = 0x38, so the codes are e2m1(x) itself.
  const std::vector<float> x = {0.0f,  0.5f,  1.0f,  1.5f,  2.0f, 3.0f, 4.0f, 6.0f,
                                -0.2f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f, -6.0f};
  const std::vector<uint8_t> want = {0,  1, 2, 3, 4, 5, 6, 7,
                                     8,  // -0.2 -> -0
                                     2,  // 0.75 tie -> 1.0 (even code 2)
                                     2,  // 1.25 tie -> 1.0
                                     4,  // 1.75 tie -> 2.0
                                     4,  // 2.5 tie -> 2.0
                                     6,  // 3.5 tie -> 4.0
                                     6,  // 5 tie -> 4.0
                                     0xF};
  std::vector<uint8_t> q(8);
  uint8_t sf = 0;
  const float g = 1.0f;
  ASSERT_TRUE(QuantizeNvfp4(x.data(), 1, 16, &g, 0, q.data(), &sf));
  EXPECT_EQ(sf, 0x38);
  for (int i = 0; i < 16; ++i) EXPECT_EQ(Nibble(q, i), want[i]) << i;
  EXPECT_EQ(q[0] & 0xF, 0);  // element 0 in the low nibble of byte 0
  EXPECT_EQ(q[0] >> 4, 1);   // element 1 in the high nibble
}

TEST(Nvfp4QuantTest, ZeroBlockSaturationAndShape) {
  std::vector<float> x(32, 0.0f);
  for (int i = 16; i < 32; ++i) x[i] = static_cast<float>(i);  // amax 31
  std::vector<uint8_t> q(16, 0xAA);
  std::vector<uint8_t> sf(2, 0xAA);
  const float g = 1000.0f;  // g · 31 / 6 > 448: the block scale saturates
  ASSERT_TRUE(QuantizeNvfp4(x.data(), 1, 32, &g, 0, q.data(), sf.data()));
  EXPECT_EQ(sf[0], 0x00);
  for (int j = 0; j < 8; ++j) EXPECT_EQ(q[j], 0x00) << j;
  EXPECT_EQ(sf[1], 0x7E);
  // x · (1000 / 448) exceeds 6 for every x in 16..31: all saturate to code 7.
  EXPECT_EQ(Nibble(q, 31), 7);
  EXPECT_EQ(Nibble(q, 19), 7);
  EXPECT_FALSE(QuantizeNvfp4(x.data(), 1, 24, &g, 0, q.data(), sf.data()));
}

TEST(Nvfp4QuantTest, RandomRowsMatchOracleStaticAndPerRow) {
  std::mt19937 rng(7);
  const int64_t rows = 5;
  const int64_t k = 96;
  const std::vector<float> x = RandomActivations(rng, rows * k);
  std::vector<float> g_rows(rows);
  Nvfp4DynamicGlobalScalePerRow(x.data(), rows, k, g_rows.data());
  const float g_static = 2688.0f / 3.0f;
  for (int64_t stride : {0, 1}) {
    const float* g = stride == 0 ? &g_static : g_rows.data();
    std::vector<uint8_t> q(rows * k / 2);
    std::vector<uint8_t> sf(rows * k / 16);
    ASSERT_TRUE(QuantizeNvfp4(x.data(), rows, k, g, stride, q.data(), sf.data()));
    for (int64_t m = 0; m < rows; ++m) {
      const float gm = g[m * stride];
      for (int64_t b = 0; b < k / 16; ++b) {
        float amax = 0.0f;
        for (int64_t j = 0; j < 16; ++j) amax = std::fmax(amax, std::fabs(x[m * k + b * 16 + j]));
        const uint8_t want_sf = OracleEncodeE4m3(gm * amax / 6.0f);
        ASSERT_EQ(sf[m * (k / 16) + b], want_sf);
        const float sfv = static_cast<float>(OracleDecodeE4m3(want_sf));
        for (int64_t j = 0; j < 16; ++j) {
          const int64_t i = m * k + b * 16 + j;
          const uint8_t want = sfv == 0.0f ? 0 : OracleEncodeE2m1(x[i] * (gm / sfv));
          ASSERT_EQ(Nibble(q, i), want) << "row " << m << " element " << b * 16 + j;
        }
      }
    }
  }
}

TEST(Nvfp4QuantTest, DynamicGlobalScale) {
  const std::vector<float> x = {1.0f, -2688.0f, 3.0f, 0.0f};
  EXPECT_EQ(Nvfp4DynamicGlobalScale(x.data(), 4), 1.0f);
  EXPECT_EQ(Nvfp4DynamicGlobalScale(x.data(), 1), 2688.0f);
  EXPECT_EQ(Nvfp4DynamicGlobalScale(x.data() + 3, 1), 1.0f);  // amax = 0
  std::vector<float> g(2);
  Nvfp4DynamicGlobalScalePerRow(x.data(), 2, 2, g.data());
  EXPECT_EQ(g[0], 1.0f);
  EXPECT_EQ(g[1], 2688.0f / 3.0f);
}

// ----------------------------------------------------------------------- batch invariance

TEST(ActivationQuantTest, PerRowQuantizersAreBatchInvariant) {
  std::mt19937 rng(8);
  const int64_t rows = 17;
  const int64_t k = 160;
  const std::vector<float> x = RandomActivations(rng, rows * k);
  std::vector<uint8_t> q8(rows * k), q8_one(k);
  std::vector<int8_t> qi(rows * k), qi_one(k);
  std::vector<float> s(rows * 10), s_one(10);
  std::vector<int32_t> azp(rows), azp_one(1);
  std::vector<float> g(rows);
  Nvfp4DynamicGlobalScalePerRow(x.data(), rows, k, g.data());
  std::vector<uint8_t> q4(rows * k / 2), q4_one(k / 2), sf(rows * k / 16), sf_one(k / 16);

  QuantizeFp8PerToken(x.data(), rows, k, nullptr, kFp8PerTokenMinScale, q8.data(), s.data());
  for (int64_t m = 0; m < rows; ++m) {
    QuantizeFp8PerToken(&x[m * k], 1, k, nullptr, kFp8PerTokenMinScale, q8_one.data(),
                        s_one.data());
    ASSERT_EQ(s_one[0], s[m]);
    ASSERT_TRUE(std::equal(q8_one.begin(), q8_one.end(), q8.begin() + m * k));
  }
  QuantizeFp8PerTokenGroup(x.data(), rows, k, 16, kFp8PerTokenGroupEps, q8.data(), s.data());
  for (int64_t m = 0; m < rows; ++m) {
    QuantizeFp8PerTokenGroup(&x[m * k], 1, k, 16, kFp8PerTokenGroupEps, q8_one.data(),
                             s_one.data());
    ASSERT_TRUE(std::equal(s_one.begin(), s_one.end(), s.begin() + m * 10));
    ASSERT_TRUE(std::equal(q8_one.begin(), q8_one.end(), q8.begin() + m * k));
  }
  QuantizeInt8PerTokenAsymmetric(x.data(), rows, k, qi.data(), s.data(), azp.data());
  for (int64_t m = 0; m < rows; ++m) {
    QuantizeInt8PerTokenAsymmetric(&x[m * k], 1, k, qi_one.data(), s_one.data(), azp_one.data());
    ASSERT_EQ(s_one[0], s[m]);
    ASSERT_EQ(azp_one[0], azp[m]);
    ASSERT_TRUE(std::equal(qi_one.begin(), qi_one.end(), qi.begin() + m * k));
  }
  ASSERT_TRUE(QuantizeNvfp4(x.data(), rows, k, g.data(), 1, q4.data(), sf.data()));
  for (int64_t m = 0; m < rows; ++m) {
    ASSERT_TRUE(QuantizeNvfp4(&x[m * k], 1, k, &g[m], 1, q4_one.data(), sf_one.data()));
    ASSERT_TRUE(std::equal(q4_one.begin(), q4_one.end(), q4.begin() + m * k / 2));
    ASSERT_TRUE(std::equal(sf_one.begin(), sf_one.end(), sf.begin() + m * k / 16));
  }
}

}  // namespace
}  // namespace tessera::kernels::cpu
