// Repacking of the non-GGUF formats (integer groups, NVFP4, MXFP4), activation quantization and
// the portable loop of int4_x16.h; GGUF rows are repacked in int4_x16_ggml.cc, the VNNI kernel is
// in int4_x16_vnni.cc.
#include "kernels/cpu/fast/int4_x16.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "kernels/cpu/fast/int4_x16_layout.h"
#include "kernels/cpu/fast/q8_act_matmul.h"
#include "kernels/cpu/ggml_iq_dequant.h"
#include "kernels/cpu/quant/activation_quant.h"
#include "kernels/numeric/e8m0.h"
#include "kernels/numeric/fp8.h"
#include "kernels/numeric/half.h"

namespace tessera::kernels::cpu::fast {

namespace internal {
bool HasVnni();      // q8_act_vnni.cc
bool HasAvx512Bw();  // q8_act_vnni.cc: what the NVFP4 activation quantizer needs
bool HasAvx2Fma();   // q8_act_vnni.cc
bool HasAvxVnni();   // q8_act_vnni.cc: the VEX 256-bit vpdpbusd
// zero_sums: −z·s per row and block (and half, [rows][blocks][halves]) for the formats with an
// integer zero point z (ZeroPointOf), else unused.
void Int4x16MatmulVnni(const FastWeights& w, const Int4x16Acts& a, const int32_t* zero_sums,
                       const float* bias, float* y, int64_t n_begin, int64_t n_end);
void Int4x16MatmulAvx2(const FastWeights& w, const Int4x16Acts& a, const int32_t* zero_sums,
                       const float* bias, float* y, int64_t n_begin, int64_t n_end);
void Int4x16MatmulAvxVnni(const FastWeights& w, const Int4x16Acts& a, const int32_t* zero_sums,
                          const float* bias, float* y, int64_t n_begin, int64_t n_end);
void Int4x16MatmulAvxVnniEvex(const FastWeights& w, const Int4x16Acts& a,
                              const int32_t* zero_sums, const float* bias, float* y,
                              int64_t n_begin, int64_t n_end);
void QuantizeActsInt4x16Avx2(const float* x, int64_t k, int64_t r0, int64_t r1, int8_t* q,
                             float* d, float* s, float* s2);
void QuantizeActsInt4x16Avx512(const float* x, int64_t k, int64_t r0, int64_t r1, int8_t* q,
                               float* d, float* s, float* s2);
// nvfp4_acts_avx512.cc
void QuantizeNvfp4ActsInt4x16Avx512(const float* x, int64_t len, float g, int8_t* q, float* d,
                                    float* d2, float* s, float* s2);
float AbsMaxIgnoringNanAvx512(const float* x, int64_t n);
}  // namespace internal

namespace {

using internal::ByteCodeOffset;
using internal::PutCodes;
using internal::X16Layout;
using internal::X16Weights;

// Which kernel runs the tiles: the best this CPU has, or a lower one named by TESSERA_INT8_TILES
// ("avx-vnni", "avx2" or "portable"), which is how other machines' paths are tested and measured
// on an AVX-512 one. Asked once per process.
Int4x16Kernel ChosenKernel() {
  static const Int4x16Kernel kernel = [] {
    Int4x16Kernel best = Int4x16Kernel::kPortable;
    for (Int4x16Kernel k : {Int4x16Kernel::kAvx2, Int4x16Kernel::kAvxVnni,
                            Int4x16Kernel::kAvx512Vnni}) {
      if (Int4x16KernelSupported(k)) best = k;
    }
    const char* env = std::getenv("TESSERA_INT8_TILES");
    if (env == nullptr || env[0] == '\0') return best;
    for (Int4x16Kernel k : {Int4x16Kernel::kPortable, Int4x16Kernel::kAvx2,
                            Int4x16Kernel::kAvxVnni}) {
      if (std::strcmp(env, Int4x16KernelName(k)) == 0 && Int4x16KernelSupported(k)) return k;
    }
    std::fprintf(stderr,
                 "TESSERA_INT8_TILES=%s ignored (avx-vnni, avx2 or portable, if supported)\n", env);
    return best;
  }();
  return kernel;
}

// The integer zero point z of the tiles whose blocks start their int32 sums at −z·s, else 0.
int32_t ZeroPointOf(FastFormat format) {
  switch (format) {
    case FastFormat::kQ4_0x16:
      return 8;
    case FastFormat::kQ8_0x16:
    case FastFormat::kIq4Nlx16:
    case FastFormat::kIq4Xsx16:
    case FastFormat::kIqGrid16x16:
    case FastFormat::kIqGrid32x16:
      return 128;
    case FastFormat::kMxfp4x16:
    case FastFormat::kNvfp4x16:
      return 12;
    case FastFormat::kQ6_Kx16:
      return 32;
    case FastFormat::kQ3_Kx16:
      return 4;
    default:
      return 0;
  }
}

constexpr int64_t kCols = internal::kX16Cols;

X16Layout LayoutOf(const FastWeights& w) { return X16Layout::Of(w.format, w.group_size); }

// 2·e2m1 for each 4-bit code (exact integers in [−12, 12]).
constexpr int kTwiceE2m1[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

}  // namespace

int64_t Nvfp4x16Bytes(int64_t n, int64_t k) {
  return internal::X16Bytes(FastFormat::kNvfp4x16, n, k, 32);
}

int64_t Mxfp4x16Bytes(int64_t n, int64_t k) {
  return internal::X16Bytes(FastFormat::kMxfp4x16, n, k, 32);
}

int64_t U4x16Bytes(int64_t n, int64_t k, int64_t group_size) {
  return internal::X16Bytes(FastFormat::kU4x16, n, k, group_size);
}

int64_t U8x16Bytes(int64_t n, int64_t k, int64_t group_size) {
  return internal::X16Bytes(FastFormat::kU8x16, n, k, group_size);
}

namespace {

// RepackU4x16 (kBytes false: nibble pairs in) and RepackU8x16 (one code per byte in): the same
// scale and zero areas, codes in the 4-bit or the byte layout.
template <bool kBytes>
FastWeights RepackGroups(const FastWeights& src, uint8_t* dst) {
  const int64_t n = src.n, k = src.k, gs = src.group_size, ngroups = k / gs;
  FastWeights w = X16Weights(kBytes ? FastFormat::kU8x16 : FastFormat::kU4x16, dst, n, k, gs);
  const X16Layout l = LayoutOf(w);
  const int64_t blocks = k / 32, groups = (n + kCols - 1) / kCols;
  std::memset(dst, 0, groups * w.row_stride);
  for (int64_t g = 0; g < groups; ++g) {
    uint8_t* tile = dst + g * w.row_stride;
    for (int64_t c = 0; c < kCols && g * kCols + c < n; ++c) {
      const int64_t col = g * kCols + c;
      for (int64_t i = 0; i < ngroups; ++i) {
        auto* scales = reinterpret_cast<float*>(tile + l.Scales(i * gs / 32));
        scales[c] = src.group_scales[col * ngroups + i];
        scales[kCols + c] = src.group_zeros[col * ngroups + i];  // the zero points, 64 bytes on
      }
      const uint8_t* row = src.data + col * src.row_stride;
      for (int64_t b = 0; b < blocks; ++b) {
        uint8_t* codes = tile + l.Codes(b);
        if constexpr (kBytes) {
          for (int j = 0; j < 32; ++j) codes[ByteCodeOffset(c, j)] = row[b * 32 + j];
        } else {
          PutCodes(codes, c, [&](int j) {
            const uint8_t byte = row[(b * 32 + j) / 2];
            return (j % 2 == 0) ? (byte & 0xF) : (byte >> 4);
          });
        }
      }
    }
  }
  return w;
}

}  // namespace

FastWeights RepackU4x16(const FastWeights& src, uint8_t* dst) {
  return RepackGroups<false>(src, dst);
}

FastWeights RepackU8x16(const FastWeights& src, uint8_t* dst) {
  return RepackGroups<true>(src, dst);
}

namespace {

// E2M1 nibble pairs (element 2l in the low nibble of byte l, rows row_stride bytes apart) into
// kNvfp4x16 / kMxfp4x16 tiles; put_scales(scale_area, c, col, b) writes block b's scale bytes of
// column c (source row col) into its scale area.
template <class PutScales>
FastWeights RepackE2m1Pairs(FastFormat format, const uint8_t* packed, int64_t row_stride,
                            int64_t n, int64_t k, uint8_t* dst, PutScales put_scales) {
  FastWeights w = X16Weights(format, dst, n, k, 32);
  const X16Layout l = LayoutOf(w);
  const int64_t blocks = k / 32, groups = (n + kCols - 1) / kCols;
  std::memset(dst, 0, groups * w.row_stride);
  for (int64_t g = 0; g < groups; ++g) {
    uint8_t* tile = dst + g * w.row_stride;
    for (int64_t c = 0; c < kCols && g * kCols + c < n; ++c) {
      const int64_t col = g * kCols + c;
      const uint8_t* row = packed + col * row_stride;
      for (int64_t b = 0; b < blocks; ++b) {
        put_scales(tile + l.Scales(b), c, col, b);
        PutCodes(tile + l.Codes(b), c, [&](int j) {
          const uint8_t byte = row[(b * 32 + j) / 2];
          return (j % 2 == 0) ? (byte & 0xF) : (byte >> 4);
        });
      }
    }
  }
  return w;
}

}  // namespace

FastWeights RepackNvfp4x16(const FastWeights& src, uint8_t* dst) {
  const int64_t k = src.k;
  FastWeights w = RepackE2m1Pairs(
      FastFormat::kNvfp4x16, src.data, src.row_stride, src.n, k, dst,
      [&](uint8_t* sf, int64_t c, int64_t col, int64_t b) {
        for (int h = 0; h < 2; ++h) sf[h * kCols + c] = src.block_scales[col * (k / 16) + 2 * b + h];
      });
  w.alpha = src.alpha;
  return w;
}

FastWeights RepackMxfp4x16(const uint8_t* packed, const uint8_t* scales, int64_t n, int64_t k,
                           uint8_t* dst) {
  return RepackE2m1Pairs(FastFormat::kMxfp4x16, packed, k / 2, n, k, dst,
                         [&](uint8_t* e8m0, int64_t c, int64_t col, int64_t b) {
                           e8m0[c] = scales[col * (k / 32) + b];
                         });
}

void QuantizeActsInt4x16(const float* x, int64_t k, int64_t r0, int64_t r1, int8_t* q, float* d,
                         float* s, float* s2) {
  QuantizeActsInt4x16On(ChosenKernel(), x, k, r0, r1, q, d, s, s2);
}

void QuantizeActsInt4x16On(Int4x16Kernel kernel, const float* x, int64_t k, int64_t r0,
                           int64_t r1, int8_t* q, float* d, float* s, float* s2) {
  // A kernel this CPU lacks would fault on its first instruction; the portable loop gives the
  // same bits.
  if (!Int4x16KernelSupported(kernel)) kernel = Int4x16Kernel::kPortable;
  switch (kernel) {
    case Int4x16Kernel::kAvx512Vnni:
      return internal::QuantizeActsInt4x16Avx512(x, k, r0, r1, q, d, s, s2);
    case Int4x16Kernel::kAvxVnni:
    case Int4x16Kernel::kAvx2:
      return internal::QuantizeActsInt4x16Avx2(x, k, r0, r1, q, d, s, s2);
    case Int4x16Kernel::kPortable:
      break;
  }
  const int64_t blocks = k / 32;
  for (int64_t r = r0; r < r1; ++r) {
    QuantizeRowQ8Block32(x + r * k, k, q + r * k, d + r * blocks);
    for (int64_t b = 0; b < blocks; ++b) {
      int32_t lo = 0, hi = 0;
      for (int j = 0; j < 16; ++j) lo += q[r * k + b * 32 + j];
      for (int j = 16; j < 32; ++j) hi += q[r * k + b * 32 + j];
      if (s2 != nullptr) {
        s[r * blocks + b] = static_cast<float>(lo);
        s2[r * blocks + b] = static_cast<float>(hi);
      } else {
        s[r * blocks + b] = static_cast<float>(lo + hi);
      }
    }
  }
}

void PackNvfp4ActsInt4x16(const uint8_t* packed, const uint8_t* sf, int64_t k, int64_t r0,
                          int64_t r1, int8_t* q, float* d, float* d2, float* s, float* s2) {
  const int64_t blocks = k / 32;
  for (int64_t r = r0; r < r1; ++r) {
    for (int64_t b = 0; b < blocks; ++b) {
      int32_t sum[2] = {0, 0};
      for (int j = 0; j < 32; ++j) {
        const uint8_t byte = packed[r * k / 2 + (b * 32 + j) / 2];
        const int v = kTwiceE2m1[(j % 2 == 0) ? (byte & 0xF) : (byte >> 4)];
        q[r * k + b * 32 + j] = static_cast<int8_t>(v);
        sum[j / 16] += v;
      }
      d[r * blocks + b] = numeric::DecodeUe4m3(sf[r * k / 16 + 2 * b]) * 0.5f;
      d2[r * blocks + b] = numeric::DecodeUe4m3(sf[r * k / 16 + 2 * b + 1]) * 0.5f;
      s[r * blocks + b] = static_cast<float>(sum[0]);
      s2[r * blocks + b] = static_cast<float>(sum[1]);
    }
  }
}

void QuantizeNvfp4ActsInt4x16(const float* x, int64_t len, float g, int8_t* q, float* d, float* d2,
                              float* s, float* s2) {
  if (internal::HasAvx512Bw()) {
    internal::QuantizeNvfp4ActsInt4x16Avx512(x, len, g, q, d, d2, s, s2);
    return;
  }
  // Reused per thread: this runs once per row of every W4A4 layer.
  thread_local std::vector<uint8_t> packed, sf;
  packed.resize(len / 2);
  sf.resize(len / 16);
  QuantizeNvfp4(x, 1, len, &g, 0, packed.data(), sf.data());
  PackNvfp4ActsInt4x16(packed.data(), sf.data(), len, 0, 1, q, d, d2, s, s2);
}

float Nvfp4DynamicGlobalScaleFast(const float* x, int64_t n) {
  if (!internal::HasAvx512Bw()) return Nvfp4DynamicGlobalScale(x, n);
  const float amax = internal::AbsMaxIgnoringNanAvx512(x, n);
  return amax == 0.0f ? 1.0f : kNvfp4GlobalScaleNumerator / amax;
}

namespace {

// One output of the portable loop before its bias / row scale, in the canonical order of
// int4_x16.h: column c of the group whose tile starts at `tile`, activation row m (codes x).
struct PortableOutput {
  const FastWeights& w;
  const Int4x16Acts& a;
  X16Layout l;
  int64_t blocks;

