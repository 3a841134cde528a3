// Highway implementation of FastMatmul; compiled once per x86 target by foreach_target.h.
#include "kernels/cpu/fast/fast_matmul.h"
#include "kernels/cpu/fast/ggml_dequant_fast.h"
#include "kernels/cpu/fast/isa_limit.h"
#include "kernels/cpu/fast/next_group_prefetch.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "kernels/numeric/half.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/cpu/fast/fast_matmul.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace tessera::kernels::cpu::fast {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using DF = hn::ScalableTag<float>;
using VF = hn::Vec<DF>;
constexpr int64_t kN = static_cast<int64_t>(hn::MaxLanes(DF()));

// Rows per call up to which weights are decoded in registers (each chunk once for all rows);
// above it a column tile is decoded to an L2-resident f32 buffer and reused for every row.
constexpr int64_t kFusedMaxRows = 4;
constexpr int kTileCols = 4;

// ---- Row decoders: chunk c is values [c*kN, c*kN + kN) of one weight row as exact f32. ----
// Tail(c, rem) decodes a final partial chunk (rem values, zeros after) with scalar code that
// yields the same values as the vector path.

// Decoders produce kStep consecutive chunks per call (Step), so a format whose natural unit is
// larger than a vector (a Q4_0 block's low and high nibbles share one load) decodes it once.
struct DecF32 {
  static constexpr int kStep = 1;
  const float* p;
  HWY_INLINE void Step(DF d, int64_t c, VF* w) const { w[0] = Chunk(d, c); }
  HWY_INLINE VF Chunk(DF d, int64_t c) const { return hn::LoadU(d, p + c * kN); }
  HWY_INLINE VF Tail(DF d, int64_t c, int64_t rem) const {
    HWY_ALIGN float t[kN] = {};
    std::memcpy(t, p + c * kN, rem * sizeof(float));
    return hn::Load(d, t);
  }
};

struct DecBF16 {
  static constexpr int kStep = 1;
  const uint16_t* p;
  HWY_INLINE void Step(DF d, int64_t c, VF* w) const { w[0] = Chunk(d, c); }
  HWY_INLINE VF Chunk(DF d, int64_t c) const {
    const hn::RebindToUnsigned<DF> du32;
    const hn::Rebind<uint16_t, DF> du16;
    return hn::BitCast(d, hn::ShiftLeft<16>(hn::PromoteTo(du32, hn::LoadU(du16, p + c * kN))));
  }
  HWY_INLINE VF Tail(DF d, int64_t c, int64_t rem) const {
    HWY_ALIGN float t[kN] = {};
    for (int64_t i = 0; i < rem; ++i) t[i] = numeric::Bf16ToFloat(p[c * kN + i]);
    return hn::Load(d, t);
  }
};

struct DecF16 {
  static constexpr int kStep = 1;
  const uint16_t* p;
  HWY_INLINE void Step(DF d, int64_t c, VF* w) const { w[0] = Chunk(d, c); }
  HWY_INLINE VF Chunk(DF d, int64_t c) const {
    const hn::Rebind<hwy::float16_t, DF> dh;
    return hn::PromoteTo(d, hn::LoadU(dh, reinterpret_cast<const hwy::float16_t*>(p + c * kN)));
  }
  HWY_INLINE VF Tail(DF d, int64_t c, int64_t rem) const {
    HWY_ALIGN float t[kN] = {};
    for (int64_t i = 0; i < rem; ++i) t[i] = numeric::HalfToFloat(p[c * kN + i]);
    return hn::Load(d, t);
  }
};

// Q8_0: w = float(q) * d, as ggml's dequantize_row_q8_0. k is a multiple of 32: no tails.
struct DecQ8 {
  static constexpr int kStep = 1;
  const int8_t* q;
  const float* scales;  // one per block of 32, converted from the row's f16 scales
  HWY_INLINE VF Chunk(DF d, int64_t c) const {
    const hn::RebindToSigned<DF> di32;
    const hn::Rebind<int8_t, DF> di8;
    const VF v = hn::ConvertTo(d, hn::PromoteTo(di32, hn::LoadU(di8, q + c * kN)));
    return hn::Mul(v, hn::Set(d, scales[(c * kN) >> 5]));
  }
  HWY_INLINE void Step(DF d, int64_t c, VF* w) const { w[0] = Chunk(d, c); }
  HWY_INLINE VF Tail(DF d, int64_t, int64_t) const { return hn::Zero(d); }
};

