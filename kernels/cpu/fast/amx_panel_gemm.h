// The AMX tile walk over the 16-column panels of bf16_dot_matmul.h (K pairs) and
// int8_dot_matmul.h (K quads): each panel's K tile (16 rows of 64 bytes: 32 bf16 K values or 64
// int8 ones, 16 columns) is one AMX B tile as stored, each 64-byte K slice of up to 16 activation
// rows one A tile. Per block of up to 32 rows x 2 panels: four C tiles (rows 0-15 / 16-31 x panel
// p / p+1) accumulate every K tile in ascending order (bf16 split form: the hi tile, then the lo
// tile), are stored to a 32 x 32 buffer of 4-byte sums and go through the kind's epilogue. So an
// output's operation sequence depends only on K — not on the row count, the block or C tile a row
// lands in, or the column split — and the AMX kernels are batch-invariant as the AVX-512 ones are
// (they differ from those in the order of the bf16 f32 additions; the int8 sums are exact either
// way). Panels and activation rows are zero-padded to whole K tiles (the layouts' contract).
//
// The B tiles come from a source (StoredTiles: the panels as stored; MadeTiles: each tile made on
// demand, for FP8 codes decoded inside the walk); the walk and its order are the same for both.
// Templated on the tile operations: amx_kernels.cc instantiates it with the instructions, the
// tests with a software model of them (tests/kernels/cpu/amx_model.h). Ops provides Config(const
// amx::TileConfig&), Zero<T>(), Load<T>(const void*, int64_t stride), Store<T>(void*, int64_t
// stride), DpBf16<C, A, B>(), DpBusd<C, A, B>() and Release(). Internal to kernels/cpu/fast.
#ifndef TESSERA_KERNELS_CPU_FAST_AMX_PANEL_GEMM_H_
#define TESSERA_KERNELS_CPU_FAST_AMX_PANEL_GEMM_H_

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "kernels/cpu/fast/amx.h"
#include "kernels/cpu/fast/bf16_dot_matmul.h"
#include "kernels/cpu/fast/int8_dot_matmul.h"
#include "kernels/cpu/quant/int8_matmul.h"

