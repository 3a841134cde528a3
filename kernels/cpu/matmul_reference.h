// Reference (scalar) matrix products y = x · Wᵀ for the weight encodings a dense checkpoint or a
// GGUF file can hold: f32, bf16, f16 and the ggml block types. Each weight row is decoded once
// per call into a small buffer and used for every activation row, so a batch reads the weights
// once. Every dot product sums in one fixed order per (row, column): results are batch-invariant.
#ifndef TESSERA_KERNELS_CPU_MATMUL_REFERENCE_H_
#define TESSERA_KERNELS_CPU_MATMUL_REFERENCE_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "kernels/cpu/ggml_dequant.h"

namespace tessera::kernels::cpu {

enum class DenseType { kF32, kBF16, kF16 };

struct WeightEncoding {
  // Exactly one is set.
  std::optional<DenseType> dense;
  std::optional<GgmlBlockType> ggml;
};

// Bytes of one weight row of `k` elements (k must be a whole number of blocks for ggml types).
int64_t WeightRowBytes(const WeightEncoding& enc, int64_t k);

// Decodes weight row `row` (of a [n, k] matrix at `w`) into `out` (k floats).
void DecodeWeightRow(const WeightEncoding& enc, const uint8_t* w, int64_t k, int64_t row, float* out);

// The fixed-order dot product every reference kernel uses (8 interleaved partial sums).
float DotF32(const float* a, const float* b, int64_t n);

// The loop every weight-decoding reference kernel shares: weight row n decoded once by
// dequantize_row(n, out) (k floats), then DotF32 with every activation row (+ bias[n]).
template <typename DequantizeRow>
void MatmulDequantizedRows(DequantizeRow dequantize_row, int64_t n_total, int64_t k,
                           const float* x, int64_t rows, const float* bias, float* y,
                           int64_t n_begin, int64_t n_end) {
  thread_local std::vector<float> w_row;
  w_row.resize(static_cast<size_t>(k));
  for (int64_t n = n_begin; n < n_end; ++n) {
    dequantize_row(n, w_row.data());
    for (int64_t m = 0; m < rows; ++m) {
      float v = DotF32(x + m * k, w_row.data(), k);
      if (bias != nullptr) v += bias[n];
      y[m * n_total + n] = v;
    }
  }
}

// y[m, n] = Σ_k x[m, k] · W[n, k] (+ bias[n]) for output columns [n_begin, n_end); x is [rows, k],
// y is [rows, n_total]. The column range lets callers split work across threads.
void MatmulReference(const WeightEncoding& enc, const uint8_t* w, int64_t n_total, int64_t k,
                     const float* x, int64_t rows, const float* bias, float* y, int64_t n_begin,
                     int64_t n_end);

}  // namespace tessera::kernels::cpu

#endif  // TESSERA_KERNELS_CPU_MATMUL_REFERENCE_H_
