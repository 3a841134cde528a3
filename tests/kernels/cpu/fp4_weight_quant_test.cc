// The vectorized online FP4 weight quantizers (kernels/cpu/fast/fp4_weight_quant.h) against the
// scalar loop they replaced (numeric::EncodeE2m1 per element, the block scale expressions of
// ModelOpt's NVFP4 recipe and the OCP MX FLOOR rule): the same bytes on every compiled target.
// The encoder is checked around every E2M1 value and rounding boundary, on the special values,
// on tails shorter than a vector and on a stride through all 2^32 float bit patterns.
#include "kernels/cpu/fast/fp4_weight_quant.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/numeric/e8m0.h"
#include "kernels/numeric/fp4.h"
#include "kernels/numeric/fp8.h"
#include "tests/kernels/cpu/hwy_targets_test_util.h"

namespace tessera::kernels::cpu::fast {
namespace {

// Every prefix of even length up to 40 (tails shorter than any vector, and longer runs) and the
// whole of x, byte for byte against EncodeE2m1(x / denominator).
void ExpectEncodes(const std::vector<float>& x, float denominator) {
  std::vector<size_t> lengths = {x.size() & ~size_t{1}};
  for (size_t n = 2; n <= 40 && n <= x.size(); n += 2) lengths.push_back(n);
  for (const size_t n : lengths) {
    // One guard byte past the end: the encoder writes n / 2 bytes and nothing more.
    std::vector<uint8_t> got(n / 2 + 1, 0xA5);
    FastEncodeE2m1Divide(x.data(), static_cast<int64_t>(n), denominator, got.data());
    ASSERT_EQ(got[n / 2], 0xA5) << "wrote past " << n / 2 << " bytes";
    for (size_t i = 0; i < n; ++i) {
      const uint8_t code =
          i % 2 == 0 ? numeric::LowNibble(got[i / 2]) : numeric::HighNibble(got[i / 2]);
      ASSERT_EQ(code, numeric::EncodeE2m1(x[i] / denominator))
          << "x bits 0x" << std::hex << numeric::FloatToBits(x[i]) << " denominator " << denominator
          << " n " << std::dec << n;
    }
  }
}

TEST(Fp4WeightQuantTest, EncodeMatchesScalarAroundEveryValueAndBoundary) {
  std::vector<float> x;
  const float inf = std::numeric_limits<float>::infinity();
  for (int c = 0; c <= 7; ++c) {
    const float v = numeric::DecodeE2m1(static_cast<uint8_t>(c));
    const float next = c < 7 ? numeric::DecodeE2m1(static_cast<uint8_t>(c + 1)) : 8.0f;
    for (const float anchor : {v, (v + next) / 2}) {  // the boundaries are exact in f32
      for (int dlt = -3; dlt <= 3; ++dlt) {
        if (anchor == 0.0f && dlt < 0) continue;
        const float f =
            numeric::BitsToFloat(numeric::FloatToBits(anchor) + static_cast<uint32_t>(dlt));
        x.push_back(f);
        x.push_back(-f);
      }
    }
  }
  for (const float v :
       {0.0f, -0.0f, inf, -inf, 6.0f, 7.0f, 1e30f, -1e30f, std::numeric_limits<float>::max(),
        std::numeric_limits<float>::denorm_min(), -1e-40f, 0.1f, -0.2f, std::nanf(""),
        -std::nanf(""), numeric::BitsToFloat(0x7F800001u), numeric::BitsToFloat(0xFFC00123u)}) {
    x.push_back(v);
  }
  if (x.size() % 2 != 0) x.push_back(0.3f);
  ForEachHwyTarget([&] {
    ExpectEncodes(x, 1.0f);
    ExpectEncodes(x, 0.37f);
    ExpectEncodes(x, 3.1e-3f);
  });
}

TEST(Fp4WeightQuantTest, EncodeMatchesScalarOnAStrideThroughAllFloats) {
  std::vector<float> x;
  for (uint64_t b = 0; b < (uint64_t{1} << 32); b += 257) {
    x.push_back(numeric::BitsToFloat(static_cast<uint32_t>(b)));
  }
  if (x.size() % 2 != 0) x.push_back(1.0f);
  ExpectEncodes(x, 1.0f);  // best target; the boundary test covers every target
}

// The loop QuantizeOnline ran per row before (ModelOpt's NVFP4 recipe, the MX FLOOR rule).
void ReferenceNvfp4(const float* w, int64_t rows, int64_t k, float alpha, uint8_t* packed,
                    uint8_t* sf_out) {
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t b = 0; b < k / 16; ++b) {
      float ab = 0;
      for (int64_t i = 0; i < 16; ++i) ab = std::max(ab, std::abs(w[r * k + b * 16 + i]));
      uint8_t sf = numeric::EncodeUe4m3(ab / (6.0f * alpha));
      if (numeric::DecodeE4m3(sf) == 0) sf = numeric::EncodeUe4m3(1.0f);
      sf_out[r * (k / 16) + b] = sf;
      const float denom = numeric::DecodeE4m3(sf) * alpha;
      for (int64_t i = 0; i < 16; ++i) {
        const int64_t kk = b * 16 + i;
        numeric::SetE2m1Nibble(packed + r * (k / 2), kk,
                               numeric::EncodeE2m1(w[r * k + kk] / denom));
      }
    }
  }
}

