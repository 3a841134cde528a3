// Int8-activation Q4_0/Q8_0 products: activation quantizer, the portable scalar path, the scalar
// reference on ggml rows, and the dispatch to the AVX-512 VNNI kernel (q8_act_vnni.cc).
//
// Kernel layout of the quantized activations (what the VNNI kernel loads): codes are padded to
// whole groups of 16 blocks with zeros. For Q8_0 weights the codes are in natural order. For Q4_0
// weights each unit of 4 blocks (128 values, 128 bytes) is stored as the values 0..15 of the 4
// blocks (64 bytes), then their values 16..31: one 64-byte load of repacked Q4_0 quants holds
// the 16 bytes of 4 blocks, whose low nibbles are values 0..15 and high nibbles values 16..31, so
// the two activation vectors line up with the nibble vectors without any shuffle. Scales and code
// sums are stored in the canonical lane order (Q8ActLanePerm) so the kernel loads them directly.
#include "kernels/cpu/fast/q8_act_matmul.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/numeric/half.h"

namespace tessera::kernels::cpu::fast {

namespace internal {
// Defined in q8_act_vnni.cc; false when the CPU (or compiler) lacks AVX-512 VNNI.
bool HasVnni();
void Q8ActMatmulVnni(const FastWeights& w, const Q8Acts& a, const float* bias, float* y,
                     int64_t n_begin, int64_t n_end);
}  // namespace internal

namespace {

int64_t Align64(int64_t v) { return (v + 63) / 64 * 64; }

float HalfAt(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return numeric::HalfToFloat(h);
}

// The canonical float order of the header. block(b) returns the exact integer sum of block b and
// the weight scale d_w[b].
template <class BlockDot>
float CanonicalDot(int64_t blocks, const float* dx, BlockDot block) {
  float acc[16] = {};
  for (int64_t g0 = 0; g0 < blocks; g0 += 16) {
    for (int l = 0; l < 16; ++l) {
      const int64_t b = g0 + Q8ActLanePerm(l);
      if (b >= blocks) continue;  // the kernel adds fma(0, 0, acc) = acc here
      const auto [isum, dw] = block(b);
      acc[l] = std::fma(static_cast<float>(isum), dw * dx[b], acc[l]);
    }
  }
  float s = acc[0];
  for (int l = 1; l < 16; ++l) s += acc[l];
  return s;
}

struct BlockSum {
  int32_t isum;
  float dw;
};

// Block b of a Q4_0 row given its 16 quant bytes and scale: Σ (nibble − 8) · x.
BlockSum Q4Block(const uint8_t* qs, float dw, const int8_t* x) {
  int32_t s = 0;
  for (int j = 0; j < 16; ++j) {
    s += ((qs[j] & 0xF) - 8) * x[j];
    s += ((qs[j] >> 4) - 8) * x[j + 16];
  }
  return {s, dw};
}

BlockSum Q8Block(const int8_t* qs, float dw, const int8_t* x) {
  int32_t s = 0;
  for (int j = 0; j < 32; ++j) s += qs[j] * x[j];
  return {s, dw};
}

// Portable path on the repacked layout and natural-order activations.
void Q8ActMatmulScalar(const FastWeights& w, const Q8Acts& a, const float* bias, float* y,
                       int64_t nb, int64_t ne) {
  const int64_t blocks = w.k / 32;
  const bool q4 = w.format == FastFormat::kQ4_0;
  for (int64_t n = nb; n < ne; ++n) {
    const uint8_t* row = w.data + n * w.row_stride;
    const uint8_t* quants = row + w.quant_offset;
    for (int64_t m = 0; m < a.rows; ++m) {
      const int8_t* x = a.q_nat + m * w.k;
      float v = CanonicalDot(blocks, a.d_nat + m * blocks, [&](int64_t b) {
        return q4 ? Q4Block(quants + b * 16, HalfAt(row + 2 * b), x + b * 32)
                  : Q8Block(reinterpret_cast<const int8_t*>(quants) + b * 32, HalfAt(row + 2 * b),
                            x + b * 32);
      });
      if (bias != nullptr) v += bias[n];
      y[m * w.n + n] = v;
    }
  }
}

}  // namespace

void QuantizeRowQ8Block32(const float* x, int64_t k, int8_t* q, float* d) {
  for (int64_t b = 0; b < k / 32; ++b) {
    const float* xb = x + b * 32;
    float amax = 0.0f;
    for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(xb[j]));
    const float db = amax / 127.0f;
    const float id = db != 0.0f ? 1.0f / db : 0.0f;
    d[b] = db;
    for (int j = 0; j < 32; ++j) {
      // x · id can exceed 127 by an ulp, so clamp; a NaN input becomes code 0.
      float r = std::nearbyint(xb[j] * id);
      r = r > 127.0f ? 127.0f : (r < -127.0f ? -127.0f : r);
      q[b * 32 + j] = static_cast<int8_t>(r == r ? r : 0.0f);
    }
  }
}

