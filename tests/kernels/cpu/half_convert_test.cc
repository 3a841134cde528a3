// The vectorized f16 / bf16 <-> f32 conversions (kernels/cpu/fast/half_convert.h) against the
// scalar numerics, bit for bit, on every compiled target. To f32: every one of the 65536 codes of
// each format (signalling NaN payloads included), from an odd byte address, with every tail length
// below a vector. From f32: every code's value, every rounding boundary (the midpoint of two
// neighbouring codes) and the floats one ulp either side, both signs, and a stride through all
// 2^32 bit patterns (NaN payloads, infinities, f32 subnormals), whole and as tails of 0..40.
#include "kernels/cpu/fast/half_convert.h"

#include <cmath>
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

// The f32 inputs of the narrowing tests: for each finite code of a 16-bit format (decode: code ->
// f32), its value and the midpoint to the next code — for the largest finite code the overflow
// tie half a step above it (f16 65520, bf16 0x7F7F8000), which rounds to inf — each ±1 ulp, both
// signs; then every 4099th bit pattern of the 2^32.
template <typename Decode>
std::vector<float> NarrowingInputs(Decode decode) {
  std::vector<float> v;
  for (uint32_t c = 0; c < 0x7F80; ++c) {
    const float lo = decode(static_cast<uint16_t>(c));
    if (!std::isfinite(lo)) continue;
    const float hi = decode(static_cast<uint16_t>(c + 1));
    // Exact: the step between neighbouring codes and half of it are powers of two times codes.
    const float mid = std::isfinite(hi) ? lo + (hi - lo) / 2
                                        : lo + (lo - decode(static_cast<uint16_t>(c - 1))) / 2;
    for (const float x : {lo, mid}) {
      for (const float y : {std::nextafter(x, -INFINITY), x, std::nextafter(x, INFINITY)}) {
        v.push_back(y);
        v.push_back(-y);
      }
    }
  }
  for (uint64_t b = 0; b < (uint64_t{1} << 32); b += 4099) {
    v.push_back(numeric::BitsToFloat(static_cast<uint32_t>(b)));
  }
  return v;
}

template <typename Convert, typename Reference>
void ExpectNarrowing(const std::vector<float>& in, Convert convert, Reference reference) {
  std::vector<uint16_t> out(in.size() + 1);
  std::vector<int64_t> lengths = {static_cast<int64_t>(in.size())};
  for (int64_t n = 0; n <= 40; ++n) lengths.push_back(n);
  for (const int64_t n : lengths) {
    out.assign(out.size(), 0xABCD);
    // Tails start at an odd element among the boundary inputs (mixed signs and roundings).
    const int64_t first = n == static_cast<int64_t>(in.size()) ? 0 : 12345;
    convert(in.data() + first, n, out.data());
    ASSERT_EQ(out[n], 0xABCD) << "wrote past " << n;
    for (int64_t i = 0; i < n; ++i) {
      ASSERT_EQ(out[i], reference(in[first + i]))
          << "f32 0x" << std::hex << numeric::FloatToBits(in[first + i]);
    }
  }
}

TEST(HalfConvertTest, F32ToF16MatchesFloatToHalf) {
  const std::vector<float> in = NarrowingInputs(numeric::HalfToFloat);
  ForEachHwyTarget([&] { ExpectNarrowing(in, ConvertF32ToF16, numeric::FloatToHalf); });
}

TEST(HalfConvertTest, F32ToBf16MatchesFloatToBf16) {
  const std::vector<float> in = NarrowingInputs(numeric::Bf16ToFloat);
  ForEachHwyTarget([&] { ExpectNarrowing(in, ConvertF32ToBf16, numeric::FloatToBf16); });
}

}  // namespace
}  // namespace tessera::kernels::cpu::fast
