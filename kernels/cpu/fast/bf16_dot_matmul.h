// bf16 weights on AVX-512 BF16 (`vdpbf16ps`: 32 multiply-adds per instruction, two per f32
// lane, f32 accumulation): the kernel DenseLinear runs for bf16 checkpoints, decode and prefill
// alike. The activations are converted once per call (RoundActsToBf16) into one of two forms:
//  * split (the default): x = hi + lo with hi = bf16(x), lo = bf16(x − hi), both multiplied
//    (two `vdpbf16ps` per weight pair): |x − hi − lo| ≤ 2^-16·|x|, so the result is within
//    (2^-16 + (K + 2)·u)·Σ|x·w| of the exact f32-activation product (u = 2^-24) — what the
//    f32-activation reference computes, to a few ulps. x must be finite and below 2^128·(1 − 2^-9).
//  * bf16 (EngineOptions::cpu_bf16_activations): hi only, one `vdpbf16ps` per weight pair, as
//    PyTorch runs a bf16 model and as llama.cpp's ggml_vec_dot_bf16 converts src1 for BF16
//    weights; products of two bf16 are exact in f32, so the result is within (K/2 + 1)·u·Σ|hi·w|
//    of Σ bf16(x)·w. Twice the split form's GEMM rate; changes results by bf16 rounding of x.
// Without AVX-512 BF16 the caller runs Bf16PairsFmaMatmul (below) on the same panels: f32 FMA on
// x (or on the rounded activations for bf16 ones), in zmm on AVX-512 and ymm on AVX2; DenseLinear
// also runs it for exact activations where AMX does not take the split (as fast here, and exact
// products).
//
// Why: the f32-activation kernel decodes each weight to f32 and uses one f32 FMA per product, so
// prefill is capped at half the bf16-dot peak (bench/README.md, "Prefill GEMM against oneDNN").
//
// Layout (RepackBf16Pairs, at load): 16-column panels, each K-pair-major: panel p holds, for each
// pair t of K, the 16 columns' (w[n, 2t], w[n, 2t+1]) as one 64-byte vector, so one `vdpbf16ps`
// multiplies a broadcast activation pair into 16 outputs (oneDNN's VNNI-style bf16 layout). Columns
// past N, and K from K up to its next multiple of 32, are zero (whole 1 KiB K tiles: AMX's B
// tiles, amx.h), and activation rows are zero-padded to the same K. Output lanes are columns, so
// there is no horizontal reduction and K blocks can park 16 outputs per vector between passes.
//
// AMX: where AmxBf16Usable(), Bf16DotMatmul runs the same panels as AMX tiles (amx_panel_gemm.h):
// per output the K tiles in ascending order (hi then lo per tile), so also batch-invariant, but
// summed in another order than the AVX-512 path, to rounding.
//
// Order and batch invariance: output (m, n) is one f32 lane that takes the K pairs in ascending
// order (hi then lo per pair in the split form), then + bias. Kept in a register or parked in a
// scratch buffer between K blocks (a store and reload are exact), so the sequence is the same for
// every tile shape, row count and column split: a row's result is bit-identical whether it runs
// alone (GEMV) or in a prefill batch. `vdpbf16ps` treats bf16 denormal inputs as zero
// (|x| < 2^-126; a lo below that is dropped, within the split bound), which the fallback does not.
#ifndef TESSERA_KERNELS_CPU_FAST_BF16_DOT_MATMUL_H_
#define TESSERA_KERNELS_CPU_FAST_BF16_DOT_MATMUL_H_

#include <cstdint>

#include "kernels/cpu/fast/fast_matmul.h"