namespace tessera::kernels::cpu::fast::amx {

inline constexpr int64_t kTileRows = 16;     // rows of an A or C tile, K rows of a B tile
inline constexpr int64_t kTileBytes = 1024;  // one panel's K tile (16 rows of 64 bytes)
inline constexpr int64_t kPanelCols = 16;

// Tile registers: C tiles 0-3 (row tile r, panel j: 2r + j), A tiles 4-5, B tiles 6-7.
enum : int { kC00 = 0, kC01 = 1, kC10 = 2, kC11 = 3, kA0 = 4, kA1 = 5, kB0 = 6, kB1 = 7 };

// Rows r0 (first row tile) and r1 (second, 0 if none), every tile 64 bytes wide.
inline TileConfig BlockConfig(int r0, int r1) {
  TileConfig c;
  for (int t : {kC00, kC01, kA0}) {
    c.rows[t] = static_cast<uint8_t>(r0);
    c.colsb[t] = 64;
  }
  if (r1 > 0) {
    for (int t : {kC10, kC11, kA1}) {
      c.rows[t] = static_cast<uint8_t>(r1);
      c.colsb[t] = 64;
    }
  }
  for (int t : {kB0, kB1}) {
    c.rows[t] = kTileRows;
    c.colsb[t] = 64;
  }
  return c;
}

// The GEMM of one call: panels (panel_bytes apart, ktiles K tiles each), activation rows
// (a_stride bytes apart, a_lo the bf16 split form's second operand or null), rows x columns
// [n_begin, n_end) of an [·, n] output.
struct AmxGemm {
  const uint8_t* panels;
  int64_t panel_bytes, ktiles;
  const uint8_t* a;
  const uint8_t* a_lo;
  int64_t a_stride, rows, n, n_begin, n_end;
};

// The GEMM over bf16 pair panels of K = k that MadeTiles makes (no stored panels), for
// RoundActsToBf16 rows (lo null for the bf16 form).
inline AmxGemm Bf16MadeTilesGemm(int64_t k, const uint16_t* hi, const uint16_t* lo, int64_t rows,
                                 int64_t n, int64_t n_begin, int64_t n_end) {
  return {nullptr,
          0,
          Bf16PanelKTiles(k),
          reinterpret_cast<const uint8_t*>(hi),
          reinterpret_cast<const uint8_t*>(lo),
          Bf16DotActStride(k) * 2,
          rows,
          n,
          n_begin,
          n_end};
}
// The GEMM of a Bf16DotMatmul call (RepackBf16Pairs panels: the same with the panels stored)
// and of an Int8DotMatmul call (RepackInt8Quads panels, Int8ActsToU8 rows).
inline AmxGemm Bf16PanelGemm(const FastWeights& w, const uint16_t* hi, const uint16_t* lo,
                             int64_t rows, int64_t n_begin, int64_t n_end) {
  AmxGemm g = Bf16MadeTilesGemm(w.k, hi, lo, rows, w.n, n_begin, n_end);
  g.panels = w.data;
  g.panel_bytes = w.row_stride;
  return g;
}
inline AmxGemm Int8PanelGemm(const Int8DotWeights& w, const uint8_t* u8, int64_t rows,
                             int64_t n_begin, int64_t n_end) {
  return {w.panels, Int8QuadsBytes(1, w.k), Int8PanelKTiles(w.k), u8, nullptr,
          Int8DotActStride(w.k), rows, w.n, n_begin, n_end};
}

// bf16 panels: y = acc + bias.
struct Bf16Kind {
  using Acc = float;
  const float* bias;
  float* y;
  template <class Ops, int C, int A, int B>
  static void Dp() {
    Ops::template DpBf16<C, A, B>();
  }
  void Out(int64_t m, int64_t col, Acc acc, int64_t n) const {
    y[m * n + col] = bias != nullptr ? acc + bias[col] : acc;
  }
};

// INT8 W8A8 panels: the epilogue of int8_dot_matmul.h, y = sa · (sw · float(acc − (128 + azp) ·
// Σqw)) (+ bias), in the reference's operations and order.
struct Int8Kind {
  using Acc = int32_t;
  const int32_t* col_sums;
  const float* w_scales;
  bool w_per_row;
  const Int8Activations* act;
  const float* bias;
  float* y;
  template <class Ops, int C, int A, int B>
  static void Dp() {
    Ops::template DpBusd<C, A, B>();
  }
  void Out(int64_t m, int64_t col, Acc acc, int64_t n) const {
    const int32_t zp = act->azp == nullptr ? 0 : act->azp[act->per_token ? m : 0];
    // int32 wraps like vpmulld / vpsubd; the true value fits (Int8DotSupportsK).
    const auto corr = static_cast<int32_t>(static_cast<uint32_t>(128 + zp) *
                                           static_cast<uint32_t>(col_sums[col]));
    const auto v = static_cast<int32_t>(static_cast<uint32_t>(acc) - static_cast<uint32_t>(corr));
    const float sw = w_per_row ? w_scales[col] : w_scales[0];
    const float sa = act->scales[act->per_token ? m : 0];
    float out = sa * (sw * static_cast<float>(v));
    if (bias != nullptr) out = out + bias[col];
    y[m * n + col] = out;
  }
};

// A GroupFolder for one group of all K: the fold copies the sums, the finish writes y = acc +
// bias as Bf16Kind does, so GroupPanelGemm with it gives PanelGemm's bits (the AMX self-check
// runs the group walk's C-tile stores, fold and finish this way against the stored walk).
struct CopyFold {
  const float* bias;
  float* y;
  int64_t n;
  static void Fold(const void*, int64_t, int rows, int64_t, int panels, int64_t, const float* c,
                   float* tot) {
    for (int i = 0; i < rows; ++i) {
      std::memcpy(tot + i * 2 * kPanelCols, c + i * 2 * kPanelCols,
                  panels * kPanelCols * sizeof(float));
    }
  }
  static void Finish(const void* ctx, int64_t m0, int rows, int64_t col0, int64_t c_begin,
                     int64_t c_end, const float* tot) {
    const auto& f = *static_cast<const CopyFold*>(ctx);
    for (int i = 0; i < rows; ++i) {
      for (int64_t col = c_begin; col < c_end; ++col) {
        const float acc = tot[i * 2 * kPanelCols + (col - col0)];
        f.y[(m0 + i) * f.n + col] = f.bias != nullptr ? acc + f.bias[col] : acc;
      }
    }
  }
  GroupFolder Folder() const { return {Fold, Finish, this}; }
};

// B tiles as stored: panel p's K tile kt (bf16_dot_matmul.h's and int8_dot_matmul.h's layouts).
struct StoredTiles {
  const uint8_t* panels;
  int64_t panel_bytes;
  const uint8_t* Tile(int64_t p, int64_t kt, int /*slot*/) const {
    return panels + p * panel_bytes + kt * kTileBytes;
  }
};

// B tiles made on demand (the layout StoredTiles reads) into two 1 KiB buffers, one per panel of
// a pair: fp8_panel_matmul.cc decodes FP8 codes tile by tile for row counts of one block, where
// decoding whole panels first cost a pass through L2 per call. With more than one row block the
// walk makes each tile once per block.
struct MadeTiles {
  Bf16TileMaker make;
  const void* ctx;
  alignas(64) uint8_t buf[2][kTileBytes];
  const uint8_t* Tile(int64_t p, int64_t kt, int slot) {
    make(ctx, p, kt, buf[slot]);
    return buf[slot];
  }
};

// The block's configuration (rows r0 and r1) where it changed since the last block.
template <class Ops>
void ConfigureBlock(int r0, int r1, TileConfig& current, bool& configured) {
  const TileConfig cfg = BlockConfig(r0, r1);
  if (!configured || !(cfg == current)) {
    Ops::Config(cfg);
    current = cfg;
    configured = true;
  }
}

// Zeroes the C tiles of a block (row tiles r0 and r1, one or two panels).
template <class Ops>
void ZeroC(bool two, int r1) {
  Ops::template Zero<kC00>();
  if (two) Ops::template Zero<kC01>();
  if (r1 > 0) {
    Ops::template Zero<kC10>();
    if (two) Ops::template Zero<kC11>();
  }
}

// K tile kt of a block: panel p0's (and p0 + 1's) B tile times the rows' A tiles from m0, hi
// then lo, into the C tiles.
template <class Ops, class Kind, class Tiles>
void MultiplyKTile(const AmxGemm& g, Tiles& tiles, int64_t p0, bool two, int64_t m0, int r1,
                   int64_t kt) {
  Ops::template Load<kB0>(tiles.Tile(p0, kt, 0), 64);
  if (two) Ops::template Load<kB1>(tiles.Tile(p0 + 1, kt, 1), 64);
  for (const uint8_t* a : {g.a, g.a_lo}) {
    if (a == nullptr) continue;
    const uint8_t* a_rows = a + m0 * g.a_stride + kt * 64;
    Ops::template Load<kA0>(a_rows, g.a_stride);
    Kind::template Dp<Ops, kC00, kA0, kB0>();
    if (two) Kind::template Dp<Ops, kC01, kA0, kB1>();
    if (r1 > 0) {
      Ops::template Load<kA1>(a_rows + kTileRows * g.a_stride, g.a_stride);
      Kind::template Dp<Ops, kC10, kA1, kB0>();
      if (two) Kind::template Dp<Ops, kC11, kA1, kB1>();
    }
  }
}

// Stores the C tiles of a block to c (rows of 2 · kPanelCols sums).
template <class Ops, class Acc>
void StoreC(bool two, int r1, Acc (&c)[2 * kTileRows][2 * kPanelCols]) {
  constexpr int64_t kStride = sizeof(c[0]);
  Ops::template Store<kC00>(&c[0][0], kStride);
  if (two) Ops::template Store<kC01>(&c[0][kPanelCols], kStride);
  if (r1 > 0) {
    Ops::template Store<kC10>(&c[kTileRows][0], kStride);
    if (two) Ops::template Store<kC11>(&c[kTileRows][kPanelCols], kStride);
  }
}

// The walk's blocks in its order, each configured: block(p0, two, m0, r0, r1) for panel p0 (and
// p0 + 1 where `two`) and rows m0 .. m0 + r0 + r1 (r1 rows in the second row tile); then the tile
// state is released.
template <class Ops, class Block>
void ForEachBlock(const AmxGemm& g, Block&& block) {
  if (g.rows <= 0 || g.n_begin >= g.n_end) return;
  const int64_t p_begin = g.n_begin / kPanelCols;
  const int64_t p_end = (g.n_end + kPanelCols - 1) / kPanelCols;
  TileConfig current;
  bool configured = false;
  for (int64_t p0 = p_begin; p0 < p_end; p0 += 2) {
    const bool two = p0 + 1 < p_end;
    for (int64_t m0 = 0; m0 < g.rows; m0 += 2 * kTileRows) {
      const int r0 = static_cast<int>(std::min(kTileRows, g.rows - m0));
      const int r1 = static_cast<int>(std::clamp<int64_t>(g.rows - m0 - kTileRows, 0, kTileRows));
      ConfigureBlock<Ops>(r0, r1, current, configured);
      block(p0, two, m0, r0, r1);
    }
  }
  Ops::Release();
}

template <class Ops, class Kind, class Tiles>
void PanelGemm(const AmxGemm& g, const Kind& kind, Tiles& tiles) {
  alignas(64) typename Kind::Acc c[2 * kTileRows][2 * kPanelCols];
  ForEachBlock<Ops>(g, [&](int64_t p0, bool two, int64_t m0, int r0, int r1) {
    ZeroC<Ops>(two, r1);
    for (int64_t kt = 0; kt < g.ktiles; ++kt) {
      MultiplyKTile<Ops, Kind>(g, tiles, p0, two, m0, r1, kt);
    }
    StoreC<Ops>(two, r1, c);
    const int64_t col0 = p0 * kPanelCols;
    const int64_t c_begin = std::max(g.n_begin, col0);
    const int64_t c_end = std::min(g.n_end, col0 + (two ? 2 : 1) * kPanelCols);
    for (int64_t i = 0; i < r0 + r1; ++i) {
      for (int64_t col = c_begin; col < c_end; ++col) {
        kind.Out(m0 + i, col, c[i][col - col0], g.n);
      }
    }
  });
}

// The bf16 walk with K cut into groups of `group_tiles` K tiles (the last may be shorter): per
// block the C tiles start from zero at each group, and after its K tiles go through `f.fold`
// into the block's running totals (zero at the block's start), groups in ascending order; then
// `f.finish` writes the block's outputs. The same order for a row in any block or call, so as
// batch-invariant as PanelGemm.
template <class Ops, class Tiles>
void GroupPanelGemm(const AmxGemm& g, int64_t group_tiles, Tiles& tiles, const GroupFolder& f) {
  alignas(64) float c[2 * kTileRows][2 * kPanelCols];
  alignas(64) float tot[2 * kTileRows][2 * kPanelCols];
  ForEachBlock<Ops>(g, [&](int64_t p0, bool two, int64_t m0, int r0, int r1) {
    std::memset(tot, 0, sizeof(tot));
    for (int64_t kt = 0, group = 0; kt < g.ktiles; ++group) {
      ZeroC<Ops>(two, r1);
      for (const int64_t end = std::min(g.ktiles, kt + std::max<int64_t>(1, group_tiles)); kt < end;
           ++kt) {
        MultiplyKTile<Ops, Bf16Kind>(g, tiles, p0, two, m0, r1, kt);
      }
      StoreC<Ops>(two, r1, c);
      f.fold(f.ctx, m0, r0 + r1, p0, two ? 2 : 1, group, &c[0][0], &tot[0][0]);
    }
    const int64_t col0 = p0 * kPanelCols;
    f.finish(f.ctx, m0, r0 + r1, col0, std::max(g.n_begin, col0),
             std::min(g.n_end, col0 + (two ? 2 : 1) * kPanelCols), &tot[0][0]);
  });
}

template <class Ops, class Kind>
void PanelGemm(const AmxGemm& g, const Kind& kind) {
  StoredTiles tiles{g.panels, g.panel_bytes};
  PanelGemm<Ops>(g, kind, tiles);
}

// The group walk as Bf16GroupGemmFn runs it: over made tiles where `make` is given, else over
// the stored panels.
template <class Ops>
void Bf16GroupGemm(Bf16TileMaker make, const void* make_ctx, const uint8_t* panels,
                   int64_t panel_bytes, int64_t n, int64_t k, int64_t group_tiles,
                   const uint16_t* hi, const uint16_t* lo, int64_t rows, int64_t n_begin,
                   int64_t n_end, const GroupFolder& fold) {
  AmxGemm g = Bf16MadeTilesGemm(k, hi, lo, rows, n, n_begin, n_end);
  if (make != nullptr) {
    MadeTiles tiles{make, make_ctx, {}};
    return GroupPanelGemm<Ops>(g, group_tiles, tiles, fold);
  }
  StoredTiles tiles{panels, panel_bytes};
  GroupPanelGemm<Ops>(g, group_tiles, tiles, fold);
}

}  // namespace tessera::kernels::cpu::fast::amx

#endif  // TESSERA_KERNELS_CPU_FAST_AMX_PANEL_GEMM_H_
