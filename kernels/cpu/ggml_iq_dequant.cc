#include "kernels/cpu/ggml_iq_dequant.h"

#include <cassert>
#include <cstring>

#include "kernels/cpu/ggml_iq_grids.h"
#include "kernels/numeric/half.h"

namespace tessera::kernels::cpu {
namespace {

// ggml's IQ1S_DELTA.
constexpr float kIq1Delta = 0.125f;

float Half(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return numeric::HalfToFloat(h);
}
uint16_t U16(const uint8_t* p) {
  uint16_t v;
  std::memcpy(&v, p, 2);
  return v;
}
uint32_t U32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
// Byte j of a grid entry.
int GridByte(uint64_t entry, int j) { return static_cast<int>((entry >> (8 * j)) & 0xFF); }

// The grid index, sign byte (bit j: value j negative) and scale of each group of 8 values, the
// layouts of ggml-common.h's block_iq2_xxs etc. `emit(e, grid_entry_value, negative)` per value
// and `scale(s, ls)` per 16-value scale slot s (ls: the scale field as ggml reads it).
template <class Emit>
void WalkIq2(GgmlBlockType type, const uint8_t* b, Emit emit, int* ls16) {
  const uint8_t* q = b + 2;
  for (int ib = 0; ib < 8; ++ib) {
    for (int l = 0; l < 4; ++l) {
      int index = 0, signs = 0;
      if (type == GgmlBlockType::kIq2Xxs) {  // u32 pairs: grid bytes, then 4 x 7 sign bits + ls
        const uint32_t aux = U32(q + 8 * ib + 4);
        index = q[8 * ib + l];
        signs = kIq2Signs[(aux >> (7 * l)) & 127];
        ls16[2 * ib] = ls16[2 * ib + 1] = static_cast<int>(aux >> 28);
      } else if (type == GgmlBlockType::kIq2Xs) {  // u16 qs: 9-bit index, 7-bit sign index
        const uint16_t v = U16(q + 2 * (4 * ib + l));
        index = v & 511;
        signs = kIq2Signs[v >> 9];
        ls16[2 * ib + l / 2] = (b[66 + ib] >> (4 * (l / 2))) & 0xF;
      } else {  // kIq2S: qs[32], signs[32], qh[8], scales[8]
        index = q[4 * ib + l] | ((b[66 + ib] << (8 - 2 * l)) & 0x300);
        signs = q[32 + 4 * ib + l];
        ls16[2 * ib + l / 2] = (b[74 + ib] >> (4 * (l / 2))) & 0xF;
      }
      const uint64_t entry = type == GgmlBlockType::kIq2Xxs ? kIq2XxsGrid[index]
                             : type == GgmlBlockType::kIq2Xs ? kIq2XsGrid[index]
                                                              : kIq2SGrid[index];
      for (int j = 0; j < 8; ++j) emit(32 * ib + 8 * l + j, GridByte(entry, j), (signs >> j) & 1);
    }
  }
}

template <class Emit>
void WalkIq3(GgmlBlockType type, const uint8_t* b, Emit emit, int* ls32) {
  const uint8_t* qs = b + 2;
  for (int ib = 0; ib < 8; ++ib) {
    for (int l = 0; l < 8; ++l) {  // 8 grid entries of 4 values
      int index = 0, negative = 0;
      if (type == GgmlBlockType::kIq3Xxs) {  // qs[64], then u32 per 32: 4 x 7 sign bits + ls
        const uint32_t aux = U32(b + 66 + 4 * ib);
        index = qs[8 * ib + l];
        negative = kIq2Signs[(aux >> (7 * (l / 2))) & 127] >> (4 * (l % 2));
        ls32[ib] = static_cast<int>(aux >> 28);
      } else {  // kIq3S: qs[64], qh[8], signs[32], scales[4]
        index = qs[8 * ib + l] | (((b[66 + ib] >> l) & 1) << 8);
        negative = b[74 + 4 * ib + l / 2] >> (4 * (l % 2));
        ls32[ib] = (b[106 + ib / 2] >> (4 * (ib % 2))) & 0xF;
      }
      const uint32_t entry =
          type == GgmlBlockType::kIq3Xxs ? kIq3XxsGrid[index] : kIq3SGrid[index];
      for (int j = 0; j < 4; ++j) {
        emit(32 * ib + 4 * l + j, GridByte(entry, j), (negative >> j) & 1);
      }
    }
  }
}

// IQ1_S: f16 d, qs[32], u16 qh[8] (per 32: 4 x 3 high index bits, 3-bit scale, delta sign).
// IQ1_M: qs[32], qh[16] (per 8 values: 3 high index bits and the delta sign), u16 scales[4]
// (3-bit scales per 16, and the f16 d in the top nibbles). `emit(e, g, delta_negative)`.
template <class Emit>
float WalkIq1(GgmlBlockType type, const uint8_t* b, Emit emit, int* ls16) {
  const bool m = type == GgmlBlockType::kIq1M;
  const uint8_t* qs = m ? b : b + 2;
  float d;
  if (m) {
    const uint16_t s0 = U16(b + 48), s1 = U16(b + 50), s2 = U16(b + 52), s3 = U16(b + 54);
    const uint16_t bits = static_cast<uint16_t>((s0 >> 12) | ((s1 >> 8) & 0x00F0) |
                                                ((s2 >> 4) & 0x0F00) | (s3 & 0xF000));
    d = numeric::HalfToFloat(bits);
  } else {
    d = Half(b);
  }
  for (int ib = 0; ib < 8; ++ib) {
    for (int l = 0; l < 4; ++l) {
      int index, negative;
      if (m) {
        const uint8_t qh = b[32 + 2 * ib + l / 2];
        index = qs[4 * ib + l] | (((qh >> (4 * (l % 2))) & 7) << 8);
        negative = (qh >> (4 * (l % 2) + 3)) & 1;
        const uint16_t sc = U16(b + 48 + 2 * (ib / 2));
        ls16[2 * ib + l / 2] = (sc >> (6 * (ib % 2) + 3 * (l / 2))) & 7;
      } else {
        const uint16_t qh = U16(b + 34 + 2 * ib);
        index = qs[4 * ib + l] | (((qh >> (3 * l)) & 7) << 8);
        negative = qh >> 15;
        ls16[2 * ib] = ls16[2 * ib + 1] = (qh >> 12) & 7;
      }
      const uint64_t entry = kIq1SGrid[index];
      for (int j = 0; j < 8; ++j) {
        emit(32 * ib + 8 * l + j, static_cast<int8_t>(GridByte(entry, j)), negative);
      }
    }
  }
  return d;
}

// Magnitude index (0..7) of a grid byte.
int MagnitudeIndex(GgmlBlockType type, int byte) {
  switch (type) {
    case GgmlBlockType::kIq3Xxs: return byte == 62 ? 7 : (byte - 4) / 8;
    case GgmlBlockType::kIq3S: return (byte - 1) / 2;
    default: return byte == 8 ? 0 : byte == 25 ? 1 : 2;  // IQ2
  }
}

constexpr int8_t kIq2Table[16] = {8, 25, 43, 0, 0, 0, 0, 0, -8, -25, -43, 0, 0, 0, 0, 0};
constexpr int8_t kIq3XxsTable[16] = {4,  12,  20,  28,  36,  44,  52,  62,
                                     -4, -12, -20, -28, -36, -44, -52, -62};
constexpr int8_t kIq3STable[16] = {1, 3, 5, 7, 9, 11, 13, 15, -1, -3, -5, -7, -9, -11, -13, -15};
constexpr int8_t kIq1Table[16] = {-7, 1, 9, -9, -1, 7, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
constexpr int8_t kTernaryTable[16] = {-1, 0, 1, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};

bool IsTernary(GgmlBlockType t) { return t == GgmlBlockType::kTq1_0 || t == GgmlBlockType::kTq2_0; }

// The codes q of a ternary block in element order (value q − 1), `emit(e, q)`; returns its d.
// TQ1_0: qs[48], qh[4], f16 d; each qs byte holds five base-3 digits and each qh byte four, digit
// n read as ((uint8)(byte·3^n)·3) >> 8; values run digit-major over qs[0..31], then over
// qs[32..47], then over qh (dequantize_row_tq1_0). TQ2_0: qs[64], f16 d; bit pair l of qs[j + m]
// is value j·4 + 32l + m for j = 0, 32 (dequantize_row_tq2_0).
template <class Emit>
float WalkTernary(GgmlBlockType type, const uint8_t* b, Emit emit) {
  if (type == GgmlBlockType::kTq2_0) {
    int e = 0;
    for (int j = 0; j < 64; j += 32) {
      for (int l = 0; l < 4; ++l) {
        for (int m = 0; m < 32; ++m) emit(e++, (b[j + m] >> (2 * l)) & 3);
      }
    }
    return Half(b + 64);
  }
  constexpr uint8_t kPow3[5] = {1, 3, 9, 27, 81};
  auto digit = [&](uint8_t byte, int n) {
    const auto q = static_cast<uint8_t>(byte * kPow3[n]);
    return (static_cast<uint16_t>(q) * 3) >> 8;
  };
  int e = 0;
  for (int n = 0; n < 5; ++n) {
    for (int m = 0; m < 32; ++m) emit(e++, digit(b[m], n));
  }
  for (int n = 0; n < 5; ++n) {
    for (int m = 0; m < 16; ++m) emit(e++, digit(b[32 + m], n));
  }
  for (int n = 0; n < 4; ++n) {
    for (int j = 0; j < 4; ++j) emit(e++, digit(b[48 + j], n));
  }
  return Half(b + 52);
}

bool IsIq2(GgmlBlockType t) {
  return t == GgmlBlockType::kIq2Xxs || t == GgmlBlockType::kIq2Xs || t == GgmlBlockType::kIq2S;
}
bool IsIq3(GgmlBlockType t) { return t == GgmlBlockType::kIq3Xxs || t == GgmlBlockType::kIq3S; }

}  // namespace

bool IsIqGridType(GgmlBlockType type) {
  return IsIq2(type) || IsIq3(type) || type == GgmlBlockType::kIq1S ||
         type == GgmlBlockType::kIq1M;
}

bool IsTableCodeType(GgmlBlockType type) { return IsIqGridType(type) || IsTernary(type); }

// ggml's order: db = d·(0.5 + ls)·0.25 (IQ2), d·(0.5 + ls)·0.5 (IQ3_XXS), d·(1 + 2·ls) (IQ3_S),
// d·(2·ls + 1) (IQ1), then db·grid·sign (IQ1: dl·(grid + delta)).
void DequantizeIqGridBlock(GgmlBlockType type, const uint8_t* block, float* y) {
  int ls[16];
  if (IsTernary(type)) {  // (float)(q − 1)·d
    int q_of[256];
    const float d = WalkTernary(type, block, [&](int e, int q) { q_of[e] = q; });
    for (int e = 0; e < 256; ++e) y[e] = static_cast<float>(q_of[e] - 1) * d;
    return;
  }
  if (IsIq2(type)) {
    const float d = Half(block);
    int sign_of[256], grid_of[256];
    WalkIq2(type, block, [&](int e, int g, int neg) { grid_of[e] = g, sign_of[e] = neg; }, ls);
    for (int e = 0; e < 256; ++e) {
      const float db = d * (0.5f + static_cast<float>(ls[e / 16])) * 0.25f;
      y[e] = db * static_cast<float>(grid_of[e]) * (sign_of[e] ? -1.0f : 1.0f);
    }
  } else if (IsIq3(type)) {
    const float d = Half(block);
    int sign_of[256], grid_of[256];
    WalkIq3(type, block, [&](int e, int g, int neg) { grid_of[e] = g, sign_of[e] = neg; }, ls);
    for (int e = 0; e < 256; ++e) {
      const float l = static_cast<float>(ls[e / 32]);
      const float db = type == GgmlBlockType::kIq3Xxs ? d * (0.5f + l) * 0.5f
                                                      : d * static_cast<float>(1 + 2 * ls[e / 32]);
      y[e] = db * static_cast<float>(grid_of[e]) * (sign_of[e] ? -1.0f : 1.0f);
    }
  } else {
    int g_of[256], neg_of[256];
    const float d =
        WalkIq1(type, block, [&](int e, int g, int neg) { g_of[e] = g, neg_of[e] = neg; }, ls);
    for (int e = 0; e < 256; ++e) {
      const float dl = d * static_cast<float>(2 * ls[e / 16] + 1);
      const float delta = neg_of[e] ? -kIq1Delta : kIq1Delta;
      y[e] = dl * (static_cast<float>(g_of[e]) + delta);
    }
  }
}

const int8_t* IqGridTable(GgmlBlockType type) {
  assert(IsTableCodeType(type) && "a kIqGrid tile or panel without its grid or ternary type");
  if (IsTernary(type)) return kTernaryTable;
  if (IsIq2(type)) return kIq2Table;
  if (type == GgmlBlockType::kIq3Xxs) return kIq3XxsTable;
  if (type == GgmlBlockType::kIq3S) return kIq3STable;
  return kIq1Table;
}

void IqGridCodes(GgmlBlockType type, const uint8_t* block, float* d, uint8_t* mults,
                 uint8_t* codes) {
  int ls[16];
  if (IsTernary(type)) {
    *d = WalkTernary(type, block, [&](int e, int q) { codes[e] = static_cast<uint8_t>(q); });
    for (int s = 0; s < 16; ++s) mults[s] = 1;
    return;
  }
  if (IsIq2(type) || IsIq3(type)) {
    auto emit = [&](int e, int g, int neg) {
      codes[e] = static_cast<uint8_t>(MagnitudeIndex(type, g) + 8 * neg);
    };
    if (IsIq2(type)) {
      WalkIq2(type, block, emit, ls);
    } else {
      int ls32[8];
      WalkIq3(type, block, emit, ls32);
      for (int s = 0; s < 16; ++s) ls[s] = ls32[s / 2];
    }
    // IQ2: d·(0.5 + ls)·0.25 = (d / 8)·(2·ls + 1); IQ3_XXS: (d / 4)·(2·ls + 1); IQ3_S:
    // d·(2·ls + 1).
    const float factor = IsIq2(type) ? 0.125f : type == GgmlBlockType::kIq3Xxs ? 0.25f : 1.0f;
    *d = Half(block) * factor;
  } else {
    // dl·(g ± 1/8) = (d / 8)·(2·ls + 1)·(8g ± 1).
    *d = WalkIq1(type, block,
                 [&](int e, int g, int neg) { codes[e] = static_cast<uint8_t>(g + 1 + 3 * neg); },
                 ls) *
         0.125f;
  }
  for (int s = 0; s < 16; ++s) mults[s] = static_cast<uint8_t>(2 * ls[s] + 1);
}

}  // namespace tessera::kernels::cpu
