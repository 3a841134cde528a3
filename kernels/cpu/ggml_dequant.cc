#include "kernels/cpu/ggml_dequant.h"

#include <cstring>

#include "kernels/cpu/ggml_iq_dequant.h"
#include "kernels/numeric/half.h"

namespace tessera::kernels::cpu {
namespace {

// Every product below keeps ggml's evaluation order ((d * sc) * q - dmin * m) so that results
// match ggml and gguf-py bit for bit; the build does not contract these into FMAs (ISO C++ mode).

inline float Half(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return numeric::HalfToFloat(h);
}

void DequantQ8_0(const uint8_t* b, float* y) {
  const float d = Half(b);
  const int8_t* qs = reinterpret_cast<const int8_t*>(b + 2);
  for (int j = 0; j < 32; ++j) y[j] = static_cast<float>(qs[j]) * d;
}

void DequantQ4_0(const uint8_t* b, float* y) {
  const float d = Half(b);
  const uint8_t* qs = b + 2;
  for (int j = 0; j < 16; ++j) {
    y[j] = static_cast<float>((qs[j] & 0xF) - 8) * d;
    y[j + 16] = static_cast<float>((qs[j] >> 4) - 8) * d;
  }
}

void DequantQ4_1(const uint8_t* b, float* y) {
  const float d = Half(b);
  const float m = Half(b + 2);
  const uint8_t* qs = b + 4;
  for (int j = 0; j < 16; ++j) {
    y[j] = static_cast<float>(qs[j] & 0xF) * d + m;
    y[j + 16] = static_cast<float>(qs[j] >> 4) * d + m;
  }
}

void DequantQ5_0(const uint8_t* b, float* y) {
  const float d = Half(b);
  uint32_t qh;
  std::memcpy(&qh, b + 2, 4);
  const uint8_t* qs = b + 6;
  for (int j = 0; j < 16; ++j) {
    const int x0 = ((qs[j] & 0xF) | (((qh >> j) & 1) << 4)) - 16;
    const int x1 = ((qs[j] >> 4) | (((qh >> (j + 16)) & 1) << 4)) - 16;
    y[j] = static_cast<float>(x0) * d;
    y[j + 16] = static_cast<float>(x1) * d;
  }
}

void DequantQ5_1(const uint8_t* b, float* y) {
  const float d = Half(b);
  const float m = Half(b + 2);
  uint32_t qh;
  std::memcpy(&qh, b + 4, 4);
  const uint8_t* qs = b + 8;
  for (int j = 0; j < 16; ++j) {
    const int x0 = (qs[j] & 0xF) | (((qh >> j) & 1) << 4);
    const int x1 = (qs[j] >> 4) | (((qh >> (j + 16)) & 1) << 4);
    y[j] = static_cast<float>(x0) * d + m;
    y[j + 16] = static_cast<float>(x1) * d + m;
  }
}

// get_scale_min_k4 from ggml-quants.c: eight 6-bit scales and mins packed in 12 bytes.
inline void ScaleMinK4(int j, const uint8_t* q, uint8_t* sc, uint8_t* mn) {
  if (j < 4) {
    *sc = q[j] & 63;
    *mn = q[j + 4] & 63;
  } else {
    *sc = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
    *mn = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
  }
}

void DequantQ4_K(const uint8_t* b, float* y) {
  const float d = Half(b);
  const float dmin = Half(b + 2);
  const uint8_t* scales = b + 4;
  const uint8_t* q = b + 16;
  int is = 0;
  for (int c = 0; c < 4; ++c) {
    uint8_t sc, m;
    ScaleMinK4(is + 0, scales, &sc, &m);
    const float d1 = d * sc, m1 = dmin * m;
    ScaleMinK4(is + 1, scales, &sc, &m);
    const float d2 = d * sc, m2 = dmin * m;
    for (int l = 0; l < 32; ++l) *y++ = d1 * static_cast<float>(q[l] & 0xF) - m1;
    for (int l = 0; l < 32; ++l) *y++ = d2 * static_cast<float>(q[l] >> 4) - m2;
    q += 32;
    is += 2;
  }
}

void DequantQ5_K(const uint8_t* b, float* y) {
  const float d = Half(b);
  const float dmin = Half(b + 2);
  const uint8_t* scales = b + 4;
  const uint8_t* qh = b + 16;
  const uint8_t* ql = b + 48;
  int is = 0;
  uint8_t u1 = 1, u2 = 2;
  for (int c = 0; c < 4; ++c) {
    uint8_t sc, m;
    ScaleMinK4(is + 0, scales, &sc, &m);
    const float d1 = d * sc, m1 = dmin * m;
    ScaleMinK4(is + 1, scales, &sc, &m);
    const float d2 = d * sc, m2 = dmin * m;
    for (int l = 0; l < 32; ++l) {
      *y++ = d1 * static_cast<float>((ql[l] & 0xF) + ((qh[l] & u1) ? 16 : 0)) - m1;
    }
    for (int l = 0; l < 32; ++l) {
      *y++ = d2 * static_cast<float>((ql[l] >> 4) + ((qh[l] & u2) ? 16 : 0)) - m2;
    }
    ql += 32;
    is += 2;
    u1 <<= 2;
    u2 <<= 2;
  }
}

void DequantQ6_K(const uint8_t* b, float* y) {
  const uint8_t* ql = b;
  const uint8_t* qh = b + 128;
  const int8_t* sc = reinterpret_cast<const int8_t*>(b + 192);
  const float d = Half(b + 208);
  for (int h = 0; h < 2; ++h) {
    for (int l = 0; l < 32; ++l) {
      const int is = l / 16;
      const int q1 = ((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
      const int q2 = ((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
      const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
      const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
      y[l] = d * static_cast<float>(sc[is + 0]) * static_cast<float>(q1);
      y[l + 32] = d * static_cast<float>(sc[is + 2]) * static_cast<float>(q2);
      y[l + 64] = d * static_cast<float>(sc[is + 4]) * static_cast<float>(q3);
      y[l + 96] = d * static_cast<float>(sc[is + 6]) * static_cast<float>(q4);
    }
    y += 128;
    ql += 64;
    qh += 32;
    sc += 8;
  }
}

// Q2_K: sixteen sub-blocks of 16, each with a 4-bit scale (low nibble) and min (high nibble)
// under the f16 d and dmin; 2-bit codes, four per byte: byte l of a 32-byte group holds sub-block
// 2j's element l (l < 16) or 2j + 1's element l − 16 in bits 2j..2j+1.
void DequantQ2_K(const uint8_t* b, float* y) {
  const uint8_t* scales = b;
  const uint8_t* q = b + 16;
  const float d = Half(b + 80);
  const float dmin = Half(b + 82);
  int is = 0;
  for (int n = 0; n < 256; n += 128) {
    for (int shift = 0; shift < 8; shift += 2) {
      for (int half = 0; half < 2; ++half) {
        const uint8_t sc = scales[is++];
        const float dl = d * static_cast<float>(sc & 0xF), ml = dmin * static_cast<float>(sc >> 4);
        for (int l = 0; l < 16; ++l) {
          *y++ = dl * static_cast<float>((q[l + 16 * half] >> shift) & 3) - ml;
        }
      }
    }
    q += 32;
  }
}

void DequantQ3_K(const uint8_t* b, float* y) {
  int8_t codes[256], sc[16];
  Q3KCodes(b, codes, sc);
  const float d = Half(b + 108);
  for (int e = 0; e < 256; ++e) {
    y[e] = (d * static_cast<float>(sc[e / 16])) * static_cast<float>(codes[e]);
  }
}

// ggml stores E2M1 values doubled (kvalues_fp4) and halves the E8M0 scale to compensate.
void DequantMxfp4(const uint8_t* b, float* y) {
  static constexpr int8_t kValues[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};
  const uint8_t e = b[0];
  uint32_t bits = e < 2 ? (0x00200000u << e) : (static_cast<uint32_t>(e - 1) << 23);
  float d;
  std::memcpy(&d, &bits, 4);
  const uint8_t* qs = b + 1;
  for (int j = 0; j < 16; ++j) {
    y[j] = d * static_cast<float>(kValues[qs[j] & 0xF]);
    y[j + 16] = d * static_cast<float>(kValues[qs[j] >> 4]);
  }
}

}  // namespace

GgmlBlockInfo GetGgmlBlockInfo(GgmlBlockType type) {
  switch (type) {
    case GgmlBlockType::kQ4_0: return {32, 18};
    case GgmlBlockType::kQ4_1: return {32, 20};
    case GgmlBlockType::kQ5_0: return {32, 22};
    case GgmlBlockType::kQ5_1: return {32, 24};
    case GgmlBlockType::kQ8_0: return {32, 34};
    case GgmlBlockType::kQ2_K: return {256, 84};
    case GgmlBlockType::kQ3_K: return {256, 110};
    case GgmlBlockType::kQ4_K: return {256, 144};
    case GgmlBlockType::kQ5_K: return {256, 176};
    case GgmlBlockType::kQ6_K: return {256, 210};
    case GgmlBlockType::kMxfp4: return {32, 17};
    case GgmlBlockType::kIq4Nl: return {32, 18};
    case GgmlBlockType::kIq4Xs: return {256, 136};
    case GgmlBlockType::kIq2Xxs: return {256, 66};
    case GgmlBlockType::kIq2Xs: return {256, 74};
    case GgmlBlockType::kIq2S: return {256, 82};
    case GgmlBlockType::kIq3Xxs: return {256, 98};
    case GgmlBlockType::kIq3S: return {256, 110};
    case GgmlBlockType::kIq1S: return {256, 50};
    case GgmlBlockType::kIq1M: return {256, 56};
    case GgmlBlockType::kTq1_0: return {256, 54};
    case GgmlBlockType::kTq2_0: return {256, 66};
  }
  return {1, 1};
}

void KQuantScaleOffset(const uint8_t* block, int j, float* scale, float* offset) {
  uint8_t sc, m;
  ScaleMinK4(j, block + 4, &sc, &m);
  *scale = Half(block) * sc;
  *offset = Half(block + 2) * m;
}

void Q4KSubBlock(const uint8_t* block, int j, float* scale, float* offset, uint8_t* codes) {
  KQuantScaleOffset(block, j, scale, offset);
  const uint8_t* q = block + 16 + 32 * (j / 2);  // sub-blocks 2c and 2c + 1 share 32 bytes
  for (int l = 0; l < 32; ++l) codes[l] = (j % 2 == 0) ? (q[l] & 0xF) : (q[l] >> 4);
}

void KQuantScaleMin(const uint8_t* scales12, int j, uint8_t* sc, uint8_t* m) {
  ScaleMinK4(j, scales12, sc, m);
}

void Q5KSubBlock(const uint8_t* block, int j, float* scale, float* offset, uint8_t* codes) {
  KQuantScaleOffset(block, j, scale, offset);
  const uint8_t* qh = block + 16;
  const uint8_t* q = block + 48 + 32 * (j / 2);  // sub-blocks 2c and 2c + 1 share 32 bytes
  for (int l = 0; l < 32; ++l) {
    codes[l] = static_cast<uint8_t>(((j % 2 == 0) ? (q[l] & 0xF) : (q[l] >> 4)) +
                                    (((qh[l] >> j) & 1) << 4));
  }
}

void Q6KCodes(const uint8_t* block, uint8_t* codes, float* scales) {
  const uint8_t* ql = block;
  const uint8_t* qh = block + 128;
  for (int h = 0; h < 2; ++h) {  // each half: 4 runs of 32 from 64 low-nibble and 32 high bytes
    uint8_t* c = codes + 128 * h;
    for (int l = 0; l < 32; ++l) {
      c[l] = static_cast<uint8_t>((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4));
      c[l + 32] = static_cast<uint8_t>((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4));
      c[l + 64] = static_cast<uint8_t>((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4));
      c[l + 96] = static_cast<uint8_t>((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4));
    }
    ql += 64;
    qh += 32;
  }
  if (scales == nullptr) return;
  const auto* sc = reinterpret_cast<const int8_t*>(block + 192);
  const float d = Half(block + 208);
  for (int i = 0; i < 16; ++i) scales[i] = d * static_cast<float>(sc[i]);
}

void Q3KCodes(const uint8_t* block, int8_t* codes, int8_t* scales) {
  const uint8_t* hmask = block;
  const uint8_t* qs = block + 32;
  const uint8_t* s = block + 96;
  // Scale i: low 4 bits from nibble i of bytes 0-7 (low nibbles first), high 2 bits from bits
  // 2·(i / 4) of byte 8 + i % 4 (ggml's kmask shuffle).
  for (int i = 0; i < 16; ++i) {
    const int low = (i < 8 ? s[i] : s[i - 8] >> 4) & 0xF;
    const int high = (s[8 + i % 4] >> (2 * (i / 4))) & 3;
    scales[i] = static_cast<int8_t>((low | (high << 4)) - 32);
  }
  // Element e = 128h + 32j + l: bits 2j..2j+1 of qs[32h + l], minus 4 unless bit 4h + j of
  // hmask[l] is set.
  for (int e = 0; e < 256; ++e) {
    const int h = e / 128, j = (e / 32) % 4, l = e % 32;
    const int low = (qs[32 * h + l] >> (2 * j)) & 3;
    codes[e] = static_cast<int8_t>(low - (((hmask[l] >> (4 * h + j)) & 1) ? 0 : 4));
  }
}

namespace {

// block_iq4_nl: f16 d, qs[16]; element j < 16 is the low nibble of qs[j], j >= 16 the high
// nibble of qs[j − 16] (dequantize_row_iq4_nl).
void DequantIq4Nl(const uint8_t* b, float* y) {
  const float d = Half(b);
  for (int j = 0; j < 16; ++j) {
    y[j] = d * static_cast<float>(kIq4NlValues[b[2 + j] & 0xF]);
    y[j + 16] = d * static_cast<float>(kIq4NlValues[b[2 + j] >> 4]);
  }
}

}  // namespace

int Iq4XsScale(const uint8_t* block, int j) {
  uint16_t scales_h;
  std::memcpy(&scales_h, block + 2, 2);
  const int low = (block[4 + j / 2] >> (4 * (j % 2))) & 0xF;
  const int high = (scales_h >> (2 * j)) & 3;
  return (low | (high << 4)) - 32;
}

namespace {

// block_iq4_xs: f16 d, u16 scales_h, scales_l[4], qs[128]; sub-block j of 32 values has
// dl = d·(ls − 32) and IQ4_NL's nibble order within its 16 bytes of qs (dequantize_row_iq4_xs).
void DequantIq4Xs(const uint8_t* b, float* y) {
  const float d = Half(b);
  for (int j = 0; j < 8; ++j) {
    const float dl = d * static_cast<float>(Iq4XsScale(b, j));
    const uint8_t* qs = b + 8 + 16 * j;
    for (int l = 0; l < 16; ++l) {
      y[32 * j + l] = dl * static_cast<float>(kIq4NlValues[qs[l] & 0xF]);
      y[32 * j + l + 16] = dl * static_cast<float>(kIq4NlValues[qs[l] >> 4]);
    }
  }
}

}  // namespace

void DequantizeGgmlBlocks(GgmlBlockType type, const uint8_t* src, int64_t blocks, float* dst) {
  void (*fn)(const uint8_t*, float*) = nullptr;
  switch (type) {
    case GgmlBlockType::kQ8_0: fn = DequantQ8_0; break;
    case GgmlBlockType::kQ4_0: fn = DequantQ4_0; break;
    case GgmlBlockType::kQ4_1: fn = DequantQ4_1; break;
    case GgmlBlockType::kQ5_0: fn = DequantQ5_0; break;
    case GgmlBlockType::kQ5_1: fn = DequantQ5_1; break;
    case GgmlBlockType::kQ2_K: fn = DequantQ2_K; break;
    case GgmlBlockType::kQ3_K: fn = DequantQ3_K; break;
    case GgmlBlockType::kQ4_K: fn = DequantQ4_K; break;
    case GgmlBlockType::kQ5_K: fn = DequantQ5_K; break;
    case GgmlBlockType::kQ6_K: fn = DequantQ6_K; break;
    case GgmlBlockType::kMxfp4: fn = DequantMxfp4; break;
    case GgmlBlockType::kIq4Nl: fn = DequantIq4Nl; break;
    case GgmlBlockType::kIq4Xs: fn = DequantIq4Xs; break;
    case GgmlBlockType::kIq2Xxs:
    case GgmlBlockType::kIq2Xs:
    case GgmlBlockType::kIq2S:
    case GgmlBlockType::kIq3Xxs:
    case GgmlBlockType::kIq3S:
    case GgmlBlockType::kIq1S:
    case GgmlBlockType::kIq1M:
    case GgmlBlockType::kTq1_0:
    case GgmlBlockType::kTq2_0:
      for (int64_t i = 0; i < blocks; ++i) {
        DequantizeIqGridBlock(type, src + i * GetGgmlBlockInfo(type).bytes, dst + i * 256);
      }
      return;
  }
  const GgmlBlockInfo info = GetGgmlBlockInfo(type);
  for (int64_t i = 0; i < blocks; ++i) fn(src + i * info.bytes, dst + i * info.elements);
}

}  // namespace tessera::kernels::cpu
