#include "kernels/cpu/elementwise.h"

#include <algorithm>
#include <cmath>

namespace tessera::kernels::cpu {

void RmsNorm(const float* x, const float* weight, int64_t rows, int64_t n, float eps, float* out) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * n;
    float* o = out + r * n;
    // The sum of squares in double: as accurate as any f32 order the references use, and fixed.
    double ss = 0;
    for (int64_t i = 0; i < n; ++i) ss += static_cast<double>(xr[i]) * xr[i];
    const float mean = static_cast<float>(ss / static_cast<double>(n));
    const float inv = 1.0f / std::sqrt(mean + eps);
    for (int64_t i = 0; i < n; ++i) o[i] = weight[i] * (xr[i] * inv);
  }
}

void SwiGlu(const float* gate, const float* up, int64_t n, float* out) {
  for (int64_t i = 0; i < n; ++i) {
    const float g = gate[i];
    out[i] = (g / (1.0f + std::exp(-g))) * up[i];
  }
}

void SwiGluClamped(const float* gate, const float* up, int64_t n, float alpha, float limit,
                   float* out) {
  for (int64_t i = 0; i < n; ++i) {
    const float g = std::min(gate[i], limit);
    const float u = std::clamp(up[i], -limit, limit);
    const float sigmoid = 1.0f / (1.0f + std::exp(-(g * alpha)));
    out[i] = (u + 1.0f) * (g * sigmoid);
  }
}

void GeluGlu(const float* gate, const float* up, int64_t n, GeluApprox approx, float* out) {
  // PyTorch's constants and operation order (aten/src/ATen/native/cpu/Activation.cpp).
  const float kBeta = static_cast<float>(M_SQRT2 * M_2_SQRTPI * 0.5);
  const float kKappa = 0.044715f;
  const float kAlpha = static_cast<float>(M_SQRT1_2);
  for (int64_t i = 0; i < n; ++i) {
    const float g = gate[i];
    float act;
    if (approx == GeluApprox::kTanh) {
      const float inner = kBeta * (g + kKappa * (g * g * g));
      act = 0.5f * g * (1.0f + std::tanh(inner));
    } else {
      act = g * 0.5f * (1.0f + std::erf(g * kAlpha));
    }
    out[i] = act * up[i];
  }
}

void AddInPlace(float* y, const float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] += x[i];
}

}  // namespace tessera::kernels::cpu
