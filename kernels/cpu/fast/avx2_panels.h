// The 16-column panel kernels on CPUs without AVX-512 (AVX2 + FMA + F16C: Zen 2 / Zen 3, Intel
// client cores): the same panels the AVX-512 kernels read, one panel as two ymm of 8 columns;
// f16, f32, bf16 and FP8 weights multiplied in f32 with 256-bit FMA, INT8 W8A8 in exact int32
// with `vpmaddwd`, and the quantized panels' f32 form (INT4, byte codes, MXFP4, NVFP4, GGUF
// blocks). Entered through the public kernels when AVX-512 is absent or turned off
// (TESSERA_CPU_ISA=avx2): F16PanelMatmul and F32PanelMatmul (float_panel_matmul.h),
// Bf16PairsFmaMatmul (bf16_dot_matmul.h) and Fp8PanelFmaMatmul (fp8_panel_matmul.h), both
// defined in fma_pairs_avx512.cc, which runs zmm twins of them on AVX-512 CPUs without BF16,
// Int8DotMatmul (int8_dot_matmul.h; also on AVX-512 CPUs without VNNI; its kernel in
// int8_dot_avx2.cc) and QuantPanelMatmul (quant_panel_matmul.h; its kernel in quant_panel_avx2.cc).
// The ones declared here are what tests compare with their AVX-512 twins.
//
// Why: without them those layers ran row kernels: f16 / f32 / bf16 FastMatmul read 21-29 GB/s at
// batch 1 and reached 61-94 GFLOP/s at M = 16-128 of the ~225 the FMA units give, FP8
// FastQuantMatmul 11-15 GB/s and 46-104 GFLOP/s, and INT8 W8A8 ran the scalar reference
// (bench/README.md, twenty-first session).
//
// Numerics: the f32 kernels as float_panel_matmul.h's: output (m, n) is one f32 lane, acc =
// fma(x[m, k], w[n, k], acc) for k ascending, then the epilogue, the same in every tile shape
// (6 × 1 panel for f16 / f32, 5 × 1 for the K pairs, one row over 2-4 panels), row count and
// column split, so each row is batch-invariant. For f16 / f32 that is the AVX-512 kernels' FMA
// sequence: the same bits. bf16 and FP8 multiply x itself (more exact than the AVX-512 BF16
// split, so they differ from those kernels to rounding). INT8 W8A8 gives the AVX-512 kernel's (and
// the reference's) bits: integer sums are exact in any order.
#ifndef TESSERA_KERNELS_CPU_FAST_AVX2_PANELS_H_
#define TESSERA_KERNELS_CPU_FAST_AVX2_PANELS_H_

#include <cstdint>

#include "kernels/cpu/fast/fast_matmul.h"
#include "kernels/cpu/fast/fast_quant_matmul.h"
#include "kernels/cpu/fast/int8_dot_matmul.h"

namespace tessera::kernels::cpu::fast::internal {

// CPUID: AVX2, FMA and F16C (what the kernels below need; not affected by TESSERA_CPU_ISA).
bool Avx2PanelsAvailable();

// Avx2PanelsAvailable() on a CPU without AVX-512 (or under TESSERA_CPU_ISA=avx2): where the
// public entries run these kernels (the float and quantized panels' target;
// Bf16PairsFmaAvailable and Fp8PanelFmaAvailable are also true on AVX-512 CPUs without BF16, whose
// calls run the zmm twins).
bool Avx2PanelsInUse();

// F16PanelMatmul / F32PanelMatmul's contract (float_panel_matmul.h). Require
// Avx2PanelsAvailable().
void F16PanelMatmulAvx2(const FastWeights& w, const float* x, int64_t rows, const float* bias,
                        float* y, int64_t n_begin, int64_t n_end);
void F32PanelMatmulAvx2(const FastWeights& w, const float* x, int64_t rows, const float* bias,
                        float* y, int64_t n_begin, int64_t n_end);

// Bf16PairsFmaMatmul's contract (bf16_dot_matmul.h) on ymm: the AVX-512 kernel's bits. Requires
// Avx2PanelsAvailable().
void Bf16PairsFmaMatmulAvx2(const FastWeights& w, const float* x, int64_t rows, const float* bias,
                            float* y, int64_t n_begin, int64_t n_end);

// Fp8PanelFmaMatmul's contract (fp8_panel_matmul.h) on ymm: the zmm kernel's bits
// (fma_pairs_avx512.cc). Requires Avx2PanelsAvailable().
void Fp8PanelFmaMatmulAvx2(const FastQuantWeights& w, const float* x, int64_t rows,
                           const float* bias, float* y, int64_t n_begin, int64_t n_end);

// Fp8PanelFmaMatmul's route beyond 5 rows (K > 1), for the ymm and zmm kernels alike: four panels
// at a time decoded to f16 K panels (f32 of code · s with K blocks of 2^shift steps; shift -1:
// none), F16PanelMatmul / F32PanelMatmul over them, then the epilogue: the register route's bits.
// Requires Avx2PanelsAvailable().
void Fp8DecodedGemm(const FastQuantWeights& w, const float* x, int64_t rows, const float* bias,
                    float* y, int64_t n_begin, int64_t n_end, int shift);

// Int8DotMatmul's contract (int8_dot_matmul.h) on its quad panels with `vpmaddwd`: the same bits.
// Requires Avx2PanelsAvailable().
void Int8DotMatmulAvx2(const Int8DotWeights& w, const uint8_t* u8, const Int8Activations& act,
                       int64_t rows, const float* bias, float* y, int64_t n_begin, int64_t n_end);

// QuantPanelMatmul's contract (quant_panel_matmul.h) on f32-form panels (quant_panel_avx2.cc):
// the AVX-512 f32 form's bits. Requires Avx2PanelsAvailable().
void QuantPanelMatmulAvx2(const FastQuantWeights& w, const float* x, int64_t rows,
                          const float* bias, float* y, int64_t n_begin, int64_t n_end,
                          const float* group_sums);

// sums[m · (k / group) + g] = Σ x[m, k] over group g's k for rows [0, rows) (x rows k apart), in
// one fixed order: 16 lanes, k ascending in each, then a fixed reduction (a group size not a
// multiple of 16: k ascending). The quantized panels' kernels of every form and ISA, and
// QuantPanelGroupSums, take these (AVX2 code, which every AVX-512 CPU runs), so every row gets
// the same sums in any call. Requires Avx2PanelsAvailable().
void GroupSumsRows(const float* x, int64_t rows, int64_t k, int64_t group, float* sums);

}  // namespace tessera::kernels::cpu::fast::internal

#endif  // TESSERA_KERNELS_CPU_FAST_AVX2_PANELS_H_
