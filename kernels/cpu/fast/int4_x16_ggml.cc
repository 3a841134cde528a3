// GGUF block rows (Q4_0, Q8_0, Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL, IQ4_XS, the
// grid types IQ1_* / IQ2_* / IQ3_* and the ternary TQ1_0 / TQ2_0) repacked into the 16-column
// tiles of int4_x16.h: each block's scales and codes moved to where int4_x16_layout.h puts them,
// the file's numbers kept (the K-quants' f16 d / dmin and 6-bit or int8 sub-block scales) except
// for Q4_1 / Q5_0 / Q5_1, which become per-group scale and zero point tiles, and the grid and
// ternary types, whose codebook entries or base-3 digits become one table code per value
// (ggml_iq_dequant.h IqGridCodes).
#include <algorithm>
#include <cassert>
#include <cstring>
#include <vector>

#include "kernels/cpu/fast/int4_x16.h"
#include "kernels/cpu/fast/int4_x16_layout.h"
#include "kernels/cpu/fast/tile_code_tables.h"
#include "kernels/cpu/ggml_dequant.h"
#include "kernels/cpu/ggml_iq_dequant.h"
#include "kernels/numeric/half.h"

namespace tessera::kernels::cpu::fast {

namespace {

using internal::ByteCodeOffset;
using internal::PutCodes;
using internal::X16Layout;
using internal::X16Weights;

constexpr int64_t kCols = internal::kX16Cols;
constexpr int64_t kQ4BlockBytes = 18;

// The vector kernels' IQ4 shuffle tables are kvalues_iq4nl (+ 128): the repack below leaves the
// nibbles as the file has them, so the tables alone give them their values.
constexpr bool Iq4TablesMatchKvalues() {
  for (int i = 0; i < 16; ++i) {
    if (internal::kIq4Values[i] != kIq4NlValues[i] ||
        internal::kIq4Plus128[i] != kIq4NlValues[i] + 128) {
      return false;
    }
  }
  return true;
}
static_assert(Iq4TablesMatchKvalues(), "tile_code_tables.h's IQ4 tables differ from kvalues_iq4nl");
constexpr int64_t kQ8BlockBytes = 34;

}  // namespace

int64_t Q4_0x16Bytes(int64_t n, int64_t k) {
  return internal::X16Bytes(FastFormat::kQ4_0x16, n, k, 32);
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
  FastWeights w = X16Weights(format, dst, n, k, 32);
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
  return internal::X16Bytes(FastFormat::kQ8_0x16, n, k, 32);
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

int64_t Q4_Kx16Bytes(int64_t n, int64_t k) {
  return internal::X16Bytes(FastFormat::kQ4_Kx16, n, k, 32);
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
  return internal::X16Bytes(FastFormat::kQ5_Kx16, n, k, 32);
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
  return internal::X16Bytes(FastFormat::kQ6_Kx16, n, k, 32);
}

namespace {

// GGUF Q6_K / Q3_K blocks into the records kQ6_Kx16 and kQ3_Kx16 share: the f16 d [16], then the
// int8 scales [16 halves][16] (Q6_K's own; Q3_K's 6-bit scales minus 32), each block's codes
// through put_codes(block_codes, c, u) with u the 32 codes of column c in that block (Q6_K: the
// 6-bit codes, ggml_dequant.h Q6KCodes; Q3_K: q + 4 for its signed 3-bit codes q, Q3KCodes).
template <class PutCodesOf>
FastWeights RepackQ6KRecords(FastFormat format, const uint8_t* rows, int64_t n, int64_t k,
                             uint8_t* dst, PutCodesOf put_codes) {
  // A ggml Q6_K block: ql[128], qh[64], int8 sc[16], f16 d; Q3_K: hmask[32], qs[64], scales[12],
  // f16 d.
  const bool q3 = format == FastFormat::kQ3_Kx16;
  const X16Layout l = X16Layout::Of(format, 32);
  return RepackGgmlBlocks(format, q3 ? GgmlBlockType::kQ3_K : GgmlBlockType::kQ6_K, 256,
                          q3 ? 110 : 210, rows, n, k, dst,
                          [&](uint8_t* tile, int64_t c, int64_t sb, const uint8_t* blk) {
                            uint8_t* rec = tile + l.Scales(sb * 8);
                            std::memcpy(rec + 2 * c, blk + (q3 ? 108 : 208), 2);  // d
                            uint8_t codes[256];
                            int8_t scales[16];
                            if (q3) {
                              int8_t q[256];
                              Q3KCodes(blk, q, scales);
                              for (int e = 0; e < 256; ++e) {
                                codes[e] = static_cast<uint8_t>(q[e] + 4);
                              }
                            } else {
                              std::memcpy(scales, blk + 192, 16);
                              Q6KCodes(blk, codes, nullptr);
                            }
                            for (int h = 0; h < 16; ++h) {
                              rec[32 + h * kCols + c] = static_cast<uint8_t>(scales[h]);
                            }
                            for (int j = 0; j < 8; ++j) {
                              put_codes(tile + l.Codes(sb * 8 + j), c, codes + 32 * j);
                            }
                          });
}

}  // namespace

FastWeights RepackQ6_Kx16(const uint8_t* ggml_rows, int64_t n, int64_t k, uint8_t* dst) {
  return RepackQ6KRecords(
      FastFormat::kQ6_Kx16, ggml_rows, n, k, dst,
      [](uint8_t* block_codes, int64_t c, const uint8_t* u) {
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
      });
}

int64_t Q3_Kx16Bytes(int64_t n, int64_t k) {
  return internal::X16Bytes(FastFormat::kQ3_Kx16, n, k, 32);
}

FastWeights RepackQ3_Kx16(const uint8_t* ggml_rows, int64_t n, int64_t k, uint8_t* dst) {
  // Codes u = q + 4 in [0, 7]: the low two bits in Q2_K's chunks, the third in the plane.
  return RepackQ6KRecords(FastFormat::kQ3_Kx16, ggml_rows, n, k, dst,
                          [](uint8_t* block_codes, int64_t c, const uint8_t* u) {
                            for (int j = 0; j < 32; ++j) {
                              block_codes[internal::Q2KCodeOffset(c, j)] |=
                                  static_cast<uint8_t>((u[j] & 3) << internal::Q2KCodeShift(j));
                              block_codes[128 + c * 4 + j % 4] |=
                                  static_cast<uint8_t>((u[j] >> 2) << internal::Q3KHighBit(j));
                            }
                          });
}

int64_t Q2_Kx16Bytes(int64_t n, int64_t k) {
  return internal::X16Bytes(FastFormat::kQ2_Kx16, n, k, 32);
}

FastWeights RepackQ2_Kx16(const uint8_t* ggml_rows, int64_t n, int64_t k, uint8_t* dst) {
  // A ggml block: scales[16] (scale in the low nibble, min in the high), qs[64], f16 d, f16 dmin;
  // element e's code is (qs[32·(e / 128) + e % 32] >> 2·((e % 128) / 32)) & 3, its scale byte
  // scales[e / 16] (ggml-quants.c dequantize_row_q2_K).
  const X16Layout l = X16Layout::Of(FastFormat::kQ2_Kx16, 32);
  return RepackGgmlBlocks(FastFormat::kQ2_Kx16, GgmlBlockType::kQ2_K, 256, 84, ggml_rows, n, k, dst,
                          [&](uint8_t* tile, int64_t c, int64_t sb, const uint8_t* blk) {
                            uint8_t* rec = tile + l.Scales(sb * 8);
                            std::memcpy(rec + 2 * c, blk + 80, 2);       // d
                            std::memcpy(rec + 32 + 2 * c, blk + 82, 2);  // dmin
                            for (int h = 0; h < 16; ++h) rec[64 + h * kCols + c] = blk[h];
                            for (int e = 0; e < 256; ++e) {
                              const int code =
                                  (blk[16 + 32 * (e / 128) + e % 32] >> (2 * ((e % 128) / 32))) & 3;
                              const int j = e % 32;
                              tile[l.Codes(sb * 8 + e / 32) + internal::Q2KCodeOffset(c, j)] |=
                                  static_cast<uint8_t>(code << internal::Q2KCodeShift(j));
                            }
                          });
}

namespace {

// GGUF IQ4_NL rows (blocks of f16 d and 16 bytes of nibbles) as kIq4Nlx16: Q4_0's records, the
// nibbles as they are (the kernels read them through kvalues_iq4nl). IQ4_XS rows (f16 d, u16
// scales_h, scales_l[4], qs[128]) as kIq4Xsx16: per super-block the f16 d and the eight int8
// scales ls − 32 of each column, then each block's nibbles in Q4_0's code layout.
FastWeights RepackIq4x16(GgmlBlockType type, const uint8_t* ggml_rows, int64_t n, int64_t k,
                         uint8_t* dst) {
  const bool xs = type == GgmlBlockType::kIq4Xs;
  const FastFormat format = xs ? FastFormat::kIq4Xsx16 : FastFormat::kIq4Nlx16;
  const X16Layout l = X16Layout::Of(format, 32);
  auto nibble_of = [](const uint8_t* qs) {
    return [qs](int j) { return j < 16 ? (qs[j] & 0xF) : (qs[j - 16] >> 4); };
  };
  return RepackGgmlBlocks(
      format, type, xs ? 256 : 32, xs ? 136 : 18, ggml_rows, n, k, dst,
      [&](uint8_t* tile, int64_t c, int64_t b, const uint8_t* blk) {
        if (!xs) {
          std::memcpy(tile + l.Scales(b) + c * 2, blk, 2);
          PutCodes(tile + l.Codes(b), c, nibble_of(blk + 2));
          return;
        }
        uint8_t* rec = tile + l.Scales(b * 8);
        std::memcpy(rec + 2 * c, blk, 2);  // d
        for (int j = 0; j < 8; ++j) {
          rec[32 + j * kCols + c] = static_cast<uint8_t>(static_cast<int8_t>(Iq4XsScale(blk, j)));
          PutCodes(tile + l.Codes(b * 8 + j), c, nibble_of(blk + 8 + 16 * j));
        }
      });
}

}  // namespace

namespace {

// The grid types whose multipliers cover 32 values (both halves of a block share one), and the
// ternary types (a multiplier of 1 everywhere), take the per-block tiles.
FastFormat IqGridFormat(GgmlBlockType type) {
  const bool per16 = type == GgmlBlockType::kIq2Xs || type == GgmlBlockType::kIq2S ||
                     type == GgmlBlockType::kIq1M;
  return per16 ? FastFormat::kIqGrid16x16 : FastFormat::kIqGrid32x16;
}

}  // namespace

int64_t IqGridx16Bytes(GgmlBlockType type, int64_t n, int64_t k) {
  return internal::X16Bytes(IqGridFormat(type), n, k, 32);
}

FastWeights RepackIqGridx16(GgmlBlockType type, const uint8_t* ggml_rows, int64_t n, int64_t k,
                            uint8_t* dst) {
  assert(IsTableCodeType(type));
  const FastFormat format = IqGridFormat(type);
  const bool per32 = format == FastFormat::kIqGrid32x16;
  const X16Layout l = X16Layout::Of(format, 32);
  return RepackGgmlBlocks(
      format, type, 256, GetGgmlBlockInfo(type).bytes, ggml_rows, n, k, dst,
      [&](uint8_t* tile, int64_t c, int64_t sb, const uint8_t* blk) {
        float d;
        uint8_t mults[16], codes[256];
        IqGridCodes(type, blk, &d, mults, codes);
        uint8_t* rec = tile + l.Scales(sb * 8);
        std::memcpy(rec + 4 * c, &d, 4);
        for (int h = 0; h < 16; h += per32 ? 2 : 1) {
          assert(!per32 || mults[h] == mults[h + 1]);
          rec[64 + (per32 ? h / 2 : h) * kCols + c] = mults[h];
        }
        for (int j = 0; j < 8; ++j) {
          PutCodes(tile + l.Codes(sb * 8 + j), c, [&](int e) { return codes[32 * j + e]; });
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
    case GgmlBlockType::kQ2_K: return Q2_Kx16Bytes(n, k);
    case GgmlBlockType::kQ3_K: return Q3_Kx16Bytes(n, k);
    case GgmlBlockType::kIq4Nl: return internal::X16Bytes(FastFormat::kIq4Nlx16, n, k, 32);
    case GgmlBlockType::kIq4Xs: return internal::X16Bytes(FastFormat::kIq4Xsx16, n, k, 32);
    case GgmlBlockType::kQ4_1: return U4x16Bytes(n, k, 32);
    case GgmlBlockType::kQ5_0:
    case GgmlBlockType::kQ5_1: return U8x16Bytes(n, k, 32);
    case GgmlBlockType::kIq2Xxs:
    case GgmlBlockType::kIq2Xs:
    case GgmlBlockType::kIq2S:
    case GgmlBlockType::kIq3Xxs:
    case GgmlBlockType::kIq3S:
    case GgmlBlockType::kIq1S:
    case GgmlBlockType::kIq1M:
    case GgmlBlockType::kTq1_0:
    case GgmlBlockType::kTq2_0: return IqGridx16Bytes(type, n, k);
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
    case GgmlBlockType::kQ2_K: return RepackQ2_Kx16(ggml_rows, n, k, dst);
    case GgmlBlockType::kQ3_K: return RepackQ3_Kx16(ggml_rows, n, k, dst);
    case GgmlBlockType::kIq4Nl:
    case GgmlBlockType::kIq4Xs: return RepackIq4x16(type, ggml_rows, n, k, dst);
    case GgmlBlockType::kQ4_1:
    case GgmlBlockType::kQ5_0:
    case GgmlBlockType::kQ5_1: return RepackLegacyGgmlToUx16(type, ggml_rows, n, k, dst);
    case GgmlBlockType::kIq2Xxs:
    case GgmlBlockType::kIq2Xs:
    case GgmlBlockType::kIq2S:
    case GgmlBlockType::kIq3Xxs:
    case GgmlBlockType::kIq3S:
    case GgmlBlockType::kIq1S:
    case GgmlBlockType::kIq1M:
    case GgmlBlockType::kTq1_0:
    case GgmlBlockType::kTq2_0: return RepackIqGridx16(type, ggml_rows, n, k, dst);
    case GgmlBlockType::kMxfp4: break;
  }
  assert(false && "no tiles for MXFP4");
  return {};
}

}  // namespace tessera::kernels::cpu::fast
