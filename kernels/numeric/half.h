// 16-bit floating-point formats: BF16 (bfloat16, the upper half of a binary32) and FP16 (IEEE
// binary16). Values travel as raw uint16_t bit patterns so that the same code compiles for the CPU
// reference kernels, the SIMD kernels and CUDA without depending on __nv_bfloat16/__half or on
// compiler-specific _Float16 support. Conversions to float are exact; conversions from float are
// round-to-nearest-even with IEEE overflow to infinity, gradual underflow, and NaN kept NaN (made
// quiet), which is what PyTorch, numpy and the CUDA intrinsics (__float2bfloat16_rn,
// __float2half_rn) do, so checkpoint values and our kernels agree bit for bit.
#ifndef TESSERA_KERNELS_NUMERIC_HALF_H_
#define TESSERA_KERNELS_NUMERIC_HALF_H_

#include <cstdint>

#include "kernels/numeric/hd.h"

namespace tessera::numeric {

inline constexpr uint16_t kBf16PositiveInf = 0x7F80;
inline constexpr uint16_t kHalfPositiveInf = 0x7C00;
// Largest finite binary16, 65504.
inline constexpr uint16_t kHalfMaxFinite = 0x7BFF;

// BF16 -> float: exact, the BF16 bits are the upper 16 bits of the binary32 (NaN payload kept).
constexpr TESSERA_HD float Bf16ToFloat(uint16_t bits) {
  return BitsToFloat(static_cast<uint32_t>(bits) << 16);
}

// float -> BF16 with RNE. Overflow gives inf naturally (the carry runs into the exponent). A NaN
// keeps its sign and upper payload and gets the quiet bit set, so truncation can never turn a
// NaN with a low-only payload into inf.
constexpr TESSERA_HD uint16_t FloatToBf16(float f) {
  const uint32_t bits = FloatToBits(f);
  if (IsNanBits(bits)) return static_cast<uint16_t>((bits >> 16) | 0x0040u);
  const uint32_t rounding_bias = 0x7FFFu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>((bits + rounding_bias) >> 16);
}

// FP16 -> float: exact, including subnormals (2^-24 steps), +-inf and NaN (payload kept in the
// top mantissa bits, as the hardware conversion does).
constexpr TESSERA_HD float HalfToFloat(uint16_t bits) {
  const uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
  const uint32_t mag = bits & 0x7FFFu;
  if (mag >= kHalfPositiveInf) {
    return BitsToFloat(sign | 0x7F800000u | ((mag & 0x3FFu) << 13));
  }
  return BitsToFloat(sign | FloatToBits(detail::DecodeMagnitude<10, 15>(mag)));
}

// float -> FP16 with RNE, IEEE semantics: |f| >= 65520 (the midpoint between 65504 and 2^16,
// which ties to the even code, i.e. inf) and inf give inf; results below the normal range are
// rounded as subnormals; NaN stays NaN with the quiet bit set and the sign kept.
constexpr TESSERA_HD uint16_t FloatToHalf(float f) {
  const uint32_t bits = FloatToBits(f);
  const uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  if (IsNanBits(bits)) {
    return static_cast<uint16_t>(sign | 0x7E00u | ((bits >> 13) & 0x3FFu));
  }
  uint32_t mag = detail::RoundMagnitudeRne<10, 15>(bits & 0x7FFFFFFFu);
  if (mag > kHalfPositiveInf) mag = kHalfPositiveInf;
  return static_cast<uint16_t>(sign | mag);
}

}  // namespace tessera::numeric

#endif  // TESSERA_KERNELS_NUMERIC_HALF_H_