// Q4_0: value j of a block is the low nibble of byte j (j < 16) or the high nibble of byte
// j - 16; w = float(nibble - 8) * d, as ggml's dequantize_row_q4_0.
struct DecQ4 {
  // One step is one block: 32 / kN chunks, low nibbles first (kN <= 16 on x86).
  static constexpr int kStep = static_cast<int>(32 / kN);
  const uint8_t* q;  // 16 bytes per block
  const float* scales;
  // (q - 8) · d is computed as fma(q, d, -8·d): the exact value is the same and is rounded once,
  // as the reference's float(q - 8) * d is, so the decoded weights are bit-identical.
  HWY_INLINE void Step(DF d, int64_t c, VF* w) const {
    const hn::RebindToSigned<DF> di32;
    const hn::RebindToUnsigned<DF> du32;
    const hn::Rebind<uint8_t, DF> du8;
    const int64_t b = (c * kN) >> 5;
    const VF scale = hn::Set(d, scales[b]);
    const VF offset = hn::Set(d, -8.0f * scales[b]);
    for (int s = 0; s < kStep / 2; ++s) {
      const auto bytes = hn::PromoteTo(du32, hn::LoadU(du8, q + b * 16 + s * kN));
      const VF lo = hn::ConvertTo(d, hn::BitCast(di32, hn::And(bytes, hn::Set(du32, 0xF))));
      const VF hi = hn::ConvertTo(d, hn::BitCast(di32, hn::ShiftRight<4>(bytes)));
      w[s] = hn::MulAdd(lo, scale, offset);
      w[kStep / 2 + s] = hn::MulAdd(hi, scale, offset);
    }
  }
  HWY_INLINE VF Chunk(DF d, int64_t c) const {
    const hn::RebindToSigned<DF> di32;
    const hn::RebindToUnsigned<DF> du32;
    const hn::Rebind<uint8_t, DF> du8;
    const int64_t off = c * kN, b = off >> 5, o = off & 31;
    const auto bytes = hn::PromoteTo(du32, hn::LoadU(du8, q + b * 16 + (o & 15)));
    const auto nib = o < 16 ? hn::And(bytes, hn::Set(du32, 0xF)) : hn::ShiftRight<4>(bytes);
    const VF v = hn::ConvertTo(d, hn::Sub(hn::BitCast(di32, nib), hn::Set(di32, 8)));
    return hn::Mul(v, hn::Set(d, scales[b]));
  }
  HWY_INLINE VF Tail(DF d, int64_t, int64_t) const { return hn::Zero(d); }
};

// GGUF Q4_K in the file's own 144-byte super-blocks of 256 values (f16 d and dmin, 12 bytes of
// 6-bit scales and mins, 128 nibble bytes): sub-block j holds w = (d·sc_j)·q − dmin·m_j, as
// dequantize_row_q4_K. (d·sc)·q is exact in f32 (11 + 6 + 4 significant bits), so the fused
// multiply-subtract rounds once, as the reference's separate subtract does: the same bits. Two
// sub-blocks share a 32-byte run (low nibbles, then high), decoded once per step.
struct DecQ4K {
  static constexpr int kStep = static_cast<int>(64 / kN);
  const uint8_t* row;
  const float* scales;  // [k / 32][2]: d·sc and dmin·m of each sub-block (MakeDec)
  HWY_INLINE static const uint8_t* PairBytes(const uint8_t* row, int64_t e) {
    return row + (e >> 8) * 144 + 16 + ((e & 255) >> 6) * 32;
  }
  HWY_INLINE void Step(DF d, int64_t c, VF* w) const {
    const hn::RebindToSigned<DF> di32;
    const hn::RebindToUnsigned<DF> du32;
    const hn::Rebind<uint8_t, DF> du8;
    const int64_t e = c * kN, j = e >> 5;  // j: the pair's first (low-nibble) sub-block
    const uint8_t* q = PairBytes(row, e);
    const VF s0 = hn::Set(d, scales[2 * j]), o0 = hn::Set(d, scales[2 * j + 1]);
    const VF s1 = hn::Set(d, scales[2 * j + 2]), o1 = hn::Set(d, scales[2 * j + 3]);
    for (int s = 0; s < kStep / 2; ++s) {
      const auto bytes = hn::PromoteTo(du32, hn::LoadU(du8, q + s * kN));
      const VF lo = hn::ConvertTo(d, hn::BitCast(di32, hn::And(bytes, hn::Set(du32, 0xF))));
      const VF hi = hn::ConvertTo(d, hn::BitCast(di32, hn::ShiftRight<4>(bytes)));
      w[s] = hn::MulSub(lo, s0, o0);
      w[kStep / 2 + s] = hn::MulSub(hi, s1, o1);
    }
  }
  HWY_INLINE VF Chunk(DF d, int64_t c) const {
    const hn::RebindToSigned<DF> di32;
    const hn::RebindToUnsigned<DF> du32;
    const hn::Rebind<uint8_t, DF> du8;
    const int64_t e = c * kN, j = e >> 5, o = e & 63;
    const auto bytes = hn::PromoteTo(du32, hn::LoadU(du8, PairBytes(row, e) + (o & 31)));
    const auto nib = o < 32 ? hn::And(bytes, hn::Set(du32, 0xF)) : hn::ShiftRight<4>(bytes);
    return hn::MulSub(hn::ConvertTo(d, hn::BitCast(di32, nib)), hn::Set(d, scales[2 * j]),
                      hn::Set(d, scales[2 * j + 1]));
  }
  HWY_INLINE VF Tail(DF d, int64_t, int64_t) const { return hn::Zero(d); }
};