  // kQ6_Kx16: per half block, nibbles plus high bit pairs, zero point 32, scale d·sc. kQ3_Kx16:
  // 2-bit chunks plus the third-bit plane, zero point 4.
  float Q6K(const uint8_t* tile, int64_t c, const int8_t* x, int64_t m) const {
    const bool pairs_plane = w.format == FastFormat::kQ6_Kx16;
    const float z = pairs_plane ? 32.0f : 4.0f;
    float acc = 0.0f;
    for (int64_t b = 0; b < blocks; ++b) {
      const uint8_t* rec = tile + l.Scales(b);
      const uint8_t* codes = tile + l.Codes(b);
      uint16_t dh;
      std::memcpy(&dh, rec + 2 * c, 2);
      for (int h = 0; h < 2; ++h) {  // half h: chunks 2h and 2h + 1 (K 16h .. 16h + 15)
        int32_t dot = 0;
        for (int q = 2 * h; q < 2 * h + 2 && pairs_plane; ++q) {
          for (int i = 0; i < 4; ++i) {
            const uint8_t nib = codes[q * 64 + c * 4 + i];
            const int pairs = (codes[256 + (q / 2) * 64 + c * 4 + i] >> (4 * (q % 2))) & 0xF;
            const int lo = (nib & 0xF) | ((pairs & 3) << 4);
            const int hi = (nib >> 4) | ((pairs >> 2) << 4);
            dot += lo * x[b * 32 + 8 * q + i] + hi * x[b * 32 + 8 * q + 4 + i];
          }
        }
        for (int j = 16 * h; j < 16 * h + 16 && !pairs_plane; ++j) {  // kQ3_Kx16
          const int low = (codes[internal::Q2KCodeOffset(c, j)] >> internal::Q2KCodeShift(j)) & 3;
          const int third = (codes[128 + c * 4 + j % 4] >> internal::Q3KHighBit(j)) & 1;
          dot += (low | (third << 2)) * x[b * 32 + j];
        }
        const int64_t off = m * blocks + b;
        const auto sc = static_cast<int8_t>(rec[32 + ((b % 8) * 2 + h) * kCols + c]);
        const float sw = numeric::HalfToFloat(dh) * static_cast<float>(sc);
        const float xs = h == 0 ? a.s[off] : a.s2[off];
        const float t = std::fma(-z, xs, static_cast<float>(dot));
        acc = std::fma(t, sw * a.d[off], acc);
      }
    }
    return acc;
  }

