// Small AVX-512 helpers for the intrinsics kernels (int4_x16_vnni.cc). Include
// it only inside a HWY_PUSH_ATTRIBUTES("avx512f,...") region: the functions take the including
// file's target attributes and run only after that file's CPUID check.
#ifndef TESSERA_KERNELS_CPU_FAST_AVX512_DECODE_H_
#define TESSERA_KERNELS_CPU_FAST_AVX512_DECODE_H_

#include <immintrin.h>

#include "kernels/cpu/fast/tile_code_tables.h"

namespace tessera::kernels::cpu::fast::internal {

// 16 UE4M3 codes (bit 7 ignored) to f32 times 2^-8, exactly, in 5 instructions: E4M3 and f16 share
// their layout below the exponent width, so the code shifted into f16 bits is the value times
// 2^(7 − 15) for normal and subnormal codes alike, and vcvtph2ps converts f16 subnormals exactly
// (it ignores MXCSR.DAZ).
inline __m512 Ue4m3TimesTwoToMinus8(__m128i codes) {
  const __m256i c = _mm256_and_si256(_mm256_cvtepu8_epi16(codes), _mm256_set1_epi16(0x7F));
  return _mm512_cvtph_ps(_mm256_slli_epi16(c, 7));
}

// The byte-shuffle table mapping an E2M1 nibble to 2·e2m1 + 12, in [0, 24] (an unsigned vpdpbusd
// operand; the + 12 is taken back with the activation code sums).
inline __m512i TwiceE2m1Plus12Table() {
  return _mm512_broadcast_i32x4(_mm_load_si128(reinterpret_cast<const __m128i*>(kTwiceE2m1Plus12)));
}

}  // namespace tessera::kernels::cpu::fast::internal

#endif  // TESSERA_KERNELS_CPU_FAST_AVX512_DECODE_H_