// f32 scale floats a decoder keeps per 32 weights (MakeDec's `scales`).
template <class Dec>
constexpr int64_t kScaleFloatsPer32 = std::is_same_v<Dec, DecQ4K> ? 2 : 1;

// ---- The one inner kernel: MR rows × NC columns of dot products in the canonical order. ----
template <int MR, int NC, class Dec>
HWY_INLINE void DotTile(const Dec* dec, const float* x, int64_t k, float* out /*[MR][NC]*/,
                        const NextGroupPrefetch& pf = {}) {
  const DF d;
  VF acc[MR][NC];
  for (int r = 0; r < MR; ++r)
    for (int j = 0; j < NC; ++j) acc[r][j] = hn::Zero(d);
  const int64_t full = k / kN, rem = k % kN;
  constexpr int S = Dec::kStep;
  int64_t c = 0;
  for (; c + S <= full; c += S) {
    VF w[NC][S];
    for (int j = 0; j < NC; ++j) {
      for (int s = 0; s < S; ++s) pf.Touch((c + s) * NC + j);
      dec[j].Step(d, c, w[j]);
    }
    for (int s = 0; s < S; ++s) {
      for (int r = 0; r < MR; ++r) {
        const VF xv = hn::LoadU(d, x + r * k + (c + s) * kN);
        for (int j = 0; j < NC; ++j) acc[r][j] = hn::MulAdd(xv, w[j][s], acc[r][j]);
      }
    }
  }
  for (; c < full; ++c) {  // only formats with kStep == 1 reach here
    VF w[NC];
    for (int j = 0; j < NC; ++j) w[j] = dec[j].Chunk(d, c);
    for (int r = 0; r < MR; ++r) {
      const VF xv = hn::LoadU(d, x + r * k + c * kN);
      for (int j = 0; j < NC; ++j) acc[r][j] = hn::MulAdd(xv, w[j], acc[r][j]);
    }
  }
  if (rem != 0) {
    VF w[NC];
    for (int j = 0; j < NC; ++j) w[j] = dec[j].Tail(d, full, rem);
    for (int r = 0; r < MR; ++r) {
      const VF xv = DecF32{x + r * k}.Tail(d, full, rem);
      for (int j = 0; j < NC; ++j) acc[r][j] = hn::MulAdd(xv, w[j], acc[r][j]);
    }
  }
  for (int r = 0; r < MR; ++r)
    for (int j = 0; j < NC; ++j) out[r * NC + j] = hn::GetLane(hn::SumOfLanes(d, acc[r][j]));
}

