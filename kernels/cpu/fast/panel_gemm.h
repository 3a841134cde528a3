// The tile driver the 16-column panel kernels share (bf16_dot_matmul: bf16 K-pair panels;
// float_panel_matmul: f16 and f32 K panels; FP8, INT8 and the 256-bit kernels of the same panels
// in avx2_panels.cc): the weights are stored as panels of 16 output columns,
// K-major, one 64-byte (or 32-byte) vector per K step, so each output column is one f32 lane and
// each output (m, n) is one accumulator lane that takes the K steps in ascending order, then +
// bias. A tile is kTileRows rows × kTileVecs panels of accumulators (24 zmm; a policy may declare
// a smaller one, below); each K step loads
// kTileVecs weight vectors and lets the kernel's policy multiply them into every row. A call with
// more rows than one tile walks K in blocks of the policy's kBlockSteps (the tile's weights for a
// block stay in L2 and a row tile's activations in L1 while every row tile passes over them),
// parking the accumulators in a buffer between blocks (a store and reload are exact); one row tile
// runs the whole K in registers. So a row's result is bit-identical for every row count, tile
// shape and column split: GEMV and prefill agree. Internal to kernels/cpu/fast. Include it inside
// the region a kernel compiles for (its HWY_PUSH_ATTRIBUTES: AVX-512; or AVX2, with
// TESSERA_PANEL_GEMM_AVX2_ONLY defined to leave out the zmm FloatAccumulators), and include
// <immintrin.h>, <algorithm>, <vector> and column_panels.h *before* that region: the standard
// headers must not be compiled with AVX-512 attributes (their inline functions are shared with the
// whole program), and the include guards make the includes below no-ops there.
//
// A policy K provides: `Acc` (an accumulator: __m512, __m512i, or two ymm), `static Acc Zero()`,
// `static Acc Load(const float*)` and `static void Store(float*, Acc)` (the park buffer, exact for
// either type), `WVec` (one panel's weights of one K step, as the kernel multiplies them),
// `kStepBytes` (bytes of a K step in one panel), `kBlockSteps`, `static WVec LoadW(const
// uint8_t*)`, `K Rows(int64_t m0) const` (the policy for the row tile starting at row m0),
// `template <int NV> void Madd(int i, int64_t t, const WVec* w, Acc* acc) const` (row i of the
// tile, K step t, into acc[0..NV)) and `template <int MR, int NV> void Finish(const TileJob&,
// Acc (&)[MR][NV]) const` (the epilogue of the last K block); FloatAccumulators below gives the
// f32 kernels theirs. A policy whose weights depend on where they are (avx2_panels.cc's FP8 with
// K-block scales) provides `WVec LoadWAt(const TileJob&, int j, int64_t t) const` instead. A policy
// may declare a smaller tile, `kRows` × `kVecs` (at most 6 × 4), for a register file of 16 vectors
// (the AVX2 kernels, avx2_panels.cc); the shape changes only which accumulators share a K step's
// loads, never a lane's order, so results do not depend on it. Include the header in one target
// region per translation unit: its templates take the target attributes of the region they are
// defined in.
#ifndef TESSERA_KERNELS_CPU_FAST_PANEL_GEMM_H_
#define TESSERA_KERNELS_CPU_FAST_PANEL_GEMM_H_

#include <algorithm>
#include <cstdint>
#include <vector>

#include "kernels/cpu/fast/column_panels.h"

