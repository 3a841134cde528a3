#include "kernels/cpu/quant/fp8_matmul.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "kernels/cpu/matmul_reference.h"
#include "kernels/cpu/quant/activation_quant.h"
#include "kernels/numeric/fp8.h"

namespace tessera::kernels::cpu {
namespace {

bool ValidShape(int64_t n_total, int64_t k, int64_t rows, int64_t n_begin, int64_t n_end) {
  return k >= 0 && rows >= 0 && 0 <= n_begin && n_begin <= n_end && n_end <= n_total;
}

bool ValidWeights(const Fp8Weights& w) {
  if (w.q == nullptr || w.scales == nullptr) return false;
  return w.layout != Fp8WeightScaleLayout::kBlock || (w.block_n > 0 && w.block_k > 0);
}

bool ValidActivations(const Fp8Activations& a) {
  if (a.q == nullptr || a.scales == nullptr) return false;
  return a.layout != Fp8ActScaleLayout::kPerTokenGroup || a.group_size > 0;
}

// The weight scale for row n and K-block kb (kb is ignored unless the layout is kBlock).
float WeightScale(const Fp8Weights& w, int64_t k, int64_t n, int64_t kb) {
  switch (w.layout) {
    case Fp8WeightScaleLayout::kPerTensor:
      return w.scales[0];
    case Fp8WeightScaleLayout::kPerRow:
      return w.scales[n];
    case Fp8WeightScaleLayout::kBlock:
      return w.scales[(n / w.block_n) * NumGroups(k, w.block_k) + kb];
  }
  return 0.0f;
}

// The activation scale for row m and K-group g (g is ignored unless per-token-group).
float ActScale(const Fp8Activations& a, int64_t k, int64_t m, int64_t g) {
  switch (a.layout) {
    case Fp8ActScaleLayout::kPerTensor:
      return a.scales[0];
    case Fp8ActScaleLayout::kPerToken:
      return a.scales[m];
    case Fp8ActScaleLayout::kPerTokenGroup:
      return a.scales[m * NumGroups(k, a.group_size) + g];
  }
  return 0.0f;
}

void DecodeE4m3Span(const uint8_t* q, int64_t count, float* out) {
  for (int64_t i = 0; i < count; ++i) out[i] = numeric::DecodeE4m3(q[i]);
}

}  // namespace

void DequantizeFp8WeightRow(const Fp8Weights& w, int64_t k, int64_t n, float* out) {
  const uint8_t* qr = w.q + n * k;
  if (w.layout != Fp8WeightScaleLayout::kBlock) {
    const float s = WeightScale(w, k, n, 0);
    for (int64_t i = 0; i < k; ++i) out[i] = numeric::DecodeE4m3(qr[i]) * s;
    return;
  }
  for (int64_t begin = 0, kb = 0; begin < k; begin += w.block_k, ++kb) {
    const float s = WeightScale(w, k, n, kb);
    const int64_t end = std::min(k, begin + w.block_k);
    for (int64_t i = begin; i < end; ++i) out[i] = numeric::DecodeE4m3(qr[i]) * s;
  }
}

bool MatmulFp8W8A16(const Fp8Weights& w, int64_t n_total, int64_t k, const float* x, int64_t rows,
                    const float* bias, float* y, int64_t n_begin, int64_t n_end) {
  if (!ValidShape(n_total, k, rows, n_begin, n_end) || !ValidWeights(w)) return false;
  thread_local std::vector<float> w_row;
  w_row.resize(static_cast<size_t>(k));
  for (int64_t n = n_begin; n < n_end; ++n) {
    DequantizeFp8WeightRow(w, k, n, w_row.data());
    for (int64_t m = 0; m < rows; ++m) {
      float v = DotF32(x + m * k, w_row.data(), k);
      if (bias != nullptr) v += bias[n];
      y[m * n_total + n] = v;
    }
  }
  return true;
}

bool MatmulFp8W8A8(const Fp8Weights& w, int64_t n_total, int64_t k, const Fp8Activations& a,
                   int64_t rows, const float* bias, float* y, int64_t n_begin, int64_t n_end) {
  if (!ValidShape(n_total, k, rows, n_begin, n_end) || !ValidWeights(w) || !ValidActivations(a)) {
    return false;
  }
  const bool w_blocked = w.layout == Fp8WeightScaleLayout::kBlock;
  const bool a_grouped = a.layout == Fp8ActScaleLayout::kPerTokenGroup;
  if (w_blocked && a_grouped && w.block_k != a.group_size) return false;
  // Segment length along K: 0 means one dot product over the whole row.
  const int64_t segment = w_blocked ? w.block_k : (a_grouped ? a.group_size : 0);

  // Activations are decoded once per call (codes -> exact f32), weights once per column.
  thread_local std::vector<float> a_dec;
  thread_local std::vector<float> w_row;
  a_dec.resize(static_cast<size_t>(rows * k));
  w_row.resize(static_cast<size_t>(k));
  DecodeE4m3Span(a.q, rows * k, a_dec.data());

  for (int64_t n = n_begin; n < n_end; ++n) {
    DecodeE4m3Span(w.q + n * k, k, w_row.data());
    for (int64_t m = 0; m < rows; ++m) {
      const float* ar = a_dec.data() + m * k;
      float v;
      if (segment == 0) {
        const float acc = DotF32(ar, w_row.data(), k);
        v = ActScale(a, k, m, 0) * (WeightScale(w, k, n, 0) * acc);
      } else {
        v = 0.0f;
        for (int64_t begin = 0, g = 0; begin < k; begin += segment, ++g) {
          const int64_t len = std::min(segment, k - begin);
          const float partial = DotF32(ar + begin, w_row.data() + begin, len);
          v += partial * ActScale(a, k, m, g) * WeightScale(w, k, n, g);
        }
      }
      if (bias != nullptr) v += bias[n];
      y[m * n_total + n] = v;
    }
  }
  return true;
}

}  // namespace tessera::kernels::cpu
