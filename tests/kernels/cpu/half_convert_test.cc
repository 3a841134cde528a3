// The vectorized f16 / bf16 -> f32 conversions (kernels/cpu/fast/half_convert.h) against the scalar
// numerics: every one of the 65536 codes of each format, bit for bit (signalling NaN payloads
// included), from an odd byte address, with every tail length below a vector, on every compiled
// target.
#include "kernels/cpu/fast/half_convert.h"

#include <cstdint>
#include <cstring>
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

}  // namespace
}  // namespace tessera::kernels::cpu::fast