  // kIqGrid16x16: per half block, nibbles through the grid type's table + 128, zero point 128,
  // scale d·mult (exact in f32).
  float IqGrid(const uint8_t* tile, int64_t c, const int8_t* x, int64_t m) const {
    const int8_t* table = IqGridTable(w.ggml);
    float acc = 0.0f;
    for (int64_t b = 0; b < blocks; ++b) {
      const uint8_t* rec = tile + l.Scales(b);
      const uint8_t* codes = tile + l.Codes(b);
      float d;
      std::memcpy(&d, rec + 4 * c, 4);
      const int64_t off = m * blocks + b;
      for (int h = 0; h < 2; ++h) {  // half h: chunks 2h and 2h + 1 (K 16h .. 16h + 15)
        int32_t dot = 0;
        for (int q = 2 * h; q < 2 * h + 2; ++q) {
          for (int i = 0; i < 4; ++i) {
            const uint8_t byte = codes[q * 64 + c * 4 + i];
            dot += (table[byte & 0xF] + 128) * x[b * 32 + 8 * q + i] +
                   (table[byte >> 4] + 128) * x[b * 32 + 8 * q + 4 + i];
          }
        }
        const float sw = d * static_cast<float>(rec[64 + ((b % 8) * 2 + h) * kCols + c]);
        const float t = std::fma(-128.0f, h == 0 ? a.s[off] : a.s2[off], static_cast<float>(dot));
        acc = std::fma(t, sw * a.d[off], acc);
      }
    }
    return acc;
  }

