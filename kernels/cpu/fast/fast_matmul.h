// Fast CPU matrix products y = x · Wᵀ (+ b) for dense (f32, bf16, f16) and GGUF block weights,
// vectorized with Highway and dispatched at run time to the best x86 target (SSE4, AVX2,
// AVX-512). Q8_0 and Q4_0 read the repacked layout of ggml_repack.h and Q4_K its file layout, all
// decoded in registers; other ggml block types are dequantized to an f32 tile first
// (ggml_dequant_fast.h: vectorized for Q5_K / Q6_K) and then share the same f32 inner kernel.
//
// Numerics: every weight value is decoded exactly as the reference decodes it, and each output
// (row m, column n) is one lane-parallel dot product in a fixed order: chunk c of Lanes(f32)
// values is accumulated with one FMA into one accumulator, c ascending, and the lanes are summed
// at the end. That order depends only on k, never on how many rows share the call or how the
// columns are split across threads, so a row's result is batch-invariant and the GEMV (few rows,
// weights decoded in registers) and GEMM (weights decoded to an L2-resident tile) paths give
// bit-identical results. The order differs from DotF32's, so results differ from the reference by
// float reassociation only (tests bound it by 1e-5 of Σ|x·w|).
#ifndef TESSERA_KERNELS_CPU_FAST_FAST_MATMUL_H_
#define TESSERA_KERNELS_CPU_FAST_FAST_MATMUL_H_

#include <cstdint>

#include "kernels/cpu/ggml_dequant.h"

