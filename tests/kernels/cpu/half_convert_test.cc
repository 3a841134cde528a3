// The vectorized f16 / bf16 -> f32 conversions and the NaN-skipping amax
// (kernels/cpu/fast/half_convert.h) against the scalar numerics: every one of the 65536 codes of
// each format, bit for bit (signalling NaN payloads included), from an odd byte address, with
// every tail length below a vector, on every compiled target.
#include "kernels/cpu/fast/half_convert.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/numeric/half.h"
#include "tests/kernels/cpu/hwy_targets_test_util.h"

namespace tessera::kernels::cpu::fast {
namespace {

// All codes, stored one byte past an aligned start; converted whole and as prefixes of 0..40.
template <typename Convert, typename Reference>
void ExpectAllCodes(Convert convert, Reference reference) {
  std::vector<uint8_t> bytes(1 + 2 * 65536);
  for (uint32_t c = 0; c < 65536; ++c) {
    const uint16_t code = static_cast<uint16_t>(c);
    std::memcpy(bytes.data() + 1 + 2 * c, &code, 2);
  }
  const uint8_t* src = bytes.data() + 1;
  std::vector<float> out(65536 + 1);
  std::vector<int64_t> lengths = {65536};
  for (int64_t n = 0; n <= 40; ++n) lengths.push_back(n);
  for (const int64_t n : lengths) {
    out.assign(out.size(), -123.0f);
    // Codes from 0x7BF0 on: the largest finite values, inf, NaN, then the negatives.
    const int64_t first = n == 65536 ? 0 : 0x7BF0;
    convert(src + 2 * first, n, out.data());
    ASSERT_EQ(out[n], -123.0f) << "wrote past " << n;
    for (int64_t i = 0; i < n; ++i) {
      const uint16_t code = static_cast<uint16_t>(first + i);
      ASSERT_EQ(numeric::FloatToBits(out[i]), numeric::FloatToBits(reference(code)))
          << "code 0x" << std::hex << code;
    }
  }
}

TEST(HalfConvertTest, F16MatchesHalfToFloatOnEveryCode) {
  ForEachHwyTarget([] { ExpectAllCodes(ConvertF16ToF32, numeric::HalfToFloat); });
}

TEST(HalfConvertTest, Bf16MatchesBf16ToFloatOnEveryCode) {
  ForEachHwyTarget([] { ExpectAllCodes(ConvertBf16ToF32, numeric::Bf16ToFloat); });
}

TEST(HalfConvertTest, AbsMaxSkipsNanAndMatchesTheFold) {
  std::mt19937 rng(3);
  std::normal_distribution<float> nd(0.0f, 2.0f);
  const float inf = std::numeric_limits<float>::infinity();
  ForEachHwyTarget([&] {
    for (const int64_t n : {0, 1, 5, 16, 31, 100, 4099}) {
      std::vector<float> x(n);
      for (auto& v : x) v = nd(rng);
      if (n > 3) {
        x[n / 2] = std::nanf("");
        x[n - 1] = -std::nanf("");
      }
      float want = 0;
      for (const float v : x) want = std::max(want, std::fabs(v));
      EXPECT_EQ(numeric::FloatToBits(AbsMaxSkippingNanF32(x.data(), n)), numeric::FloatToBits(want))
          << "n " << n;
      if (n > 3) {
        x[1] = -inf;
        EXPECT_EQ(AbsMaxSkippingNanF32(x.data(), n), inf) << "n " << n;
      }
    }
    const std::vector<float> zeros = {-0.0f, -0.0f, 0.0f};
    EXPECT_EQ(numeric::FloatToBits(AbsMaxSkippingNanF32(zeros.data(), 3)), 0u);
  });
}

}  // namespace
}  // namespace tessera::kernels::cpu::fast