int64_t Q8ActScratchBytes(int64_t rows, int64_t k) {
  const int64_t pb = Q8ActPaddedBlocks(k);
  return Align64(rows * pb * 32) + 2 * Align64(rows * pb * 4) + Align64(rows * k) +
         Align64(rows * (k / 32) * 4);
}

Q8Acts QuantizeActsQ8Block32(FastFormat format, const float* x, int64_t rows, int64_t k,
                             uint8_t* scratch) {
  const int64_t pb = Q8ActPaddedBlocks(k), blocks = k / 32;
  auto* q = reinterpret_cast<int8_t*>(scratch);
  uint8_t* p = scratch + Align64(rows * pb * 32);
  auto* d = reinterpret_cast<float*>(p);
  p += Align64(rows * pb * 4);
  auto* sums = reinterpret_cast<int32_t*>(p);
  p += Align64(rows * pb * 4);
  auto* q_nat = reinterpret_cast<int8_t*>(p);
  p += Align64(rows * k);
  auto* d_nat = reinterpret_cast<float*>(p);
  std::memset(q, 0, rows * pb * 32);
  std::memset(d, 0, rows * pb * 4);
  std::memset(sums, 0, rows * pb * 4);
  for (int64_t m = 0; m < rows; ++m) {
    int8_t* qn = q_nat + m * k;
    float* dn = d_nat + m * blocks;
    QuantizeRowQ8Block32(x + m * k, k, qn, dn);
    int8_t* qk = q + m * pb * 32;
    if (format == FastFormat::kQ4_0) {
      for (int64_t b = 0; b < blocks; ++b) {
        int8_t* unit = qk + (b / 4) * 128 + (b % 4) * 16;
        std::memcpy(unit, qn + b * 32, 16);
        std::memcpy(unit + 64, qn + b * 32 + 16, 16);
      }
    } else {
      std::memcpy(qk, qn, k);
    }
    for (int64_t g0 = 0; g0 < pb; g0 += 16) {
      for (int l = 0; l < 16; ++l) {
        const int64_t b = g0 + Q8ActLanePerm(l);
        if (b >= blocks) continue;
        int32_t s = 0;
        for (int j = 0; j < 32; ++j) s += qn[b * 32 + j];
        d[m * pb + g0 + l] = dn[b];
        sums[m * pb + g0 + l] = s;
      }
    }
  }
  Q8Acts a;
  a.rows = rows;
  a.k = k;
  a.padded_blocks = pb;
  a.q = q;
  a.d = d;
  a.sums = sums;
  a.q_nat = q_nat;
  a.d_nat = d_nat;
  return a;
}

void Q8ActMatmul(const FastWeights& w, const Q8Acts& a, const float* bias, float* y,
                 int64_t n_begin, int64_t n_end) {
  if (a.rows <= 0 || n_begin >= n_end) return;
  if (internal::HasVnni()) {
    internal::Q8ActMatmulVnni(w, a, bias, y, n_begin, n_end);
  } else {
    Q8ActMatmulScalar(w, a, bias, y, n_begin, n_end);
  }
}

void Q8ActMatmulReference(GgmlBlockType type, const uint8_t* ggml_rows, int64_t n, int64_t k,
                          const int8_t* q, const float* d, int64_t rows, const float* bias,
                          float* y) {
  const int64_t blocks = k / 32;
  const bool q4 = type == GgmlBlockType::kQ4_0;
  const int64_t block_bytes = q4 ? 18 : 34;
  for (int64_t c = 0; c < n; ++c) {
    const uint8_t* row = ggml_rows + c * blocks * block_bytes;
    for (int64_t m = 0; m < rows; ++m) {
      const int8_t* x = q + m * k;
      float v = CanonicalDot(blocks, d + m * blocks, [&](int64_t b) {
        const uint8_t* blk = row + b * block_bytes;
        return q4 ? Q4Block(blk + 2, HalfAt(blk), x + b * 32)
                  : Q8Block(reinterpret_cast<const int8_t*>(blk + 2), HalfAt(blk), x + b * 32);
      });
      if (bias != nullptr) v += bias[c];
      y[m * n + c] = v;
    }
  }
}

const char* Q8ActKernelName() { return internal::HasVnni() ? "avx512-vnni" : "scalar"; }

}  // namespace tessera::kernels::cpu::fast
