// Int8-activation Q4_0/Q8_0 products: activation quantizer, the portable scalar path, the scalar
// reference on ggml rows, and the dispatch to the AVX-512 VNNI kernel (q8_act_vnni.cc).
//
// Kernel layout of the quantized activations (what the VNNI kernel loads): codes are padded to
// whole groups of 16 blocks with zeros. For Q8_0 weights the codes are in natural order. For Q4_0
// weights each unit of 4 blocks (128 values, 128 bytes) is stored as the values 0..15 of the 4
// blocks (64 bytes), then their values 16..31: one 64-byte load of repacked Q4_0 quants holds
// the 16 bytes of 4 blocks, whose low nibbles are values 0..15 and high nibbles values 16..31, so
// the two activation vectors line up with the nibble vectors without any shuffle. For kU4Groups
// (nibble pairs: byte j of a block holds its elements 2j and 2j + 1) a unit stores the even
// elements of its 4 blocks, then the odd ones, for the same reason; kNvfp4Pairs uses that order
// too, and its d / sums (first halves) and d2 / sums2 (second halves) are per 16 elements. Scales and code
// sums are stored in the canonical lane order (Q8ActLanePerm) so the kernel loads them directly.
#include "kernels/cpu/fast/q8_act_matmul.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/numeric/fp4.h"
#include "kernels/numeric/fp8.h"
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
      const auto [tot, dw] = block(b);
      acc[l] = std::fma(tot, dw * dx[b], acc[l]);
    }
  }
  float s = acc[0];
  for (int l = 1; l < 16; ++l) s += acc[l];
  return s;
}

struct BlockSum {
  float tot;  // the block's integer sum, or for kU4Groups fma(−z, Σx, Σu·x)
  float dw;
};

// Block b of a Q4_0 row given its 16 quant bytes and scale: Σ (nibble − 8) · x.
BlockSum Q4Block(const uint8_t* qs, float dw, const int8_t* x) {
  int32_t s = 0;
  for (int j = 0; j < 16; ++j) {
    s += ((qs[j] & 0xF) - 8) * x[j];
    s += ((qs[j] >> 4) - 8) * x[j + 16];
  }
  return {static_cast<float>(s), dw};
}

BlockSum Q8Block(const int8_t* qs, float dw, const int8_t* x) {
  int32_t s = 0;
  for (int j = 0; j < 32; ++j) s += qs[j] * x[j];
  return {static_cast<float>(s), dw};
}

// Block of nibble-pair codes (16 bytes: elements 2j, 2j + 1 in byte j) with the group's s and z.
BlockSum U4Block(const uint8_t* pairs, float s, float z, const int8_t* x) {
  int32_t dot = 0, xsum = 0;
  for (int j = 0; j < 16; ++j) {
    dot += (pairs[j] & 0xF) * x[2 * j] + (pairs[j] >> 4) * x[2 * j + 1];
    xsum += x[2 * j] + x[2 * j + 1];
  }
  return {std::fma(-z, static_cast<float>(xsum), static_cast<float>(dot)), s};
}

// 2·e2m1 for each 4-bit code (exact integers in [−12, 12]).
constexpr int kTwiceE2m1[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

// The canonical order for kNvfp4Pairs on kernel-layout activations (lane-order d/sums, codes in
// the pairs order of units of 4 blocks).
float Nvfp4CanonicalDot(const FastWeights& w, int64_t n, const Q8Acts& a, int64_t m) {
  const int64_t blocks = w.k / 32, pb = a.padded_blocks;
  const uint8_t* row = w.data + n * w.row_stride;
  const uint8_t* sf = w.block_scales + n * (w.k / 16);
  const int8_t* xq = a.q + m * pb * 32;
  float acc[16] = {};
  for (int64_t g0 = 0; g0 < pb; g0 += 16) {
    for (int l = 0; l < 16; ++l) {
      const int64_t b = g0 + Q8ActLanePerm(l), off = m * pb + g0 + l;
      if (b >= blocks) continue;
      const int8_t* unit = xq + (b / 4) * 128 + (b % 4) * 16;
      for (int h = 0; h < 2; ++h) {
        int32_t dot = 0;
        for (int j = 8 * h; j < 8 * h + 8; ++j) {  // bytes j: elements 2j (even), 2j + 1 (odd)
          const uint8_t byte = row[b * 16 + j];
          dot += (kTwiceE2m1[byte & 0xF] + 12) * unit[j] + (kTwiceE2m1[byte >> 4] + 12) * unit[64 + j];
        }
        const int32_t xs = h == 0 ? a.sums[off] : a.sums2[off];
        const float dx = h == 0 ? a.d[off] : a.d2[off];
        const float t = std::fma(-12.0f, static_cast<float>(xs), static_cast<float>(dot));
        const float sw = numeric::DecodeUe4m3(sf[2 * b + h] & 0x7F) * w.alpha * 0.5f;
        acc[l] = std::fma(t, sw * dx, acc[l]);
      }
    }
  }
  float s = acc[0];
  for (int l = 1; l < 16; ++l) s += acc[l];
  return s;
}

}  // namespace

