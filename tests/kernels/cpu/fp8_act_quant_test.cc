// The vectorized FP8 activation quantizers (kernels/cpu/fast/fp8_act_quant.h) against the scalar
// references (kernels/cpu/quant/activation_quant.h, numeric::EncodeE4m3): the same bytes and
// scales, on every compiled target. The encoder is checked on a stride through all 2^32 float
// bit patterns, around every E4M3 value and rounding midpoint, and on the special values.
#include "kernels/cpu/fast/fp8_act_quant.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/cpu/quant/activation_quant.h"
#include "kernels/numeric/fp8.h"
#include "tests/kernels/cpu/hwy_targets_test_util.h"

namespace tessera::kernels::cpu::fast {
namespace {

float FromBits(uint32_t b) {
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}

uint32_t ToBits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

// The codes, and the decoded values bit for bit (NaN codes give the quiet NaN with their sign).
void ExpectEncodes(const std::vector<float>& x, float scale) {
  std::vector<uint8_t> got(x.size()), codes_only(x.size());
  std::vector<float> decoded(x.size());
  FastEncodeE4m3Divide(x.data(), static_cast<int64_t>(x.size()), scale, got.data(),
                       decoded.data());
  FastEncodeE4m3Divide(x.data(), static_cast<int64_t>(x.size()), scale, codes_only.data());
  ASSERT_EQ(codes_only, got);
  for (size_t i = 0; i < x.size(); ++i) {
    ASSERT_EQ(got[i], numeric::EncodeE4m3(x[i] / scale))
        << "x bits 0x" << std::hex << ToBits(x[i]) << " scale " << scale;
    ASSERT_EQ(ToBits(decoded[i]), ToBits(numeric::DecodeE4m3(got[i])))
        << "code 0x" << std::hex << int{got[i]};
  }
}

TEST(Fp8ActQuantTest, EncodeMatchesScalarOnEveryCodeBoundary) {
  std::vector<float> x;
  for (int c = 0; c <= 0x7E; ++c) {
    const float v = numeric::DecodeE4m3(static_cast<uint8_t>(c));
    const float next = c < 0x7E ? numeric::DecodeE4m3(static_cast<uint8_t>(c + 1)) : 480.0f;
    for (const float anchor : {v, (v + next) / 2}) {  // midpoints are exact in f32
      for (int dlt = -3; dlt <= 3; ++dlt) {
        const uint32_t b = ToBits(anchor) + static_cast<uint32_t>(dlt);
        if (anchor == 0.0f && dlt < 0) continue;
        x.push_back(FromBits(b));
        x.push_back(-FromBits(b));
      }
    }
  }
  const float inf = std::numeric_limits<float>::infinity();
  for (const float v : {0.0f, -0.0f, inf, -inf, 448.0f, 463.99f, 464.0f, 479.9f, 480.0f, 1e30f,
                        std::numeric_limits<float>::max(), std::numeric_limits<float>::denorm_min(),
                        1e-40f, -1e-40f, 1e-3f, std::nanf(""), -std::nanf(""),
                        FromBits(0x7F800001u), FromBits(0xFFC00123u)}) {
    x.push_back(v);
  }
  ForEachHwyTarget([&] {
    ExpectEncodes(x, 1.0f);
    ExpectEncodes(x, 0.37f);
    ExpectEncodes(x, 3.1e-3f);
  });
}

TEST(Fp8ActQuantTest, EncodeMatchesScalarOnAStrideThroughAllFloats) {
  std::vector<float> x;
  for (uint64_t b = 0; b < (uint64_t{1} << 32); b += 257)
    x.push_back(FromBits(static_cast<uint32_t>(b)));
  ExpectEncodes(x, 1.0f);  // best target; the boundary test covers every target
}

TEST(Fp8ActQuantTest, PerTokenAndGroupMatchReference) {
  std::mt19937 rng(5);
  std::normal_distribution<float> nd(0.0f, 3.0f);
  ForEachHwyTarget([&] {
    for (const int64_t k : {1, 15, 17, 100, 2048}) {
      const int64_t rows = 4;
      std::vector<float> x(rows * k);
      for (auto& v : x) v = nd(rng);
      if (k > 3) x[k + 2] = std::nanf("");  // row 1 holds a NaN (skipped by amax, code 0x7F)
      std::fill(x.begin() + 2 * k, x.begin() + 3 * k, 0.0f);  // row 2 all zero
      x[3 * k] = 1e4f;                                        // row 3 clipped by scale_ub
      const float ub = 200.0f;
      for (const float* ub_ptr : {static_cast<const float*>(nullptr), &ub}) {
        for (const float min_scale : {0.0f, kFp8PerTokenMinScale}) {
          std::vector<uint8_t> want(rows * k), got(rows * k);
          std::vector<float> ws(rows), gs(rows);
          QuantizeFp8PerToken(x.data(), rows, k, ub_ptr, min_scale, want.data(), ws.data());
          std::vector<float> dec(rows * k);
          FastQuantizeFp8PerToken(x.data(), rows, k, ub_ptr, min_scale, got.data(), gs.data(),
                                  dec.data());
          EXPECT_EQ(got, want) << "k " << k;
          EXPECT_EQ(gs, ws) << "k " << k;
          for (int64_t i = 0; i < rows * k; ++i) {
            ASSERT_EQ(ToBits(dec[i]), ToBits(numeric::DecodeE4m3(want[i]))) << i;
          }
        }
      }
      for (const int64_t group : {int64_t{16}, int64_t{128}, k}) {
        for (const float eps : {0.0f, kFp8PerTokenGroupEps}) {
          const int64_t groups = (k + group - 1) / group;
          std::vector<uint8_t> want(rows * k), got(rows * k);
          std::vector<float> ws(rows * groups), gs(rows * groups);
          QuantizeFp8PerTokenGroup(x.data(), rows, k, group, eps, want.data(), ws.data());
          std::vector<float> dec(rows * k);
          FastQuantizeFp8PerTokenGroup(x.data(), rows, k, group, eps, got.data(), gs.data(),
                                       dec.data());
          EXPECT_EQ(got, want) << "k " << k << " group " << group;
          for (int64_t i = 0; i < rows * k; ++i) {
            ASSERT_EQ(ToBits(dec[i]), ToBits(numeric::DecodeE4m3(want[i]))) << i;
          }
          EXPECT_EQ(gs, ws) << "k " << k << " group " << group;
        }
      }
    }
  });
}

}  // namespace
}  // namespace tessera::kernels::cpu::fast
