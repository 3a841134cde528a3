#include "kernels/cpu/matmul_reference.h"

#include <cstring>
#include <vector>

#include "kernels/numeric/half.h"

namespace tessera::kernels::cpu {

int64_t WeightRowBytes(const WeightEncoding& enc, int64_t k) {
  if (enc.dense) return k * (*enc.dense == DenseType::kF32 ? 4 : 2);
  const GgmlBlockInfo info = GetGgmlBlockInfo(*enc.ggml);
  return k / info.elements * info.bytes;
}

void DecodeWeightRow(const WeightEncoding& enc, const uint8_t* w, int64_t k, int64_t row, float* out) {
  const uint8_t* src = w + row * WeightRowBytes(enc, k);
  if (enc.ggml) {
    DequantizeGgmlBlocks(*enc.ggml, src, k / GetGgmlBlockInfo(*enc.ggml).elements, out);
    return;
  }
  switch (*enc.dense) {
    case DenseType::kF32:
      std::memcpy(out, src, k * 4);
      break;
    case DenseType::kBF16:
      for (int64_t i = 0; i < k; ++i) {
        uint16_t b;
        std::memcpy(&b, src + 2 * i, 2);
        out[i] = numeric::Bf16ToFloat(b);
      }
      break;
    case DenseType::kF16:
      for (int64_t i = 0; i < k; ++i) {
        uint16_t b;
        std::memcpy(&b, src + 2 * i, 2);
        out[i] = numeric::HalfToFloat(b);
      }
      break;
  }
}

float DotF32(const float* a, const float* b, int64_t n) {
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    for (int j = 0; j < 8; ++j) acc[j] += a[i + j] * b[i + j];
  }
  for (int j = 0; i < n; ++i, ++j) acc[j] += a[i] * b[i];
  return ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
}

void MatmulReference(const WeightEncoding& enc, const uint8_t* w, int64_t n_total, int64_t k,
                     const float* x, int64_t rows, const float* bias, float* y, int64_t n_begin,
                     int64_t n_end) {
  thread_local std::vector<float> row_buf;
  row_buf.resize(k);
  const bool f32_direct = enc.dense && *enc.dense == DenseType::kF32 &&
                          reinterpret_cast<uintptr_t>(w) % alignof(float) == 0;
  for (int64_t n = n_begin; n < n_end; ++n) {
    const float* wr;
    if (f32_direct) {
      wr = reinterpret_cast<const float*>(w) + n * k;
    } else {
      DecodeWeightRow(enc, w, k, n, row_buf.data());
      wr = row_buf.data();
    }
    for (int64_t m = 0; m < rows; ++m) {
      float v = DotF32(x + m * k, wr, k);
      if (bias != nullptr) v += bias[n];
      y[m * n_total + n] = v;
    }
  }
}

}  // namespace tessera::kernels::cpu
