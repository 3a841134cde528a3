// 8-bit floating-point formats used by FP8 checkpoints and kernels: E4M3FN (weights, activations,
// KV cache; NVFP4 block scales as UE4M3) and E5M2. Decoding is exact. Encoding follows what the
// reference implementations do (quant-formats.md §2.2): E4M3 clamps to +-448 and then rounds to
// nearest even, subnormals included, so no finite or infinite input can reach the NaN code the way
// a plain PyTorch cast can. Everything is integer bit manipulation rather than the cvt intrinsics,
// so the CPU reference, the SIMD kernels and device code produce identical bytes on every arch.
#ifndef TESSERA_KERNELS_NUMERIC_FP8_H_
#define TESSERA_KERNELS_NUMERIC_FP8_H_

#include <cstdint>

#include "kernels/numeric/half.h"
#include "kernels/numeric/hd.h"

namespace tessera::numeric {

// ---------------------------------------------------------------------------------------------
// E4M3FN: 1 sign, 4 exponent (bias 7), 3 mantissa bits. No infinities; S.1111.111 is NaN, so the
// largest finite magnitude is S.1111.110 = 448. Subnormals are m * 2^-9.

inline constexpr uint8_t kE4m3MaxCode = 0x7E;  // +448
inline constexpr uint8_t kE4m3NanCode = 0x7F;  // 0xFF is the negative NaN
inline constexpr float kE4m3Max = 448.0f;

// E4M3FN byte -> float. 0x7F/0xFF decode to a quiet NaN with the code's sign.
constexpr TESSERA_HD float DecodeE4m3(uint8_t code) {
  const uint32_t sign = static_cast<uint32_t>(code & 0x80u) << 24;
  const uint32_t mag = code & 0x7Fu;
  if (mag == kE4m3NanCode) return BitsToFloat(sign | 0x7FC00000u);
  return BitsToFloat(sign | FloatToBits(detail::DecodeMagnitude<3, 7>(mag)));
}

// float -> E4M3FN as sat_e4m3: clamp to [-448, 448] (inf included), then RNE, subnormals
// included. The sign of zero is kept (-0.0 and negative values that round to zero give 0x80),
// matching a clamp-then-cast in PyTorch and __nv_cvt_float_to_fp8(..., __NV_SATFINITE, ...).
// NaN gives the NaN code with the input's sign (0x7F or 0xFF).
constexpr TESSERA_HD uint8_t EncodeE4m3(float f) {
  const uint32_t bits = FloatToBits(f);
  const uint8_t sign = static_cast<uint8_t>((bits >> 24) & 0x80u);
  const uint32_t abs_bits = bits & 0x7FFFFFFFu;
  if (IsNanBits(bits)) return static_cast<uint8_t>(sign | kE4m3NanCode);
  // Clamping before rounding matters: 464 <= |f| < 480 would otherwise round to 480 (= NaN).
  if (abs_bits >= FloatToBits(kE4m3Max)) return static_cast<uint8_t>(sign | kE4m3MaxCode);
  return static_cast<uint8_t>(sign | detail::RoundMagnitudeRne<3, 7>(abs_bits));
}

// ---------------------------------------------------------------------------------------------
// UE4M3: the NVFP4 block-scale format, an E4M3FN byte whose sign bit writers always leave 0.

// UE4M3 byte -> float, read exactly as the references read it (an ordinary float8_e4m3fn byte):
// the sign bit is honoured and 0x7F is NaN. Writers never set the sign bit; a loader that wants
// to reject such checkpoints checks `code & 0x80` itself.
constexpr TESSERA_HD float DecodeUe4m3(uint8_t code) { return DecodeE4m3(code); }

// The GGUF NVFP4 block (ggml type 40) reading of a UE4M3 byte (ggml_ue4m3_to_fp32, without
// ggml's extra 1/2 that pairs with its doubled E2M1 table): bit 7 is ignored, and 0x7F, the
// NaN pattern, means 0 because ggml uses it as a zero sentinel. Values are the true scale.
constexpr TESSERA_HD float DecodeUe4m3GgufNvfp4(uint8_t code) {
  const uint32_t mag = code & 0x7Fu;
  if (mag == kE4m3NanCode) return 0.0f;
  return detail::DecodeMagnitude<3, 7>(mag);
}

// Non-negative float -> UE4M3 byte: saturates at 448 (code 0x7E) and rounds RNE like
// EncodeE4m3. Block scales are computed from amax and cannot be negative; a negative input or
// -0.0 gives +0 (code 0x00) rather than a byte with the sign bit set. NaN gives 0x7F.
constexpr TESSERA_HD uint8_t EncodeUe4m3(float f) {
  const uint32_t bits = FloatToBits(f);
  if (IsNanBits(bits)) return kE4m3NanCode;
  if ((bits & 0x80000000u) != 0u) return 0;
  return EncodeE4m3(f);
}

// ---------------------------------------------------------------------------------------------
// E5M2: 1 sign, 5 exponent (bias 15), 2 mantissa bits: exactly the upper byte of an IEEE binary16,
// with inf (S.11111.00) and NaN (S.11111.xx, xx != 0). Largest finite magnitude 57344.

inline constexpr uint8_t kE5m2MaxCode = 0x7B;  // +57344
inline constexpr uint8_t kE5m2InfCode = 0x7C;
inline constexpr uint8_t kE5m2NanCode = 0x7F;  // canonical NaN written by the encoders
inline constexpr float kE5m2Max = 57344.0f;

// E5M2 byte -> float (exact; +-inf and NaN included).
constexpr TESSERA_HD float DecodeE5m2(uint8_t code) {
  return HalfToFloat(static_cast<uint16_t>(code << 8));
}

// float -> E5M2, IEEE semantics (what a plain PyTorch float8_e5m2 cast gives): RNE, |f| >= 61440
// (the midpoint between 57344 and 2^16, which ties to the even code) and +-inf give +-inf. NaN
// gives 0x7F with the input's sign. Rounds directly from binary32; going through binary16 would
// double-round.
constexpr TESSERA_HD uint8_t EncodeE5m2(float f) {
  const uint32_t bits = FloatToBits(f);
  const uint8_t sign = static_cast<uint8_t>((bits >> 24) & 0x80u);
  if (IsNanBits(bits)) return static_cast<uint8_t>(sign | kE5m2NanCode);
  uint32_t mag = detail::RoundMagnitudeRne<2, 15>(bits & 0x7FFFFFFFu);
  if (mag > kE5m2InfCode) mag = kE5m2InfCode;
  return static_cast<uint8_t>(sign | mag);
}

// float -> E5M2, saturating (__NV_SATFINITE semantics, the clamp-then-cast the FP8 quantizers
// use): clamp to [-57344, 57344] (inf included), then RNE. NaN gives 0x7F with the input's sign.
// Use this one for quantizing activations and weights; EncodeE5m2 for IEEE-style casts.
constexpr TESSERA_HD uint8_t EncodeE5m2Sat(float f) {
  const uint32_t bits = FloatToBits(f);
  const uint8_t sign = static_cast<uint8_t>((bits >> 24) & 0x80u);
  const uint32_t abs_bits = bits & 0x7FFFFFFFu;
  if (IsNanBits(bits)) return static_cast<uint8_t>(sign | kE5m2NanCode);
  if (abs_bits >= FloatToBits(kE5m2Max)) return static_cast<uint8_t>(sign | kE5m2MaxCode);
  return static_cast<uint8_t>(sign | detail::RoundMagnitudeRne<2, 15>(abs_bits));
}

}  // namespace tessera::numeric

#endif  // TESSERA_KERNELS_NUMERIC_FP8_H_