void ReferenceMxfp4(const float* w, int64_t rows, int64_t k, uint8_t* packed, uint8_t* e_out) {
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t b = 0; b < k / 32; ++b) {
      float ab = 0;
      for (int64_t i = 0; i < 32; ++i) ab = std::max(ab, std::abs(w[r * k + b * 32 + i]));
      const uint8_t e = numeric::EncodeE8m0Floor(ab, numeric::kE2m1EmaxPow2);
      e_out[r * (k / 32) + b] = e;
      for (int64_t i = 0; i < 32; ++i) {
        const int64_t kk = b * 32 + i;
        numeric::SetE2m1Nibble(packed + r * (k / 2), kk,
                               numeric::EncodeE2m1(w[r * k + kk] / numeric::DecodeE8m0(e)));
      }
    }
  }
}

// Random rows with the awkward blocks: a NaN (skipped by amax, code 7), an all-zero block, a
// block far above the others (its scale saturates), one of tiny values.
std::vector<float> TestWeights(int64_t rows, int64_t k, std::mt19937& rng) {
  std::normal_distribution<float> nd(0.0f, 0.02f);
  std::vector<float> w(rows * k);
  for (auto& v : w) v = nd(rng);
  w[3] = std::nanf("");
  std::fill(w.begin() + 32, w.begin() + 64, 0.0f);
  if (rows > 1) {
    for (int64_t i = 0; i < 32; ++i) w[k + i] *= 1e6f;
    for (int64_t i = 32; i < 64; ++i) w[k + i] *= 1e-6f;
  }
  return w;
}

TEST(Fp4WeightQuantTest, Nvfp4AndMxfp4RowsMatchTheScalarLoop) {
  std::mt19937 rng(11);
  ForEachHwyTarget([&] {
    // k = 72: a tail shorter than a block, which both leave as zero codes after the row's blocks.
    for (const int64_t k : {int64_t{64}, int64_t{72}, int64_t{96}, int64_t{2048}}) {
      const int64_t rows = 3;
      const std::vector<float> w = TestWeights(rows, k, rng);
      for (const float alpha : {0.02f / 448.0f, 1.0f, 3.5e-7f}) {
        std::vector<uint8_t> want(rows * k / 2, 0), got(rows * k / 2, 0);
        std::vector<uint8_t> want_sf(rows * k / 16), got_sf(rows * k / 16);
        ReferenceNvfp4(w.data(), rows, k, alpha, want.data(), want_sf.data());
        FastQuantizeNvfp4Weights(w.data(), rows, k, alpha, got.data(), got_sf.data());
        EXPECT_EQ(got, want) << "k " << k << " alpha " << alpha;
        EXPECT_EQ(got_sf, want_sf) << "k " << k << " alpha " << alpha;
      }
      std::vector<uint8_t> want(rows * k / 2, 0), got(rows * k / 2, 0);
      std::vector<uint8_t> want_e(rows * k / 32), got_e(rows * k / 32);
      ReferenceMxfp4(w.data(), rows, k, want.data(), want_e.data());
      FastQuantizeMxfp4Weights(w.data(), rows, k, got.data(), got_e.data());
      EXPECT_EQ(got, want) << "k " << k;
      EXPECT_EQ(got_e, want_e) << "k " << k;
    }
  });
}

}  // namespace
}  // namespace tessera::kernels::cpu::fast