// Portable path on the repacked layout and natural-order activations (kernel-order for NVFP4).
void Q8ActMatmulPortable(const FastWeights& w, const Q8Acts& a, const float* bias, float* y,
                         int64_t nb, int64_t ne) {
  const int64_t blocks = w.k / 32;
  const bool q4 = w.format == FastFormat::kQ4_0;
  auto finish = [&](float v, int64_t m, int64_t n) {
    if (a.row_scale != nullptr) {  // one fma, as the VNNI kernel's Finish
      const float s = a.row_scale[m * a.row_scale_stride];
      v = bias != nullptr ? std::fma(v, s, bias[n]) : v * s;
    } else if (bias != nullptr) {
      v += bias[n];
    }
    y[m * w.n + n] = v;
  };
  if (w.format == FastFormat::kNvfp4Pairs) {
    for (int64_t n = nb; n < ne; ++n) {
      for (int64_t m = 0; m < a.rows; ++m) finish(Nvfp4CanonicalDot(w, n, a, m), m, n);
    }
    return;
  }
  if (w.format == FastFormat::kU4Groups) {
    for (int64_t n = nb; n < ne; ++n) {
      for (int64_t m = 0; m < a.rows; ++m) {
        Q8ActMatmulU4Reference(w.data + n * w.row_stride, w.group_scales + n * (w.k / w.group_size),
                               w.group_zeros + n * (w.k / w.group_size), w.group_size, 1, w.k,
                               a.q_nat + m * w.k, a.d_nat + m * blocks, 1,
                               bias != nullptr ? bias + n : nullptr, y + m * w.n + n);
      }
    }
    return;
  }
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
      finish(v, m, n);
    }
  }
}

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
  return Align64(rows * pb * 32) + 4 * Align64(rows * pb * 4) + Align64(rows * k) +
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
  auto* d2 = reinterpret_cast<float*>(p);
  p += Align64(rows * pb * 4);
  auto* sums2 = reinterpret_cast<int32_t*>(p);
  p += Align64(rows * pb * 4);
  auto* q_nat = reinterpret_cast<int8_t*>(p);
  p += Align64(rows * k);
  auto* d_nat = reinterpret_cast<float*>(p);
  std::memset(q, 0, rows * pb * 32);
  std::memset(d, 0, rows * pb * 4);
  std::memset(sums, 0, rows * pb * 4);
  const bool halves = format == FastFormat::kNvfp4Pairs;
  if (halves) {
    std::memset(d2, 0, rows * pb * 4);
    std::memset(sums2, 0, rows * pb * 4);
  }
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
    } else if (format == FastFormat::kU4Groups || format == FastFormat::kNvfp4Pairs) {
      for (int64_t b = 0; b < blocks; ++b) {
        int8_t* unit = qk + (b / 4) * 128 + (b % 4) * 16;
        for (int j = 0; j < 16; ++j) {
          unit[j] = qn[b * 32 + 2 * j];
          unit[64 + j] = qn[b * 32 + 2 * j + 1];
        }
      }
    } else {
      std::memcpy(qk, qn, k);
    }
    for (int64_t g0 = 0; g0 < pb; g0 += 16) {
      for (int l = 0; l < 16; ++l) {
        const int64_t b = g0 + Q8ActLanePerm(l);
        if (b >= blocks) continue;
        int32_t s = 0, s2 = 0;
        for (int j = 0; j < 16; ++j) s += qn[b * 32 + j];
        for (int j = 16; j < 32; ++j) s2 += qn[b * 32 + j];
        d[m * pb + g0 + l] = dn[b];
        if (halves) {
          d2[m * pb + g0 + l] = dn[b];
          sums[m * pb + g0 + l] = s;
          sums2[m * pb + g0 + l] = s2;
        } else {
          sums[m * pb + g0 + l] = s + s2;
        }
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
  if (halves) {
    a.d2 = d2;
    a.sums2 = sums2;
  }
  return a;
}

Q8Acts PackNvfp4Acts(const uint8_t* packed, const uint8_t* sf, int64_t rows, int64_t k,
                     const float* alpha, int64_t alpha_stride, uint8_t* scratch) {
  // The same scratch layout as QuantizeActsQ8Block32 (without the natural-order copies): the codes
  // become the int8 values 2·e2m1 and each half block's scale sf / 2.
  const int64_t pb = Q8ActPaddedBlocks(k), blocks = k / 32;
  Q8Acts a;
  a.k = k;
  a.padded_blocks = pb;
  auto* q = reinterpret_cast<int8_t*>(scratch);
  uint8_t* p = scratch + Align64(rows * pb * 32);
  auto* d = reinterpret_cast<float*>(p);
  p += Align64(rows * pb * 4);
  auto* sums = reinterpret_cast<int32_t*>(p);
  p += Align64(rows * pb * 4);
  auto* d2 = reinterpret_cast<float*>(p);
  p += Align64(rows * pb * 4);
  auto* sums2 = reinterpret_cast<int32_t*>(p);
  std::memset(q, 0, rows * pb * 32);
  std::memset(d, 0, rows * pb * 4);
  std::memset(sums, 0, rows * pb * 4);
  std::memset(d2, 0, rows * pb * 4);
  std::memset(sums2, 0, rows * pb * 4);
  for (int64_t m = 0; m < rows; ++m) {
    int8_t* qk = q + m * pb * 32;
    for (int64_t b = 0; b < blocks; ++b) {
      const uint8_t* src = packed + m * k / 2 + b * 16;
      int8_t* unit = qk + (b / 4) * 128 + (b % 4) * 16;
      for (int j = 0; j < 16; ++j) {
        unit[j] = static_cast<int8_t>(kTwiceE2m1[src[j] & 0xF]);
        unit[64 + j] = static_cast<int8_t>(kTwiceE2m1[src[j] >> 4]);
      }
    }
    for (int64_t g0 = 0; g0 < pb; g0 += 16) {
      for (int l = 0; l < 16; ++l) {
        const int64_t b = g0 + Q8ActLanePerm(l), off = m * pb + g0 + l;
        if (b >= blocks) continue;
        const uint8_t* src = packed + m * k / 2 + b * 16;
        int32_t s = 0, s2 = 0;
        for (int j = 0; j < 8; ++j) s += kTwiceE2m1[src[j] & 0xF] + kTwiceE2m1[src[j] >> 4];
        for (int j = 8; j < 16; ++j) s2 += kTwiceE2m1[src[j] & 0xF] + kTwiceE2m1[src[j] >> 4];
        d[off] = numeric::DecodeUe4m3(sf[m * k / 16 + 2 * b]) * 0.5f;
        d2[off] = numeric::DecodeUe4m3(sf[m * k / 16 + 2 * b + 1]) * 0.5f;
        sums[off] = s;
        sums2[off] = s2;
      }
    }
  }
  a.rows = rows;
  a.q = q;
  a.d = d;
  a.sums = sums;
  a.d2 = d2;
  a.sums2 = sums2;
  a.q_nat = nullptr;
  a.d_nat = nullptr;
  a.row_scale = alpha;
  a.row_scale_stride = alpha_stride;
  return a;
}

void Q8ActMatmul(const FastWeights& w, const Q8Acts& a, const float* bias, float* y,
                 int64_t n_begin, int64_t n_end) {
  if (a.rows <= 0 || n_begin >= n_end) return;
  if (internal::HasVnni()) {
    internal::Q8ActMatmulVnni(w, a, bias, y, n_begin, n_end);
  } else {
    Q8ActMatmulPortable(w, a, bias, y, n_begin, n_end);
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

void Q8ActMatmulU4Reference(const uint8_t* pairs, const float* scales, const float* zeros,
                            int64_t group_size, int64_t n, int64_t k, const int8_t* q,
                            const float* d, int64_t rows, const float* bias, float* y) {
  const int64_t blocks = k / 32, groups = k / group_size, per_group = group_size / 32;
  for (int64_t c = 0; c < n; ++c) {
    const uint8_t* row = pairs + c * k / 2;
    for (int64_t m = 0; m < rows; ++m) {
      float v = CanonicalDot(blocks, d + m * blocks, [&](int64_t b) {
        const int64_t g = c * groups + b / per_group;
        return U4Block(row + b * 16, scales[g], zeros[g], q + m * k + b * 32);
      });
      if (bias != nullptr) v += bias[c];
      y[m * n + c] = v;
    }
  }
}

const char* Q8ActKernelName() { return internal::HasVnni() ? "avx512-vnni" : "scalar"; }

}  // namespace tessera::kernels::cpu::fast
