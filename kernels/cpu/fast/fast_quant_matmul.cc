// Highway implementation of FastQuantMatmul (see the header for the numerics); compiled once per
// x86 target by foreach_target.h. The structure follows fast_matmul.cc: one inner kernel
// (DotTile) computes MR rows × NC columns of dot products in the canonical order, fed either by a
// register decoder (GEMV) or by an f32 tile the same decoder filled (GEMM).
#include "kernels/cpu/fast/fast_quant_matmul.h"
#include "kernels/cpu/fast/next_group_prefetch.h"
#include "kernels/cpu/fast/quant_epilogue.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <type_traits>
#include <vector>

#include "kernels/cpu/fast/fp8_bf16_matmul.h"
#include "kernels/numeric/e8m0.h"
#include "kernels/numeric/fp4.h"
#include "kernels/numeric/fp8.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/cpu/fast/fast_quant_matmul.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace tessera::kernels::cpu::fast {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
// Internal linkage: fast_matmul.cc defines same-named helpers in the same target namespaces.
namespace {

using DF = hn::ScalableTag<float>;
using VF = hn::Vec<DF>;
constexpr int64_t kN = static_cast<int64_t>(hn::MaxLanes(DF()));

constexpr int64_t kFusedMaxRows = 4;
constexpr int kTileCols = 4;
// 2^120: moves an E4M3 bit pattern placed in the f32 exponent/mantissa fields to its value.
constexpr float kE4m3Rebias = 1.329227995784916e36f;

// Scale bytes decoded once into tables (UE4M3 for NVFP4 and E8M0 for MXFP4), so the per-block
// table build is one load.
struct ByteTables {
  std::array<float, 256> ue4m3;
  std::array<float, 256> e8m0;
  ByteTables() {
    for (int i = 0; i < 256; ++i) {
      ue4m3[i] = numeric::DecodeUe4m3(static_cast<uint8_t>(i));
      e8m0[i] = numeric::DecodeE8m0(static_cast<uint8_t>(i));
    }
  }
};
const ByteTables& Tables() {
  static const ByteTables t;
  return t;
}

// ---- Decoders. Interface: kStep (chunks per Step), cpb (chunks per table block, a multiple of
// kStep), Table(blk) -> per-block state, Step(tab, c, w) -> chunks c .. c + kStep − 1 as exact
// f32, Tail(tab, c, rem) -> a final partial chunk, zeros after (kStep == 1 formats only).

// An already-decoded f32 row (the GEMM tile).
struct DecF32 {
  static constexpr int kStep = 1;
  const float* p;
  int64_t cpb;
  HWY_INLINE VF Table(DF d, int64_t) const { return hn::Zero(d); }
  HWY_INLINE void Step(DF d, VF, int64_t c, VF* w) const { w[0] = hn::LoadU(d, p + c * kN); }
  HWY_INLINE VF Tail(DF d, VF, int64_t c, int64_t) const { return hn::LoadU(d, p + c * kN); }
};

// E4M3: byte b, sign-extended and shifted left by 20, has its sign in bit 31 (copies in 30..27)
// and exponent/mantissa where an f32 with exponent bias 127 − 120 has them; the mask drops the
// sign copies, and the multiply by
// 2^120 · scale rebiases (subnormal codes become f32 subnormals first, still exact). That product
// is the exact e4m3 · scale rounded once, as the reference's DecodeE4m3(q) * scale.
struct DecFp8 {
  static constexpr int kStep = 1;
  const uint8_t* q;
  const float* scales;  // this row's scale blocks
  int64_t cpb;
  HWY_INLINE VF Table(DF d, int64_t blk) const { return hn::Set(d, scales[blk] * kE4m3Rebias); }
  HWY_INLINE VF FromBytes(DF d, VF tab, const uint8_t* p) const {
    const hn::RebindToSigned<DF> di;
    const hn::Rebind<int8_t, DF> d8;
    const auto v = hn::PromoteTo(di, hn::LoadU(d8, reinterpret_cast<const int8_t*>(p)));
    const auto bits = hn::And(hn::ShiftLeft<20>(v), hn::Set(di, static_cast<int32_t>(0x87F00000u)));
    return hn::Mul(hn::BitCast(d, bits), tab);
  }
  HWY_INLINE void Step(DF d, VF tab, int64_t c, VF* w) const { w[0] = FromBytes(d, tab, q + c * kN); }
  HWY_INLINE VF Tail(DF d, VF tab, int64_t c, int64_t rem) const {
    uint8_t t[kN] = {};
    std::memcpy(t, q + c * kN, rem);
    return FromBytes(d, tab, t);
  }
};

// 4-bit codes, 32 elements (16 bytes) per Step: one zero-extension gives 16 u32 lanes, lane l
// holding byte l; the low nibbles (elements 0, 2, ..., 30) form the first chunk and the high
// nibbles (1, 3, ..., 31) the second, each indexing a 16-entry value table. Lanes 0-7 of a chunk
// cover elements 0-15 and lanes 8-15 elements 16-31, so a format with 16-element blocks (NVFP4)
// looks lanes 0-7 up in block 2b's table and lanes 8-15 in block 2b + 1's (a two-table permute).
// Three shuffles per 32 weights: the decode is shuffle-port bound on AVX-512, so this matters.
struct Tab2 {
  VF lo, hi;  // tables for elements [0, 16) and [16, 32) of the step (equal unless NVFP4)
};

template <bool kTwoTables>
HWY_INLINE void LookupStep(DF d, const Tab2& tab, const uint8_t* p, VF* w) {
#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
  const hn::RebindToUnsigned<DF> du;
  const hn::Rebind<uint8_t, DF> d8;
  const auto bytes = hn::PromoteTo(du, hn::LoadU(d8, p));
  const auto lo = hn::And(bytes, hn::Set(du, 0xFu));
  const auto hi = hn::ShiftRight<4>(bytes);
  if constexpr (kTwoTables) {
    // Index bit 4 selects the second table: set for lanes 8-15.
    const __m512i sel = _mm512_set_epi32(16, 16, 16, 16, 16, 16, 16, 16, 0, 0, 0, 0, 0, 0, 0, 0);
    w[0] = VF{_mm512_permutex2var_ps(tab.lo.raw, _mm512_or_si512(lo.raw, sel), tab.hi.raw)};
    w[1] = VF{_mm512_permutex2var_ps(tab.lo.raw, _mm512_or_si512(hi.raw, sel), tab.hi.raw)};
  } else {
    w[0] = hn::TableLookupLanes(tab.lo, hn::IndicesFromVec(d, lo));
    w[1] = hn::TableLookupLanes(tab.lo, hn::IndicesFromVec(d, hi));
  }
#else
  (void)d;
  (void)p;
  w[0] = w[1] = tab.lo;  // unreachable: FastQuantSupported rejects 4-bit formats elsewhere
#endif
}

HWY_INLINE VF E2m1Values(DF d) {
  HWY_ALIGN static const float kVals[16] = {0.0f,  0.5f,  1.0f,  1.5f,  2.0f,  3.0f,  4.0f,  6.0f,
                                            -0.0f, -0.5f, -1.0f, -1.5f, -2.0f, -3.0f, -4.0f, -6.0f};
  return hn::LoadU(d, kVals);  // kN == 16 whenever a 4-bit decoder runs
}

struct DecInt4 {
  static constexpr int kStep = 2;
  const uint8_t* q;
  const float* scales;  // this row's groups (group size a multiple of 32)
  const float* zeros;
  int64_t cpb;
  HWY_INLINE Tab2 Table(DF d, int64_t blk) const {
    // (float(q) − z) · s for q = 0..15: the reference's operations, so the same values.
    const VF codes = hn::ConvertTo(d, hn::Iota(hn::RebindToSigned<DF>(), 0));
    const VF t = hn::Mul(hn::Sub(codes, hn::Set(d, zeros[blk])), hn::Set(d, scales[blk]));
    return {t, t};
  }
  HWY_INLINE void Step(DF d, const Tab2& tab, int64_t c, VF* w) const {
    LookupStep<false>(d, tab, q + c * (kN / 2), w);
  }
  HWY_INLINE VF Tail(DF d, const Tab2&, int64_t, int64_t) const { return hn::Zero(d); }
};

// Byte codes (INT8, INT3 / INT2 unpacked), a scale and zero point per group of whole chunks:
// (float(q) − z) · s, the reference's two roundings.
struct DecInt8 {
  static constexpr int kStep = 1;
  struct Group {
    VF zero, scale;
  };
  const uint8_t* q;
  const float* scales;  // this row's groups
  const float* zeros;
  int64_t cpb;
  HWY_INLINE Group Table(DF d, int64_t blk) const {
    return {hn::Set(d, zeros[blk]), hn::Set(d, scales[blk])};
  }
  HWY_INLINE VF FromBytes(DF d, const Group& g, const uint8_t* p) const {
    const hn::Rebind<uint8_t, DF> d8;
    const VF codes = hn::ConvertTo(d, hn::BitCast(hn::RebindToSigned<DF>(),
                                                  hn::PromoteTo(hn::RebindToUnsigned<DF>(),
                                                                hn::LoadU(d8, p))));
    return hn::Mul(hn::Sub(codes, g.zero), g.scale);
  }
  HWY_INLINE void Step(DF d, const Group& g, int64_t c, VF* w) const {
    w[0] = FromBytes(d, g, q + c * kN);
  }
  HWY_INLINE VF Tail(DF d, const Group& g, int64_t c, int64_t rem) const {
    uint8_t t[kN] = {};
    // 0 < rem < kN; the clamp tells GCC so (-Wstringop-overflow).
    std::memcpy(t, q + c * kN, static_cast<size_t>(std::clamp<int64_t>(rem, 0, kN)));
    return hn::IfThenElseZero(hn::FirstN(d, static_cast<size_t>(rem)), FromBytes(d, g, t));
  }
};

struct DecNvfp4 {
  static constexpr int kStep = 2;
  const uint8_t* q;
  const uint8_t* sf;  // this row's block scales, two per step
  float alpha;
  int64_t cpb;         // 2
  const float* ue4m3;  // Tables().ue4m3, looked up once per column rather than per block
  HWY_INLINE VF One(DF d, uint8_t scale) const {
    // (e2m1 · sf) is exact; the product with α is the single rounding, as in the reference.
    const VF t = hn::Mul(E2m1Values(d), hn::Set(d, ue4m3[scale]));
    return alpha == 1.0f ? t : hn::Mul(t, hn::Set(d, alpha));
  }
  HWY_INLINE Tab2 Table(DF d, int64_t blk) const { return {One(d, sf[2 * blk]), One(d, sf[2 * blk + 1])}; }
  HWY_INLINE void Step(DF d, const Tab2& tab, int64_t c, VF* w) const {
    LookupStep<true>(d, tab, q + c * (kN / 2), w);
  }
  HWY_INLINE VF Tail(DF d, const Tab2&, int64_t, int64_t) const { return hn::Zero(d); }
};

struct DecMxfp4 {
  static constexpr int kStep = 2;
  const uint8_t* q;
  const uint8_t* e;  // this row's E8M0 scales, one per step
  int64_t cpb;       // 2
  const float* e8m0;  // Tables().e8m0
  HWY_INLINE Tab2 Table(DF d, int64_t blk) const {
    const VF t = hn::Mul(E2m1Values(d), hn::Set(d, e8m0[e[blk]]));
    return {t, t};
  }
  HWY_INLINE void Step(DF d, const Tab2& tab, int64_t c, VF* w) const {
    LookupStep<false>(d, tab, q + c * (kN / 2), w);
  }
  HWY_INLINE VF Tail(DF d, const Tab2&, int64_t, int64_t) const { return hn::Zero(d); }
};

// ---- The inner kernel: MR rows × NC columns in the canonical order. ----
template <int MR, int NC, class Dec>
HWY_INLINE void DotTile(const Dec* dec, const float* x, int64_t k, float* out /*[MR][NC]*/,
                        const NextGroupPrefetch& pf) {
  const DF d;
  VF acc[MR][NC];
  for (int r = 0; r < MR; ++r)
    for (int j = 0; j < NC; ++j) acc[r][j] = hn::Zero(d);
  const int64_t full = k / kN, rem = k % kN, cpb = dec[0].cpb;
  constexpr int S = Dec::kStep;
  using Tab = decltype(dec[0].Table(d, 0));
  for (int64_t c0 = 0; c0 < full; c0 += cpb) {
    Tab tab[NC];
    for (int j = 0; j < NC; ++j) tab[j] = dec[j].Table(d, c0 / cpb);
    const int64_t c1 = std::min(full, c0 + cpb);
    for (int64_t c = c0; c < c1; c += S) {  // 4-bit formats: k % 32 == 0, no partial step
      VF w[NC][S];
      for (int j = 0; j < NC; ++j) {
        for (int s = 0; s < S; ++s) pf.Touch((c + s) * NC + j);
        dec[j].Step(d, tab[j], c, w[j]);
      }
      for (int s = 0; s < S; ++s) {
        for (int r = 0; r < MR; ++r) {
          const VF xv = hn::LoadU(d, x + r * k + (c + s) * kN);
          for (int j = 0; j < NC; ++j) acc[r][j] = hn::MulAdd(xv, w[j][s], acc[r][j]);
        }
      }
    }
  }
  if (rem != 0) {
    VF w[NC];
    for (int j = 0; j < NC; ++j) w[j] = dec[j].Tail(d, dec[j].Table(d, full / cpb), full, rem);
    for (int r = 0; r < MR; ++r) {
      HWY_ALIGN float t[kN] = {};
      std::memcpy(t, x + r * k + full * kN, rem * sizeof(float));
      const VF xv = hn::Load(d, t);
      for (int j = 0; j < NC; ++j) acc[r][j] = hn::MulAdd(xv, w[j], acc[r][j]);
    }
  }
  for (int r = 0; r < MR; ++r)
    for (int j = 0; j < NC; ++j) out[r * NC + j] = hn::GetLane(hn::SumOfLanes(d, acc[r][j]));
}

// Only the first row tile streams the weights from memory, so only it prefetches the next group.
template <int NC, class Dec>
void DotRows(const Dec* dec, const float* x, int64_t rows, int64_t k, float* out,
             const NextGroupPrefetch& pf = {}) {
  int64_t r = 0;
  for (; r + 4 <= rows; r += 4) {
    DotTile<4, NC>(dec, x + r * k, k, out + r * NC, r == 0 ? pf : NextGroupPrefetch{});
  }
  const NextGroupPrefetch tail_pf = r == 0 ? pf : NextGroupPrefetch{};
  switch (rows - r) {
    case 3: DotTile<3, NC>(dec, x + r * k, k, out + r * NC, tail_pf); break;
    case 2: DotTile<2, NC>(dec, x + r * k, k, out + r * NC, tail_pf); break;
    case 1: DotTile<1, NC>(dec, x + r * k, k, out + r * NC, tail_pf); break;
    default: break;
  }
}

// Chunks per table block, the same for every row of a matrix.
int64_t ChunksPerBlock(const FastQuantWeights& w) {
  switch (w.decode) {
    case QuantDecode::kFp8: return w.scale_k >= w.k ? w.k / kN + 1 : w.scale_k / kN;
    case QuantDecode::kInt4: return w.scale_k / kN;
    case QuantDecode::kInt8: return w.scale_k >= w.k ? w.k / kN + 1 : w.scale_k / kN;
    case QuantDecode::kNvfp4: return 2;
    case QuantDecode::kMxfp4: return 2;
    case QuantDecode::kCodebook4: return 1;  // never run here (FastQuantSupported)
  }
  return 1;
}

template <class Dec>
Dec MakeDec(const FastQuantWeights& w, int64_t col) {
  const int64_t cpb = ChunksPerBlock(w);
  if constexpr (std::is_same_v<Dec, DecFp8>) {
    return DecFp8{w.q + col * w.k, w.scales + (col / w.scale_rows) * w.scale_row_stride, cpb};
  } else if constexpr (std::is_same_v<Dec, DecInt4>) {
    const int64_t off = col * (w.k / w.scale_k);
    return DecInt4{w.q + col * (w.k / 2), w.scales + off, w.zeros + off, cpb};
  } else if constexpr (std::is_same_v<Dec, DecInt8>) {
    const int64_t off = col * w.scale_row_stride;
    return DecInt8{w.q + col * w.k, w.scales + off, w.zeros + off, cpb};
  } else if constexpr (std::is_same_v<Dec, DecNvfp4>) {
    return DecNvfp4{w.q + col * (w.k / 2), w.block_scales + col * (w.k / 16), w.alpha, cpb,
                    Tables().ue4m3.data()};
  } else {
    return DecMxfp4{w.q + col * (w.k / 2), w.block_scales + col * (w.k / 32), cpb,
                    Tables().e8m0.data()};
  }
}

struct Scratch {
  std::vector<float> tile;
  std::vector<float> out;
};

Scratch& ThreadScratch() {
  thread_local Scratch s;
  return s;
}


template <class Dec>
void FusedPath(const FastQuantWeights& w, const float* x, int64_t rows, const float* bias,
               float* y, int64_t nb, int64_t ne) {
  Scratch& s = ThreadScratch();
  s.out.resize(rows * kTileCols);
  int64_t col = nb;
  // Codes: a byte per weight (FP8, byte codes) or two per byte; scales are small side streams.
  const int64_t row_bytes =
      w.decode == QuantDecode::kFp8 || w.decode == QuantDecode::kInt8 ? w.k : w.k / 2;
  NextGroupPrefetch pf{
      reinterpret_cast<uintptr_t>(w.q) + static_cast<uintptr_t>((nb + kTileCols) * row_bytes),
      std::max<int64_t>(1, row_bytes / std::max<int64_t>(1, w.k / kN))};
  for (; col + kTileCols <= ne; col += kTileCols) {
    Dec dec[kTileCols];
    for (int j = 0; j < kTileCols; ++j) dec[j] = MakeDec<Dec>(w, col + j);
    DotRows<kTileCols>(dec, x, rows, w.k, s.out.data(), pf);
    pf.next += static_cast<uintptr_t>(kTileCols * row_bytes);
    StoreQuantEpilogue(w, s.out.data(), kTileCols, 0, rows, col, bias, y);
  }
  for (; col < ne; ++col) {
    Dec dec[1] = {MakeDec<Dec>(w, col)};
    DotRows<1>(dec, x, rows, w.k, s.out.data());
    StoreQuantEpilogue(w, s.out.data(), 1, 0, rows, col, bias, y);
  }
}

// Decodes column `col` into dst (k floats, zeros up to a whole chunk): the decoder's own chunks.
template <class Dec>
void DecodeRow(const FastQuantWeights& w, int64_t col, float* dst) {
  const DF d;
  const Dec dec = MakeDec<Dec>(w, col);
  const int64_t full = w.k / kN, rem = w.k % kN;
  for (int64_t c0 = 0; c0 < full; c0 += dec.cpb) {
    const auto tab = dec.Table(d, c0 / dec.cpb);
    const int64_t c1 = std::min(full, c0 + dec.cpb);
    for (int64_t c = c0; c < c1; c += Dec::kStep) {
      VF w[Dec::kStep];
      dec.Step(d, tab, c, w);
      for (int t = 0; t < Dec::kStep; ++t) hn::StoreU(w[t], d, dst + (c + t) * kN);
    }
  }
  if (rem != 0) {
    hn::StoreU(dec.Tail(d, dec.Table(d, full / dec.cpb), full, rem), d, dst + full * kN);
  }
}

template <class Dec>
void TiledPath(const FastQuantWeights& w, const float* x, int64_t rows, const float* bias,
               float* y, int64_t nb, int64_t ne) {
  Scratch& s = ThreadScratch();
  const int64_t kpad = (w.k + kN - 1) / kN * kN;
  // ~256 KiB of decoded weights per tile (L2-resident while the rows stream past), rows in blocks
  // of ~512 KiB of activations; the weights are decoded once per row block (>= 16 rows).
  const int64_t tile_cols =
      std::clamp<int64_t>((int64_t{1} << 16) / kpad / kTileCols * kTileCols, kTileCols, 64);
  const int64_t row_block = std::max<int64_t>(16, (int64_t{1} << 17) / kpad / 4 * 4);
  s.tile.resize(tile_cols * kpad);
  s.out.resize(std::min(rows, row_block) * kTileCols);
  const int64_t all_chunks = kpad / kN + 1;
  for (int64_t m0 = 0; m0 < rows; m0 += row_block) {
    const int64_t nr = std::min(row_block, rows - m0);
    const float* xb = x + m0 * w.k;
    for (int64_t t0 = nb; t0 < ne; t0 += tile_cols) {
      const int64_t t1 = std::min(ne, t0 + tile_cols);
      for (int64_t col = t0; col < t1; ++col) DecodeRow<Dec>(w, col, &s.tile[(col - t0) * kpad]);
      int64_t col = t0;
      for (; col + kTileCols <= t1; col += kTileCols) {
        DecF32 dec[kTileCols];
        for (int j = 0; j < kTileCols; ++j) dec[j] = DecF32{&s.tile[(col - t0 + j) * kpad], all_chunks};
        DotRows<kTileCols>(dec, xb, nr, w.k, s.out.data());
        StoreQuantEpilogue(w, s.out.data(), kTileCols, m0, nr, col, bias, y);
      }
      for (; col < t1; ++col) {
        DecF32 dec[1] = {DecF32{&s.tile[(col - t0) * kpad], all_chunks}};
        DotRows<1>(dec, xb, nr, w.k, s.out.data());
        StoreQuantEpilogue(w, s.out.data(), 1, m0, nr, col, bias, y);
      }
    }
  }
}

template <class Dec>
void Run(const FastQuantWeights& w, const float* x, int64_t rows, const float* bias, float* y,
         int64_t nb, int64_t ne) {
  if (rows <= kFusedMaxRows) {
    FusedPath<Dec>(w, x, rows, bias, y, nb, ne);
  } else {
    TiledPath<Dec>(w, x, rows, bias, y, nb, ne);
  }
}

}  // namespace

