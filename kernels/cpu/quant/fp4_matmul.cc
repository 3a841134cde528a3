#include "kernels/cpu/quant/fp4_matmul.h"

#include <cstdint>
#include <vector>

#include "kernels/cpu/matmul_reference.h"
#include "kernels/numeric/e8m0.h"
#include "kernels/numeric/fp4.h"
#include "kernels/numeric/fp8.h"

namespace tessera::kernels::cpu {
namespace {

bool ValidShape(int64_t n_total, int64_t k, int64_t rows, int64_t n_begin, int64_t n_end,
                int64_t block) {
  return k >= 0 && k % block == 0 && rows >= 0 && 0 <= n_begin && n_begin <= n_end &&
         n_end <= n_total;
}

// Decodes `count` (even) pairwise-packed E2M1 codes to their exact values.
void DecodeE2m1Span(const uint8_t* packed, int64_t count, float* out) {
  for (int64_t j = 0; j < count / 2; ++j) {
    out[2 * j] = numeric::DecodeE2m1(numeric::LowNibble(packed[j]));
    out[2 * j + 1] = numeric::DecodeE2m1(numeric::HighNibble(packed[j]));
  }
}

}  // namespace

void DequantizeNvfp4WeightRow(const Nvfp4Weights& w, int64_t k, int64_t n, float* out) {
  const uint8_t* packed = w.packed + n * (k / 2);
  const uint8_t* sf = w.block_scales + n * (k / kNvfp4BlockSize);
  DecodeE2m1Span(packed, k, out);
  for (int64_t i = 0; i < k; ++i) {
    // e2m1 * sf is exact; the single rounding is the product with α_w.
    out[i] = (out[i] * numeric::DecodeUe4m3(sf[i / kNvfp4BlockSize])) * w.global_scale;
  }
}

void DequantizeMxfp4WeightRow(const Mxfp4Weights& w, int64_t k, int64_t n, float* out) {
  const uint8_t* packed = w.packed + n * (k / 2);
  const uint8_t* e = w.scales + n * (k / kMxfp4BlockSize);
  DecodeE2m1Span(packed, k, out);
  for (int64_t i = 0; i < k; ++i) out[i] *= numeric::DecodeE8m0(e[i / kMxfp4BlockSize]);
}

bool MatmulNvfp4W4A16(const Nvfp4Weights& w, int64_t n_total, int64_t k, const float* x,
                      int64_t rows, const float* bias, float* y, int64_t n_begin, int64_t n_end) {
  if (!ValidShape(n_total, k, rows, n_begin, n_end, kNvfp4BlockSize)) return false;
  if (w.packed == nullptr || w.block_scales == nullptr) return false;
  MatmulDequantizedRows(
      [&](int64_t n, float* out) { DequantizeNvfp4WeightRow(w, k, n, out); }, n_total, k, x, rows,
      bias, y, n_begin, n_end);
  return true;
}

bool MatmulMxfp4W4A16(const Mxfp4Weights& w, int64_t n_total, int64_t k, const float* x,
                      int64_t rows, const float* bias, float* y, int64_t n_begin, int64_t n_end) {
  if (!ValidShape(n_total, k, rows, n_begin, n_end, kMxfp4BlockSize)) return false;
  if (w.packed == nullptr || w.scales == nullptr) return false;
  MatmulDequantizedRows(
      [&](int64_t n, float* out) { DequantizeMxfp4WeightRow(w, k, n, out); }, n_total, k, x, rows,
      bias, y, n_begin, n_end);
  return true;
}

bool MatmulNvfp4W4A4(const Nvfp4Weights& w, int64_t n_total, int64_t k, const Nvfp4Activations& a,
                     int64_t rows, const float* bias, float* y, int64_t n_begin, int64_t n_end) {
  if (!ValidShape(n_total, k, rows, n_begin, n_end, kNvfp4BlockSize)) return false;
  if (w.packed == nullptr || w.block_scales == nullptr || a.packed == nullptr ||
      a.block_scales == nullptr || a.alpha == nullptr) {
    return false;
  }
  const int64_t blocks = k / kNvfp4BlockSize;
  // Activation codes and scales are decoded once per call, weight rows once per column.
  thread_local std::vector<float> a_dec;
  thread_local std::vector<float> a_sf;
  thread_local std::vector<float> w_row;
  thread_local std::vector<float> w_sf;
  a_dec.resize(static_cast<size_t>(rows * k));
  a_sf.resize(static_cast<size_t>(rows * blocks));
  w_row.resize(static_cast<size_t>(k));
  w_sf.resize(static_cast<size_t>(blocks));
  DecodeE2m1Span(a.packed, rows * k, a_dec.data());
  for (int64_t i = 0; i < rows * blocks; ++i) a_sf[i] = numeric::DecodeUe4m3(a.block_scales[i]);

  for (int64_t n = n_begin; n < n_end; ++n) {
    DecodeE2m1Span(w.packed + n * (k / 2), k, w_row.data());
    for (int64_t b = 0; b < blocks; ++b) {
      w_sf[b] = numeric::DecodeUe4m3(w.block_scales[n * blocks + b]);
    }
    for (int64_t m = 0; m < rows; ++m) {
      const float* ar = a_dec.data() + m * k;
      const float* sfa = a_sf.data() + m * blocks;
      float acc = 0.0f;
      for (int64_t b = 0; b < blocks; ++b) {
        const float* ab = ar + b * kNvfp4BlockSize;
        const float* wb = w_row.data() + b * kNvfp4BlockSize;
        float partial = 0.0f;  // Exact: multiples of 1/4 with magnitude <= 16 * 36.
        for (int64_t j = 0; j < kNvfp4BlockSize; ++j) partial += ab[j] * wb[j];
        acc += (sfa[b] * w_sf[b]) * partial;  // Exact term; only this sum rounds.
      }
      float v = a.alpha[m * a.alpha_row_stride] * acc;
      if (bias != nullptr) v += bias[n];
      y[m * n_total + n] = v;
    }
  }
  return true;
}

}  // namespace tessera::kernels::cpu
