// FP8 E4M3 linear layers on AVX-512 BF16 (`vdpbf16ps`, 32 multiply-adds per instruction): the
// kernel FastQuantMatmul runs for QuantDecode::kFp8 when the CPU has AVX-512 F/BW/VL/DQ/VBMI/BF16
// (Fp8Bf16Available) and the layout fits (Fp8Bf16Supported); the Highway f32 kernel of
// fast_quant_matmul.cc stays the fallback. Why: the f32 decode of E4M3 (sign-extend, shift, mask,
// scale multiply, then an FMA per 16 weights) is ALU-bound at ~half the DRAM bandwidth at batch 1,
// and batch 16 is f32-FMA bound; bf16 halves the decode work per weight and doubles the MACs.
//
// Decode. Every E4M3 value (subnormals included) is a *normal* bf16, and bf16 products are exact
// in f32. 64 codes per load: two `vpermi2b` look up the high and low byte of bf16(|code|) in
// 128-entry tables (the sign bit is ignored by the lookup and ORed back into the high byte), and
// `unpacklo/hi_epi8` interleave them into 2 × 32 bf16 in natural K order (a qword permute of the
// codes first undoes the unpack's 128-bit-lane interleave). A shift of the code into bf16 bits
// would not do: `vdpbf16ps` reads bf16 denormals as zero, and E4M3 subnormals need renormalizing.
//
// Numerics. acc = Σ_k x_k · e4m3(q_k) runs in f32 on the unscaled codes; scales apply outside it:
//  * per-tensor / per-row weight scales, and 2-D block scales (scale_k a multiple of 32, e.g. 128):
//    each scale block b has its own accumulator, folded in as tot = fma(s_b, acc_b, tot);
//    W8A8 with block weights (act_block_scales) folds s_b · a_{m,b} instead, the activation
//    scale of row m in that block (per-token-group 128, as DeepSeek-V3 / Qwen3-FP8 run);
//  * W8A8 epilogue (row_scale set): y = row_scale(m) · (col_scale(n) · tot), as the reference.
// Activations: when every x of the call is exactly a bf16 (W8A8's decoded E4M3 activation codes,
// or W8A16 activations the caller rounded to bf16 under --cpu_bf16_activations) each 32 K-values
// take one `vdpbf16ps`. Otherwise (W8A16, arbitrary f32 x) each x is split into hi = bf16(x) and
// lo = bf16(x − hi), both accumulated into the same acc (two `vdpbf16ps` per weight vector):
// |x − hi − lo| ≤ 2^-16·|x|; for an exact x, lo = 0 adds exact zeros, so the two forms agree. With u = 2^-24, each output satisfies
//   |y − Σ x·w| ≤ (2^-16 + (K/4 + 8)·u)·Σ|x·w| + 3u·|y| + s·K·2^-116,
// w the exact e4m3·scale (the reference rounds each w to f32, within u·Σ|x·w| of it). The last
// term (s the largest weight scale) covers `vdpbf16ps` flushing denormal inputs and results to
// zero, i.e. |x| < 2^-118 or partial sums below 2^-126; W8A8 has no 2^-16 term. x must be finite
// with |x| < 2^128·(1 − 2^-9) (bf16 rounding would overflow). Each `vdpbf16ps` adds two products
// per lane, so an accumulator lane sees K/16 roundings (K/8 with the split), at most K/32 more
// for the block folds, 4 for the sum of the 16 lanes (_mm512_reduce_add_ps) and 3 for the
// epilogue and bias.
//
// Batch invariance: every output (m, n) runs the same operation sequence — determined by K,
// scale_k and whether the call is W8A8 — whatever the number of rows in the call (GEMV for ≤ 4
// rows with the weights decoded in registers, or GEMM with a tile of columns decoded once to an
// L2-resident bf16 buffer and reused across rows) and however the columns are split, so results
// are bit-identical across all of them. Any K is supported (the last partial 64-chunk of codes
// is a masked load; activations are zero-padded).
#ifndef TESSERA_KERNELS_CPU_FAST_FP8_BF16_MATMUL_H_
#define TESSERA_KERNELS_CPU_FAST_FP8_BF16_MATMUL_H_

#include <cstdint>

#include "kernels/cpu/fast/fast_quant_matmul.h"

namespace tessera::kernels::cpu::fast {

// Whether this CPU runs the kernel (CPUID: AVX-512 F, BW, VL, DQ, VBMI and BF16).
bool Fp8Bf16Available();

// Whether Fp8Bf16Matmul handles `w`: the CPU check, QuantDecode::kFp8, codes and scales present,
// scale_k >= k or scale_k % 32 == 0, and every weight scale finite. Weights holding NaN codes
// are not checked here (see Fp8HasNanCodes; the table maps them to NaN).
bool Fp8Bf16Supported(const FastQuantWeights& w);

// The layout part of Fp8Bf16Supported (no scan of the scales): what FastQuantMatmul checks per
// call to choose this kernel over the Highway one.
bool Fp8Bf16LayoutFits(const FastQuantWeights& w);

// FastQuantMatmul's contract: y[m, n] for n in [n_begin, n_end), x [rows, k] f32 (natural order),
// y [rows, w.n]. Requires Fp8Bf16Supported(w).
void Fp8Bf16Matmul(const FastQuantWeights& w, const float* x, int64_t rows, const float* bias,
                   float* y, int64_t n_begin, int64_t n_end);

}  // namespace tessera::kernels::cpu::fast

#endif  // TESSERA_KERNELS_CPU_FAST_FP8_BF16_MATMUL_H_
