// The AMX route of the quant pair panels (quant_panel_matmul.h, exact hi + lo or bf16 activations:
// MXFP4, NVFP4 W4A16 and INT4 weight-only): where AmxBf16Usable(), QuantPanelPairMatmul runs every
// row count of a layer it takes through the AMX tile walk (amx_panel_gemm.h), as the FP8 panels
// do. Each 1 KiB K tile (32 k x 16 columns) is decoded from the panel's codes into bf16 pairs:
//  * FP4 with the block scale folded in: e2m1 · 2^(e − 127) and e2m1 · UE4M3 are exact in bf16 (a
//    code has at most 2 significant bits, a UE4M3 scale 4) and normal where `fp4_bf16_products`
//    says so (NVFP4 always; MXFP4 with every exponent in [2, 252], which real checkpoints keep; a
//    layer outside keeps the AVX-512 pair kernel whole, so its rows stay batch-invariant). Then
//    y = α · acc (NVFP4), + bias.
//  * INT4 as q − 8 (exact), with groups of whole K tiles (G a multiple of 32, or one group per row):
//    the walk's C tiles restart at each group and fold into f32 running totals as the pair kernel
//    folds its group sums, tot = fma(s, a − (z − 8) · Σx, tot) (symmetric: fma(s, a, tot)), f32 or
//    f16 headers alike; then y = tot + bias. Not K-quant headers, not byte codes.
// Up to one 32-row block decodes each tile inside the walk; more rows decode four panels per
// pass and walk the stored tiles.
//
// Why: on the 16-core Xeon host of a lent GPU machine (eighteenth session) the AVX-512 pair
// kernels ran 4-bit prefill (M = 128) at 0.14-0.21x of oneDNN's AMX bf16 matmul, where the FP8
// panels' AMX route reached 0.77-1.47x. No AMX host was lent since this route was written, so it
// has run on the tile model only (tests/kernels/cpu/quant_panel_amx_test.cc); FP4 runs the FP8
// route's walks (amx_kernels.cc, which ran on that Xeon), INT4 a new one (GroupPanelGemm: C-tile
// stores and the fold between groups), which on hardware only the load-time self-check will have
// run (one group, against the stored walk). Its speed there is not measured; the tile decode
// alone, timed on AVX-512 without AMX (`*_AMXDECODE`), is in bench/README.md (twentieth session).
// An INT4 fold costs a C-tile store and 16 FMAs per 32 rows, 16 columns and group, against the
// group's 2 · G / 32 tile products per C tile: about a third more at G = 128, twice at G = 32
// (estimates).
//
// Numerics: a row's sums run the K tiles in ascending order, each tile's hi then lo products into
// one f32 sum; every row gets the same order alone or in any batch and under any column split, so
// the route is batch-invariant. It differs from the AVX-512 pair kernel (hi and lo in separate
// sums) in rounding only: FP4 within (2^-16 + (2K + 2)·u)·Σ|x·w| of the exact product
// (u = 2^-24), INT4 within (2^-16 + (K + 2G + 2)·u)·Σ s·(|q − 8| + |z − 8|)·|x| (2G: a group's
// hi and lo products in one sum), plus AMX's flushing of bf16 denormal inputs (lo parts of tiny
// x) and denormal sums. GGUF Q4_0 / Q4_1 panels (ggml_quant_panels.h: INT4 groups of 32, f16
// scales, Q4_1's zero points in f32) take the INT4 route as well, GGUF MXFP4 the FP4 one.
#ifndef TESSERA_KERNELS_CPU_FAST_QUANT_PANEL_AMX_H_
#define TESSERA_KERNELS_CPU_FAST_QUANT_PANEL_AMX_H_

#include <cstdint>

#include "kernels/cpu/fast/amx.h"
#include "kernels/cpu/fast/fast_quant_matmul.h"

namespace tessera::kernels::cpu::fast {

// Whether the AMX route takes `w` on a CPU that grants AMX: pair panels (RepackQuantPanels,
// kBf16Pairs) of FP4 with fp4_bf16_products, or of INT4 with groups of a multiple of 32 k or one
// group per row, without K-quant headers.
// TESSERA_QUANT_PANEL_AMX=0 in the environment turns the route off (TESSERA_DISABLE_AMX=1 turns
// off every AMX kernel).
bool QuantPanelAmxTakes(const FastQuantWeights& w);

namespace internal {

// QuantPanelPairMatmul's contract (x for INT4's group sums, or group_sums as
// QuantPanelGroupSums wrote them; hi, and lo for the split form, as RoundActsToBf16 wrote them)
// on the AMX route with `gemms`: the AMX instructions' (QuantPanelPairMatmul passes them where
// AmxBf16Usable()), or in tests the walk on the software model, on any AVX-512 CPU. Requires
// QuantPanelAmxTakes(w).
void QuantPanelAmxMatmul(const FastQuantWeights& w, const float* x, const uint16_t* hi,
                         const uint16_t* lo, int64_t rows, const float* bias, float* y,
                         int64_t n_begin, int64_t n_end, const AmxBf16Gemms& gemms,
                         const float* group_sums = nullptr);

}  // namespace internal
}  // namespace tessera::kernels::cpu::fast

#endif  // TESSERA_KERNELS_CPU_FAST_QUANT_PANEL_AMX_H_
