// The vectorized row kernels (kernels/cpu/fast/fast_elementwise.h) against the scalar ones
// (kernels/cpu/elementwise.h, rope.h) on random data with lengths that are not multiples of any
// vector width: RoPE and the residual add bit for bit, RMSNorm within one ulp, SwiGLU within a few
// ulp (Highway's exp) and independent of where an element falls in the call.
#include "kernels/cpu/fast/fast_elementwise.h"

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <random>
#include <tuple>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/rope.h"

namespace tessera::kernels::cpu::fast {
namespace {

std::vector<float> Normal(int64_t n, float sigma, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, sigma);
  std::vector<float> v(n);
  for (auto& e : v) e = nd(rng);
  return v;
}

class RowLengthTest : public ::testing::TestWithParam<int64_t> {};

TEST_P(RowLengthTest, RmsNormWithinOneUlp) {
  const int64_t n = GetParam(), rows = 3;
  const auto x = Normal(rows * n, 3.0f, 1), w = Normal(n, 1.0f, 2);
  std::vector<float> want(rows * n), got(rows * n);
  RmsNorm(x.data(), w.data(), rows, n, 1e-5f, want.data());
  FastRmsNorm(x.data(), w.data(), rows, n, 1e-5f, got.data());
  for (int64_t i = 0; i < rows * n; ++i) {
    ASSERT_NEAR(got[i], want[i], std::ldexp(std::fabs(want[i]), -23)) << i;
  }
  // In place, as the decoder's q/k norms run it.
  std::vector<float> inplace = x;
  FastRmsNorm(inplace.data(), w.data(), rows, n, 1e-5f, inplace.data());
  EXPECT_EQ(inplace, got);
}

TEST_P(RowLengthTest, SwiGluWithinFewUlpAndPositionIndependent) {
  const int64_t n = GetParam();
  auto g = Normal(n, 4.0f, 3);
  const auto up = Normal(n, 1.0f, 4);
  // The exp's extremes: overflow of exp(-g), underflow, zero and NaN.
  // Highway's Exp is only defined up to +104: gates below about -178 made it wrap (review).
  const float edges[] = {-120.0f, -88.5f, -30.0f,  0.0f,    -0.0f,    30.0f,    88.5f,
                         120.0f,  NAN,    -178.0f, -200.0f, -1000.0f, -FLT_MAX, FLT_MAX};
  constexpr int64_t kEdges = sizeof(edges) / sizeof(edges[0]);
  for (int64_t i = 0; i < n && i < kEdges; ++i) g[i * 5 % n] = edges[i];
  std::vector<float> want(n), got(n);
  SwiGlu(g.data(), up.data(), n, want.data());
  FastSwiGlu(g.data(), up.data(), n, got.data());
  for (int64_t i = 0; i < n; ++i) {
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(got[i])) << i;
      continue;
    }
    if (std::isinf(want[i])) {  // FLT_MAX · up overflows in both
      EXPECT_EQ(got[i], want[i]) << i << " g=" << g[i];
      continue;
    }
    ASSERT_NEAR(got[i], want[i], 4e-7f * std::fabs(want[i]) + 1e-37f) << i << " g=" << g[i];
  }
  // Every element alone (a tail of one) gives the bits it got inside the long call.
  for (int64_t i = 0; i < n; ++i) {
    float one;
    FastSwiGlu(g.data() + i, up.data() + i, 1, &one);
    if (std::isnan(got[i])) {
      EXPECT_TRUE(std::isnan(one)) << i;
    } else {
      ASSERT_EQ(one, got[i]) << i;
    }
  }
}

TEST_P(RowLengthTest, GeluGluWithinFewUlpAndPositionIndependent) {
  const int64_t n = GetParam();
  auto g = Normal(n, 3.0f, 7);
  const auto up = Normal(n, 1.0f, 8);
  // tanh's saturation on both sides, the cube's overflow, zeros and NaN.
  const float edges[] = {-30.0f, -9.0f, -0.0f, 0.0f, 9.0f, 30.0f, 1e13f, -1e13f, NAN, 1e-30f};
  constexpr int64_t kEdges = sizeof(edges) / sizeof(edges[0]);
  for (int64_t i = 0; i < n && i < kEdges; ++i) g[i * 5 % n] = edges[i];
  for (const GeluApprox approx : {GeluApprox::kTanh, GeluApprox::kErf}) {
    std::vector<float> want(n), got(n);
    GeluGlu(g.data(), up.data(), n, approx, want.data());
    FastGeluGlu(g.data(), up.data(), n, approx, got.data());
    for (int64_t i = 0; i < n; ++i) {
      if (std::isnan(want[i])) {
        EXPECT_TRUE(std::isnan(got[i])) << i << " g=" << g[i];
        continue;
      }
      // Near gelu's zero crossing of large negative g the result is a tiny difference: bound
      // it by the magnitude of the terms (|g·up|), not of the result.
      ASSERT_NEAR(got[i], want[i], 4e-7f * std::fabs(want[i]) + 2e-7f * std::fabs(g[i] * up[i]))
          << i << " g=" << g[i];
    }
    for (int64_t i = 0; i < n; ++i) {
      float one;
      FastGeluGlu(g.data() + i, up.data() + i, 1, approx, &one);
      if (std::isnan(got[i])) {
        EXPECT_TRUE(std::isnan(one)) << i;
      } else {
        ASSERT_EQ(one, got[i]) << i;
      }
    }
  }
  // A point of PyTorch's curve (torch.nn.functional.gelu(torch.tensor(1.0), approximate="tanh")
  // = 0.8411920070648193, approximate="none" = 0.8413447141647339).
  const float one = 1.0f, unit = 1.0f;
  float t, e;
  GeluGlu(&one, &unit, 1, GeluApprox::kTanh, &t);
  GeluGlu(&one, &unit, 1, GeluApprox::kErf, &e);
  EXPECT_NEAR(t, 0.8411920070648193f, 1e-7f);
  EXPECT_NEAR(e, 0.8413447141647339f, 1e-7f);
}

