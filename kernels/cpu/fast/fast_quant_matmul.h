// Fast (Highway) products y = x · Wᵀ (+ b) for the quantized weight formats of kernels/cpu/quant:
// FP8 E4M3 (per-tensor, per-row or 2-D block scales), integer 4-bit weight-only (kU4Pairs codes,
// a scale and zero point per (row, group)), NVFP4 and MXFP4. The engine's QuantizedLinear calls
// these instead of the scalar reference kernels whenever FastQuantSupported says yes and no panel
// kernel takes the layer (fp8_panel_matmul.h for FP8 with per-tensor / per-row scales,
// quant_panel_matmul.h for the 4-bit formats with f32 activations).
//
// Numerics. Every weight is decoded to exactly the f32 value the reference dequantization gives
// (E4M3 by bit manipulation, 4-bit codes through a 16-entry table built per block with the
// reference's own operations, e.g. (float(q) − z) · s or (e2m1 · sf) · α), so the only difference
// from the reference is the order of the K summation: results are within (K + 8)·u·Σ|x·w| of it.
// Each output (row m, column n) is one lane-parallel dot product in a fixed order (chunk c of
// Lanes(f32) elements FMA'd into one accumulator, c ascending, lanes summed at the end) that
// depends only on K, never on how many rows share the call or how columns are split, so results
// are batch-invariant, and the GEMV path (≤ 4 rows, weights decoded in registers) and the GEMM
// path (a tile of columns decoded to an L2-resident f32 buffer, rows in blocks) are bit-identical.
// For the W8A8 / W4A4 products the caller passes decoded activation codes (exact) as x and the
// epilogue scales y = row_scale(m) · (col_scale(n) · acc), the reference operand order.
//
// FP8 on CPUs with AVX-512 BF16 runs fp8_bf16_matmul.h instead (TESSERA_FP8_BF16=0 keeps the
// Highway kernel, for A/B runs): codes decode exactly to bf16 and multiply with `vdpbf16ps`, the
// weight scales apply outside the code sums (per-tensor/per-row once, block scales per block), and
// W8A16 activations are split into two bf16 terms, so the W8A16 bound above gains a 2^-16·Σ|x·w|
// term (W8A8 stays exact per product); batch invariance holds the same way. That header states
// the full bound.
//
// 4-bit formats decode 32 elements (16 bytes) at a time as two chunks, [low nibbles, high
// nibbles], i.e. lanes hold elements 0, 2, ..., 30 and then 1, 3, ..., 31; the activations must be
// permuted the same way once per call with FastQuantPermuteActivations. The 4-bit path needs 16
// f32 lanes (AVX-512) and K % 32 == 0; FP8 and byte codes (kInt8) run on every target and any K
// (kInt8: groups of a multiple of 16, or one group per row).
#ifndef TESSERA_KERNELS_CPU_FAST_FAST_QUANT_MATMUL_H_
#define TESSERA_KERNELS_CPU_FAST_FAST_QUANT_MATMUL_H_

#include <cstdint>

