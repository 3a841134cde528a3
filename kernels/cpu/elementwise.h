// Row-wise CPU kernels of the decoder that are not matrix products: RMSNorm, SwiGLU and residual
// add. Raw pointers and sizes only (kernels/ knows nothing of models). Each row is computed with
// one fixed reduction order, so a row's result never depends on which rows share its batch.
#ifndef TESSERA_KERNELS_CPU_ELEMENTWISE_H_
#define TESSERA_KERNELS_CPU_ELEMENTWISE_H_

#include <cstdint>

namespace tessera::kernels::cpu {

// out[i] = x[i] / sqrt(mean(x^2) + eps) * weight[i], for `rows` rows of `n` (x may alias out).
void RmsNorm(const float* x, const float* weight, int64_t rows, int64_t n, float eps, float* out);

// out[i] = silu(gate[i]) * up[i] with silu(v) = v / (1 + exp(-v)).
void SwiGlu(const float* gate, const float* up, int64_t n, float* out);

// gpt-oss's clamped SwiGLU (transformers' GptOssExperts, llama.cpp's swiglu_oai): with
// g = min(gate[i], limit) and u = clamp(up[i], −limit, limit),
// out[i] = (u + 1) · g · sigmoid(alpha · g), sigmoid(v) = 1 / (1 + exp(−v)).
void SwiGluClamped(const float* gate, const float* up, int64_t n, float alpha, float limit,
                   float* out);

// GeGLU (Gemma): out[i] = gelu(gate[i]) * up[i], with PyTorch's formulas in f32:
// kTanh ("gelu_pytorch_tanh", what Gemma was trained with and llama.cpp computes)
// 0.5·v·(1 + tanh(√(2/π)·(v + 0.044715·v³))); kErf (transformers' "gelu") 0.5·v·(1 + erf(v/√2)).
enum class GeluApprox { kTanh, kErf };
void GeluGlu(const float* gate, const float* up, int64_t n, GeluApprox approx, float* out);

// y[i] += x[i]
void AddInPlace(float* y, const float* x, int64_t n);

}  // namespace tessera::kernels::cpu

#endif  // TESSERA_KERNELS_CPU_ELEMENTWISE_H_
