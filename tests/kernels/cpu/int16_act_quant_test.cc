// The int16 activation quantizer (kernels/cpu/fast/int16_act_quant.h): the AVX-512 rows bit for
// bit against the portable group quantizer (codes, scales, sums; the row padding zeroed), every
// x̂ = d · q within 1.005 · 2^-16 of its group's largest |x| (plus 2^-134 where d is an f32
// subnormal; a truncating or coarser rounding breaks it), the largest element at ±32767, and groups
// holding NaN or ±inf marked by a NaN scale without touching their neighbours; magnitudes from f32
// subnormals to near FLT_MAX.
#include "kernels/cpu/fast/int16_act_quant.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/cpu/fast/bf16_dot_matmul.h"

namespace tessera::kernels::cpu::fast {
namespace {

// rows x k activations whose groups span many magnitudes (one scale per group).
std::vector<float> MixedRows(int64_t rows, int64_t k, int64_t group, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::uniform_int_distribution<int> exp(-140, 120);
  std::vector<float> x(rows * k);
  for (int64_t g = 0; g < rows * k / group; ++g) {
    const float scale = std::ldexp(1.0f, exp(rng));
    for (int64_t i = 0; i < group; ++i) x[g * group + i] = nd(rng) * scale;
  }
  return x;
}

TEST(Int16ActQuantTest, MatchesTheScalarQuantizerAndItsBound) {
  if (!Int16ActsAvailable()) GTEST_SKIP() << "no AVX-512 BW on this CPU";
  for (const int64_t group : {16, 32, 128}) {
    for (const int64_t k : {group, 4 * group, 2048 + 2 * group}) {
      SCOPED_TRACE("group " + std::to_string(group) + " k " + std::to_string(k));
      const int64_t rows = 5, groups = k / group, stride = Bf16DotActStride(k);
      std::vector<float> x = MixedRows(rows, k, group, static_cast<uint32_t>(k + group));
      x[3] = 0.0f;
      std::fill(x.begin() + group, x.begin() + 2 * group, 0.0f);  // an all-zero group
      x[k + 7] = std::numeric_limits<float>::max();               // row 1: the largest finite
      std::vector<int16_t> q(rows * stride, 0x5A5A);
      std::vector<float> d(rows * groups, -1.0f), sums(rows * groups, -1.0f);
      QuantizeActsInt16(x.data(), k, group, 0, rows, q.data(), d.data(), sums.data());
      for (int64_t m = 0; m < rows; ++m) {
        for (int64_t g = 0; g < groups; ++g) {
          const float* xg = x.data() + m * k + g * group;
          std::vector<int16_t> want(group);
          float want_d, want_sum;
          QuantizeGroupInt16Scalar(xg, group, want.data(), &want_d, &want_sum);
          const int64_t at = m * groups + g;
          ASSERT_EQ(std::memcmp(q.data() + m * stride + g * group, want.data(), group * 2), 0)
              << m << " " << g;
          ASSERT_EQ(std::memcmp(&d[at], &want_d, 4), 0) << m << " " << g;
          ASSERT_EQ(std::memcmp(&sums[at], &want_sum, 4), 0) << m << " " << g;
          double amax = 0;
          for (int64_t i = 0; i < group; ++i) amax = std::max(amax, std::fabs(1.0 * xg[i]));
          bool top = amax == 0;
          for (int64_t i = 0; i < group; ++i) {
            const int16_t c = q[m * stride + g * group + i];
            ASSERT_GE(c, -32767);
            // Plus 32767 half-steps of the f32 subnormal d of the tiniest groups (< 2^-134).
            ASSERT_NEAR(1.0 * d[at] * c, xg[i], 1.005 * std::ldexp(amax, -16) + 0x1p-134) << i;
            if (std::fabs(1.0 * xg[i]) == amax) top = top || std::abs(c) == 32767;
          }
          EXPECT_TRUE(top) << "the group's largest element is not at +-32767";
        }
        for (int64_t i = k; i < stride; ++i) ASSERT_EQ(q[m * stride + i], 0) << "padding " << i;
      }
    }
  }
}

TEST(Int16ActQuantTest, NonFiniteGroupsGetANanScaleAndStayInTheirGroup) {
  if (!Int16ActsAvailable()) GTEST_SKIP() << "no AVX-512 BW on this CPU";
  const int64_t k = 96, group = 32;
  for (const float bad :
       {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
        -std::numeric_limits<float>::infinity()}) {
    std::vector<float> x = MixedRows(1, k, group, 7);
    x[group + 5] = bad;
    std::vector<int16_t> q(Bf16DotActStride(k), 3);
    std::vector<float> d(3), sums(3);
    QuantizeActsInt16(x.data(), k, group, 0, 1, q.data(), d.data(), sums.data());
    EXPECT_TRUE(std::isnan(d[1]) && std::isnan(sums[1]));
    for (int64_t i = group; i < 2 * group; ++i) EXPECT_EQ(q[i], 0);
    EXPECT_TRUE(std::isfinite(d[0]) && std::isfinite(d[2]));
    EXPECT_GT(d[0], 0.0f);
  }
}

}  // namespace
}  // namespace tessera::kernels::cpu::fast
