#include "kernels/cpu/quant/codebook4_matmul.h"

#include "kernels/cpu/matmul_reference.h"

namespace tessera::kernels::cpu {

void DequantizeCodebook4WeightRow(const Codebook4Weights& w, int64_t k, int64_t n, float* out) {
  const uint8_t* row = w.packed + n * (k / 2);
  const float* scales = w.scales + n * (k / w.group);
  for (int64_t i = 0; i < k; ++i) {
    const uint8_t byte = row[i / 2];
    const int code = i % 2 == 0 ? byte & 0x0F : byte >> 4;
    out[i] = w.codebook[code] * scales[i / w.group];
  }
}

bool MatmulCodebook4(const Codebook4Weights& w, int64_t n_total, int64_t k, const float* x,
                     int64_t rows, const float* bias, float* y, int64_t n_begin, int64_t n_end) {
  if (w.packed == nullptr || w.scales == nullptr || w.codebook == nullptr || w.group <= 0 ||
      w.group % 2 != 0 || k < 0 || k % w.group != 0 || rows < 0 || n_begin < 0 ||
      n_begin > n_end || n_end > n_total) {
    return false;
  }
  MatmulDequantizedRows([&](int64_t n, float* out) { DequantizeCodebook4WeightRow(w, k, n, out); },
                        n_total, k, x, rows, bias, y, n_begin, n_end);
  return true;
}

}  // namespace tessera::kernels::cpu
