// The codebooks of GGUF's grid types, as ggml-common.h holds them: an IQ2_XXS / IQ2_XS / IQ2_S /
// IQ1_S / IQ1_M index picks 8 values (a uint64_t, byte j = value j), an IQ3_XXS / IQ3_S index 4
// (a uint32_t); IQ2 magnitudes are 8, 25 or 43, IQ3_XXS's 4 + 8i (i < 7) or 62, IQ3_S's odd 1 to
// 15, and IQ1's bytes are int8 −1, 0 or 1. kIq2Signs (ksigns_iq2xs) turns a 7-bit sign index into
// 8 sign bits, the eighth making the count of minus signs even. ggml_iq2_grids.cc and
// ggml_iq1_iq3_grids.cc are generated from gguf-py by tools/reference/make_iq_grids.py, so these
// tables and the golden fixtures that test the dequantizers (ggml_iq_dequant.h) share one external
// origin; a test also holds them to llama.cpp's ggml-common.h by hash.
#ifndef TESSERA_KERNELS_CPU_GGML_IQ_GRIDS_H_
#define TESSERA_KERNELS_CPU_GGML_IQ_GRIDS_H_

#include <cstdint>

namespace tessera::kernels::cpu {

extern const uint8_t kIq2Signs[128];
extern const uint64_t kIq2XxsGrid[256];
extern const uint64_t kIq2XsGrid[512];
extern const uint64_t kIq2SGrid[1024];
extern const uint32_t kIq3XxsGrid[256];
extern const uint32_t kIq3SGrid[512];
extern const uint64_t kIq1SGrid[2048];  // IQ1_S and IQ1_M

}  // namespace tessera::kernels::cpu

#endif  // TESSERA_KERNELS_CPU_GGML_IQ_GRIDS_H_
