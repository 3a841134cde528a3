// Repacking, activation quantization and the portable loop of int4_x16.h; the VNNI kernel is in
// int4_x16_vnni.cc.
#include "kernels/cpu/fast/int4_x16.h"

#include <cmath>
#include <cstring>

#include "kernels/cpu/fast/q8_act_matmul.h"
#include "kernels/numeric/half.h"

namespace tessera::kernels::cpu::fast {

namespace internal {
bool HasVnni();  // q8_act_vnni.cc
void Int4x16MatmulVnni(const FastWeights& w, const Int4x16Acts& a, const float* bias, float* y,
                       int64_t n_begin, int64_t n_end);
void QuantizeActsInt4x16Avx512(const float* x, int64_t k, int64_t r0, int64_t r1, int8_t* q,
                               float* d, float* s);
}  // namespace internal

namespace {

constexpr int64_t kCols = 16;
constexpr int64_t kQ4BlockBytes = 18;

int64_t Align64(int64_t v) { return (v + 63) / 64 * 64; }

// Bytes before the codes in one column group's tile.
int64_t ScaleAreaBytes(const FastWeights& w) {
  if (w.format == FastFormat::kQ4_0x16) return Align64(w.k / 32 * kCols * 2);
  return 2 * Align64(w.k / w.group_size * kCols * 4);
}

// Writes the codes of block b, column c, given code(j) for j in 0..31.
template <class Code>
void PutCodes(uint8_t* codes, int64_t b, int64_t c, Code code) {
  for (int q = 0; q < 4; ++q) {
    for (int i = 0; i < 4; ++i) {
      codes[b * 256 + q * 64 + c * 4 + i] =
          static_cast<uint8_t>(code(8 * q + i) | (code(8 * q + 4 + i) << 4));
    }
  }
}

FastWeights Describe(FastFormat format, uint8_t* dst, int64_t n, int64_t k, int64_t group_size) {
  FastWeights w;
  w.format = format;
  w.data = dst;
  w.n = n;
  w.k = k;
  w.group_size = group_size;
  w.row_stride = ScaleAreaBytes(w) + k / 32 * 256;
  return w;
}

}  // namespace

int64_t Q4_0x16Bytes(int64_t n, int64_t k) {
  return (n + kCols - 1) / kCols * Describe(FastFormat::kQ4_0x16, nullptr, n, k, 32).row_stride;
}

int64_t U4x16Bytes(int64_t n, int64_t k, int64_t group_size) {
  return (n + kCols - 1) / kCols *
         Describe(FastFormat::kU4x16, nullptr, n, k, group_size).row_stride;
}

FastWeights RepackQ4_0x16(const uint8_t* ggml_rows, int64_t n, int64_t k, uint8_t* dst) {
  FastWeights w = Describe(FastFormat::kQ4_0x16, dst, n, k, 32);
  w.ggml = GgmlBlockType::kQ4_0;
  const int64_t blocks = k / 32, groups = (n + kCols - 1) / kCols;
  std::memset(dst, 0, groups * w.row_stride);
  for (int64_t g = 0; g < groups; ++g) {
    uint8_t* scales = dst + g * w.row_stride;
    uint8_t* codes = scales + ScaleAreaBytes(w);
    for (int64_t c = 0; c < kCols && g * kCols + c < n; ++c) {  // past n: zero scale and codes
      const int64_t col = g * kCols + c;
      for (int64_t b = 0; b < blocks; ++b) {
        const uint8_t* blk = ggml_rows + (col * blocks + b) * kQ4BlockBytes;
        std::memcpy(scales + (b * kCols + c) * 2, blk, 2);
        PutCodes(codes, b, c, [&](int j) {
          return j < 16 ? (blk[2 + j] & 0xF) : (blk[2 + j - 16] >> 4);
        });
      }
    }
  }
  return w;
}

FastWeights RepackU4x16(const FastWeights& src, uint8_t* dst) {
  const int64_t n = src.n, k = src.k, gs = src.group_size, ngroups = k / gs;
  FastWeights w = Describe(FastFormat::kU4x16, dst, n, k, gs);
  const int64_t blocks = k / 32, groups = (n + kCols - 1) / kCols;
  const int64_t zero_offset = Align64(ngroups * kCols * 4);
  std::memset(dst, 0, groups * w.row_stride);
  for (int64_t g = 0; g < groups; ++g) {
    uint8_t* tile = dst + g * w.row_stride;
    auto* scales = reinterpret_cast<float*>(tile);
    auto* zeros = reinterpret_cast<float*>(tile + zero_offset);
    uint8_t* codes = tile + ScaleAreaBytes(w);
    for (int64_t c = 0; c < kCols && g * kCols + c < n; ++c) {
      const int64_t col = g * kCols + c;
      for (int64_t i = 0; i < ngroups; ++i) {
        scales[i * kCols + c] = src.group_scales[col * ngroups + i];
        zeros[i * kCols + c] = src.group_zeros[col * ngroups + i];
      }
      const uint8_t* row = src.data + col * src.row_stride;
      for (int64_t b = 0; b < blocks; ++b) {
        PutCodes(codes, b, c, [&](int j) {
          const uint8_t byte = row[(b * 32 + j) / 2];
          return (j % 2 == 0) ? (byte & 0xF) : (byte >> 4);
        });
      }
    }
  }
  return w;
}

void QuantizeActsInt4x16(const float* x, int64_t k, int64_t r0, int64_t r1, int8_t* q, float* d,
                         float* s) {
  if (internal::HasVnni()) return internal::QuantizeActsInt4x16Avx512(x, k, r0, r1, q, d, s);
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

void Int4x16MatmulPortable(const FastWeights& w, const Int4x16Acts& a, const float* bias,
                           float* y, int64_t n_begin, int64_t n_end) {
  const int64_t blocks = w.k / 32;
  const bool q4_0 = w.format == FastFormat::kQ4_0x16;
  const int64_t ngroups = q4_0 ? 0 : w.k / w.group_size;
  for (int64_t n = n_begin; n < n_end; ++n) {
    const int64_t g = n / kCols, c = n % kCols;
    const uint8_t* tile = w.data + g * w.row_stride;
    const uint8_t* codes = tile + ScaleAreaBytes(w);
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
        float scale, zero;
        if (q4_0) {
          uint16_t h;
          std::memcpy(&h, tile + (b * kCols + c) * 2, 2);
          scale = numeric::HalfToFloat(h);
          zero = 8.0f;
        } else {
          const int64_t i = b * 32 / w.group_size;
          const auto* scales = reinterpret_cast<const float*>(tile);
          const auto* zeros = reinterpret_cast<const float*>(tile + Align64(ngroups * kCols * 4));
          scale = scales[i * kCols + c];
          zero = zeros[i * kCols + c];
        }
        const float t = std::fma(-zero, a.s[m * blocks + b], static_cast<float>(dot));
        acc = std::fma(t, scale * a.d[m * blocks + b], acc);
      }
      if (bias != nullptr) acc += bias[n];
      y[m * w.n + n] = acc;
    }
  }
}

void Int4x16Matmul(const FastWeights& w, const Int4x16Acts& a, const float* bias, float* y,
                   int64_t n_begin, int64_t n_end) {
  if (a.rows <= 0 || n_begin >= n_end) return;
  if (internal::HasVnni()) {
    internal::Int4x16MatmulVnni(w, a, bias, y, n_begin, n_end);
  } else {
    Int4x16MatmulPortable(w, a, bias, y, n_begin, n_end);
  }
}

}  // namespace tessera::kernels::cpu::fast