template <int NC, class Dec>
void DotRows(const Dec* dec, const float* x, int64_t rows, int64_t k, float* out,
             const NextGroupPrefetch& pf = {}) {
  // out is [rows][NC]; rows handled in tiles of 4 so the accumulators stay in registers. Only
  // the first tile streams the weights from memory, so only it prefetches.
  int64_t r = 0;
  for (; r + 4 <= rows; r += 4)
    DotTile<4, NC>(dec, x + r * k, k, out + r * NC, r == 0 ? pf : NextGroupPrefetch{});
  const NextGroupPrefetch& tail_pf = r == 0 ? pf : NextGroupPrefetch{};
  switch (rows - r) {
    case 3:
      DotTile<3, NC>(dec, x + r * k, k, out + r * NC, tail_pf);
      break;
    case 2:
      DotTile<2, NC>(dec, x + r * k, k, out + r * NC, tail_pf);
      break;
    case 1:
      DotTile<1, NC>(dec, x + r * k, k, out + r * NC, tail_pf);
      break;
    default:
      break;
  }
}

// Converts a repacked row's f16 block scales to f32.
void ScalesToF32(const uint8_t* row, int64_t blocks, float* out) {
  const DF d;
  const hn::Rebind<hwy::float16_t, DF> dh;
  const auto* h = reinterpret_cast<const hwy::float16_t*>(row);
  int64_t b = 0;
  for (; b + kN <= blocks; b += kN) hn::StoreU(hn::PromoteTo(d, hn::LoadU(dh, h + b)), d, out + b);
  for (; b < blocks; ++b) {
    uint16_t v;
    std::memcpy(&v, row + 2 * b, 2);
    out[b] = numeric::HalfToFloat(v);
  }
}

struct Scratch {
  std::vector<float> scales;  // kTileCols rows of block scales
  std::vector<float> tile;    // decoded weight tile [cols][kpad]
  std::vector<float> out;     // [rows][kTileCols]
};

Scratch& ThreadScratch() {
  thread_local Scratch s;
  return s;
}

// Builds the decoder of weight row `col` (scales go to `scales`, k/32 floats).
template <class Dec>
Dec MakeDec(const FastWeights& w, int64_t col, float* scales) {
  const uint8_t* row = w.data + col * w.row_stride;
  if constexpr (std::is_same_v<Dec, DecF32>) {
    return DecF32{reinterpret_cast<const float*>(row)};
  } else if constexpr (std::is_same_v<Dec, DecBF16> || std::is_same_v<Dec, DecF16>) {
    return Dec{reinterpret_cast<const uint16_t*>(row)};
  } else if constexpr (std::is_same_v<Dec, DecQ4K>) {
    // KQuantScaleOffset's arithmetic, inline with d and dmin converted once per super-block:
    // the out-of-line call per sub-block cost a third of the batch-1 rate (8.0 -> 5.7 GB/s).
    for (int64_t sb = 0; sb < w.k / 256; ++sb) {
      const uint8_t* b = row + sb * 144;
      uint16_t dh, mh;
      std::memcpy(&dh, b, 2);
      std::memcpy(&mh, b + 2, 2);
      const float dd = numeric::HalfToFloat(dh), dmin = numeric::HalfToFloat(mh);
      for (int j = 0; j < 8; ++j) {
        uint8_t sc, m;
        KQuantScaleMin(b + 4, j, &sc, &m);
        scales[2 * (sb * 8 + j)] = dd * sc;
        scales[2 * (sb * 8 + j) + 1] = dmin * m;
      }
    }
    return DecQ4K{row, scales};
  } else {
    ScalesToF32(row, w.k / 32, scales);
    if constexpr (std::is_same_v<Dec, DecQ8>) {
      return DecQ8{reinterpret_cast<const int8_t*>(row + w.quant_offset), scales};
    } else {
      return DecQ4{row + w.quant_offset, scales};
    }
  }
}

void StoreOut(const float* out, int nc, int64_t rows, int64_t col, const float* bias,
              int64_t n_total, float* y) {
  for (int64_t r = 0; r < rows; ++r) {
    for (int j = 0; j < nc; ++j) {
      float v = out[r * nc + j];
      if (bias != nullptr) v += bias[col + j];
      y[r * n_total + col + j] = v;
    }
  }
}

