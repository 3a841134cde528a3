// The vmaskmov lane mask of an 8-column half of a 16-column panel, for the AVX2 panel kernels
// (avx2_panels.cc, int8_dot_avx2.cc) whose column ranges need not end on a panel boundary.
// Internal to kernels/cpu/fast: include it inside an AVX2 target region (HWY_PUSH_ATTRIBUTES),
// after <immintrin.h> and hwy/base.h.
#ifndef TESSERA_KERNELS_CPU_FAST_AVX2_LANE_MASK_H_
#define TESSERA_KERNELS_CPU_FAST_AVX2_LANE_MASK_H_

namespace tessera::kernels::cpu::fast::internal {
namespace {

// The lanes whose bits are set in `bits` (bit c: column c of the half), all ones or all zeros.
HWY_INLINE __m256i LaneMask(unsigned bits) {
  const __m256i lane_bits = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
  return _mm256_cmpeq_epi32(_mm256_and_si256(_mm256_set1_epi32(static_cast<int>(bits)), lane_bits),
                            lane_bits);
}

}  // namespace
}  // namespace tessera::kernels::cpu::fast::internal

#endif  // TESSERA_KERNELS_CPU_FAST_AVX2_LANE_MASK_H_
