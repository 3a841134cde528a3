// E8M0, the OCP Microscaling (MXFP4/MXFP6/MXFP8) block-scale format: an unsigned biased exponent
// byte e meaning 2^(e - 127), with 0xFF reserved for NaN and no zero. Decoding builds the binary32
// bit pattern directly (e = 0 is the binary32 subnormal 2^-127), so it is exact and independent
// of flush-to-zero modes. Encoding implements the MX FLOOR rule used by torchao to_mx and the
// OCP spec (quant-formats.md §9.1), which dynamic MX activation quantization must reproduce to
// match checkpoints; other scale modes (EVEN, CEIL, RCEIL) belong to the quantizers that need them.
#ifndef TESSERA_KERNELS_NUMERIC_E8M0_H_
#define TESSERA_KERNELS_NUMERIC_E8M0_H_

#include <cstdint>

#include "kernels/numeric/hd.h"

namespace tessera::numeric {

inline constexpr int kE8m0Bias = 127;
inline constexpr uint8_t kE8m0NanCode = 0xFF;

// emax_elem, the exponent of the largest power of two of each MX element format (torchao
// *_MAX_POW2), the offset the FLOOR rule subtracts so that amax / scale stays in range.
inline constexpr int kE2m1EmaxPow2 = 2;
inline constexpr int kE3m2EmaxPow2 = 4;
inline constexpr int kE2m3EmaxPow2 = 2;
inline constexpr int kE4m3EmaxPow2 = 8;
inline constexpr int kE5m2EmaxPow2 = 15;

// E8M0 byte -> 2^(e - 127); 0xFF -> quiet NaN. Exact for every code (2^-127 .. 2^127).
constexpr TESSERA_HD float DecodeE8m0(uint8_t e) {
  if (e == kE8m0NanCode) return BitsToFloat(0x7FC00000u);
  if (e == 0) return BitsToFloat(0x00400000u);  // 2^-127, a binary32 subnormal.
  return BitsToFloat(static_cast<uint32_t>(e) << 23);
}

// E8M0 byte for the unbiased exponent `e_unbiased`, clamped to the finite range [-127, 127].
constexpr TESSERA_HD uint8_t EncodeE8m0FromExponent(int e_unbiased) {
  if (e_unbiased < -kE8m0Bias) e_unbiased = -kE8m0Bias;
  if (e_unbiased > kE8m0Bias) e_unbiased = kE8m0Bias;
  return static_cast<uint8_t>(e_unbiased + kE8m0Bias);
}

// floor(log2(|x|)) for a finite non-zero normal binary32, read from the exponent field. Zero and
// binary32 subnormals give -127 (field 0), as torchao's bit extraction does; any MX scale derived
// from them clamps to the smallest code anyway.
constexpr TESSERA_HD int FloorLog2Bits(float x) {
  return static_cast<int>((FloatToBits(x) >> 23) & 0xFFu) - kE8m0Bias;
}

// The MX FLOOR scale for a block with max |x| `amax` and element format `emax_elem` (one of the
// k*EmaxPow2 constants): e = clamp(floor(log2(amax)) - emax_elem, -127, 127) + 127. Non-finite
// amax (NaN or inf) gives 0xFF (NaN), so a poisoned block stays visibly poisoned. The sign of
// amax is ignored. torchao clamps the upper end at 128 (i.e. NaN); no finite amax reaches it.
constexpr TESSERA_HD uint8_t EncodeE8m0Floor(float amax, int emax_elem) {
  if ((FloatToBits(amax) & 0x7F800000u) == 0x7F800000u) return kE8m0NanCode;
  return EncodeE8m0FromExponent(FloorLog2Bits(amax) - emax_elem);
}

}  // namespace tessera::numeric

#endif  // TESSERA_KERNELS_NUMERIC_E8M0_H_
