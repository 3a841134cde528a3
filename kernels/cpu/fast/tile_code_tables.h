// The byte-shuffle tables through which the int8 tiles' vector kernels (int4_x16_vnni.cc,
// int4_x16_avx2.cc) read nibble codes that are not integers 0..15. E2M1 (MXFP4, NVFP4): the
// unsigned code 2·e2m1(v) + 12, in [0, 24], the + 12 taken back with the activation code sums
// (zero point 12). IQ4_NL / IQ4_XS: kvalues_iq4nl[v] + 128, in [1, 241], under zero point 128
// (vpdpbusd multiplies unsigned bytes), and kvalues_iq4nl[v] itself for the AVX2 kernel's sign
// trick (vpmaddubsw of 241 · 127 pairs would saturate int16). Data only, so it may be included
// inside a file's target-attribute region.
#ifndef TESSERA_KERNELS_CPU_FAST_TILE_CODE_TABLES_H_
#define TESSERA_KERNELS_CPU_FAST_TILE_CODE_TABLES_H_

#include <cstdint>

namespace tessera::kernels::cpu::fast::internal {

alignas(16) inline constexpr uint8_t kTwiceE2m1Plus12[16] = {12, 13, 14, 15, 16, 18, 20, 24,
                                                             12, 11, 10, 9,  8,  6,  4,  0};

// ggml_dequant.h kIq4NlValues, + 128 and as they are.
alignas(16) inline constexpr uint8_t kIq4Plus128[16] = {1,   24,  45,  63,  79,  93,  106, 118,
                                                        129, 141, 153, 166, 181, 197, 217, 241};
alignas(16) inline constexpr int8_t kIq4Values[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                                      1,    13,   25,  38,  53,  69,  89,  113};

}  // namespace tessera::kernels::cpu::fast::internal

#endif  // TESSERA_KERNELS_CPU_FAST_TILE_CODE_TABLES_H_
