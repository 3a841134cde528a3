// Repacking, activation quantization and the portable loop of int4_x16.h; the VNNI kernel is in
// int4_x16_vnni.cc.
#include "kernels/cpu/fast/int4_x16.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstring>
#include <vector>

#include "kernels/cpu/fast/int4_x16_layout.h"
#include "kernels/cpu/fast/q8_act_matmul.h"
#include "kernels/cpu/quant/activation_quant.h"
#include "kernels/numeric/fp8.h"
#include "kernels/numeric/half.h"

namespace tessera::kernels::cpu::fast {

namespace internal {
bool HasVnni();      // q8_act_vnni.cc
bool HasAvx512Bw();  // q8_act_vnni.cc: what the NVFP4 activation quantizer needs
void Int4x16MatmulVnni(const FastWeights& w, const Int4x16Acts& a, const float* bias, float* y,
                       int64_t n_begin, int64_t n_end);
void QuantizeActsInt4x16Avx512(const float* x, int64_t k, int64_t r0, int64_t r1, int8_t* q,
                               float* d, float* s, float* s2);
// nvfp4_acts_avx512.cc
void QuantizeNvfp4ActsInt4x16Avx512(const float* x, int64_t len, float g, int8_t* q, float* d,
                                    float* d2, float* s, float* s2);
float AbsMaxIgnoringNanAvx512(const float* x, int64_t n);
}  // namespace internal

namespace {

using internal::X16Layout;

constexpr int64_t kCols = 16;
constexpr int64_t kQ4BlockBytes = 18;
constexpr int64_t kQ8BlockBytes = 34;

X16Layout LayoutOf(const FastWeights& w) { return X16Layout::Of(w.format, w.group_size); }

// 2·e2m1 for each 4-bit code (exact integers in [−12, 12]).
constexpr int kTwiceE2m1[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

// Offset of code j of column c in a block's byte codes (kQ8_0x16, kU8x16): chunk j / 4 of the
// block holds K values 4q .. 4q + 3 of the 16 columns, 4 bytes per column.
inline int64_t ByteCodeOffset(int64_t c, int j) { return (j / 4) * 64 + c * 4 + j % 4; }

// Writes column c's nibble codes into a block's codes, given code(j) for j in 0..31.
template <class Code>
void PutCodes(uint8_t* block_codes, int64_t c, Code code) {
  for (int q = 0; q < 4; ++q) {
    for (int i = 0; i < 4; ++i) {
      block_codes[q * 64 + c * 4 + i] =
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
  w.row_stride = LayoutOf(w).TileBytes(k / 32);
  return w;
}

}  // namespace

int64_t Q4_0x16Bytes(int64_t n, int64_t k) {
  return (n + kCols - 1) / kCols * Describe(FastFormat::kQ4_0x16, nullptr, n, k, 32).row_stride;
}

int64_t Nvfp4x16Bytes(int64_t n, int64_t k) {
  return (n + kCols - 1) / kCols * Describe(FastFormat::kNvfp4x16, nullptr, n, k, 32).row_stride;
}

int64_t U4x16Bytes(int64_t n, int64_t k, int64_t group_size) {
  return (n + kCols - 1) / kCols *
         Describe(FastFormat::kU4x16, nullptr, n, k, group_size).row_stride;
}

namespace {

// GGUF rows (ggml blocks of `elements` values, block_bytes each) into 16-column tiles: zeroes the
// tiles, then put(tile, c, b, blk) writes ggml block b of column c of the tile's group (scales to
// their record's scale area, codes to their blocks). Columns past n keep scale 0 and codes 0.
template <class Put>
FastWeights RepackGgmlBlocks(FastFormat format, GgmlBlockType type, int64_t elements,
                             int64_t block_bytes, const uint8_t* ggml_rows, int64_t n, int64_t k,
                             uint8_t* dst, Put put) {
  assert(k % elements == 0 && "a partial GGUF block would be read as zeros");
  FastWeights w = Describe(format, dst, n, k, 32);
  w.ggml = type;
  const int64_t blocks = k / elements, groups = (n + kCols - 1) / kCols;
  std::memset(dst, 0, groups * w.row_stride);
  for (int64_t g = 0; g < groups; ++g) {
    uint8_t* tile = dst + g * w.row_stride;
    for (int64_t c = 0; c < kCols && g * kCols + c < n; ++c) {
      const int64_t col = g * kCols + c;
      for (int64_t b = 0; b < blocks; ++b) {
        put(tile, c, b, ggml_rows + (col * blocks + b) * block_bytes);
      }
    }
  }
  return w;
}

}  // namespace

FastWeights RepackQ4_0x16(const uint8_t* ggml_rows, int64_t n, int64_t k, uint8_t* dst) {
  const X16Layout l = X16Layout::Of(FastFormat::kQ4_0x16, 32);
  return RepackGgmlBlocks(FastFormat::kQ4_0x16, GgmlBlockType::kQ4_0, 32, kQ4BlockBytes, ggml_rows,
                          n, k, dst, [&](uint8_t* tile, int64_t c, int64_t b, const uint8_t* blk) {
                            std::memcpy(tile + l.Scales(b) + c * 2, blk, 2);
                            PutCodes(tile + l.Codes(b), c, [&](int j) {
                              return j < 16 ? (blk[2 + j] & 0xF) : (blk[2 + j - 16] >> 4);
                            });
                          });
}

int64_t Q8_0x16Bytes(int64_t n, int64_t k) {
  return (n + kCols - 1) / kCols * Describe(FastFormat::kQ8_0x16, nullptr, n, k, 32).row_stride;
}

FastWeights RepackQ8_0x16(const uint8_t* ggml_rows, int64_t n, int64_t k, uint8_t* dst) {
  // Codes w + 128 (Q8_0 codes are in [-127, 127]); padding columns read as −128 · 0.
  const X16Layout l = X16Layout::Of(FastFormat::kQ8_0x16, 32);
  return RepackGgmlBlocks(FastFormat::kQ8_0x16, GgmlBlockType::kQ8_0, 32, kQ8BlockBytes, ggml_rows,
                          n, k, dst, [&](uint8_t* tile, int64_t c, int64_t b, const uint8_t* blk) {
                            std::memcpy(tile + l.Scales(b) + c * 2, blk, 2);
                            for (int j = 0; j < 32; ++j) {
                              tile[l.Codes(b) + ByteCodeOffset(c, j)] =
                                  static_cast<uint8_t>(blk[2 + j] ^ 0x80);
                            }
                          });
}

int64_t U8x16Bytes(int64_t n, int64_t k, int64_t group_size) {
  return (n + kCols - 1) / kCols *
         Describe(FastFormat::kU8x16, nullptr, n, k, group_size).row_stride;
}

namespace {

// RepackU4x16 (kBytes false: nibble pairs in) and RepackU8x16 (one code per byte in): the same
// scale and zero areas, codes in the 4-bit or the byte layout.
template <bool kBytes>
FastWeights RepackGroups(const FastWeights& src, uint8_t* dst) {
  const int64_t n = src.n, k = src.k, gs = src.group_size, ngroups = k / gs;
  FastWeights w = Describe(kBytes ? FastFormat::kU8x16 : FastFormat::kU4x16, dst, n, k, gs);
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

int64_t Q4_Kx16Bytes(int64_t n, int64_t k) {
  return (n + kCols - 1) / kCols * Describe(FastFormat::kQ4_Kx16, nullptr, n, k, 32).row_stride;
}

namespace {

// GGUF Q4_K / Q5_K rows (ggml blocks: f16 d, f16 dmin, 12 bytes of 6-bit scales and mins, then
// Q5_K's qh[32], then qs[128]) into kQ4_Kx16 / kQ5_Kx16 tiles: the file's d, dmin, scales and
// mins, the codes' low nibbles and, for Q5_K, their fifth bits.
FastWeights RepackAffineK(FastFormat format, const uint8_t* ggml_rows, int64_t n, int64_t k,
                          uint8_t* dst) {
  const bool q5 = format == FastFormat::kQ5_Kx16;
  const X16Layout l = X16Layout::Of(format, 32);
  return RepackGgmlBlocks(
      format, q5 ? GgmlBlockType::kQ5_K : GgmlBlockType::kQ4_K, 256, q5 ? 176 : 144, ggml_rows, n,
      k, dst, [&](uint8_t* tile, int64_t c, int64_t sb, const uint8_t* blk) {
        uint8_t* rec = tile + l.Scales(sb * 8);
        std::memcpy(rec + 2 * c, blk, 2);           // d
        std::memcpy(rec + 32 + 2 * c, blk + 2, 2);  // dmin
        uint8_t codes[32];
        for (int j = 0; j < 8; ++j) {
          KQuantScaleMin(blk + 4, j, &rec[64 + j * kCols + c], &rec[192 + j * kCols + c]);
          float unused_scale, unused_offset;
          (q5 ? Q5KSubBlock : Q4KSubBlock)(blk, j, &unused_scale, &unused_offset, codes);
          uint8_t* block_codes = tile + l.Codes(sb * 8 + j);
          PutCodes(block_codes, c, [&](int i) { return codes[i] & 0xF; });
          for (int q = 0; q < 4 && q5; ++q) {  // bits 2q, 2q + 1: K = 8q + i, 8q + 4 + i
            for (int i = 0; i < 4; ++i) {
              const int lo_bit = codes[8 * q + i] >> 4, hi_bit = codes[8 * q + 4 + i] >> 4;
              block_codes[256 + c * 4 + i] |=
                  static_cast<uint8_t>((lo_bit << (2 * q)) | (hi_bit << (2 * q + 1)));
            }
          }
        }
      });
}

}  // namespace

FastWeights RepackQ4_Kx16(const uint8_t* ggml_rows, int64_t n, int64_t k, uint8_t* dst) {
  return RepackAffineK(FastFormat::kQ4_Kx16, ggml_rows, n, k, dst);
}

int64_t Q5_Kx16Bytes(int64_t n, int64_t k) {
  return (n + kCols - 1) / kCols * Describe(FastFormat::kQ5_Kx16, nullptr, n, k, 32).row_stride;
}

FastWeights RepackQ5_Kx16(const uint8_t* ggml_rows, int64_t n, int64_t k, uint8_t* dst) {
  return RepackAffineK(FastFormat::kQ5_Kx16, ggml_rows, n, k, dst);
}

FastWeights RepackLegacyGgmlToUx16(GgmlBlockType type, const uint8_t* ggml_rows, int64_t n,
                                   int64_t k, uint8_t* dst) {
  assert(type == GgmlBlockType::kQ4_1 || type == GgmlBlockType::kQ5_0 ||
         type == GgmlBlockType::kQ5_1);
  // ggml-common.h: block_q4_1 f16 d, f16 m, qs[16]; block_q5_0 f16 d, qh[4], qs[16]; block_q5_1
  // f16 d, f16 m, qh[4], qs[16]. Element j < 16 is the low nibble of qs[j], j >= 16 the high
  // nibble of qs[j − 16]; Q5's fifth bit of element j is bit j of qh.
  const bool has_min = type != GgmlBlockType::kQ5_0, five = type != GgmlBlockType::kQ4_1;
  const int64_t block_bytes = GetGgmlBlockInfo(type).bytes, blocks = k / 32;
  const int64_t code_row = five ? k : k / 2;  // kU8Groups: a byte per code; kU4Groups: pairs
  std::vector<uint8_t> codes(n * code_row);
  std::vector<float> scales(n * blocks), zeros(n * blocks);
  for (int64_t r = 0; r < n; ++r) {
    for (int64_t b = 0; b < blocks; ++b) {
      const uint8_t* blk = ggml_rows + (r * blocks + b) * block_bytes;
      uint16_t dh, mh = 0;
      std::memcpy(&dh, blk, 2);
      if (has_min) std::memcpy(&mh, blk + 2, 2);
      uint32_t qh = 0;
      if (five) std::memcpy(&qh, blk + (has_min ? 4 : 2), 4);
      const uint8_t* qs = blk + (has_min ? 4 : 2) + (five ? 4 : 0);
      uint8_t u[32];
      for (int j = 0; j < 32; ++j) {
        const int nib = j < 16 ? (qs[j] & 0xF) : (qs[j - 16] >> 4);
        u[j] = static_cast<uint8_t>(nib | (five ? ((qh >> j) & 1) << 4 : 0));
      }
      const float d = numeric::HalfToFloat(dh), m = numeric::HalfToFloat(mh);
      float scale = d, zero = has_min ? (d != 0.0f ? -m / d : 0.0f) : 16.0f;
      if (has_min && d == 0.0f) {  // the constant m
        std::fill(u, u + 32, uint8_t{0});
        scale = m;
        zero = m != 0.0f ? -1.0f : 0.0f;
      }
      scales[r * blocks + b] = scale;
      zeros[r * blocks + b] = zero;
      uint8_t* dst_codes = codes.data() + r * code_row + b * (five ? 32 : 16);
      if (five) {
        std::memcpy(dst_codes, u, 32);
      } else {  // kU4Groups pairs: element 2l in the low nibble of byte l
        for (int l = 0; l < 16; ++l) {
          dst_codes[l] = static_cast<uint8_t>(u[2 * l] | (u[2 * l + 1] << 4));
        }
      }
    }
  }
  FastWeights src;
  src.format = five ? FastFormat::kU8Groups : FastFormat::kU4Groups;
  src.data = codes.data();
  src.n = n;
  src.k = k;
  src.row_stride = code_row;
  src.group_scales = scales.data();
  src.group_zeros = zeros.data();
  src.group_size = 32;
  return five ? RepackU8x16(src, dst) : RepackU4x16(src, dst);
}

int64_t Q6_Kx16Bytes(int64_t n, int64_t k) {
  return (n + kCols - 1) / kCols * Describe(FastFormat::kQ6_Kx16, nullptr, n, k, 32).row_stride;
}

FastWeights RepackQ6_Kx16(const uint8_t* ggml_rows, int64_t n, int64_t k, uint8_t* dst) {
  // A ggml block: ql[128], qh[64], int8 sc[16], f16 d.
  const X16Layout l = X16Layout::Of(FastFormat::kQ6_Kx16, 32);
  return RepackGgmlBlocks(
      FastFormat::kQ6_Kx16, GgmlBlockType::kQ6_K, 256, 210, ggml_rows, n, k, dst,
      [&](uint8_t* tile, int64_t c, int64_t sb, const uint8_t* blk) {
        uint8_t* rec = tile + l.Scales(sb * 8);
        std::memcpy(rec + 2 * c, blk + 208, 2);                               // d
        for (int h = 0; h < 16; ++h) rec[32 + h * kCols + c] = blk[192 + h];  // sc per 16
        uint8_t codes[256];
        Q6KCodes(blk, codes, nullptr);  // the scales stay the file's d and int8 sc
        for (int j = 0; j < 8; ++j) {
          const uint8_t* u = codes + 32 * j;
          uint8_t* block_codes = tile + l.Codes(sb * 8 + j);
          PutCodes(block_codes, c, [&](int i) { return u[i] & 0xF; });
          // High bit pairs: byte i of pair p, column c holds, for chunk 2p (low nibble) and
          // 2p + 1 (high nibble), the pairs of K = 8q + i (bits 0-1) and 8q + 4 + i (bits 2-3).
          for (int q = 0; q < 4; ++q) {
            for (int i = 0; i < 4; ++i) {
              const int pairs = (u[8 * q + i] >> 4) | ((u[8 * q + 4 + i] >> 4) << 2);
              block_codes[256 + (q / 2) * 64 + c * 4 + i] |=
                  static_cast<uint8_t>(pairs << (4 * (q % 2)));
            }
          }
        }
      });
}

bool HasGgmlX16(GgmlBlockType type) { return type != GgmlBlockType::kMxfp4; }

int64_t GgmlX16Bytes(GgmlBlockType type, int64_t n, int64_t k) {
  switch (type) {
    case GgmlBlockType::kQ4_0: return Q4_0x16Bytes(n, k);
    case GgmlBlockType::kQ8_0: return Q8_0x16Bytes(n, k);
    case GgmlBlockType::kQ4_K: return Q4_Kx16Bytes(n, k);
    case GgmlBlockType::kQ5_K: return Q5_Kx16Bytes(n, k);
    case GgmlBlockType::kQ6_K: return Q6_Kx16Bytes(n, k);
    case GgmlBlockType::kQ4_1: return U4x16Bytes(n, k, 32);
    case GgmlBlockType::kQ5_0:
    case GgmlBlockType::kQ5_1: return U8x16Bytes(n, k, 32);
    case GgmlBlockType::kMxfp4: break;
  }
  return 0;
}

FastWeights RepackGgmlX16(GgmlBlockType type, const uint8_t* ggml_rows, int64_t n, int64_t k,
                          uint8_t* dst) {
  switch (type) {
    case GgmlBlockType::kQ4_0: return RepackQ4_0x16(ggml_rows, n, k, dst);
    case GgmlBlockType::kQ8_0: return RepackQ8_0x16(ggml_rows, n, k, dst);
    case GgmlBlockType::kQ4_K: return RepackQ4_Kx16(ggml_rows, n, k, dst);
    case GgmlBlockType::kQ5_K: return RepackQ5_Kx16(ggml_rows, n, k, dst);
    case GgmlBlockType::kQ6_K: return RepackQ6_Kx16(ggml_rows, n, k, dst);
    case GgmlBlockType::kQ4_1:
    case GgmlBlockType::kQ5_0:
    case GgmlBlockType::kQ5_1: return RepackLegacyGgmlToUx16(type, ggml_rows, n, k, dst);
    case GgmlBlockType::kMxfp4: break;
  }
  assert(false && "no tiles for MXFP4");
  return {};
}

FastWeights RepackNvfp4x16(const FastWeights& src, uint8_t* dst) {
  const int64_t n = src.n, k = src.k;
  FastWeights w = Describe(FastFormat::kNvfp4x16, dst, n, k, 32);
  w.alpha = src.alpha;
  const X16Layout l = LayoutOf(w);
  const int64_t blocks = k / 32, groups = (n + kCols - 1) / kCols;
  std::memset(dst, 0, groups * w.row_stride);
  for (int64_t g = 0; g < groups; ++g) {
    uint8_t* tile = dst + g * w.row_stride;
    for (int64_t c = 0; c < kCols && g * kCols + c < n; ++c) {
      const int64_t col = g * kCols + c;
      const uint8_t* row = src.data + col * src.row_stride;
      for (int64_t b = 0; b < blocks; ++b) {
        for (int h = 0; h < 2; ++h)
          tile[l.Scales(b) + h * kCols + c] = src.block_scales[col * (k / 16) + 2 * b + h];
        PutCodes(tile + l.Codes(b), c, [&](int j) {
          const uint8_t byte = row[(b * 32 + j) / 2];
          return (j % 2 == 0) ? (byte & 0xF) : (byte >> 4);
        });
      }
    }
  }
  return w;
}

void QuantizeActsInt4x16(const float* x, int64_t k, int64_t r0, int64_t r1, int8_t* q, float* d,
                         float* s, float* s2) {
  if (internal::HasVnni()) return internal::QuantizeActsInt4x16Avx512(x, k, r0, r1, q, d, s, s2);
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

  // kQ6_Kx16: per half block, nibbles plus high bit pairs, zero point 32, scale d·sc.
  float Q6K(const uint8_t* tile, int64_t c, const int8_t* x, int64_t m) const {
    float acc = 0.0f;
    for (int64_t b = 0; b < blocks; ++b) {
      const uint8_t* rec = tile + l.Scales(b);
      const uint8_t* codes = tile + l.Codes(b);
      uint16_t dh;
      std::memcpy(&dh, rec + 2 * c, 2);
      for (int h = 0; h < 2; ++h) {  // half h: chunks 2h and 2h + 1 (K 16h .. 16h + 15)
        int32_t dot = 0;
        for (int q = 2 * h; q < 2 * h + 2; ++q) {
          for (int i = 0; i < 4; ++i) {
            const uint8_t nib = codes[q * 64 + c * 4 + i];
            const int pairs = (codes[256 + (q / 2) * 64 + c * 4 + i] >> (4 * (q % 2))) & 0xF;
            const int lo = (nib & 0xF) | ((pairs & 3) << 4);
            const int hi = (nib >> 4) | ((pairs >> 2) << 4);
            dot += lo * x[b * 32 + 8 * q + i] + hi * x[b * 32 + 8 * q + 4 + i];
          }
        }
        const int64_t off = m * blocks + b;
        const auto sc = static_cast<int8_t>(rec[32 + ((b % 8) * 2 + h) * kCols + c]);
        const float sw = numeric::HalfToFloat(dh) * static_cast<float>(sc);
        const float xs = h == 0 ? a.s[off] : a.s2[off];
        const float t = std::fma(-32.0f, xs, static_cast<float>(dot));
        acc = std::fma(t, sw * a.d[off], acc);
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
  // (f32 scale and zero point), Q4_K / Q5_K (the file's affine form).
  float Blocks(const uint8_t* tile, int64_t c, const int8_t* x, int64_t m) const {
    const bool q8_0 = w.format == FastFormat::kQ8_0x16;
    const bool bytes = q8_0 || w.format == FastFormat::kU8x16;   // a byte per code
    const bool q4_0 = w.format == FastFormat::kQ4_0x16 || q8_0;  // f16 block scales
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
            dot += ((byte & 0xF) | ((fifth & 1) << 4)) * x[b * 32 + 8 * q + i] +
                   ((byte >> 4) | ((fifth & 2) << 3)) * x[b * 32 + 8 * q + 4 + i];
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
      if (q4_0) {
        uint16_t h;
        std::memcpy(&h, tile + l.Scales(b) + c * 2, 2);
        scale = numeric::HalfToFloat(h);
        zero = q8_0 ? 128.0f : 8.0f;
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
      float acc = w.format == FastFormat::kQ6_Kx16    ? out.Q6K(tile, c, x, m)
                  : w.format == FastFormat::kNvfp4x16 ? out.Nvfp4(tile, c, x, m)
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

void Int4x16Matmul(const FastWeights& w, const Int4x16Acts& a, const float* bias, float* y,
                   int64_t n_begin, int64_t n_end) {
  if (a.rows <= 0 || n_begin >= n_end) return;
  assert((a.s2 != nullptr || !X16NeedsHalfSums(w.format)) && "per-half code sums needed");
  if (internal::HasVnni()) {
    internal::Int4x16MatmulVnni(w, a, bias, y, n_begin, n_end);
  } else {
    Int4x16MatmulPortable(w, a, bias, y, n_begin, n_end);
  }
}

}  // namespace tessera::kernels::cpu::fast