void MatmulImpl(const FastQuantWeights& w, const float* x, int64_t rows, const float* bias,
                float* y, int64_t nb, int64_t ne) {
  if (rows <= 0 || nb >= ne) return;
  switch (w.decode) {
    case QuantDecode::kFp8: return Run<DecFp8>(w, x, rows, bias, y, nb, ne);
    case QuantDecode::kInt4: return Run<DecInt4>(w, x, rows, bias, y, nb, ne);
    case QuantDecode::kInt8: return Run<DecInt8>(w, x, rows, bias, y, nb, ne);
    case QuantDecode::kNvfp4: return Run<DecNvfp4>(w, x, rows, bias, y, nb, ne);
    case QuantDecode::kMxfp4: return Run<DecMxfp4>(w, x, rows, bias, y, nb, ne);
    case QuantDecode::kCodebook4: return;  // the quant panels take it (FastQuantSupported)
  }
}

int64_t LanesImpl() { return kN; }

}  // namespace HWY_NAMESPACE
}  // namespace tessera::kernels::cpu::fast
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace tessera::kernels::cpu::fast {

HWY_EXPORT(MatmulImpl);
HWY_EXPORT(LanesImpl);

namespace {

// FP8 runs on the AVX-512 BF16 kernel (fp8_bf16_matmul.h) where the CPU and layout allow, unless
// TESSERA_FP8_BF16=0 keeps it on the Highway f32 kernel (A/B runs, bisecting).
bool UseBf16(const FastQuantWeights& w) {
  static const bool enabled = [] {
    const char* e = std::getenv("TESSERA_FP8_BF16");
    return e == nullptr || std::string_view(e) != "0";
  }();
  return enabled && Fp8Bf16LayoutFits(w);
}

}  // namespace

bool FastQuantUsesBf16(const FastQuantWeights& w) { return UseBf16(w); }

bool FastQuant4BitAvailable() { return HWY_DYNAMIC_DISPATCH(LanesImpl)() == 16; }

bool FastQuantSupported(const FastQuantWeights& w) {
  const int64_t lanes = HWY_DYNAMIC_DISPATCH(LanesImpl)();
  if (w.q == nullptr || w.n < 0 || w.k <= 0) return false;
  if (w.row_scale == nullptr && w.col_scale != nullptr) return false;
  if (w.act_block_scales && (w.decode != QuantDecode::kFp8 || !UseBf16(w) || w.row_scale != nullptr)) {
    return false;
  }
  switch (w.decode) {
    case QuantDecode::kFp8: {
      if (UseBf16(w)) return Fp8Bf16Supported(w);
      if (w.scales == nullptr || w.scale_rows <= 0 || w.scale_k <= 0) return false;
      if (w.scale_k < w.k && w.scale_k % lanes != 0) return false;
      // The rebias multiplier scale · 2^120 must stay finite (see DecFp8).
      const int64_t row_blocks = (w.n + w.scale_rows - 1) / w.scale_rows;
      const int64_t count = (row_blocks - 1) * w.scale_row_stride + (w.k + w.scale_k - 1) / w.scale_k;
      for (int64_t i = 0; i < count; ++i) {
        if (!(std::fabs(w.scales[i]) < 128.0f)) return false;
      }
      return true;
    }
    case QuantDecode::kInt4:
      return lanes == 16 && w.k % 32 == 0 && w.scale_k > 0 && w.scale_k % 32 == 0 &&
             w.k % w.scale_k == 0 && w.scales != nullptr && w.zeros != nullptr;
    case QuantDecode::kInt8:
      // Groups of 16 whatever the target's lanes, so the plan's label (CpuKernelSelector) holds on
      // every CPU.
      return w.scale_k > 0 && (w.scale_k >= w.k || (w.scale_k % 16 == 0 && w.k % w.scale_k == 0)) &&
             w.scale_row_stride == (w.k + w.scale_k - 1) / w.scale_k && w.scales != nullptr &&
             w.zeros != nullptr;
    case QuantDecode::kNvfp4:
      return lanes == 16 && w.k % 32 == 0 && w.block_scales != nullptr;
    case QuantDecode::kMxfp4:
      return lanes == 16 && w.k % 32 == 0 && w.block_scales != nullptr;
    case QuantDecode::kCodebook4:
      return false;  // no row kernel: the quant panels' f32 form runs it
  }
  return false;
}

bool Fp8HasNanCodes(const uint8_t* q, int64_t count) {
  // Branch-free OR-reduction so the compiler vectorizes the load-time scan.
  uint8_t any = 0;
  for (int64_t i = 0; i < count; ++i) any |= static_cast<uint8_t>((q[i] & 0x7F) == 0x7F);
  return any != 0;
}

void FastQuantPermuteActivations(const float* x, int64_t rows, int64_t k, float* out) {
  for (int64_t i = 0; i < rows * k; i += 32) {
    for (int l = 0; l < 16; ++l) {
      out[i + l] = x[i + 2 * l];
      out[i + 16 + l] = x[i + 2 * l + 1];
    }
  }
}

void FastQuantMatmul(const FastQuantWeights& w, const float* x, int64_t rows, const float* bias,
                     float* y, int64_t n_begin, int64_t n_end) {
  if (w.decode == QuantDecode::kFp8 && UseBf16(w)) {
    return Fp8Bf16Matmul(w, x, rows, bias, y, n_begin, n_end);
  }
  HWY_DYNAMIC_DISPATCH(MatmulImpl)(w, x, rows, bias, y, n_begin, n_end);
}

}  // namespace tessera::kernels::cpu::fast
#endif  // HWY_ONCE
