// The unsigned code the int8 tiles' vector kernels (int4_x16_vnni.cc, int4_x16_avx2.cc) multiply
// for an E2M1 nibble v (MXFP4, NVFP4): 2·e2m1(v) + 12, in [0, 24], as a byte-shuffle table; the
// + 12 is taken back with the activation code sums (zero point 12). Data only, so it may be
// included inside a file's target-attribute region.
#ifndef TESSERA_KERNELS_CPU_FAST_E2M1_TILE_CODES_H_
#define TESSERA_KERNELS_CPU_FAST_E2M1_TILE_CODES_H_

#include <cstdint>

namespace tessera::kernels::cpu::fast::internal {

alignas(16) inline constexpr uint8_t kTwiceE2m1Plus12[16] = {12, 13, 14, 15, 16, 18, 20, 24,
                                                             12, 11, 10, 9,  8,  6,  4,  0};

}  // namespace tessera::kernels::cpu::fast::internal

#endif  // TESSERA_KERNELS_CPU_FAST_E2M1_TILE_CODES_H_
