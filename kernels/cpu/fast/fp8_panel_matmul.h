// FP8 E4M3 weights in 16-column K-pair panels on AVX-512 BF16 (and, where that kernel does not
// run, the FMA form below, in zmm or ymm): the kernel QuantizedLinear runs for FP8 W8A8 layers
// (static or per-token activation scales) and W8A16 (exact f32 activations as the hi + lo split, or
// --cpu_bf16_activations) whose weight scales are per tensor or per output row, decode and
// prefill alike; 2-D block scales keep fp8_bf16_matmul.h on AVX-512 BF16 (the FMA form takes
// them too, below). (W8A16 with the split stayed
// row-major until side-by-side runs showed the panels as fast at batch 1 and 10-35% faster from
// 16 rows: bench/README.md, eleventh session.)
//
// Why: the row-major GEMV of fp8_bf16_matmul.h reads eight column streams at once and streamed
// 24-30 GB/s of codes on the 2-core VMs against a 35-40 GB/s triad (76-80% end to end), while the
// 16-column panels of the bf16, f16 and int8 kernels (one stream per panel) reach 85-93%.
//
// Layout (RepackFp8Pairs, at load): panel p holds, for each K pair t, the 16 columns' codes
// (q[n, 2t], q[n, 2t + 1]) as 32 bytes, so 64 bytes are two pairs; K is zero-padded to a multiple
// of 4. The FP8 decoder (fp8_bf16_decode.h) turns 64 bytes into two 64-byte vectors of bf16 pairs
// (every E4M3 value is a normal bf16), which is bf16_dot_matmul.h's panel vector: lane c holds
// (w[c, 2t], w[c, 2t + 1]).
//
// Numerics and batch invariance: activations come as RoundActsToBf16 writes them (the exact
// hi + lo split, or hi alone for a layer whose activations are bf16 values: W8A8's decoded E4M3
// codes, --cpu_bf16_activations), and output (m, n) is one f32 lane: acc = vdpbf16ps over the K
// pairs in ascending order (hi then lo per pair), then v = s(n) · acc, for W8A8 v = row_scale(m) ·
// (col_scale(n) · v), then + bias. Up to 24 rows decode the codes in registers; more rows decode 4
// panels at a time into bf16 pair panels and run Bf16DotMatmul's AVX-512 tiles over them — the
// same bf16 values in the same dot-product order, so every row's result is bit-identical however
// many rows the call has and however its columns are split (both take every pair of the padded K).
// Error bound: as bf16_dot_matmul.h's (2^-16 + (K + 2)·u)·Σ|x·w| for the split form, plus the scale
// products' roundings.
//
// AMX: where AmxBf16Usable(), every row count (decode too) runs the AMX tile walk
// (amx_panel_gemm.h, K tiles in ascending order, hi then lo) on decoded codes: up to one 32-row
// block decodes each 1 KiB K tile inside the walk, more rows decode four panels per pass first.
// One order for all rows, so still batch-invariant, differing from the AVX-512 paths to rounding.
// The register path cannot share AMX's order, hence no register path there. Why: on the 16-core
// Xeon host of a lent GPU machine the AVX-512 paths ran FP8 prefill (M = 128) at 0.21-0.22x
// (W8A16) and 0.40-0.42x (W8A8) of oneDNN's AMX bf16 matmul, the AMX route at 0.77-1.47x and
// 1.46-2.18x, and its decode rate above the AVX-512 one (bench/README.md, eighteenth session).
#ifndef TESSERA_KERNELS_CPU_FAST_FP8_PANEL_MATMUL_H_
#define TESSERA_KERNELS_CPU_FAST_FP8_PANEL_MATMUL_H_

#include <cstdint>

#include "kernels/cpu/fast/amx.h"
#include "kernels/cpu/fast/fast_matmul.h"
#include "kernels/cpu/fast/fast_quant_matmul.h"
#include "kernels/cpu/thread_pool.h"

