// Integer 4-bit weight-only layers (GPTQ, AWQ, compressed-tensors pack-quantized: kU4Pairs codes
// with a scale and zero point per (column, group)) with exact f32 activations, on 16-column
// panels: the kernel QuantizedLinear runs for INT4 W4A16 on AVX-512 CPUs, decode and prefill alike.
//
// Why: FastQuantMatmul's kInt4 decoder builds a value table per (row, group) and sums each output
// as a lane-parallel dot product over K; its prefill tiles reload activations for every column
// and reached 0.34-0.37x of oneDNN's bf16 matmul (M = 128), against 0.5x for f32 FMA panels
// (float_panel_matmul.h), which broadcast one activation into 16 columns per FMA.
//
// Layout (RepackInt4Panels, at load): panel p holds columns [16p, 16p + 16); for each group g of
// G = w.scale_k codes it stores, 64-byte aligned, the 16 columns' centred zero points z − 8 (16
// f32), their scales (16 f32), then G / 2 lines of 16 bytes, line t holding byte t of the group
// of each column: codes 2t (bits 0-3) and 2t + 1 (bits 4-7) of that group, as kU4Pairs rows do.
// The scales sit next to their codes, so each panel is one sequential stream. Columns past N are
// zero bytes (their lanes are never stored).
//
// Numerics and batch invariance: output (m, n) is one f32 lane. Per group g, a = Σ x[m, k] ·
// (q[n, k] − 8) with FMA in ascending k from +0 (q − 8 is exact), then c = a − (z[n, g] − 8) ·
// Σx (Σx: the group's activations summed once per row in a fixed order), then tot = fma(s[n, g],
// c, tot), g ascending from +0; then + bias. That is Σ (q − z) · s · x with the zero point taken
// out of the per-weight decode: subtracting it per weight cost 15-23% of the batch-1 rate
// (bench/README.md, twelfth session). The price is the bound: |y − exact| ≤ (K + G + 2)·u·Σ s ·
// (|q − 8| + |z − 8|)·|x| (u = 2^-24) instead of (K + 1)·u·Σ|x·w|; for symmetric layers (z = 8,
// GPTQ's sym=True) the two are the same sum and c = a exactly. Up to 6 rows (decode, small
// batches) decode the codes in registers; more rows decode four panels at a time, a K block of
// whole groups, to an L2-resident f32 buffer and run 6-row tiles over it — the same values in the
// same order, so a row's result is bit-identical alone or in any batch, under any column split.
#ifndef TESSERA_KERNELS_CPU_FAST_INT4_PANEL_MATMUL_H_
#define TESSERA_KERNELS_CPU_FAST_INT4_PANEL_MATMUL_H_

#include <cstdint>

#include "kernels/cpu/fast/fast_quant_matmul.h"

namespace tessera::kernels::cpu::fast {

// Whether this CPU runs the panel kernel (AVX-512 F, BW and VL; not under TESSERA_CPU_ISA=avx2).
bool Int4PanelAvailable();

// Whether the panel kernel takes `w`: kInt4 codes with per-(column, group) scales and zero
// points (scale_rows 1, scale_row_stride = k / scale_k, scale_k even and dividing k), no W8A8
// epilogue, on a CPU where Int4PanelAvailable().
bool Int4PanelSupported(const FastQuantWeights& w);

// Bytes of the panels of an [n, k] matrix in groups of `group` codes.
int64_t Int4PanelsBytes(int64_t n, int64_t k, int64_t group);

// w (codes [n, k / 2] kU4Pairs, scales and zeros [n, k / scale_k]) repacked into `dst`
// (Int4PanelsBytes, 64-byte aligned): the returned weights' q points at the panels (which hold
// the scales and zero points too); everything else is w's.
FastQuantWeights RepackInt4Panels(const FastQuantWeights& w, uint8_t* dst);

// FastQuantMatmul's contract on the panels: y [rows, w.n] for columns [n_begin, n_end), x
// [rows, w.k] in its natural order (no FastQuantPermuteActivations). Requires
// Int4PanelSupported(w) and w from RepackInt4Panels.
void Int4PanelMatmul(const FastQuantWeights& w, const float* x, int64_t rows, const float* bias,
                     float* y, int64_t n_begin, int64_t n_end);

}  // namespace tessera::kernels::cpu::fast

#endif  // TESSERA_KERNELS_CPU_FAST_INT4_PANEL_MATMUL_H_
