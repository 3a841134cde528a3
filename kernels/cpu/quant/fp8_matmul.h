// Reference (scalar) linear layers with FP8 E4M3 weights, y[m, n] = Σ_k x[m, k] · W[n, k] (+ bias),
// for every FP8 checkpoint family of quant-formats.md §5: weights q_w [N, K] E4M3 bytes with a
// per-tensor, per-row or 2-D block dequant multiplier. Two computations exist:
//  * W8A16 (weight-only, or any FP8 layer run without activation quantization): the weight row is
//    dequantized W = fp32(q) · s exactly as transformers/compressed-tensors `_dequantize` do, then
//    dotted with the f32 activations.
//  * W8A8: the activations were quantized by activation_quant.h and the product runs on codes:
//    y = sa(m) · (sw(n) · Σ_k qa·qw) for per-tensor/per-token × per-tensor/per-row scales (§5.7;
//    the operand order is vLLM's CUTLASS ScaledEpilogue, D = ScaleA · (ScaleB · Accum)), and for
//    block weights or per-token-group activations the scales sit inside the K loop,
//    y = Σ_g (Σ_{k∈g} qa·qw) · sa[m,g] · sw[n/bn,g] (§5.1; the order of transformers
//    `_w8a8_block_fp8_matmul`: accumulator += dot · a_s · b_s).
// Decoded E4M3 values and their products are exact in f32, so only the K summation rounds. Each
// weight row is decoded once per call and reused for every activation row; every (row, column)
// result is computed by the same fixed-order code whatever `rows` and the column range are, so
// results are batch-invariant. [n_begin, n_end) lets callers split columns across threads.
#ifndef TESSERA_KERNELS_CPU_QUANT_FP8_MATMUL_H_
#define TESSERA_KERNELS_CPU_QUANT_FP8_MATMUL_H_

#include <cstdint>

namespace tessera::kernels::cpu {

enum class Fp8WeightScaleLayout {
  kPerTensor,  // scales[0]
  kPerRow,     // scales[n], N floats (fbgemm, CT channel, ModelOpt/Quark per-channel)
  kBlock,      // scales[(n / block_n) * ceil(K / block_k) + k / block_k] (HF fp8 / CT FP8_BLOCK)
};

struct Fp8Weights {
  const uint8_t* q = nullptr;  // [N, K] E4M3FN bytes
  Fp8WeightScaleLayout layout = Fp8WeightScaleLayout::kPerTensor;
  const float* scales = nullptr;  // dequant multipliers, shape per `layout`
  int64_t block_n = 0;            // kBlock only
  int64_t block_k = 0;            // kBlock only
};

enum class Fp8ActScaleLayout {
  kPerTensor,      // scales[0] (static input_scale)
  kPerToken,       // scales[m]
  kPerTokenGroup,  // scales[m * ceil(K / group_size) + k / group_size]
};

struct Fp8Activations {
  const uint8_t* q = nullptr;  // [rows, K] E4M3FN bytes from activation_quant.h
  Fp8ActScaleLayout layout = Fp8ActScaleLayout::kPerToken;
  const float* scales = nullptr;
  int64_t group_size = 0;  // kPerTokenGroup only
};

// Dequantizes weight row n into out[0..k): out[i] = DecodeE4m3(q[n, i]) * scale(n, i), one f32
// product per element (exact unless it under/overflows f32). Used by the W8A16 path, by tests, and
// to produce bf16/f32 weights on request.
void DequantizeFp8WeightRow(const Fp8Weights& w, int64_t k, int64_t n, float* out);

// W8A16: y[m, n] = DotF32(x[m, :], DequantizeFp8WeightRow(n)) (+ bias[n]) for n in
// [n_begin, n_end); x is [rows, k], y is [rows, n_total]. Returns false (writing nothing) when the
// scale description is inconsistent (missing pointer, non-positive block size, bad range).
bool MatmulFp8W8A16(const Fp8Weights& w, int64_t n_total, int64_t k, const float* x, int64_t rows,
                    const float* bias, float* y, int64_t n_begin, int64_t n_end);

// W8A8 on codes, as described above. When either side is blocked along K (block weights or
// per-token-group activations), the K loop is cut into segments of that size (both sizes must
// then agree); otherwise the whole row is one dot product with the scales applied after it.
// Returns false (writing nothing) on an inconsistent description.
bool MatmulFp8W8A8(const Fp8Weights& w, int64_t n_total, int64_t k, const Fp8Activations& a,
                   int64_t rows, const float* bias, float* y, int64_t n_begin, int64_t n_end);

}  // namespace tessera::kernels::cpu

#endif  // TESSERA_KERNELS_CPU_QUANT_FP8_MATMUL_H_
