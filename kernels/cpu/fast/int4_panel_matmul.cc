// AVX-512 kernel of int4_panel_matmul.h: one tile template (up to 6 rows x 4 panels of
// accumulators, a group at a time, each group's sum folded into running totals with its scales)
// fed either by an in-register decoder of the code lines (≤ 6 rows) or by a block of four panels
// decoded once to f32 (more rows).
#if defined(__GNUC__) && !defined(__clang__)
// GCC 12 reports a false "may be used uninitialized" inside its own avx512fintrin.h (the
// _mm512_undefined_* placeholders of its mask intrinsics) once they are inlined here.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include "kernels/cpu/fast/int4_panel_matmul.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "kernels/cpu/fast/column_panels.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#include "hwy/aligned_allocator.h"
#include "hwy/base.h"
#define TESSERA_INT4_PANEL_X86 1
#endif

namespace tessera::kernels::cpu::fast {

namespace {

// Per group and panel: 16 centred zero points z − 8, 16 scales (64 bytes each), then G / 2 lines
// of 16 bytes.
constexpr int64_t kGroupHeader = 128;
int64_t GroupBytes(int64_t group) { return kGroupHeader + group * 8; }

}  // namespace

bool Int4PanelAvailable() {
  static const bool has = TESSERA_HAS_AVX512_WITH("avx512f");
  return has;
}

bool Int4PanelSupported(const FastQuantWeights& w) {
  return Int4PanelAvailable() && w.decode == QuantDecode::kInt4 && w.q != nullptr && w.scales != nullptr &&
         w.zeros != nullptr && w.n > 0 && w.k > 0 && w.scale_k > 0 && w.scale_k % 2 == 0 &&
         w.k % w.scale_k == 0 && w.scale_rows == 1 && w.scale_row_stride == w.k / w.scale_k &&
         w.row_scale == nullptr && w.col_scale == nullptr && !w.act_block_scales;
}

int64_t Int4PanelsBytes(int64_t n, int64_t k, int64_t group) {
  return panels::Count(n) * (k / group) * GroupBytes(group);
}

FastQuantWeights RepackInt4Panels(const FastQuantWeights& w, uint8_t* dst) {
  const int64_t group = w.scale_k, groups = w.k / group, gb = GroupBytes(group);
  for (int64_t p = 0; p < panels::Count(w.n); ++p) {
    uint8_t* panel = dst + p * groups * gb;
    std::memset(panel, 0, groups * gb);
    for (int64_t c = 0; c < panels::kCols && p * panels::kCols + c < w.n; ++c) {
      const int64_t col = p * panels::kCols + c;
      for (int64_t g = 0; g < groups; ++g) {
        uint8_t* head = panel + g * gb;
        const float centred = w.zeros[col * groups + g] - 8.0f;
        std::memcpy(head + 4 * c, &centred, 4);
        std::memcpy(head + 64 + 4 * c, &w.scales[col * groups + g], 4);
        const uint8_t* codes = w.q + col * (w.k / 2) + g * (group / 2);
        for (int64_t t = 0; t < group / 2; ++t) head[kGroupHeader + t * panels::kCols + c] = codes[t];
      }
    }
  }
  FastQuantWeights out = w;
  out.q = dst;
  return out;
}

#if defined(TESSERA_INT4_PANEL_X86)

}  // namespace tessera::kernels::cpu::fast

HWY_PUSH_ATTRIBUTES("avx512f,avx512vl,avx512bw,avx2,fma")

namespace tessera::kernels::cpu::fast {

namespace {

constexpr int kTileRows = 6;
constexpr int kTileVecs = 4;
// More rows than one tile decode this many k of four panels at a time (whole groups, at least
// one): 128 KiB of f32, which every row tile then reads from L2.
constexpr int64_t kBlockK = 512;

// The two k of a code line as f32 q − 8, for 16 columns: `vpermps` reads only the low 4 bits of
// each index, so the byte itself indexes code 2t and the byte >> 4 code 2t + 1. (Subtracting
// each column's zero point here instead cost 18-20% of the batch-1 rate: bench/README.md.)
HWY_INLINE void DecodeLine(const uint8_t* line, __m512* w0, __m512* w1) {
  const __m512 centred = _mm512_set_ps(7, 6, 5, 4, 3, 2, 1, 0, -1, -2, -3, -4, -5, -6, -7, -8);
  const __m512i b = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(line)));
  *w0 = _mm512_permutexvar_ps(b, centred);
  *w1 = _mm512_permutexvar_ps(_mm512_srli_epi32(b, 4), centred);
}

struct Job {
  const uint8_t* panels;  // the tile's first panel
  int64_t panel_bytes, group_bytes;
  int64_t lines;          // code lines per group (G / 2)
  int64_t g0, g1;         // the groups of this block
  const float* dec;       // decoded block: k = 16 · (j · dec_panel + i) for panel j, block k i
  int64_t dec_panel;
  const float* x;         // row m0, k = 0
  int64_t x_stride;
  const float* sums;      // Σ x over each group: row m0, group 0 (GroupSums)
  int64_t sums_stride;
  float* tot;             // running totals [row][kTileVecs][16]
  bool first, last;       // first / last block of K
  float* y;               // y + m0 · y_stride + col0
  int64_t y_stride;
  const float* bias;      // bias + col0, or null
  __mmask16 store[kTileVecs];
};

