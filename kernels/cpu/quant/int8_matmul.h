// Reference (scalar) INT8 W8A8 linear layer (compressed-tensors int-quantized, Quark int8;
// quant-formats.md §6): int8 weights q_w [N, K] with a per-row or per-tensor scale, activations
// quantized by activation_quant.h (per-token or static, symmetric or with a zero point azp).
// The products are summed exactly in integers, and the epilogue is vLLM's CUTLASS one
// (csrc/quantization/cutlass_w8a8 scaled_mm_epilogues_c3x.hpp, ScaledEpilogue /
// ScaledEpilogueBiasAzp / ScaledEpilogueBiasAzpToken):
//   y[m, n] = sa(m) · (sw(n) · float(Σ_k qa[m,k]·qw[n,k] − azp(m) · azp_adj[n]))  (+ bias[n])
// where azp_adj[n] = Σ_k qw[n, k] is computed once per weight by ComputeInt8AzpAdjustment, and the
// integer subtraction happens before the single conversion to f32, as vLLM does. The integer sum
// is exact (64-bit here; vLLM's int32 agrees whenever it does not overflow, i.e. K < 2^17), so
// only the conversion and the two scale products round. Weight decoding is trivial, so there is
// no per-call buffer; results are batch-invariant and [n_begin, n_end) splits columns.
#ifndef TESSERA_KERNELS_CPU_QUANT_INT8_MATMUL_H_
#define TESSERA_KERNELS_CPU_QUANT_INT8_MATMUL_H_

#include <cstdint>

namespace tessera::kernels::cpu {

struct Int8Weights {
  const int8_t* q = nullptr;      // [N, K]
  const float* scales = nullptr;  // N floats when per_row, else one
  bool per_row = true;
  const int32_t* azp_adj = nullptr;  // [N] Σ_k q[n, k]; required when activations carry azp
};

struct Int8Activations {
  const int8_t* q = nullptr;      // [rows, K]
  const float* scales = nullptr;  // rows floats when per_token, else one (static)
  const int32_t* azp = nullptr;   // nullptr: symmetric; else rows (per_token) or one value
  bool per_token = true;
};

// azp_adj[n] = Σ_k q[n, k] for n in [0, n_total) (the J·B term of the azp epilogue). Computed in
// 64 bits and stored as int32; |Σ| <= 128·K, so K < 2^24 fits.
void ComputeInt8AzpAdjustment(const int8_t* q, int64_t n_total, int64_t k, int32_t* azp_adj);

// out[i] = float(q[n, i]) * sw(n): the dequantized weight row (W = q · s_w, §6.1).
void DequantizeInt8WeightRow(const Int8Weights& w, int64_t k, int64_t n, float* out);

// The W8A8 product above for columns [n_begin, n_end); y is [rows, n_total]. Returns false
// (writing nothing) on missing pointers, a bad column range, or azp without azp_adj.
bool MatmulInt8W8A8(const Int8Weights& w, int64_t n_total, int64_t k, const Int8Activations& a,
                    int64_t rows, const float* bias, float* y, int64_t n_begin, int64_t n_end);

}  // namespace tessera::kernels::cpu

#endif  // TESSERA_KERNELS_CPU_QUANT_INT8_MATMUL_H_
