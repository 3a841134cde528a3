// FP4 E2M1, the element format of NVFP4 and MXFP4: 1 sign bit (bit 3), 2 exponent bits (bias 1),
// 1 mantissa bit, magnitudes {0, 0.5, 1, 1.5, 2, 3, 4, 6}, no inf and no NaN. Codes are 4-bit
// nibbles, two per byte, and every checkpoint format we load puts element 2j in the low nibble of
// byte j (quant-formats.md §8.1; GGUF MXFP4/NVFP4 use a half-split order instead and do their own
// indexing with the nibble helpers here). Encoding is RNE with saturation at +-6, identical to
// compressed-tensors, ModelOpt and PTX cvt.rn.satfinite.e2m1x2, done with integer arithmetic so
// the host and every device arch agree.
#ifndef TESSERA_KERNELS_NUMERIC_FP4_H_
#define TESSERA_KERNELS_NUMERIC_FP4_H_

#include <cstddef>
#include <cstdint>

#include "kernels/numeric/hd.h"

namespace tessera::numeric {

inline constexpr uint8_t kE2m1MaxCode = 0x7;  // +6
inline constexpr float kE2m1Max = 6.0f;

// E2M1 nibble (only the low 4 bits of `code` are used) -> float. Code 8 is -0.0.
constexpr TESSERA_HD float DecodeE2m1(uint8_t code) {
  const uint32_t sign = static_cast<uint32_t>(code & 0x8u) << 28;
  return BitsToFloat(sign | FloatToBits(detail::DecodeMagnitude<1, 1>(code & 0x7u)));
}

// float -> E2M1 nibble: RNE with saturation. The decision points are 0.25->0, 0.75->1,
// 1.25->1, 1.75->2, 2.5->2, 3.5->4, 5->4, and anything above 5 (inf included) -> 6. The sign is
// kept, so negative inputs that round to zero give code 8 (-0), as the CUDA conversion does. E2M1
// has no NaN; NaN gives +6 (code 7), matching __nv_cvt_float_to_fp4 and the PTX instruction.
constexpr TESSERA_HD uint8_t EncodeE2m1(float f) {
  const uint32_t bits = FloatToBits(f);
  if (IsNanBits(bits)) return kE2m1MaxCode;
  const uint8_t sign = static_cast<uint8_t>((bits >> 28) & 0x8u);
  const uint32_t abs_bits = bits & 0x7FFFFFFFu;
  if (abs_bits >= FloatToBits(kE2m1Max)) return static_cast<uint8_t>(sign | kE2m1MaxCode);
  return static_cast<uint8_t>(sign | detail::RoundMagnitudeRne<1, 1>(abs_bits));
}

// Packs two E2M1 codes into one byte: `even` (element 2j) in bits 0-3, `odd` (element 2j+1) in
// bits 4-7.
constexpr TESSERA_HD uint8_t PackE2m1Pair(uint8_t even, uint8_t odd) {
  return static_cast<uint8_t>((even & 0xFu) | ((odd & 0xFu) << 4));
}

// The low nibble of `byte` (element 2j of a pairwise-packed row).
constexpr TESSERA_HD uint8_t LowNibble(uint8_t byte) { return byte & 0xFu; }

// The high nibble of `byte` (element 2j+1 of a pairwise-packed row).
constexpr TESSERA_HD uint8_t HighNibble(uint8_t byte) { return static_cast<uint8_t>(byte >> 4); }

// Element `i` of a pairwise-packed row: byte i/2, low nibble when i is even.
constexpr TESSERA_HD uint8_t GetE2m1Nibble(const uint8_t* packed, size_t i) {
  return static_cast<uint8_t>((packed[i >> 1] >> ((i & 1u) * 4u)) & 0xFu);
}

// Writes element `i` of a pairwise-packed row, leaving the other nibble of the byte intact.
constexpr TESSERA_HD void SetE2m1Nibble(uint8_t* packed, size_t i, uint8_t code) {
  const uint32_t shift = static_cast<uint32_t>(i & 1u) * 4u;
  const uint32_t keep = packed[i >> 1] & ~(0xFu << shift);
  packed[i >> 1] = static_cast<uint8_t>(keep | ((code & 0xFu) << shift));
}

// Decodes element `i` of a pairwise-packed row.
constexpr TESSERA_HD float DecodeE2m1At(const uint8_t* packed, size_t i) {
  return DecodeE2m1(GetE2m1Nibble(packed, i));
}

}  // namespace tessera::numeric

#endif  // TESSERA_KERNELS_NUMERIC_FP4_H_
