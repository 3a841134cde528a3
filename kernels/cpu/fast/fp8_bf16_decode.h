// The E4M3 -> bf16 decoder the FP8 kernels share (fp8_bf16_matmul.cc's row-major GEMV and GEMM
// tiles, fp8_panel_matmul.cc's panels): 64 codes in, two vectors of 32 bf16 in code order out,
// through two `vpermi2b` lookups of bf16(|code|)'s high and low bytes (every E4M3 value, subnormals
// included, is a normal bf16; the NaN codes give the bf16 NaN) with the sign ORed back in.
// Internal to kernels/cpu/fast; include it inside an AVX-512 VBMI region (HWY_PUSH_ATTRIBUTES), after
// <immintrin.h> and the project headers below.
#ifndef TESSERA_KERNELS_CPU_FAST_FP8_BF16_DECODE_H_
#define TESSERA_KERNELS_CPU_FAST_FP8_BF16_DECODE_H_

#include <cstdint>

#include "kernels/numeric/fp8.h"
#include "kernels/numeric/half.h"

namespace tessera::kernels::cpu::fast::internal {

// High and low bytes of bf16(|e4m3 code|) for the 128 magnitudes (0x7F, NaN, gives the bf16 NaN;
// such weights never get here). Exact: E4M3 has 3 mantissa bits and a range inside bf16's normals.
struct Bf16Tables {
  alignas(64) uint8_t hi[128];
  alignas(64) uint8_t lo[128];
};

constexpr Bf16Tables MakeTables() {
  Bf16Tables t{};
  for (int c = 0; c < 128; ++c) {
    const uint16_t b = numeric::FloatToBf16(numeric::DecodeE4m3(static_cast<uint8_t>(c)));
    t.hi[c] = static_cast<uint8_t>(b >> 8);
    t.lo[c] = static_cast<uint8_t>(b & 0xFF);
  }
  return t;
}

inline constexpr Bf16Tables kTables = MakeTables();

// 64 codes -> 2 × 32 bf16 in K order (see the header).
struct Decoder {
  __m512i h0, h1, l0, l1, qperm, sign;
  static Decoder Make() {
    return {_mm512_load_si512(kTables.hi), _mm512_load_si512(kTables.hi + 64),
            _mm512_load_si512(kTables.lo), _mm512_load_si512(kTables.lo + 64),
            // unpacklo/hi take bytes 0-7 / 8-15 of each 128-bit lane: put codes 8L..8L+7 in
            // qword 2L and codes 32+8L.. in qword 2L+1, so a = codes 0-31 and b = 32-63.
            _mm512_setr_epi64(0, 4, 1, 5, 2, 6, 3, 7), _mm512_set1_epi8(static_cast<char>(0x80))};
  }
  HWY_INLINE void Decode(__m512i codes, __m512i* a, __m512i* b) const {
    const __m512i c = _mm512_permutexvar_epi64(qperm, codes);
    // vpermi2b uses index bits 0-6 only, so the sign bit needs no masking.
    const __m512i hi_mag = _mm512_permutex2var_epi8(h0, c, h1);
    const __m512i lo = _mm512_permutex2var_epi8(l0, c, l1);
    const __m512i hi = _mm512_ternarylogic_epi32(hi_mag, c, sign, 0xF8);  // hi | (c & 0x80)
    *a = _mm512_unpacklo_epi8(lo, hi);
    *b = _mm512_unpackhi_epi8(lo, hi);
  }
};

}  // namespace tessera::kernels::cpu::fast::internal

#endif  // TESSERA_KERNELS_CPU_FAST_FP8_BF16_DECODE_H_
