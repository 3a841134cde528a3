// Vectorized dequantization of the GGUF K-quant blocks (Q4_K, Q5_K, Q6_K) to f32, bit for bit
// DequantizeGgmlBlocks (kernels/cpu/ggml_dequant.h): the decoder behind the f32-activation path
// of those types (FastMatmul's kGgml tiles: --cpu_int8_activations=false, and every CPU without
// AVX2 or on another architecture), where the scalar decoder was the whole cost of a batch-1 step
// (Q6_K: ~1.3 GB/s of weights on the 2-core Zen 4 VM). Highway, every target; the other block
// types go to the scalar decoder.
#ifndef TESSERA_KERNELS_CPU_FAST_GGML_DEQUANT_FAST_H_
#define TESSERA_KERNELS_CPU_FAST_GGML_DEQUANT_FAST_H_

#include <cstdint>

#include "kernels/cpu/ggml_dequant.h"

namespace tessera::kernels::cpu::fast {

// DequantizeGgmlBlocks(type, src, blocks, dst), the same bits.
void FastDequantizeGgmlBlocks(GgmlBlockType type, const uint8_t* src, int64_t blocks, float* dst);

}  // namespace tessera::kernels::cpu::fast

#endif  // TESSERA_KERNELS_CPU_FAST_GGML_DEQUANT_FAST_H_
