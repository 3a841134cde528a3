// Load-time repacking of GGUF Q8_0 and Q4_0 rows into the layout the fast kernels read: per row,
// first all block scales (f16, contiguous, so a whole row's scales convert to f32 with a few
// vector instructions), then all quants (contiguous, so a vector load never straddles a scale),
// each part padded to 64 bytes so rows and quants start on cache lines. The bytes per row stay
// within 64 of ggml's, so decode still streams the same amount of memory.
#ifndef TESSERA_KERNELS_CPU_FAST_GGML_REPACK_H_
#define TESSERA_KERNELS_CPU_FAST_GGML_REPACK_H_

#include <cstdint>

#include "kernels/cpu/fast/fast_matmul.h"
#include "kernels/cpu/ggml_dequant.h"

namespace tessera::kernels::cpu::fast {

// Whether `type` has a repacked layout (Q8_0, Q4_0).
bool HasRepackedLayout(GgmlBlockType type);

// Bytes of one repacked row of k values (a multiple of 64); k must be a multiple of 32.
int64_t RepackedRowStride(GgmlBlockType type, int64_t k);

// Rewrites n rows of ggml blocks at `src` into `dst` (n * RepackedRowStride bytes, 64-byte
// aligned) and returns the FastWeights describing dst.
FastWeights RepackGgmlRows(GgmlBlockType type, const uint8_t* src, int64_t n, int64_t k,
                           uint8_t* dst);

}  // namespace tessera::kernels::cpu::fast

#endif  // TESSERA_KERNELS_CPU_FAST_GGML_REPACK_H_
