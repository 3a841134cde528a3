// Tiling: a tile is kTileRows rows × kTileVecs 16-column panels of accumulators (24 zmm); each K
// pair loads kTileVecs weight vectors and broadcasts kTileRows activation pairs for
// kTileRows·kTileVecs `vdpbf16ps`. A call with more rows than one tile walks K in blocks of
// kKBlockPairs pairs (the tile's weights for a block, 64 KiB, stay in L2 and the row tile's
// activations, 6 KiB, in L1 while every row tile passes over them), parking the accumulators in
// between; one row tile runs the whole K in registers.
#if defined(__GNUC__) && !defined(__clang__)
// GCC 12 reports a false "may be used uninitialized" inside its own avx512fintrin.h (the
// _mm512_undefined_* placeholders of its mask intrinsics) once they are inlined here.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include "kernels/cpu/fast/bf16_dot_matmul.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "kernels/cpu/fast/column_panels.h"

#include "kernels/numeric/half.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#include "hwy/base.h"
#define TESSERA_BF16_DOT_X86 1
#endif

namespace tessera::kernels::cpu::fast {
namespace {

constexpr int64_t kPanelCols = panels::kCols;
int64_t PanelBytes(int64_t k) { return (k + 1) / 2 * 64; }

}  // namespace

bool Bf16DotAvailable() {
  static const bool has = TESSERA_HAS_AVX512_WITH("avx512bf16");
  return has;
}

void RoundActsToBf16(const float* x, int64_t k, int64_t r0, int64_t r1, uint16_t* hi,
                     uint16_t* lo, float* x_rounded) {
  const int64_t stride = Bf16DotActStride(k);
  for (int64_t r = r0; r < r1; ++r) {
    const float* src = x + r * k;
    uint16_t* h = hi + r * stride;
    for (int64_t i = 0; i < k; ++i) h[i] = numeric::FloatToBf16(src[i]);
    std::fill(h + k, h + stride, uint16_t{0});
    if (lo != nullptr) {
      uint16_t* l = lo + r * stride;
      for (int64_t i = 0; i < k; ++i) l[i] = numeric::FloatToBf16(src[i] - numeric::Bf16ToFloat(h[i]));
      std::fill(l + k, l + stride, uint16_t{0});
    }
    if (x_rounded != nullptr) {
      for (int64_t i = 0; i < k; ++i) x_rounded[r * k + i] = numeric::Bf16ToFloat(h[i]);
    }
  }
}

int64_t Bf16PairsBytes(int64_t n, int64_t k) { return panels::Count(n) * PanelBytes(k); }

FastWeights RepackBf16Pairs(const FastWeights& src, uint8_t* dst) {
  const int64_t n = src.n, k = src.k, pairs = (k + 1) / 2;
  for (int64_t p = 0; p < panels::Count(n); ++p) {
    uint16_t* panel = reinterpret_cast<uint16_t*>(dst + p * PanelBytes(k));
    std::fill(panel, panel + pairs * 32, uint16_t{0});
    for (int64_t c = 0; c < kPanelCols && p * kPanelCols + c < n; ++c) {
      const uint8_t* row = src.data + (p * kPanelCols + c) * src.row_stride;
      for (int64_t i = 0; i < k; ++i) {
        std::memcpy(&panel[(i / 2) * 32 + c * 2 + (i % 2)], row + 2 * i, 2);
      }
    }
  }
  FastWeights w;
  w.format = FastFormat::kBf16Pairs;
  w.data = dst;
  w.n = n;
  w.k = k;
  w.row_stride = PanelBytes(k);
  return w;
}

#if defined(TESSERA_BF16_DOT_X86)

HWY_PUSH_ATTRIBUTES("avx512f,avx512vl,avx512bw,avx512bf16,avx2,fma")

namespace {

constexpr int kTileRows = 6;
constexpr int kTileVecs = 4;
constexpr int64_t kKBlockPairs = 512;

struct TileArgs {
  const uint16_t* xb;    // first row of the tile (hi)
  const uint16_t* lo;    // first row of the tile (lo), split form only
  int64_t x_stride;      // elements
  const uint8_t* w;      // first panel of the tile
  int64_t panel_bytes;
  int64_t t0, t1;        // K pairs [t0, t1) of this block
  bool first, last;      // first / last K block
  float* park;           // accumulators between K blocks: [row][kTileVecs][16]
  float* y;              // y + m0 · y_stride + first panel's column
  int64_t y_stride;
  const float* bias;     // bias + first panel's column, or null
  __mmask16 store[kTileVecs];  // lanes of each panel inside [n_begin, n_end)
};

template <int MR, int NV, bool kSplit>
void Tile(const TileArgs& a) {
  __m512 acc[MR][NV];
  if (a.first) {
    for (int i = 0; i < MR; ++i) {
      for (int j = 0; j < NV; ++j) acc[i][j] = _mm512_setzero_ps();
    }
  } else {
    for (int i = 0; i < MR; ++i) {
      for (int j = 0; j < NV; ++j) acc[i][j] = _mm512_loadu_ps(a.park + (i * kTileVecs + j) * 16);
    }
  }
  const int32_t* x32 = reinterpret_cast<const int32_t*>(a.xb);
  const int32_t* lo32 = reinterpret_cast<const int32_t*>(a.lo);
  const int64_t xs = a.x_stride / 2;
  for (int64_t t = a.t0; t < a.t1; ++t) {
    __m512bh wv[NV];
    for (int j = 0; j < NV; ++j) {
      wv[j] = (__m512bh)_mm512_load_si512(a.w + j * a.panel_bytes + 64 * t);
    }
    for (int i = 0; i < MR; ++i) {
      const __m512bh xv = (__m512bh)_mm512_set1_epi32(x32[i * xs + t]);
      for (int j = 0; j < NV; ++j) acc[i][j] = _mm512_dpbf16_ps(acc[i][j], xv, wv[j]);
      if constexpr (kSplit) {
        const __m512bh lv = (__m512bh)_mm512_set1_epi32(lo32[i * xs + t]);
        for (int j = 0; j < NV; ++j) acc[i][j] = _mm512_dpbf16_ps(acc[i][j], lv, wv[j]);
      }
    }
  }
  if (!a.last) {
    for (int i = 0; i < MR; ++i) {
      for (int j = 0; j < NV; ++j) _mm512_storeu_ps(a.park + (i * kTileVecs + j) * 16, acc[i][j]);
    }
    return;
  }
  for (int j = 0; j < NV; ++j) {
    const __m512 b = a.bias != nullptr ? _mm512_maskz_loadu_ps(a.store[j], a.bias + 16 * j)
                                       : _mm512_setzero_ps();
    for (int i = 0; i < MR; ++i) {
      const __m512 v = a.bias != nullptr ? _mm512_add_ps(acc[i][j], b) : acc[i][j];
      _mm512_mask_storeu_ps(a.y + i * a.y_stride + 16 * j, a.store[j], v);
    }
  }
}

using TileFn = void (*)(const TileArgs&);

template <int MR, bool kSplit>
constexpr TileFn TileFor(int nv) {
  switch (nv) {
    case 1: return &Tile<MR, 1, kSplit>;
    case 2: return &Tile<MR, 2, kSplit>;
    case 3: return &Tile<MR, 3, kSplit>;
    default: return &Tile<MR, 4, kSplit>;
  }
}

template <bool kSplit>
TileFn PickTile(int mr, int nv) {
  static_assert(kTileRows == 6 && kTileVecs == 4, "PickTile covers 6 x 4 tiles");
  switch (mr) {
    case 1: return TileFor<1, kSplit>(nv);
    case 2: return TileFor<2, kSplit>(nv);
    case 3: return TileFor<3, kSplit>(nv);
    case 4: return TileFor<4, kSplit>(nv);
    case 5: return TileFor<5, kSplit>(nv);
    default: return TileFor<6, kSplit>(nv);
  }
}

}  // namespace

void Bf16DotMatmul(const FastWeights& w, const uint16_t* xb, const uint16_t* lo, int64_t rows,
                   const float* bias, float* y, int64_t n_begin, int64_t n_end) {
  if (rows <= 0 || n_begin >= n_end) return;
  const int64_t pairs = (w.k + 1) / 2;
  const int64_t block = rows > kTileRows ? kKBlockPairs : std::max<int64_t>(pairs, 1);
  thread_local std::vector<float> park;
  if (block < pairs && static_cast<int64_t>(park.size()) < rows * kTileVecs * 16) {
    park.resize(rows * kTileVecs * 16);
  }
  TileArgs a;
  a.x_stride = Bf16DotActStride(w.k);
  a.panel_bytes = w.row_stride;
  a.y_stride = w.n;
  const int64_t p_begin = n_begin / kPanelCols, p_end = panels::Count(n_end);
  for (int64_t p0 = p_begin; p0 < p_end; p0 += kTileVecs) {
    const int nv = static_cast<int>(std::min<int64_t>(kTileVecs, p_end - p0));
    for (int j = 0; j < kTileVecs; ++j) a.store[j] = panels::StoreMask(p0 + j, n_begin, n_end);
    a.w = w.data + p0 * w.row_stride;
    a.bias = bias != nullptr ? bias + p0 * kPanelCols : nullptr;
    for (int64_t t0 = 0; t0 < pairs; t0 += block) {
      a.t0 = t0;
      a.t1 = std::min(pairs, t0 + block);
      a.first = t0 == 0;
      a.last = a.t1 == pairs;
      for (int64_t m0 = 0; m0 < rows; m0 += kTileRows) {
        const int mr = static_cast<int>(std::min<int64_t>(kTileRows, rows - m0));
        a.xb = xb + m0 * a.x_stride;
        a.lo = lo != nullptr ? lo + m0 * a.x_stride : nullptr;
        a.park = park.empty() ? nullptr : park.data() + m0 * kTileVecs * 16;
        a.y = y + m0 * w.n + p0 * kPanelCols;
        (lo != nullptr ? PickTile<true>(mr, nv) : PickTile<false>(mr, nv))(a);
      }
    }
  }
}

HWY_POP_ATTRIBUTES

#else  // not x86-64 GCC/Clang: never called (Bf16DotAvailable() is false), defined for the link.

void Bf16DotMatmul(const FastWeights&, const uint16_t*, const uint16_t*, int64_t, const float*,
                   float*, int64_t, int64_t) {}

#endif

}  // namespace tessera::kernels::cpu::fast
