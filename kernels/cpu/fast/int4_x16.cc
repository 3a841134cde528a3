// Repacking and the portable loop of q4_0_x16.h; the VNNI kernel is in q4_0_x16_vnni.cc.
#include "kernels/cpu/fast/q4_0_x16.h"

#include <cmath>
#include <cstring>

#include "kernels/cpu/fast/q8_act_matmul.h"
#include "kernels/numeric/half.h"

namespace tessera::kernels::cpu::fast {

namespace internal {
bool HasVnni();  // q8_act_vnni.cc
void Q4_0x16MatmulVnni(const FastWeights& w, const Q4_0x16Acts& a, const float* bias, float* y,
                       int64_t n_begin, int64_t n_end);
void QuantizeActsQ4_0x16Avx512(const float* x, int64_t k, int64_t r0, int64_t r1, int8_t* q,
                               float* d, float* s);
}  // namespace internal

namespace {

constexpr int64_t kCols = 16;
constexpr int64_t kQ4BlockBytes = 18;

int64_t Align64(int64_t v) { return (v + 63) / 64 * 64; }

int64_t ScaleAreaBytes(int64_t blocks) { return Align64(blocks * kCols * 2); }

// Code j (0..31) of a ggml Q4_0 block's 16 quant bytes.
uint8_t Q4Code(const uint8_t* qs, int j) {
  return j < 16 ? static_cast<uint8_t>(qs[j] & 0xF) : static_cast<uint8_t>(qs[j - 16] >> 4);
}

}  // namespace

int64_t Q4_0x16GroupStride(int64_t k) {
  const int64_t blocks = k / 32;
  return ScaleAreaBytes(blocks) + blocks * kCols * 16;
}

int64_t Q4_0x16Bytes(int64_t n, int64_t k) {
  return (n + kCols - 1) / kCols * Q4_0x16GroupStride(k);
}

FastWeights RepackQ4_0x16(const uint8_t* ggml_rows, int64_t n, int64_t k, uint8_t* dst) {
  const int64_t blocks = k / 32, groups = (n + kCols - 1) / kCols, stride = Q4_0x16GroupStride(k);
  std::memset(dst, 0, groups * stride);
  for (int64_t g = 0; g < groups; ++g) {
    uint8_t* scales = dst + g * stride;
    uint8_t* codes = scales + ScaleAreaBytes(blocks);
    for (int64_t c = 0; c < kCols; ++c) {
      const int64_t col = g * kCols + c;
      if (col >= n) continue;  // zero scale, zero codes: contributes 0
      for (int64_t b = 0; b < blocks; ++b) {
        const uint8_t* blk = ggml_rows + (col * blocks + b) * kQ4BlockBytes;
        std::memcpy(scales + (b * kCols + c) * 2, blk, 2);
        for (int q = 0; q < 4; ++q) {
          for (int i = 0; i < 4; ++i) {
            codes[b * 256 + q * 64 + c * 4 + i] = static_cast<uint8_t>(
                Q4Code(blk + 2, 8 * q + i) | (Q4Code(blk + 2, 8 * q + 4 + i) << 4));
          }
        }
      }
    }
  }
  FastWeights w;
  w.format = FastFormat::kQ4_0x16;
  w.data = dst;
  w.n = n;
  w.k = k;
  w.row_stride = stride;
  w.ggml = GgmlBlockType::kQ4_0;
  return w;
}

void QuantizeActsQ4_0x16(const float* x, int64_t k, int64_t r0, int64_t r1, int8_t* q, float* d,
                         float* s) {
  if (internal::HasVnni()) return internal::QuantizeActsQ4_0x16Avx512(x, k, r0, r1, q, d, s);
  const int64_t blocks = k / 32;
  for (int64_t r = r0; r < r1; ++r) {
    QuantizeRowQ8Block32(x + r * k, k, q + r * k, d + r * blocks);
    for (int64_t b = 0; b < blocks; ++b) {
      int32_t sum = 0;
      for (int j = 0; j < 32; ++j) sum += q[r * k + b * 32 + j];
      s[r * blocks + b] = static_cast<float>(sum);
    }
  }
}

void Q4_0x16MatmulPortable(const FastWeights& w, const Q4_0x16Acts& a, const float* bias,
                           float* y, int64_t n_begin, int64_t n_end) {
  const int64_t blocks = w.k / 32;
  for (int64_t n = n_begin; n < n_end; ++n) {
    const int64_t g = n / kCols, c = n % kCols;
    const uint8_t* scales = w.data + g * w.row_stride;
    const uint8_t* codes = scales + ScaleAreaBytes(blocks);
    for (int64_t m = 0; m < a.rows; ++m) {
      const int8_t* x = a.q + m * w.k;
      float acc = 0.0f;
      for (int64_t b = 0; b < blocks; ++b) {
        int32_t dot = 0;
        for (int q = 0; q < 4; ++q) {
          for (int i = 0; i < 4; ++i) {
            const uint8_t byte = codes[b * 256 + q * 64 + c * 4 + i];
            dot += (byte & 0xF) * x[b * 32 + 8 * q + i] + (byte >> 4) * x[b * 32 + 8 * q + 4 + i];
          }
        }
        uint16_t h;
        std::memcpy(&h, scales + (b * kCols + c) * 2, 2);
        const float t = std::fma(-8.0f, a.s[m * blocks + b], static_cast<float>(dot));
        acc = std::fma(t, numeric::HalfToFloat(h) * a.d[m * blocks + b], acc);
      }
      if (bias != nullptr) acc += bias[n];
      y[m * w.n + n] = acc;
    }
  }
}

void Q4_0x16Matmul(const FastWeights& w, const Q4_0x16Acts& a, const float* bias, float* y,
                   int64_t n_begin, int64_t n_end) {
  if (a.rows <= 0 || n_begin >= n_end) return;
  if (internal::HasVnni()) {
    internal::Q4_0x16MatmulVnni(w, a, bias, y, n_begin, n_end);
  } else {
    Q4_0x16MatmulPortable(w, a, bias, y, n_begin, n_end);
  }
}

}  // namespace tessera::kernels::cpu::fast
