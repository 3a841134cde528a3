// ggml's reference quantizers (ggml-quants.c quantize_row_*_ref, the path llama-quantize takes
// without an importance matrix), ported statement for statement so `tessera synth` writes the
// codes llama.cpp would, and so tests and benchmarks get real GGUF blocks from floats. Each
// quantizes one row of k floats into consecutive ggml blocks at `out`.
#ifndef TESSERA_ENGINE_MODEL_GGML_QUANTIZE_H_
#define TESSERA_ENGINE_MODEL_GGML_QUANTIZE_H_

#include <cstdint>

namespace tessera::model {

// quantize_row_q8_0_ref / q4_0_ref, k a multiple of 32.
void QuantizeQ8_0(const float* x, int64_t k, uint8_t* out);
void QuantizeQ4_0(const float* x, int64_t k, uint8_t* out);
// quantize_row_mxfp4_ref, k a multiple of 32: 17-byte blocks, the E8M0 exponent
// floor(log2(amax)) - 2 + 127 and the nearest of kvalues_mxfp4 (doubled E2M1) times 2^(e - 128)
// per value, element j in qs[j]'s low nibble and j + 16 in its high one.
void QuantizeMxfp4(const float* x, int64_t k, uint8_t* out);
// quantize_row_q4_K_ref (with make_qkx2_quants), k a multiple of 256: 144-byte super-blocks of 8
// sub-blocks of 32 with 6-bit scales and mins.
void QuantizeQ4_K(const float* x, int64_t k, uint8_t* out);
// quantize_row_q5_K_ref, k a multiple of 256: 176-byte super-blocks, Q4_K's scales with 5-bit
// codes.
void QuantizeQ5_K(const float* x, int64_t k, uint8_t* out);
// quantize_row_q6_K_ref (with make_qx_quants), k a multiple of 256: 210-byte super-blocks of 16
// sub-blocks of 16 with int8 scales.
void QuantizeQ6_K(const float* x, int64_t k, uint8_t* out);

}  // namespace tessera::model

#endif  // TESSERA_ENGINE_MODEL_GGML_QUANTIZE_H_