template <int MR, int NV, bool kDecoded>
void GroupTile(const Job& a) {
  if (a.first) {
    for (int i = 0; i < MR; ++i) {
      for (int j = 0; j < NV; ++j) _mm512_storeu_ps(a.tot + (i * kTileVecs + j) * 16, _mm512_setzero_ps());
    }
  }
  const int64_t group = 2 * a.lines;
  for (int64_t g = a.g0; g < a.g1; ++g) {
    __m512 acc[MR][NV];
    for (int i = 0; i < MR; ++i) {
      for (int j = 0; j < NV; ++j) acc[i][j] = _mm512_setzero_ps();
    }
    const uint8_t* head = a.panels + g * a.group_bytes;
    const float* xg = a.x + g * group;
    // Per accumulator: k = 2t, then 2t + 1, t ascending, in both loop nests.
    if constexpr (kDecoded) {
      const float* dg = a.dec + (g - a.g0) * group * 16;
      for (int64_t t = 0; t < a.lines; ++t) {
        for (int h = 0; h < 2; ++h) {
          __m512 w[NV];
          for (int j = 0; j < NV; ++j) w[j] = _mm512_loadu_ps(dg + (j * a.dec_panel + 2 * t + h) * 16);
          for (int i = 0; i < MR; ++i) {
            const __m512 xv = _mm512_set1_ps(xg[i * a.x_stride + 2 * t + h]);
            for (int j = 0; j < NV; ++j) acc[i][j] = _mm512_fmadd_ps(xv, w[j], acc[i][j]);
          }
        }
      }
    } else {
      for (int64_t t = 0; t < a.lines; ++t) {
        for (int j = 0; j < NV; ++j) {
          __m512 w0, w1;
          DecodeLine(head + j * a.panel_bytes + kGroupHeader + 16 * t, &w0, &w1);
          for (int i = 0; i < MR; ++i) {
            const float* xi = xg + i * a.x_stride + 2 * t;
            acc[i][j] = _mm512_fmadd_ps(_mm512_set1_ps(xi[0]), w0, acc[i][j]);
            acc[i][j] = _mm512_fmadd_ps(_mm512_set1_ps(xi[1]), w1, acc[i][j]);
          }
        }
      }
    }
    // tot += s · (a − (z − 8) · Σx): the group's Σ (q − z) · x.
    for (int j = 0; j < NV; ++j) {
      const float* hj = reinterpret_cast<const float*>(head + j * a.panel_bytes);
      const __m512 zc = _mm512_loadu_ps(hj), s = _mm512_loadu_ps(hj + 16);
      for (int i = 0; i < MR; ++i) {
        const __m512 c =
            _mm512_fnmadd_ps(zc, _mm512_set1_ps(a.sums[i * a.sums_stride + g]), acc[i][j]);
        float* t = a.tot + (i * kTileVecs + j) * 16;
        _mm512_storeu_ps(t, _mm512_fmadd_ps(s, c, _mm512_loadu_ps(t)));
      }
    }
  }
  if (!a.last) return;
  for (int j = 0; j < NV; ++j) {
    const __m512 b = a.bias != nullptr ? _mm512_maskz_loadu_ps(a.store[j], a.bias + 16 * j)
                                       : _mm512_setzero_ps();
    for (int i = 0; i < MR; ++i) {
      const __m512 t = _mm512_loadu_ps(a.tot + (i * kTileVecs + j) * 16);
      const __m512 v = a.bias != nullptr ? _mm512_add_ps(t, b) : t;
      _mm512_mask_storeu_ps(a.y + i * a.y_stride + 16 * j, a.store[j], v);
    }
  }
}

using TileFn = void (*)(const Job&);

template <int MR, bool kDecoded>
constexpr TileFn ForVecs(int nv) {
  switch (nv) {
    case 1:
      return &GroupTile<MR, 1, kDecoded>;
    case 2:
      return &GroupTile<MR, 2, kDecoded>;
    case 3:
      return &GroupTile<MR, 3, kDecoded>;
    default:
      return &GroupTile<MR, 4, kDecoded>;
  }
}

template <bool kDecoded>
TileFn PickTile(int mr, int nv) {
  static_assert(kTileRows == 6 && kTileVecs == 4, "PickTile covers 6 x 4 tiles");
  switch (mr) {
    case 1:
      return ForVecs<1, kDecoded>(nv);
    case 2:
      return ForVecs<2, kDecoded>(nv);
    case 3:
      return ForVecs<3, kDecoded>(nv);
    case 4:
      return ForVecs<4, kDecoded>(nv);
    case 5:
      return ForVecs<5, kDecoded>(nv);
    default:
      return ForVecs<6, kDecoded>(nv);
  }
}

