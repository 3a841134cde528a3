// Small AVX-512 helpers for the intrinsics kernels (int4_x16_vnni.cc). Include
// it only inside a HWY_PUSH_ATTRIBUTES("avx512f,...") region: the functions take the including
// file's target attributes and run only after that file's CPUID check.
#ifndef TESSERA_KERNELS_CPU_FAST_AVX512_DECODE_H_
#define TESSERA_KERNELS_CPU_FAST_AVX512_DECODE_H_

#include <immintrin.h>

namespace tessera::kernels::cpu::fast::internal {

// UE4M3 codes (int32 lanes, bit 7 ignored) to f32, exactly numeric::DecodeUe4m3 without NaN:
// normal codes by exponent rebias, subnormal ones (c < 8) as c · 2^-9.
inline __m512 DecodeUe4m3(__m512i c) {
  c = _mm512_and_si512(c, _mm512_set1_epi32(0x7F));
  const __m512 normal = _mm512_castsi512_ps(
      _mm512_add_epi32(_mm512_slli_epi32(c, 20), _mm512_set1_epi32(120 << 23)));
  const __m512 sub = _mm512_mul_ps(_mm512_cvtepi32_ps(c), _mm512_set1_ps(1.0f / 512.0f));
  return _mm512_mask_blend_ps(_mm512_cmplt_epi32_mask(c, _mm512_set1_epi32(8)), normal, sub);
}

// The byte-shuffle table mapping an E2M1 nibble to 2·e2m1 + 12, in [0, 24] (an unsigned vpdpbusd
// operand; the + 12 is taken back with the activation code sums).
inline __m512i TwiceE2m1Plus12Table() {
  return _mm512_broadcast_i32x4(_mm_setr_epi8(12, 13, 14, 15, 16, 18, 20, 24, 12, 11, 10, 9, 8, 6, 4, 0));
}

}  // namespace tessera::kernels::cpu::fast::internal

#endif  // TESSERA_KERNELS_CPU_FAST_AVX512_DECODE_H_