  // kQ2_Kx16: per half block, 2-bit codes, GGUF's affine form s = d·sc, o = dmin·m.
  float Q2K(const uint8_t* tile, int64_t c, const int8_t* x, int64_t m) const {
    float acc = 0.0f;
    for (int64_t b = 0; b < blocks; ++b) {
      const uint8_t* rec = tile + l.Scales(b);
      const uint8_t* codes = tile + l.Codes(b);
      uint16_t dh, mh;
      std::memcpy(&dh, rec + 2 * c, 2);
      std::memcpy(&mh, rec + 32 + 2 * c, 2);
      const int64_t off = m * blocks + b;
      for (int h = 0; h < 2; ++h) {
        int32_t dot = 0;
        for (int j = 16 * h; j < 16 * h + 16; ++j) {
          const int u = (codes[internal::Q2KCodeOffset(c, j)] >> internal::Q2KCodeShift(j)) & 3;
          dot += u * x[b * 32 + j];
        }
        const uint8_t sc = rec[64 + ((b % 8) * 2 + h) * kCols + c];
        const float s = numeric::HalfToFloat(dh) * static_cast<float>(sc & 0xF);
        const float o = numeric::HalfToFloat(mh) * static_cast<float>(sc >> 4);
        const float t = std::fma(-o, h == 0 ? a.s[off] : a.s2[off], s * static_cast<float>(dot));
        acc = std::fma(t, a.d[off], acc);
      }
    }
    return acc;
  }

