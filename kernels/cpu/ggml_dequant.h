// Scalar dequantization of ggml blocks to f32, written from ggml-quants.c `dequantize_row_*`
// (quant-formats.md §11.3). It is the reference every fast CPU and CUDA kernel for these formats
// is tested against, and it equals gguf-py's dequantize bit for bit (tests/engine/io).
#ifndef TESSERA_KERNELS_CPU_GGML_DEQUANT_H_
#define TESSERA_KERNELS_CPU_GGML_DEQUANT_H_

#include <cstdint>

namespace tessera::kernels::cpu {

enum class GgmlBlockType {
  kQ4_0, kQ4_1, kQ5_0, kQ5_1, kQ8_0, kQ2_K, kQ3_K, kQ4_K, kQ5_K, kQ6_K, kMxfp4, kIq4Nl, kIq4Xs,
  // The grid types and the ternary types (ggml_iq_dequant.h).
  kIq2Xxs, kIq2Xs, kIq2S, kIq3Xxs, kIq3S, kIq1S, kIq1M, kTq1_0, kTq2_0
};

// ggml-common.h kvalues_iq4nl: the values IQ4_NL and IQ4_XS codes stand for (w = d·kv[code],
// IQ4_XS with d the block's f16 d times its 6-bit scale minus 32).
inline constexpr int8_t kIq4NlValues[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                            1,    13,   25,  38,  53,  69,  89,  113};

struct GgmlBlockInfo {
  int64_t elements;  // values per block
  int64_t bytes;     // bytes per block
};

GgmlBlockInfo GetGgmlBlockInfo(GgmlBlockType type);

// Dequantizes `blocks` consecutive blocks at `src` into blocks * elements floats at `dst`.
void DequantizeGgmlBlocks(GgmlBlockType type, const uint8_t* src, int64_t blocks, float* dst);

// Sub-block j (0..7, 32 values) of one 144-byte Q4_K block as 4-bit codes with
// w[l] = scale · codes[l] − offset, scale = d·sc_j and offset = dmin·m_j in f32 exactly as
// DequantizeGgmlBlocks (llama.cpp's dequantize_row_q4_K) computes them.
void Q4KSubBlock(const uint8_t* block, int j, float* scale, float* offset, uint8_t* codes);

// get_scale_min_k4: the 6-bit scale and min of sub-block j (0..7) from the 12 packed bytes of a
// Q4_K / Q5_K block (block + 4).
void KQuantScaleMin(const uint8_t* scales12, int j, uint8_t* sc, uint8_t* m);

// Sub-block j (0..7) of a Q4_K / Q5_K block (both start with f16 d, dmin and the 12 scale
// bytes): scale = d·sc_j and offset = dmin·m_j in f32, as dequantize_row_q4_K / q5_K compute
// them (w = scale · code − offset).
void KQuantScaleOffset(const uint8_t* block, int j, float* scale, float* offset);

// The same for sub-block j (0..7) of one 176-byte Q5_K block: 5-bit codes (the low nibble from
// qs, the fifth bit from qh), w[l] = scale · codes[l] − offset as dequantize_row_q5_K computes it.
void Q5KSubBlock(const uint8_t* block, int j, float* scale, float* offset, uint8_t* codes);

// One 210-byte Q6_K block (256 values) as 6-bit codes in element order and one scale per 16
// values: w[e] = scales[e / 16] · (codes[e] − 32), scale = d·sc in f32, exactly as
// DequantizeGgmlBlocks (llama.cpp's dequantize_row_q6_K) computes them. scales may be null.
void Q6KCodes(const uint8_t* block, uint8_t* codes, float* scales);

// One 110-byte Q3_K block (256 values) as signed 3-bit codes in [−4, 3] in element order and its
// sixteen 6-bit scales minus 32 ([−32, 31]), one per 16 values: w[e] = (d·sc[e / 16])·codes[e] as
// dequantize_row_q3_K computes it (d the block's f16 d).
void Q3KCodes(const uint8_t* block, int8_t* codes, int8_t* scales);

// The 6-bit scale of sub-block j (0..7, 32 values) of one 136-byte IQ4_XS block, minus 32
// ([−32, 31]): dequantize_row_iq4_xs's ls − 32 from scales_l and scales_h.
int Iq4XsScale(const uint8_t* block, int j);

}  // namespace tessera::kernels::cpu

#endif  // TESSERA_KERNELS_CPU_GGML_DEQUANT_H_
