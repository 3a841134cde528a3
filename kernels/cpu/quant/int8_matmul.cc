#include "kernels/cpu/quant/int8_matmul.h"

#include <cstdint>

namespace tessera::kernels::cpu {
namespace {

// Σ a[i]·b[i] exactly. Each product is at most 2^14 in magnitude, so 64 bits never overflow.
int64_t DotInt8(const int8_t* a, const int8_t* b, int64_t n) {
  int64_t acc = 0;
  for (int64_t i = 0; i < n; ++i) acc += static_cast<int32_t>(a[i]) * static_cast<int32_t>(b[i]);
  return acc;
}

}  // namespace

void ComputeInt8AzpAdjustment(const int8_t* q, int64_t n_total, int64_t k, int32_t* azp_adj) {
  for (int64_t n = 0; n < n_total; ++n) {
    int64_t sum = 0;
    for (int64_t i = 0; i < k; ++i) sum += q[n * k + i];
    azp_adj[n] = static_cast<int32_t>(sum);
  }
}

void DequantizeInt8WeightRow(const Int8Weights& w, int64_t k, int64_t n, float* out) {
  const float s = w.per_row ? w.scales[n] : w.scales[0];
  for (int64_t i = 0; i < k; ++i) out[i] = static_cast<float>(w.q[n * k + i]) * s;
}

bool MatmulInt8W8A8(const Int8Weights& w, int64_t n_total, int64_t k, const Int8Activations& a,
                    int64_t rows, const float* bias, float* y, int64_t n_begin, int64_t n_end) {
  if (k < 0 || rows < 0 || n_begin < 0 || n_begin > n_end || n_end > n_total) return false;
  if (w.q == nullptr || w.scales == nullptr || a.q == nullptr || a.scales == nullptr) return false;
  if (a.azp != nullptr && w.azp_adj == nullptr) return false;
  for (int64_t n = n_begin; n < n_end; ++n) {
    const int8_t* wr = w.q + n * k;
    const float sw = w.per_row ? w.scales[n] : w.scales[0];
    for (int64_t m = 0; m < rows; ++m) {
      int64_t acc = DotInt8(a.q + m * k, wr, k);
      if (a.azp != nullptr) {
        const int64_t azp = a.per_token ? a.azp[m] : a.azp[0];
        acc -= azp * static_cast<int64_t>(w.azp_adj[n]);
      }
      const float sa = a.per_token ? a.scales[m] : a.scales[0];
      // int64 -> f32 rounds to nearest even, like CUTLASS's int32 -> float conversion.
      float v = sa * (sw * static_cast<float>(acc));
      if (bias != nullptr) v += bias[n];
      y[m * n_total + n] = v;
    }
  }
  return true;
}

}  // namespace tessera::kernels::cpu