namespace tessera::kernels::cpu::fast {

// Whether the panel kernel takes `w` (FP8, per-tensor or per-row weight scales, no K blocks, the
// CPU check of fp8_bf16_matmul.h).
bool Fp8PanelSupported(const FastQuantWeights& w);

// Bytes of the panels of an [n, k] FP8 matrix.
int64_t Fp8PairsBytes(int64_t n, int64_t k);

// w with its codes (w.q, [n, k] row-major) repacked into `dst` (Fp8PairsBytes, 64-byte aligned):
// the returned weights' q points at the panels; everything else is w's. Panels are written
// independently, split over `pool` when given (the same bytes).
FastQuantWeights RepackFp8Pairs(const FastQuantWeights& w, uint8_t* dst,
                                ThreadPool* pool = nullptr);

// FastQuantMatmul's contract on the panels, y [rows, w.n] for columns [n_begin, n_end), with the
// activations converted once per call by RoundActsToBf16 (bf16_dot_matmul.h): hi, and lo for the
// split form (null: hi alone, for W8A8's E4M3 activations or --cpu_bf16_activations). Requires
// Fp8PanelSupported(w) and w from RepackFp8Pairs.
void Fp8PanelMatmul(const FastQuantWeights& w, const uint16_t* hi, const uint16_t* lo,
                    int64_t rows, const float* bias, float* y, int64_t n_begin, int64_t n_end);

// Where the BF16 kernel does not run (Fp8PanelFmaAvailable(): AVX2, FMA and F16C, and not
// Fp8Bf16Available(), which needs AVX-512 BF16, DQ and VBMI: AVX2 CPUs, Skylake-SP to Ice Lake,
// Cooper Lake, or TESSERA_CPU_ISA=avx2 / avx512-vnni), the same panels multiplied in f32 with
// FMA, in zmm on AVX-512 CPUs (fma_pairs_avx512.cc) and ymm without (avx2_panels.h), the same
// bits: each code decoded
// exactly (as code · 2^-8, through f16 bits and `vcvtph2ps`; the weight scale carries the 2^8),
// output (m, n) one f32 lane, acc = fma(x[m, k], w[n, k], acc) for k ascending, then
// Fp8PanelMatmul's epilogue. x [rows, k] f32: W8A16's activations (exact: within (K + 1)·u·Σ|x·w|
// before the scale products' roundings, unless a product x · code · 2^-8 falls below f32's
// normal range, |x · w| < ~2^-118) or their bf16 rounding, W8A8's E4M3 values. With K-block
// scales (DeepSeek / Qwen3-FP8; the activations scaled per block beforehand, as QuantizedLinear
// does for the Highway kernel) each decoded weight is multiplied by its block's scale first, w =
// fl(code · s) as that kernel dequantizes (one more rounding per weight, (K + 2)·u), and the
// epilogue has no weight scale. Up to 5 rows decode in registers, more decode to f16 panels (f32
// with K blocks) first; every route gives a row the same bits.
// TESSERA_FP8_BF16=0 turns this kernel off too (FP8 then runs FastQuantMatmul's Highway kernel).
// Requires Fp8PanelFmaSupported(w) and w from RepackFp8Pairs. Why: FastQuantMatmul's FP8 kernel
// read 12.6 GB/s at batch 1 on AVX2 against a 35 GB/s triad (bench/README.md, twenty-first
// session).
bool Fp8PanelFmaAvailable();
// Whether Fp8PanelFmaMatmul takes `w` here: Fp8PanelFmaAvailable(), and per-tensor or per-row
// weight scales (Fp8PanelSupported's shapes), or K blocks of a power-of-two width of whole pairs
// with row blocks of whole 16-column panels (or one row block) and no row scale; every scale
// finite and below 2^100; not act_block_scales.
bool Fp8PanelFmaSupported(const FastQuantWeights& w);
void Fp8PanelFmaMatmul(const FastQuantWeights& w, const float* x, int64_t rows, const float* bias,
                       float* y, int64_t n_begin, int64_t n_end);

namespace internal {

// Fp8PanelMatmul's AMX route with `gemms` (amx.h; Fp8PanelMatmul passes the AMX instructions',
// tests the walk on the software model) (every row count, then the epilogue). Requires
// Fp8PanelSupported(w) and w from RepackFp8Pairs; runs on any CPU with those.
void Fp8PanelMatmulAmx(const FastQuantWeights& w, const uint16_t* hi, const uint16_t* lo,
                       int64_t rows, const float* bias, float* y, int64_t n_begin, int64_t n_end,
                       const AmxBf16Gemms& gemms);

}  // namespace internal
}  // namespace tessera::kernels::cpu::fast

#endif  // TESSERA_KERNELS_CPU_FAST_FP8_PANEL_MATMUL_H_