namespace tessera::kernels::cpu::fast::panels {

inline constexpr int kTileRows = 6;
inline constexpr int kTileVecs = 4;
static_assert(ColumnSplitUnit(kTileRows) == kCols &&
                  ColumnSplitUnit(kTileRows + 1) == kTileVecs * kCols,
              "fast_matmul.h's ColumnSplitUnit must follow the tile shape");

struct TileJob {
  const uint8_t* w;            // first panel of the tile
  int64_t panel_bytes;
  int64_t t0, t1;              // K steps [t0, t1) of this block
  bool first, last;            // first / last K block
  float* park;                 // accumulators between K blocks: [row][kTileVecs][16]
  int64_t col0;                // the tile's first column
  float* y;                    // y + m0 · y_stride + col0
  int64_t y_stride;
  const float* bias;           // bias + col0, or null
  __mmask16 store[kTileVecs];  // lanes of each panel inside [n_begin, n_end)
};

#if !defined(TESSERA_PANEL_GEMM_AVX2_ONLY)  // avx2_panels.cc's region has no zmm
// The f32 kernels' accumulators and epilogue: output (m, n) = acc + bias[n], masked stores.
struct FloatAccumulators {
  using Acc = __m512;
  static Acc Zero() { return _mm512_setzero_ps(); }
  static Acc Load(const float* p) { return _mm512_loadu_ps(p); }
  static void Store(float* p, Acc v) { _mm512_storeu_ps(p, v); }
  template <int MR, int NV>
  void Finish(const TileJob& a, Acc (&acc)[MR][NV]) const {
    for (int j = 0; j < NV; ++j) {
      const __m512 b = a.bias != nullptr ? _mm512_maskz_loadu_ps(a.store[j], a.bias + 16 * j)
                                         : _mm512_setzero_ps();
      for (int i = 0; i < MR; ++i) {
        const __m512 v = a.bias != nullptr ? _mm512_add_ps(acc[i][j], b) : acc[i][j];
        _mm512_mask_storeu_ps(a.y + i * a.y_stride + 16 * j, a.store[j], v);
      }
    }
  }
};
#endif

template <int MR, int NV, class K>
void Tile(const TileJob& a, const K& kernel) {
  typename K::Acc acc[MR][NV];
  for (int i = 0; i < MR; ++i) {
    for (int j = 0; j < NV; ++j) {
      acc[i][j] = a.first ? K::Zero() : K::Load(a.park + (i * kTileVecs + j) * 16);
    }
  }
  for (int64_t t = a.t0; t < a.t1; ++t) {
    typename K::WVec wv[NV];
    for (int j = 0; j < NV; ++j) {
      if constexpr (requires { kernel.LoadWAt(a, j, t); }) {
        wv[j] = kernel.LoadWAt(a, j, t);  // weights that depend on the panel and step
      } else {
        wv[j] = K::LoadW(a.w + j * a.panel_bytes + K::kStepBytes * t);
      }
    }
    for (int i = 0; i < MR; ++i) kernel.template Madd<NV>(i, t, wv, acc[i]);
  }
  if (!a.last) {
    for (int i = 0; i < MR; ++i) {
      for (int j = 0; j < NV; ++j) K::Store(a.park + (i * kTileVecs + j) * 16, acc[i][j]);
    }
    return;
  }
  kernel.template Finish<MR, NV>(a, acc);
}

template <class K>
using TileFn = void (*)(const TileJob&, const K&);

// The policy's tile shape (default kTileRows × kTileVecs).
template <class K>
constexpr int TileRowsOf() {
  if constexpr (requires { K::kRows; }) {
    return K::kRows;
  } else {
    return kTileRows;
  }
}
template <class K>
constexpr int TileVecsOf() {
  if constexpr (requires { K::kVecs; }) {
    return K::kVecs;
  } else {
    return kTileVecs;
  }
}

// Tile<MR, nv> for nv in [NV, TileVecsOf<K>()] (the last one for anything larger).
template <int MR, class K, int NV = 1>
TileFn<K> TileFor(int nv) {
  if constexpr (NV < TileVecsOf<K>()) {
    if (nv > NV) return TileFor<MR, K, NV + 1>(nv);
  }
  return &Tile<MR, NV, K>;
}

// Tile<mr, nv> for mr in [MR, TileRowsOf<K>()] (the last one for anything larger).
template <class K, int MR = 1>
TileFn<K> PickTile(int mr, int nv) {
  static_assert(TileRowsOf<K>() <= kTileRows && TileVecsOf<K>() <= kTileVecs,
                "the park buffer and TileJob::store hold at most kTileRows x kTileVecs tiles");
  if constexpr (MR < TileRowsOf<K>()) {
    if (mr > MR) return PickTile<K, MR + 1>(mr, nv);
  }
  return TileFor<MR, K>(nv);
}

// y[m, n] for rows [0, rows) and columns [n_begin, n_end) of an [n, ·] matrix stored as
// Count(n) panels of panel_bytes bytes from `data`, each `steps` K steps long; y [rows, n].
template <class K>
void PanelMatmul(const K& kernel, const uint8_t* data, int64_t panel_bytes, int64_t steps,
                 int64_t n, int64_t rows, const float* bias, float* y, int64_t n_begin,
                 int64_t n_end) {
  if (rows <= 0 || n_begin >= n_end || steps <= 0) return;
  constexpr int kRows = TileRowsOf<K>(), kVecs = TileVecsOf<K>();
  const int64_t block = rows > kRows ? K::kBlockSteps : steps;
  thread_local std::vector<float> park;
  if (block < steps && static_cast<int64_t>(park.size()) < rows * kTileVecs * 16) {
    park.resize(rows * kTileVecs * 16);
  }
  TileJob a;
  a.panel_bytes = panel_bytes;
  a.y_stride = n;
  const int64_t p_begin = n_begin / kCols, p_end = Count(n_end);
  for (int64_t p0 = p_begin; p0 < p_end; p0 += kVecs) {
    const int nv = static_cast<int>(std::min<int64_t>(kVecs, p_end - p0));
    for (int j = 0; j < kVecs; ++j) a.store[j] = StoreMask(p0 + j, n_begin, n_end);
    a.w = data + p0 * panel_bytes;
    a.col0 = p0 * kCols;
    a.bias = bias != nullptr ? bias + a.col0 : nullptr;
    for (int64_t t0 = 0; t0 < steps; t0 += block) {
      a.t0 = t0;
      a.t1 = std::min(steps, t0 + block);
      a.first = t0 == 0;
      a.last = a.t1 == steps;
      for (int64_t m0 = 0; m0 < rows; m0 += kRows) {
        const int mr = static_cast<int>(std::min<int64_t>(kRows, rows - m0));
        a.park = park.empty() ? nullptr : park.data() + m0 * kTileVecs * 16;
        a.y = y + m0 * n + a.col0;
        PickTile<K>(mr, nv)(a, kernel.Rows(m0));
      }
    }
  }
}

}  // namespace tessera::kernels::cpu::fast::panels

#endif  // TESSERA_KERNELS_CPU_FAST_PANEL_GEMM_H_