  // kNvfp4x16: per half block, E2M1 through 2·e2m1 + 12, UE4M3 scales.
  float Nvfp4(const uint8_t* tile, int64_t c, const int8_t* x, int64_t m) const {
    float acc = 0.0f;
    for (int64_t b = 0; b < blocks; ++b) {
      for (int h = 0; h < 2; ++h) {  // half h: chunks 2h and 2h + 1 (K 16h .. 16h + 15)
        int32_t dot = 0;
        for (int q = 2 * h; q < 2 * h + 2; ++q) {
          for (int i = 0; i < 4; ++i) {
            const uint8_t byte = tile[l.Codes(b) + q * 64 + c * 4 + i];
            dot += (kTwiceE2m1[byte & 0xF] + 12) * x[b * 32 + 8 * q + i] +
                   (kTwiceE2m1[byte >> 4] + 12) * x[b * 32 + 8 * q + 4 + i];
          }
        }
        const int64_t off = m * blocks + b;
        const float xs = h == 0 ? a.s[off] : a.s2[off];
        const float dx = h == 0 ? a.d[off] : a.d2[off];
        const float sw =
            numeric::DecodeUe4m3(tile[l.Scales(b) + h * kCols + c] & 0x7F) * w.alpha * 0.5f;
        const float t = std::fma(-12.0f, xs, static_cast<float>(dot));
        acc = std::fma(t, sw * dx, acc);
      }
    }
    return acc;
  }

