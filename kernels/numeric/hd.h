// Host/device plumbing shared by the number-format headers in kernels/numeric/. TESSERA_HD marks
// a function as callable from both CPU and CUDA code, so every format conversion exists exactly
// once and the CPU reference kernels and the GPU kernels cannot drift apart. The bit-cast helpers
// and the generic round-to-nearest-even core below are integer-only and constexpr, which keeps
// the conversions usable in static_asserts, in device code (nvcc runs with
// --expt-relaxed-constexpr, so std::bit_cast is callable there) and independent of the rounding
// mode or flush-to-zero settings of whatever hardware runs them.
#ifndef TESSERA_KERNELS_NUMERIC_HD_H_
#define TESSERA_KERNELS_NUMERIC_HD_H_

#include <bit>
#include <cstdint>

#if defined(__CUDACC__)
#define TESSERA_HD __host__ __device__
#else
#define TESSERA_HD
#endif

namespace tessera::numeric {

// IEEE binary32 bit pattern of `f`.
constexpr TESSERA_HD uint32_t FloatToBits(float f) { return std::bit_cast<uint32_t>(f); }

// The binary32 value with bit pattern `bits`.
constexpr TESSERA_HD float BitsToFloat(uint32_t bits) { return std::bit_cast<float>(bits); }

// True for binary32 NaN patterns (exponent all ones, mantissa non-zero). Integer-only so that it
// also holds under fast-math flags, where `f != f` may be folded away.
constexpr TESSERA_HD bool IsNanBits(uint32_t bits) { return (bits & 0x7FFFFFFFu) > 0x7F800000u; }

namespace detail {

// `v >> shift` rounded to nearest, ties to even. `shift` must be in [1, 31].
constexpr TESSERA_HD uint32_t ShiftRightRne(uint32_t v, uint32_t shift) {
  const uint32_t q = v >> shift;
  const uint32_t rem = v & ((1u << shift) - 1u);
  const uint32_t half = 1u << (shift - 1u);
  return (rem > half || (rem == half && (q & 1u) != 0u)) ? q + 1u : q;
}

// Rounds a finite, non-negative binary32 (given as bits with the sign already cleared) to a binary
// format with kManBits explicit mantissa bits and exponent bias kBias, with RNE and gradual
// underflow. Returns the magnitude code `exp_field << kManBits | mantissa`. The format is treated
// as having an unbounded exponent at the top: a value past the largest binade yields an exponent
// field beyond the format's range, and the caller decides between saturation and infinity. A
// mantissa carry propagates into the exponent field by plain addition, which is exactly the
// "round up to the next binade" case (and the subnormal-to-normal case).
// Valid for kManBits <= 10 and kBias <= 15 (all formats below binary16 width); binary32
// subnormal inputs are far below half the smallest subnormal of such formats and give 0.
template <int kManBits, int kBias>
constexpr TESSERA_HD uint32_t RoundMagnitudeRne(uint32_t abs_bits) {
  static_assert(kManBits >= 1 && kManBits <= 10 && kBias >= 1 && kBias <= 15);
  constexpr uint32_t kShift = 23u - kManBits;
  const int f32_exp = static_cast<int>(abs_bits >> 23);
  if (f32_exp == 0) return 0;  // Zero or binary32 subnormal.
  const uint32_t mantissa = abs_bits & 0x7FFFFFu;
  const int exp_field = f32_exp - 127 + kBias;
  if (exp_field >= 1) {
    // Normal in the target format: keep the exponent field above the mantissa so that a
    // rounding carry bumps the exponent.
    return ShiftRightRne((static_cast<uint32_t>(exp_field) << 23) | mantissa, kShift);
  }
  // Subnormal in the target format: shift the full significand (implicit 1 included) further
  // right by the exponent deficit. A carry into bit kManBits yields the smallest normal.
  const uint32_t shift = kShift + static_cast<uint32_t>(1 - exp_field);
  if (shift > 31u) return 0;
  return ShiftRightRne(mantissa | 0x800000u, shift);
}

// Decodes a finite magnitude code (no sign bit, not an inf/NaN code) of a binary format with
// kManBits mantissa bits and exponent bias kBias. Exact: every such value is a binary32 normal.
template <int kManBits, int kBias>
constexpr TESSERA_HD float DecodeMagnitude(uint32_t mag) {
  const uint32_t exp_field = mag >> kManBits;
  const uint32_t mantissa = mag & ((1u << kManBits) - 1u);
  if (exp_field == 0) {
    // Subnormal: mantissa * 2^(1 - bias - man_bits); the product is exact in binary32.
    constexpr float kUlp =
        std::bit_cast<float>(static_cast<uint32_t>(127 + 1 - kBias - kManBits) << 23);
    return static_cast<float>(mantissa) * kUlp;
  }
  return BitsToFloat(((exp_field + static_cast<uint32_t>(127 - kBias)) << 23) |
                     (mantissa << (23 - kManBits)));
}

}  // namespace detail
}  // namespace tessera::numeric

#endif  // TESSERA_KERNELS_NUMERIC_HD_H_