namespace tessera::kernels::cpu::fast {

enum class QuantDecode {
  kFp8,    // q [n, k] E4M3 bytes; w = e4m3(q) · scale(n, k / scale_k)
  kInt4,   // q [n, k / 2] nibble pairs; w = (float(q) − zeros[n, g]) · scales[n, g], g = k / scale_k
  kInt8,   // q [n, k] one code per byte (INT8, and INT3 / INT2 unpacked), the same w as kInt4
  kNvfp4,  // q [n, k / 2] E2M1 pairs, block_scales [n, k / 16] UE4M3; w = (e2m1 · sf) · alpha
  kMxfp4,  // q [n, k / 2] E2M1 pairs, block_scales [n, k / 32] E8M0; w = e2m1 · 2^(e − 127)
  // q [n, k / 2] index pairs; w = codebook[q] · scales[n, k / scale_k] (bitsandbytes NF4 / FP4:
  // codebook4_matmul.h). The quant panels run it (FastQuantSupported: false).
  kCodebook4,
};

struct FastQuantWeights {
  QuantDecode decode = QuantDecode::kFp8;
  const uint8_t* q = nullptr;
  int64_t n = 0;
  int64_t k = 0;
  // kFp8: scale(n, b) = scales[(n / scale_rows) * scale_row_stride + b], b = k / scale_k
  // (per-tensor: scale_rows >= n, scale_k >= k; per-row: scale_rows = 1, stride 1, scale_k >= k).
  // kInt4: scales/zeros [n, k / scale_k] (scale_rows = 1, scale_row_stride = k / scale_k).
  // kInt8: the same, scale_row_stride = ceil(k / scale_k) (scale_k >= k: one group per row).
  const float* scales = nullptr;
  const float* zeros = nullptr;
  int64_t scale_rows = 1;
  int64_t scale_row_stride = 0;
  int64_t scale_k = 0;
  const uint8_t* block_scales = nullptr;  // kNvfp4 / kMxfp4
  const float* codebook = nullptr;        // kCodebook4: the 16 code values
  float alpha = 1.0f;                     // kNvfp4 global multiplier (1 for W4A4)
  // Quant panels only (quant_panel_matmul.h; RepackQuantPanels sets these). symmetric_panels:
  // every zero point sits at the codes' centre, so the headers hold the scales alone.
  // half_panel_headers: every scale and centred zero point is exactly an f16, so the headers hold
  // f16 values. pair_panels: the panels are in the bf16-pair form (QuantPanelPairMatmul), not the
  // f32 one (QuantPanelMatmul).
  bool symmetric_panels = false;
  bool half_panel_headers = false;
  bool pair_panels = false;
  // FP4 panels whose every code · block scale product is zero or a normal bf16 (NVFP4 always,
  // MXFP4 with every E8M0 exponent in [2, 252]): the AMX route (quant_panel_amx.h) may fold the
  // scales into bf16 weights exactly.
  bool fp4_bf16_products = false;
  // K-quant panels (ggml_quant_panels.h, GGUF Q4_K / Q5_K): groups of 32 with the block's 6-bit
  // scale and min bytes, and the super-block's f16 d and dmin before every 8 groups; codes stored
  // minus panel_centre.
  bool kquant_panel_headers = false;
  int panel_centre = 8;
  // Epilogue (W8A8 / W4A4): y = row_scale[m * row_scale_stride] ·
  // (col_scale[n * col_scale_stride] · acc); col_scale may be null, row_scale null means none.
  const float* row_scale = nullptr;
  int64_t row_scale_stride = 0;
  const float* col_scale = nullptr;
  int64_t col_scale_stride = 0;
  // FP8 W8A8 with weight scale blocks along K (DeepSeek / FineGrainedFP8 128x128 blocks, any
  // activation granularity; the BF16 kernel only): the activation scale of row m and K-block b,
  // act_block_scale[m · act_block_row_stride + b · act_block_stride] (per-token-group: blocks, 1;
  // per-token: 1, 0; static: 0, 0), is folded into that block's sum with the weight scale, as
  // tot += (scale(n, b) · act(m, b)) · acc_b; row_scale stays null. `act_block_scales` is set at
  // init (FastQuantSupported checks it), the pointer per call.
  bool act_block_scales = false;
  const float* act_block_scale = nullptr;
  int64_t act_block_row_stride = 0;
  int64_t act_block_stride = 0;
};

// Whether FastQuantMatmul handles `w` on this machine (target width, shape and scale checks:
// 4-bit formats need k % 32 == 0 and, for kInt4, scale_k % 32 == 0; FP8 on the BF16 kernel, taken
// when Fp8Bf16LayoutFits (block scales: scale_k % 32 == 0), needs finite scales, and on the
// Highway kernel scale_k % Lanes == 0 for block scales and scale magnitudes < 128). FP8 weights
// holding the NaN code are not checked here (see Fp8HasNanCodes).
bool FastQuantSupported(const FastQuantWeights& w);

// Whether FastQuantMatmul runs FP8 weights `w` on the AVX-512 BF16 kernel: the CPU has it, the
// layout fits (Fp8Bf16LayoutFits) and TESSERA_FP8_BF16 is not 0. Only that kernel takes
// act_block_scales.
bool FastQuantUsesBf16(const FastQuantWeights& w);

// Whether the 4-bit decoders (kInt4, kNvfp4, kMxfp4) run here: they need the 16 f32 lanes of
// AVX-512.
bool FastQuant4BitAvailable();

// True when any of `count` E4M3 bytes is a NaN code (0x7F / 0xFF); the Highway FP8 decode maps it
// to 480 (the BF16 one to NaN), so such weights must stay on the reference kernel.
bool Fp8HasNanCodes(const uint8_t* q, int64_t count);

// Reorders [rows, k] activations (k % 32 == 0) into the 4-bit lane order described above.
void FastQuantPermuteActivations(const float* x, int64_t rows, int64_t k, float* out);

// y[m, n] for columns [n_begin, n_end); x is [rows, k] (permuted for 4-bit formats), y is
// [rows, w.n]. Callers split columns across threads. Requires FastQuantSupported(w).
void FastQuantMatmul(const FastQuantWeights& w, const float* x, int64_t rows, const float* bias,
                     float* y, int64_t n_begin, int64_t n_end);

}  // namespace tessera::kernels::cpu::fast

#endif  // TESSERA_KERNELS_CPU_FAST_FAST_QUANT_MATMUL_H_