  // The whole-block formats: Q4_0 / Q8_0 (f16 scale, zero point 8 / 128), the integer groups
  // (f32 scale and zero point), Q4_K / Q5_K (the file's affine form), MXFP4 (E2M1 through
  // 2·e2m1 + 12, zero point 12, scale 2^(e − 127) / 2: the E8M0 scale over the codes' factor 2).
  float Blocks(const uint8_t* tile, int64_t c, const int8_t* x, int64_t m) const {
    const bool mxfp4 = w.format == FastFormat::kMxfp4x16;
    const bool iq4_xs = w.format == FastFormat::kIq4Xsx16;
    const bool iq4 = iq4_xs || w.format == FastFormat::kIq4Nlx16;  // kvalues_iq4nl + 128
    const bool grid = w.format == FastFormat::kIqGrid32x16;  // the grid type's table + 128
    const int8_t* table = grid ? IqGridTable(w.ggml) : nullptr;
    const auto nibble = [mxfp4, iq4, table](int v) {
      return mxfp4 ? kTwiceE2m1[v] + 12 : iq4 ? kIq4NlValues[v] + 128 : table ? table[v] + 128 : v;
    };
    const bool q8_0 = w.format == FastFormat::kQ8_0x16;
    const bool bytes = q8_0 || w.format == FastFormat::kU8x16;   // a byte per code
    const bool q4_0 = w.format == FastFormat::kQ4_0x16 || q8_0 ||
                      w.format == FastFormat::kIq4Nlx16;  // f16 block scales
    const bool q5_k = w.format == FastFormat::kQ5_Kx16;
    const bool affine = w.format == FastFormat::kQ4_Kx16 || q5_k;  // d·sc·u − dmin·m
    float acc = 0.0f;
    for (int64_t b = 0; b < blocks; ++b) {
      int32_t dot = 0;
      const uint8_t* codes = tile + l.Codes(b);
      if (bytes) {
        for (int j = 0; j < 32; ++j) dot += codes[ByteCodeOffset(c, j)] * x[b * 32 + j];
      } else {
        for (int q = 0; q < 4; ++q) {
          for (int i = 0; i < 4; ++i) {
            const uint8_t byte = codes[q * 64 + c * 4 + i];
            // kQ5_Kx16: the fifth bits of K = 8q + i and 8q + 4 + i are bits 2q and 2q + 1.
            const int fifth = q5_k ? codes[256 + c * 4 + i] >> (2 * q) : 0;
            dot += nibble((byte & 0xF) | ((fifth & 1) << 4)) * x[b * 32 + 8 * q + i] +
                   nibble((byte >> 4) | ((fifth & 2) << 3)) * x[b * 32 + 8 * q + 4 + i];
          }
        }
      }
      const int64_t off = m * blocks + b;
      if (affine) {  // the file's affine form: s = d·sc, o = dmin·m, both exact in f32
        const uint8_t* rec = tile + l.Scales(b);
        const int64_t j = b % 8;
        uint16_t dh, mh;
        std::memcpy(&dh, rec + 2 * c, 2);
        std::memcpy(&mh, rec + 32 + 2 * c, 2);
        const float s = numeric::HalfToFloat(dh) * static_cast<float>(rec[64 + j * kCols + c]);
        const float o = numeric::HalfToFloat(mh) * static_cast<float>(rec[192 + j * kCols + c]);
        const float t = std::fma(-o, a.s[off], s * static_cast<float>(dot));
        acc = std::fma(t, a.d[off], acc);
        continue;
      }
      float scale, zero;
      if (mxfp4) {
        scale = numeric::DecodeE8m0(tile[l.Scales(b) + c]) * 0.5f;
        zero = 12.0f;
      } else if (grid) {  // d·mult, exact in f32
        const uint8_t* rec = tile + l.Scales(b);
        float d;
        std::memcpy(&d, rec + 4 * c, 4);
        scale = d * static_cast<float>(static_cast<int8_t>(rec[64 + (b % 8) * kCols + c]));
        zero = 128.0f;
      } else if (iq4_xs) {  // d·(ls − 32), exact in f32
        const uint8_t* rec = tile + l.Scales(b);
        uint16_t h;
        std::memcpy(&h, rec + 2 * c, 2);
        scale = numeric::HalfToFloat(h) *
                static_cast<float>(static_cast<int8_t>(rec[32 + (b % 8) * kCols + c]));
        zero = 128.0f;
      } else if (q4_0) {
        uint16_t h;
        std::memcpy(&h, tile + l.Scales(b) + c * 2, 2);
        scale = numeric::HalfToFloat(h);
        zero = q8_0 || iq4 ? 128.0f : 8.0f;
      } else {
        const auto* scales = reinterpret_cast<const float*>(tile + l.Scales(b));
        scale = scales[c];
        zero = scales[kCols + c];
      }
      const float t = std::fma(-zero, a.s[off], static_cast<float>(dot));
      acc = std::fma(t, scale * a.d[off], acc);
    }
    return acc;
  }
};

}  // namespace

void Int4x16MatmulPortable(const FastWeights& w, const Int4x16Acts& a, const float* bias, float* y,
                           int64_t n_begin, int64_t n_end) {
  const PortableOutput out{w, a, LayoutOf(w), w.k / 32};
  for (int64_t n = n_begin; n < n_end; ++n) {
    const int64_t g = n / kCols, c = n % kCols;
    const uint8_t* tile = w.data + g * w.row_stride;
    for (int64_t m = 0; m < a.rows; ++m) {
      const int8_t* x = a.q + m * w.k;
      const bool halves = w.format == FastFormat::kQ6_Kx16 || w.format == FastFormat::kQ3_Kx16;
      float acc = halves                              ? out.Q6K(tile, c, x, m)
                  : w.format == FastFormat::kNvfp4x16 ? out.Nvfp4(tile, c, x, m)
                  : w.format == FastFormat::kQ2_Kx16  ? out.Q2K(tile, c, x, m)
                  : w.format == FastFormat::kIqGrid16x16 ? out.IqGrid(tile, c, x, m)
                                                      : out.Blocks(tile, c, x, m);
      if (a.row_scale != nullptr) {  // fma(acc, α, bias)
        const float rs = a.row_scale[m * a.row_scale_stride];
        acc = bias != nullptr ? std::fma(acc, rs, bias[n]) : acc * rs;
      } else if (bias != nullptr) {
        acc += bias[n];
      }
      y[m * w.n + n] = acc;
    }
  }
}

bool Int4x16KernelSupported(Int4x16Kernel kernel) {
  switch (kernel) {
    case Int4x16Kernel::kAvx512Vnni:
      return internal::HasVnni();
    case Int4x16Kernel::kAvxVnni:  // the VEX form, or its EVEX twin
      return internal::HasAvx2Fma() && (internal::HasAvxVnni() || internal::HasVnni());
    case Int4x16Kernel::kAvx2:
      return internal::HasAvx2Fma();
    case Int4x16Kernel::kPortable:
      break;
  }
  return true;
}

Int4x16Kernel Int4x16KernelInUse() { return ChosenKernel(); }

const char* Int4x16KernelName(Int4x16Kernel kernel) {
  switch (kernel) {
    case Int4x16Kernel::kAvx512Vnni:
      return "avx512-vnni";
    case Int4x16Kernel::kAvxVnni:
      return "avx-vnni";
    case Int4x16Kernel::kAvx2:
      return "avx2";
    case Int4x16Kernel::kPortable:
      break;
  }
  return "portable";
}

void Int4x16Matmul(const FastWeights& w, const Int4x16Acts& a, const float* bias, float* y,
                   int64_t n_begin, int64_t n_end) {
  Int4x16MatmulOn(ChosenKernel(), w, a, bias, y, n_begin, n_end);
}

void Int4x16MatmulOn(Int4x16Kernel kernel, const FastWeights& w, const Int4x16Acts& a,
                     const float* bias, float* y, int64_t n_begin, int64_t n_end) {
  if (a.rows <= 0 || n_begin >= n_end) return;
  assert((a.s2 != nullptr || !X16NeedsHalfSums(w.format)) && "per-half code sums needed");
  if (kernel == Int4x16Kernel::kPortable || !Int4x16KernelSupported(kernel)) {
    return Int4x16MatmulPortable(w, a, bias, y, n_begin, n_end);
  }
  // −z·s per row and block (half), the code sums s being exact integers in f32.
  thread_local std::vector<int32_t> zero_sums;
  if (const int32_t z = ZeroPointOf(w.format); z != 0) {
    const int64_t blocks = w.k / 32, halves = X16NeedsHalfSums(w.format) ? 2 : 1;
    zero_sums.resize(a.rows * blocks * halves);
    for (int64_t i = 0; i < a.rows * blocks; ++i) {
      zero_sums[i * halves] = -z * static_cast<int32_t>(a.s[i]);
      if (halves == 2) zero_sums[i * 2 + 1] = -z * static_cast<int32_t>(a.s2[i]);
    }
  }
  if (kernel == Int4x16Kernel::kAvx512Vnni) {
    internal::Int4x16MatmulVnni(w, a, zero_sums.data(), bias, y, n_begin, n_end);
  } else if (kernel == Int4x16Kernel::kAvxVnni) {
    if (internal::HasAvxVnni()) {
      internal::Int4x16MatmulAvxVnni(w, a, zero_sums.data(), bias, y, n_begin, n_end);
    } else {
      internal::Int4x16MatmulAvxVnniEvex(w, a, zero_sums.data(), bias, y, n_begin, n_end);
    }
  } else {
    internal::Int4x16MatmulAvx2(w, a, zero_sums.data(), bias, y, n_begin, n_end);
  }
}

}  // namespace tessera::kernels::cpu::fast