// Few rows: decode each weight chunk in registers once and use it for every row.
template <class Dec>
void FusedPath(const FastWeights& w, const float* x, int64_t rows, const float* bias, float* y,
               int64_t nb, int64_t ne) {
  Scratch& s = ThreadScratch();
  const int64_t blocks = (w.k / 32 + 1) * kScaleFloatsPer32<Dec>;
  s.scales.resize(kTileCols * blocks);
  s.out.resize(rows * kTileCols);
  int64_t col = nb;
  // Bytes of a row per chunk (rows are chunk-proportional in every format here).
  NextGroupPrefetch pf{
      reinterpret_cast<uintptr_t>(w.data) + static_cast<uintptr_t>((nb + kTileCols) * w.row_stride),
      std::max<int64_t>(1, w.row_stride / std::max<int64_t>(1, w.k / kN))};
  for (; col + kTileCols <= ne; col += kTileCols) {
    Dec dec[kTileCols];
    for (int j = 0; j < kTileCols; ++j) dec[j] = MakeDec<Dec>(w, col + j, &s.scales[j * blocks]);
    DotRows<kTileCols>(dec, x, rows, w.k, s.out.data(), pf);
    pf.next += static_cast<uintptr_t>(kTileCols * w.row_stride);
    StoreOut(s.out.data(), kTileCols, rows, col, bias, w.n, y);
  }
  for (; col < ne; ++col) {
    Dec dec[1] = {MakeDec<Dec>(w, col, s.scales.data())};
    DotRows<1>(dec, x, rows, w.k, s.out.data());
    StoreOut(s.out.data(), 1, rows, col, bias, w.n, y);
  }
}

// Decodes row `col` into `dst` (k floats then zeros up to a whole chunk): the same values the
// decoder's chunks give.
template <class Dec>
void DecodeRow(const FastWeights& w, int64_t col, float* scales, float* dst) {
  const DF d;
  const int64_t full = w.k / kN, rem = w.k % kN;
  if constexpr (std::is_same_v<Dec, void>) {
    FastDequantizeGgmlBlocks(w.ggml, w.data + col * w.row_stride,
                             w.k / GetGgmlBlockInfo(w.ggml).elements, dst);
    std::fill(dst + w.k, dst + (full + (rem != 0)) * kN, 0.0f);
  } else {
    const Dec dec = MakeDec<Dec>(w, col, scales);
    VF v[Dec::kStep];
    int64_t c = 0;
    for (; c + Dec::kStep <= full; c += Dec::kStep) {
      dec.Step(d, c, v);
      for (int s = 0; s < Dec::kStep; ++s) hn::StoreU(v[s], d, dst + (c + s) * kN);
    }
    for (; c < full; ++c) hn::StoreU(dec.Chunk(d, c), d, dst + c * kN);
    if (rem != 0) hn::StoreU(dec.Tail(d, full, rem), d, dst + full * kN);
  }
}

// Many rows (or a format without a vector decoder, Dec = void): decode a tile of columns to
// f32 once, then run every row against it.
template <class Dec>
void TiledRowBlock(const FastWeights& w, const float* x, int64_t rows, const float* bias, float* y,
                   int64_t nb, int64_t ne, int64_t tile_cols, int64_t kpad, Scratch& s);

template <class Dec>
void TiledPath(const FastWeights& w, const float* x, int64_t rows, const float* bias, float* y,
               int64_t nb, int64_t ne) {
  Scratch& s = ThreadScratch();
  const int64_t kpad = (w.k + kN - 1) / kN * kN;
  // About 256 KiB of decoded weights per tile: stays in L2 while all rows stream past it.
  const int64_t tile_cols =
      std::clamp<int64_t>((int64_t{1} << 16) / kpad / kTileCols * kTileCols, kTileCols, 64);
  // Rows go in blocks of about 512 KiB of activations, so a block stays in L2 while every column
  // tile passes; the weights are re-read and decoded once per row block (>= 16 rows).
  const int64_t row_block = std::max<int64_t>(16, (int64_t{1} << 17) / kpad / 4 * 4);
  s.tile.resize(tile_cols * kpad);
  s.scales.resize((w.k / 32 + 1) * kScaleFloatsPer32<Dec>);
  s.out.resize(std::min(rows, row_block) * kTileCols);
  for (int64_t r0 = 0; r0 < rows; r0 += row_block) {
    const int64_t nr = std::min(row_block, rows - r0);
    TiledRowBlock<Dec>(w, x + r0 * w.k, nr, bias, y + r0 * w.n, nb, ne, tile_cols, kpad, s);
  }
}