namespace tessera::kernels::cpu::fast {

enum class FastFormat {
  kF32,
  kBF16,
  kF16,
  kQ8_0,  // repacked (ggml_repack.h)
  kQ4_0,  // repacked (ggml_repack.h)
  kGgml,  // any other ggml block type, in the file's own block layout
  // 4-bit unsigned codes in nibble pairs (element 2j in the low nibble of byte j, 2j + 1 in the
  // high one) with an f32 scale and zero point per (row, group): w = (q − z) · s. Only the source
  // view RepackU4x16 (int4_x16.h) reads; no kernel takes it.
  kU4Groups,
  // NVFP4: E2M1 codes in nibble pairs (as kU4Groups), a UE4M3 scale per 16 elements
  // (block_scales [n, k / 16]) and the global multiplier `alpha`: w = e2m1 · sf · alpha. Only the
  // source view of RepackNvfp4x16.
  kNvfp4Pairs,
  // GGUF Q4_0 in 16-column tiles (int4_x16.h); int8-activation kernels only.
  kQ4_0x16,
  // 4-bit codes with f32 scale and zero point per (column, group) in 16-column tiles (int4_x16.h),
  // from kU4Groups weights; int8-activation kernels only.
  kU4x16,
  // NVFP4 (as kNvfp4Pairs) in 16-column tiles (int4_x16.h); int8-activation kernels only.
  kNvfp4x16,
  // GGUF Q8_0 in 16-column tiles (int4_x16.h, codes + 128 as bytes); int8-activation kernels only.
  kQ8_0x16,
  // Unsigned integer codes of up to 8 bits, one per byte (the IntWeights kU8 layout), with an f32
  // scale and zero point per (row, group): w = (q − z) · s. Only the source view of RepackU8x16.
  kU8Groups,
  // kU8Groups in 16-column tiles (int4_x16.h; INT8 / INT3 / INT2 weight-only); int8-activation
  // kernels only.
  kU8x16,
  // GGUF Q6_K in 16-column tiles (int4_x16.h: low nibbles plus high bit pairs, the file's f16 d
  // and int8 scales per 16);
  // int8-activation kernels only.
  kQ6_Kx16,
  // GGUF Q4_K in 16-column tiles (int4_x16.h: nibble codes, the file's f16 d / dmin per
  // super-block and 6-bit scales / mins per block); int8-activation kernels only.
  kQ4_Kx16,
  // GGUF Q5_K in 16-column tiles (int4_x16.h: kQ4_Kx16 plus a plane of fifth bits); int8-activation
  // kernels only.
  kQ5_Kx16,
  // MXFP4 (E2M1 codes, an E8M0 scale per 32) in 16-column tiles (int4_x16.h); int8-activation
  // kernels only.
  kMxfp4x16,
  // GGUF Q3_K in 16-column tiles (int4_x16.h: its codes + 4 as 2-bit chunks plus a third-bit
  // plane, zero point 4, under kQ6_Kx16's records); int8-activation kernels only.
  kQ3_Kx16,
  // GGUF Q2_K in 16-column tiles (int4_x16.h: 2-bit codes, the file's f16 d / dmin per
  // super-block and packed 4-bit scale / min bytes per 16); int8-activation kernels only.
  kQ2_Kx16,
  // GGUF IQ4_NL in kQ4_0x16's tiles, its nibbles read through kvalues_iq4nl; IQ4_XS the same codes
  // under records of a super-block (f16 d, int8 scales per block of 32: int4_x16.h);
  // int8-activation kernels only.
  kIq4Nlx16,
  kIq4Xsx16,
  // GGUF's grid types (IQ2_XXS / IQ2_XS / IQ2_S / IQ3_XXS / IQ3_S / IQ1_S / IQ1_M; ggml names which)
  // in 16-column tiles: 4-bit codes into the type's 16-entry table (ggml_iq_dequant.h IqGridCodes)
  // under records of an f32 scale per super-block and int8 multipliers per 16 values (kIqGrid16x16:
  // kQ6_Kx16-shaped records; IQ2_XS, IQ2_S, IQ1_M) or per 32 (kIqGrid32x16: kIq4Xsx16-shaped; the
  // types whose scales cover 32 values); int8-activation kernels only (int4_x16.h).
  kIqGrid16x16,
  kIqGrid32x16,
  // bf16 in 16-column K-pair panels (bf16_dot_matmul.h); Bf16DotMatmul only. row_stride is the
  // bytes of one panel.
  kBf16Pairs,
  // f16 in 16-column K panels (float_panel_matmul.h); F16PanelMatmul only. row_stride is the bytes
  // of one panel.
  kF16Panels,
  // f32 in 16-column K panels (float_panel_matmul.h); F32PanelMatmul only. row_stride is the bytes
  // of one panel.
  kF32Panels,
};

// One [n, k] weight matrix as the fast kernels read it: row r starts at data + r * row_stride.
struct FastWeights {
  FastFormat format = FastFormat::kF32;
  const uint8_t* data = nullptr;
  int64_t n = 0;
  int64_t k = 0;
  int64_t row_stride = 0;    // bytes
  int64_t quant_offset = 0;  // repacked Q8_0/Q4_0: bytes from a row's start to its quants
  GgmlBlockType ggml = GgmlBlockType::kQ8_0;  // kGgml and the kIqGrid tiles only
  // kU4Groups only: [n, k / group_size] scales and zero points; group_size % 32 == 0.
  const float* group_scales = nullptr;
  const float* group_zeros = nullptr;
  int64_t group_size = 0;
  // kNvfp4Pairs only.
  const uint8_t* block_scales = nullptr;
  float alpha = 1.0f;
};

// y[m, n] = Σ_k x[m, k] · W[n, k] (+ bias[n]) for columns [n_begin, n_end); x is [rows, k]
// (contiguous), y is [rows, w.n]. Callers split columns across threads.
void FastMatmul(const FastWeights& w, const float* x, int64_t rows, const float* bias, float* y,
                int64_t n_begin, int64_t n_end);

// The unit in which callers split a call's output columns across threads: the 16-column group
// every tile kernel works in, or for calls of more rows than one 16-column panel tile has (6,
// panel_gemm.h) a whole tile of 4 panels, so that no chunk ends in a 1-panel tile whose
// activation broadcasts feed one dot product each instead of four.
constexpr int64_t ColumnSplitUnit(int64_t rows) { return rows > 6 ? 64 : 16; }

// The name of the SIMD target the dispatcher picked on this machine (e.g. "AVX3").
const char* FastTargetName();

}  // namespace tessera::kernels::cpu::fast

#endif  // TESSERA_KERNELS_CPU_FAST_FAST_MATMUL_H_