// Panels [0, nv) of the job's tile, groups [g0, g1), decoded to a.dec's layout.
void DecodeBlock(const Job& a, int nv, float* dec) {
  const int64_t group = 2 * a.lines;
  for (int j = 0; j < nv; ++j) {
    for (int64_t g = a.g0; g < a.g1; ++g) {
      const uint8_t* head = a.panels + j * a.panel_bytes + g * a.group_bytes;
      float* out = dec + (j * a.dec_panel + (g - a.g0) * group) * 16;
      for (int64_t t = 0; t < a.lines; ++t) {
        __m512 w0, w1;
        DecodeLine(head + kGroupHeader + 16 * t, &w0, &w1);
        _mm512_storeu_ps(out + 32 * t, w0);
        _mm512_storeu_ps(out + 32 * t + 16, w1);
      }
    }
  }
}

// sums[m · groups + g] = Σ x[m, k] over group g's k, in one fixed order (16 lanes, k ascending in
// each, then the lanes' fixed reduction; a group of fewer than 16 k: k ascending), so that every
// row gets the same sums in any call.
void GroupSums(const float* x, int64_t rows, int64_t k, int64_t group, float* sums) {
  const int64_t groups = k / group;
  for (int64_t m = 0; m < rows; ++m) {
    for (int64_t g = 0; g < groups; ++g) {
      const float* p = x + m * k + g * group;
      float s;
      if (group % 16 == 0) {
        __m512 v = _mm512_loadu_ps(p);
        for (int64_t i = 16; i < group; i += 16) v = _mm512_add_ps(v, _mm512_loadu_ps(p + i));
        s = _mm512_reduce_add_ps(v);
      } else {
        s = 0.0f;
        for (int64_t i = 0; i < group; ++i) s += p[i];
      }
      sums[m * groups + g] = s;
    }
  }
}

}  // namespace

void Int4PanelMatmul(const FastQuantWeights& w, const float* x, int64_t rows, const float* bias,
                     float* y, int64_t n_begin, int64_t n_end) {
  if (rows <= 0 || n_begin >= n_end) return;
  const int64_t group = w.scale_k, groups = w.k / group;
  const bool decoded = rows > kTileRows;
  const int64_t block_groups = decoded ? std::max<int64_t>(1, kBlockK / group) : groups;
  thread_local hwy::AlignedFreeUniquePtr<float[]> dec, tot;
  thread_local std::vector<float> sums;
  thread_local int64_t dec_capacity = 0, tot_capacity = 0;
  sums.resize(rows * groups);
  GroupSums(x, rows, w.k, group, sums.data());
  const int64_t dec_size = decoded ? kTileVecs * block_groups * group * 16 : 0;
  const int64_t tot_size = rows * kTileVecs * 16;
  if (dec_capacity < dec_size) {
    dec = hwy::AllocateAligned<float>(dec_size);
    dec_capacity = dec_size;
  }
  if (tot_capacity < tot_size) {
    tot = hwy::AllocateAligned<float>(tot_size);
    tot_capacity = tot_size;
  }
  Job a;
  a.group_bytes = GroupBytes(group);
  a.panel_bytes = groups * a.group_bytes;
  a.lines = group / 2;
  a.dec = dec.get();
  a.dec_panel = block_groups * group;
  a.x_stride = w.k;
  a.sums_stride = groups;
  a.y_stride = w.n;
  const int64_t p_begin = n_begin / panels::kCols, p_end = panels::Count(n_end);
  for (int64_t p0 = p_begin; p0 < p_end; p0 += kTileVecs) {
    const int nv = static_cast<int>(std::min<int64_t>(kTileVecs, p_end - p0));
    for (int j = 0; j < kTileVecs; ++j) a.store[j] = panels::StoreMask(p0 + j, n_begin, n_end);
    a.panels = w.q + p0 * a.panel_bytes;
    const int64_t col0 = p0 * panels::kCols;
    a.bias = bias != nullptr ? bias + col0 : nullptr;
    for (int64_t g0 = 0; g0 < groups; g0 += block_groups) {
      a.g0 = g0;
      a.g1 = std::min(groups, g0 + block_groups);
      a.first = g0 == 0;
      a.last = a.g1 == groups;
      if (decoded) DecodeBlock(a, nv, dec.get());
      for (int64_t m0 = 0; m0 < rows; m0 += kTileRows) {
        const int mr = static_cast<int>(std::min<int64_t>(kTileRows, rows - m0));
        a.x = x + m0 * w.k;
        a.sums = sums.data() + m0 * groups;
        a.tot = tot.get() + m0 * kTileVecs * 16;
        a.y = y + m0 * w.n + col0;
        (decoded ? PickTile<true>(mr, nv) : PickTile<false>(mr, nv))(a);
      }
    }
  }
}

HWY_POP_ATTRIBUTES

#else  // not x86-64 GCC/Clang: never called (Int4PanelSupported() is false), defined for the link.

void Int4PanelMatmul(const FastQuantWeights&, const float*, int64_t, const float*, float*, int64_t,
                     int64_t) {}

#endif

}  // namespace tessera::kernels::cpu::fast
