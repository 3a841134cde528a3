// Reference (scalar) linear layers with FP4 E2M1 weights (quant-formats.md §8, §9): NVFP4 (an E4M3
// scale per 16 elements along K and a global multiplier) and MXFP4 (an E8M0 scale per 32). Codes
// are packed pairwise, element 2j in the low nibble of byte j (§8.1), rows of K/2 bytes.
//  * NVFP4 W4A16: W = e2m1(q) · fp32(sf) · α_w, dequantize then dot. e2m1 · sf is exact in f32
//    (2 + 4 significant bits), so the row element is the correctly rounded product of all three;
//    producers computing e2m1 · (sf · α_w) round sf · α_w first and may differ in the last bit for
//    the codes 1.5, 3 and 6. α_w is the ModelOpt weight_scale_2 multiplier; the loader turns CT's
//    weight_global_scale divisor into 1 / divisor.
//  * NVFP4 W4A4 (activations from QuantizeNvfp4 with global divisor g):
//      y[m, n] = α(m) · Σ_b (fp32(sf_a[m,b]) · fp32(sf_w[n,b])) · Σ_{k∈b} e2m1(qa) · e2m1(qw)
//    (§8.3, the vLLM cutlass_scaled_fp4_mm product with epilogue alpha · accum). Every block term
//    is exact in f32 (the 16-term code sum needs at most 12 bits, the scale product 8, their
//    product 20), so only the sum over blocks, in ascending block order, and the α product round.
//    α(m) = α_w / g(m): for ModelOpt static inputs vLLM uses input_scale · weight_scale_2, for CT
//    1 / (input_global_scale · weight_global_scale); the caller passes whichever it has.
//  * MXFP4 W4A16: W = e2m1(q) · 2^(e − 127), exact (gpt-oss convert_moe_packed_tensors' ldexp,
//    CT/Quark `elem · 2^(e−127)`); dequantize then dot. Scale byte 0xFF (NaN) yields NaN weights.
// Each weight row is decoded once per call and reused for every activation row; every (row,
// column) result is computed by the same fixed-order code, so results are batch-invariant, and
// [n_begin, n_end) lets callers split columns across threads.
#ifndef TESSERA_KERNELS_CPU_QUANT_FP4_MATMUL_H_
#define TESSERA_KERNELS_CPU_QUANT_FP4_MATMUL_H_

#include <cstdint>

#include "kernels/cpu/quant/activation_quant.h"

namespace tessera::kernels::cpu {

inline constexpr int64_t kMxfp4BlockSize = 32;

struct Nvfp4Weights {
  const uint8_t* packed = nullptr;        // [N, K/2] E2M1 pairs
  const uint8_t* block_scales = nullptr;  // [N, K/16] E4M3 (UE4M3) bytes
  float global_scale = 1.0f;              // α_w, a multiplier (ModelOpt weight_scale_2)
};

struct Nvfp4Activations {
  const uint8_t* packed = nullptr;        // [rows, K/2] from QuantizeNvfp4
  const uint8_t* block_scales = nullptr;  // [rows, K/16]
  const float* alpha = nullptr;           // α(m) = alpha[m * alpha_row_stride], see above
  int64_t alpha_row_stride = 0;           // 0: one α for all rows; 1: per-row (dynamic g)
};

struct Mxfp4Weights {
  const uint8_t* packed = nullptr;  // [N, K/2] E2M1 pairs
  const uint8_t* scales = nullptr;  // [N, K/32] E8M0 bytes
};

// α for W4A4 from the weight multiplier α_w and the activation divisor g: α_w / g.
inline float Nvfp4Alpha(float weight_global_scale, float act_global_scale) {
  return weight_global_scale / act_global_scale;
}

// out[i] = (e2m1(q[n, i]) * fp32(sf[n, i / 16])) * α_w for i in [0, k); k % 16 == 0.
void DequantizeNvfp4WeightRow(const Nvfp4Weights& w, int64_t k, int64_t n, float* out);

// out[i] = e2m1(q[n, i]) * 2^(e[n, i / 32] - 127) for i in [0, k); k % 32 == 0.
void DequantizeMxfp4WeightRow(const Mxfp4Weights& w, int64_t k, int64_t n, float* out);

// y[m, n] = DotF32(x[m, :], DequantizeNvfp4WeightRow(n)) (+ bias[n]). Returns false (writing
// nothing) unless k % 16 == 0, the pointers are set and the column range is valid.
bool MatmulNvfp4W4A16(const Nvfp4Weights& w, int64_t n_total, int64_t k, const float* x,
                      int64_t rows, const float* bias, float* y, int64_t n_begin, int64_t n_end);

// The W4A4 product above (w.global_scale is not used: α carries it). Same failure conditions.
bool MatmulNvfp4W4A4(const Nvfp4Weights& w, int64_t n_total, int64_t k, const Nvfp4Activations& a,
                     int64_t rows, const float* bias, float* y, int64_t n_begin, int64_t n_end);

// y[m, n] = DotF32(x[m, :], DequantizeMxfp4WeightRow(n)) (+ bias[n]). Returns false (writing
// nothing) unless k % 32 == 0, the pointers are set and the column range is valid.
bool MatmulMxfp4W4A16(const Mxfp4Weights& w, int64_t n_total, int64_t k, const float* x,
                      int64_t rows, const float* bias, float* y, int64_t n_begin, int64_t n_end);

}  // namespace tessera::kernels::cpu

#endif  // TESSERA_KERNELS_CPU_QUANT_FP4_MATMUL_H_