TEST_P(RowLengthTest, SwiGluClampedWithinFewUlpAndPositionIndependent) {
  const int64_t n = GetParam();
  auto g = Normal(n, 6.0f, 9);
  auto up = Normal(n, 6.0f, 10);
  // Both clamps' edges (gate above the limit, up beyond ±limit), exp's extremes and NaN.
  const float edges[] = {7.0f, 7.5f, -7.5f, 1e30f, -1e30f, -120.0f, 0.0f, -0.0f, NAN, -FLT_MAX};
  constexpr int64_t kEdges = sizeof(edges) / sizeof(edges[0]);
  for (int64_t i = 0; i < n && i < kEdges; ++i) {
    g[i * 5 % n] = edges[i];
    up[(i * 3 + 1) % n] = edges[kEdges - 1 - i];
  }
  constexpr float kAlpha = 1.702f, kLimit = 7.0f;
  std::vector<float> want(n), got(n);
  SwiGluClamped(g.data(), up.data(), n, kAlpha, kLimit, want.data());
  FastSwiGluClamped(g.data(), up.data(), n, kAlpha, kLimit, got.data());
  for (int64_t i = 0; i < n; ++i) {
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(got[i])) << i << " g=" << g[i] << " up=" << up[i];
      continue;
    }
    ASSERT_NEAR(got[i], want[i], 4e-7f * std::fabs(want[i]) + 1e-37f) << i << " g=" << g[i];
  }
  for (int64_t i = 0; i < n; ++i) {
    float one;
    FastSwiGluClamped(g.data() + i, up.data() + i, 1, kAlpha, kLimit, &one);
    if (std::isnan(got[i])) {
      EXPECT_TRUE(std::isnan(one)) << i;
    } else {
      ASSERT_EQ(one, got[i]) << i;
    }
  }
  // PyTorch (transformers' GptOssExperts' lines on these values): gate 1, 9 (clamped to 7), -3
  // with up 0.5, -8 (clamped to -7), 2.
  const float gates[] = {1.0f, 9.0f, -3.0f}, ups[] = {0.5f, -8.0f, 2.0f};
  const float torch_values[] = {1.2686936855316162f, -41.999717712402344f, -0.054213933646678925f};
  float mine[3];
  SwiGluClamped(gates, ups, 3, kAlpha, kLimit, mine);
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(mine[i], torch_values[i], 2e-7f * 42) << i;
}

TEST_P(RowLengthTest, AddInPlaceBitIdentical) {
  const int64_t n = GetParam();
  const auto x = Normal(n, 1.0f, 5);
  auto want = Normal(n, 1.0f, 6), got = want;
  AddInPlace(want.data(), x.data(), n);
  FastAddInPlace(got.data(), x.data(), n);
  EXPECT_EQ(got, want);
}

INSTANTIATE_TEST_SUITE_P(Lengths, RowLengthTest, ::testing::Values(1, 7, 16, 33, 64, 2048, 5635));

struct RopeShape {
  int64_t heads, head_dim, rope_dim;
};

class RopeTest : public ::testing::TestWithParam<std::tuple<RopeShape, RopePairing>> {};

TEST_P(RopeTest, BitIdenticalToScalar) {
  const auto [s, pairing] = GetParam();
  std::vector<float> inv_freq(s.rope_dim / 2);
  for (size_t i = 0; i < inv_freq.size(); ++i) {
    inv_freq[i] =
        std::pow(10000.0f, -2.0f * static_cast<float>(i) / static_cast<float>(s.rope_dim));
  }
  for (int64_t position : {0, 1, 17, 4095, 131071}) {
    auto want = Normal(s.heads * s.head_dim, 1.0f, static_cast<uint32_t>(position + 7));
    auto got = want;
    ApplyRope(want.data(), s.heads, s.head_dim, s.rope_dim, position, inv_freq.data(), pairing);
    std::vector<float> cos(s.rope_dim / 2), sin(s.rope_dim / 2);
    RopeCosSin(position, inv_freq.data(), s.rope_dim / 2, cos.data(), sin.data());
    FastApplyRope(got.data(), s.heads, s.head_dim, s.rope_dim, cos.data(), sin.data(), pairing);
    ASSERT_EQ(got, want) << "position " << position;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, RopeTest,
    ::testing::Combine(::testing::Values(RopeShape{32, 64, 64}, RopeShape{4, 128, 128},
                                         RopeShape{3, 80, 32},  // partial rotary (Phi-style)
                                         RopeShape{5, 6, 6}, RopeShape{2, 96, 70}),
                       ::testing::Values(RopePairing::kRotateHalf, RopePairing::kInterleaved)));

}  // namespace
}  // namespace tessera::kernels::cpu::fast