namespace tessera::kernels::cpu::fast {

// Whether this CPU runs Bf16DotMatmul (CPUID: AVX-512 F, BW, VL and BF16).
bool Bf16DotAvailable();

// Row stride (elements) of RoundActsToBf16's output: K rounded up to a multiple of 32 (whole AMX
// K tiles), plus 32 when that is a multiple of 2048 (rows 4 KiB apart would share L1 sets).
inline int64_t Bf16DotActStride(int64_t k) {
  const int64_t padded = (k + 31) / 32 * 32;
  return padded % 2048 == 0 ? padded + 32 : padded;
}

// K tiles of 32 (16 pairs, 1 KiB of a panel) per panel.
inline int64_t Bf16PanelKTiles(int64_t k) { return (k + 31) / 32; }

// Whether Bf16DotMatmul runs on AMX: AmxAvailable() and, once per process, the AMX kernel agreed
// with the AVX-512 one on a small random problem.
bool AmxBf16Usable();

// Rows [r0, r1) of x [rows, k] to bf16 (numeric::FloatToBf16: RNE, NaN kept) into
// hi [rows, Bf16DotActStride(k)], zero-padded; lo (if not null, same shape) gets
// bf16(x − float(hi)) for the split form; x_rounded [rows, k] (if not null) gets float(hi) (for
// the bf16 form's fallback).
void RoundActsToBf16(const float* x, int64_t k, int64_t r0, int64_t r1, uint16_t* hi,
                     uint16_t* lo, float* x_rounded);

// Bytes of the pair-panel layout of an [n, k] bf16 matrix (64-byte aligned panels).
int64_t Bf16PairsBytes(int64_t n, int64_t k);

// Repacks `src` (kBF16, row n at src.data + n · src.row_stride) into `dst`
// (Bf16PairsBytes(n, k) bytes, 64-byte aligned); returns the kBf16Pairs view of it.
FastWeights RepackBf16Pairs(const FastWeights& src, uint8_t* dst);

// y[m, n] = Σ_k (hi[m, k] (+ lo[m, k])) · W[n, k] (+ bias[n]) for n in [n_begin, n_end), K >= 1;
// `w` from RepackBf16Pairs, hi and lo (null: the bf16 form) as RoundActsToBf16 writes them,
// y [rows, w.n]. Requires Bf16DotAvailable(); callers split columns across threads.
void Bf16DotMatmul(const FastWeights& w, const uint16_t* hi, const uint16_t* lo, int64_t rows,
                   const float* bias, float* y, int64_t n_begin, int64_t n_end);

// Without AVX-512 BF16 (Bf16PairsFmaAvailable(): AVX2, FMA and F16C, and no AVX-512 BF16, or
// TESSERA_CPU_ISA=avx2 / avx512-vnni), the same panels multiplied in f32 with FMA: zmm on AVX-512
// CPUs (Skylake-SP, Cascade Lake, Ice Lake; fma_pairs_avx512.cc), ymm without (avx2_panels.h),
// the same bits. Output (m, n) is one f32 lane, acc = fma(x[m, k], w[n, k], acc) for k ascending,
// then + bias, the same for every row count and column split. The f32 activations' own products,
// within (K + 1)·u·Σ|x·w| of the exact sum; x [rows, k] is f32 (the activations, or their bf16
// rounding for --cpu_bf16_activations). Why: the row kernel (FastMatmul kBF16) read 22 GB/s at
// batch 1 and reached 73-93 GFLOP/s at M = 16-128 on AVX2 (bench/README.md, twenty-first
// session), and as AVX-512 without BF16 22-29 GB/s and 107-173 GFLOP/s at M = 128 (twenty-second).
bool Bf16PairsFmaAvailable();
void Bf16PairsFmaMatmul(const FastWeights& w, const float* x, int64_t rows, const float* bias,
                        float* y, int64_t n_begin, int64_t n_end);

namespace internal {

// Bf16DotMatmul's AVX-512 tiles, whatever AmxBf16Usable says: fp8_panel_matmul.cc's GEMM path runs
// them so that its rows sum in the order of its register path. Requires Bf16DotAvailable().
void Bf16DotMatmulAvx512(const FastWeights& w, const uint16_t* hi, const uint16_t* lo,
                         int64_t rows, const float* bias, float* y, int64_t n_begin,
                         int64_t n_end);

}  // namespace internal
}  // namespace tessera::kernels::cpu::fast

#endif  // TESSERA_KERNELS_CPU_FAST_BF16_DOT_MATMUL_H_