template <class Dec>
void TiledRowBlock(const FastWeights& w, const float* x, int64_t rows, const float* bias, float* y,
                   int64_t nb, int64_t ne, int64_t tile_cols, int64_t kpad, Scratch& s) {
  for (int64_t t0 = nb; t0 < ne; t0 += tile_cols) {
    const int64_t t1 = std::min(ne, t0 + tile_cols);
    for (int64_t col = t0; col < t1; ++col) {
      DecodeRow<Dec>(w, col, s.scales.data(), &s.tile[(col - t0) * kpad]);
    }
    int64_t col = t0;
    for (; col + kTileCols <= t1; col += kTileCols) {
      DecF32 dec[kTileCols];
      for (int j = 0; j < kTileCols; ++j) dec[j] = DecF32{&s.tile[(col - t0 + j) * kpad]};
      DotRows<kTileCols>(dec, x, rows, w.k, s.out.data());
      StoreOut(s.out.data(), kTileCols, rows, col, bias, w.n, y);
    }
    for (; col < t1; ++col) {
      DecF32 dec[1] = {DecF32{&s.tile[(col - t0) * kpad]}};
      DotRows<1>(dec, x, rows, w.k, s.out.data());
      StoreOut(s.out.data(), 1, rows, col, bias, w.n, y);
    }
  }
}

template <class Dec>
void Run(const FastWeights& w, const float* x, int64_t rows, const float* bias, float* y,
         int64_t nb, int64_t ne) {
  if (rows <= kFusedMaxRows) {
    FusedPath<Dec>(w, x, rows, bias, y, nb, ne);
  } else {
    TiledPath<Dec>(w, x, rows, bias, y, nb, ne);
  }
}

void FastMatmulImpl(const FastWeights& w, const float* x, int64_t rows, const float* bias, float* y,
                    int64_t nb, int64_t ne) {
  if (rows <= 0 || nb >= ne) return;
  switch (w.format) {
    case FastFormat::kF32:
      return Run<DecF32>(w, x, rows, bias, y, nb, ne);
    case FastFormat::kBF16:
      return Run<DecBF16>(w, x, rows, bias, y, nb, ne);
    case FastFormat::kF16:
      return Run<DecF16>(w, x, rows, bias, y, nb, ne);
    case FastFormat::kQ8_0:
      return Run<DecQ8>(w, x, rows, bias, y, nb, ne);
    case FastFormat::kQ4_0:
      return Run<DecQ4>(w, x, rows, bias, y, nb, ne);
    case FastFormat::kGgml:
      if (w.ggml == GgmlBlockType::kQ4_K) return Run<DecQ4K>(w, x, rows, bias, y, nb, ne);
      return TiledPath<void>(w, x, rows, bias, y, nb, ne);
    case FastFormat::kU4Groups:
    case FastFormat::kNvfp4Pairs:
    case FastFormat::kQ4_0x16:
    case FastFormat::kU4x16:
    case FastFormat::kNvfp4x16:
    case FastFormat::kQ8_0x16:
    case FastFormat::kU8Groups:
    case FastFormat::kU8x16:
    case FastFormat::kQ6_Kx16:
    case FastFormat::kQ4_Kx16:
    case FastFormat::kQ5_Kx16:
    case FastFormat::kMxfp4x16:
    case FastFormat::kQ3_Kx16:
    case FastFormat::kQ2_Kx16:
    case FastFormat::kIq4Nlx16:
    case FastFormat::kIq4Xsx16:
    case FastFormat::kIqGrid16x16:
    case FastFormat::kIqGrid32x16:
      break;  // int8-activation kernels only (int4_x16.h)
    case FastFormat::kBf16Pairs:
      break;  // Bf16DotMatmul only
    case FastFormat::kF16Panels:
    case FastFormat::kF32Panels:
      break;  // F16PanelMatmul / F32PanelMatmul only
  }
}

const char* TargetNameImpl() { return hwy::TargetName(HWY_TARGET); }

}  // namespace HWY_NAMESPACE
}  // namespace tessera::kernels::cpu::fast
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace tessera::kernels::cpu::fast {

HWY_EXPORT(FastMatmulImpl);
HWY_EXPORT(TargetNameImpl);

void FastMatmul(const FastWeights& w, const float* x, int64_t rows, const float* bias, float* y,
                int64_t n_begin, int64_t n_end) {
  HWY_DYNAMIC_DISPATCH(FastMatmulImpl)(w, x, rows, bias, y, n_begin, n_end);
}

const char* FastTargetName() {
  Avx512Allowed();  // links isa_limit.cc, whose start-up check applies TESSERA_CPU_ISA
  return HWY_DYNAMIC_DISPATCH(TargetNameImpl)();
}

}  // namespace tessera::kernels::cpu::fast
#endif  // HWY_ONCE
