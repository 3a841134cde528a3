// The AMX route of the FP4 pair panels (quant_panel_matmul.h: MXFP4 and NVFP4 W4A16 with exact
// hi + lo or bf16 activations): where AmxBf16Usable(), QuantPanelPairMatmul runs every row count
// of such a layer through the AMX tile walk (amx_panel_gemm.h), as the FP8 panels do. Each 1 KiB
// K tile (32 k x 16 columns) is decoded from the panel's codes into bf16 pairs with the block
// scale folded in: e2m1 · 2^(e − 127) and e2m1 · UE4M3 are exact in bf16 (a code has at most 2
// significant bits, a UE4M3 scale 4), and normal where `fp4_bf16_products` says so (NVFP4 always;
// MXFP4 with every exponent in [2, 252], which real checkpoints keep; a layer outside keeps the
// AVX-512 pair kernel whole, so its rows stay batch-invariant). Up to one 32-row block decodes each
// tile inside the walk; more rows decode four panels per pass and walk the stored tiles. Then y =
// α · acc (NVFP4), + bias, the pair kernel's epilogue.
//
// Why: on the 16-core Xeon host of a lent GPU machine (eighteenth session) the AVX-512 pair
// kernels ran 4-bit prefill (M = 128) at 0.14-0.21x of oneDNN's AMX bf16 matmul, where the FP8
// panels' AMX route reached 0.77-1.47x; the per-group folds of the AVX-512 form need a scale per
// 32 or 16 k, which AMX's f32 tile sums cannot take, while scale-folded bf16 weights need none.
//
// Numerics: acc = Σ x · (code · s) over the K tiles in ascending order (hi then lo), AMX's f32
// sums; every row gets the same order alone or in any batch and under any column split, so the
// route is batch-invariant. It differs from the AVX-512 pair kernel (per-group sums folded with
// the scale) in rounding only: within (2^-16 + (K + 2)·u)·Σ|x·w| of the exact product, u = 2^-24,
// plus AMX's flushing of bf16 denormal inputs (lo parts of tiny x) and denormal sums. INT4 and
// byte codes have no such route: (q − z) · s is not exact in bf16, and a C-tile fold per group is
// not written yet.
#ifndef TESSERA_KERNELS_CPU_FAST_QUANT_PANEL_AMX_H_
#define TESSERA_KERNELS_CPU_FAST_QUANT_PANEL_AMX_H_

#include <cstdint>

#include "kernels/cpu/fast/amx.h"
#include "kernels/cpu/fast/fast_quant_matmul.h"

namespace tessera::kernels::cpu::fast {

// Whether the AMX route takes `w` on a CPU that grants AMX: FP4 pair panels (RepackQuantPanels,
// kBf16Pairs) with fp4_bf16_products.
bool QuantPanelAmxTakes(const FastQuantWeights& w);

namespace internal {

// QuantPanelPairMatmul's contract (hi, and lo for the split form, as RoundActsToBf16 wrote them)
// on the AMX route with `gemms`: the AMX instructions' (QuantPanelPairMatmul passes them where
// AmxBf16Usable()), or in tests the walk on the software model, on any AVX-512 CPU. Requires
// QuantPanelAmxTakes(w).
void QuantPanelAmxMatmul(const FastQuantWeights& w, const uint16_t* hi, const uint16_t* lo,
                         int64_t rows, const float* bias, float* y, int64_t n_begin, int64_t n_end,
                         const AmxBf16Gemms& gemms);

}  // namespace internal
}  // namespace tessera::kernels::cpu::fast

#endif  // TESSERA_KERNELS_CPU_FAST_QUANT_PANEL_AMX_H_
