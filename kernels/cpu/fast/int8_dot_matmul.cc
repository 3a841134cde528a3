// Tiling as bf16_dot_matmul.cc: a tile is kTileRows rows × kTileVecs 16-column panels of int32
// accumulators (24 zmm); each K quad loads kTileVecs weight vectors and broadcasts kTileRows
// activation quads. Calls with more rows than one tile walk K in blocks of kKBlockQuads quads
// (128 KiB of the tile's weights stay in L2, the row tile's activations in L1), parking the
// accumulators in between; one row tile runs the whole K in registers. Integer sums are exact,
// so neither the tiling nor the parking can change a result.
#if defined(__GNUC__) && !defined(__clang__)
// GCC 12 reports a false "may be used uninitialized" inside its own avx512fintrin.h (the
// _mm512_undefined_* placeholders of its mask intrinsics) once they are inlined here.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include "kernels/cpu/fast/int8_dot_matmul.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "kernels/cpu/fast/column_panels.h"

#include "kernels/cpu/quant/activation_quant.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#include "hwy/base.h"
#define TESSERA_INT8_DOT_X86 1
#endif

namespace tessera::kernels::cpu::fast {
namespace {

constexpr int64_t kPanelCols = panels::kCols;
int64_t PanelBytes(int64_t k) { return (k + 3) / 4 * 64; }

}  // namespace

bool Int8DotAvailable() {
  static const bool has = TESSERA_HAS_AVX512_WITH("avx512vnni");
  return has;
}

void Int8ActsToU8(const int8_t* q, int64_t k, int64_t r0, int64_t r1, uint8_t* u8) {
  const int64_t stride = Int8DotActStride(k);
  for (int64_t r = r0; r < r1; ++r) {
    uint8_t* dst = u8 + r * stride;
    for (int64_t i = 0; i < k; ++i) dst[i] = static_cast<uint8_t>(q[r * k + i] + 128);
    std::fill(dst + k, dst + stride, uint8_t{128});
  }
}

namespace {

void QuantizeSymmetricU8Reference(const float* x, int64_t k, int64_t r0, int64_t r1,
                                  float* scales, uint8_t* u8) {
  thread_local std::vector<int8_t> q;
  q.resize(k);
  for (int64_t r = r0; r < r1; ++r) {
    QuantizeInt8PerTokenSymmetric(x + r * k, 1, k, q.data(), scales + r);
    Int8ActsToU8(q.data(), k, 0, 1, u8 + r * Int8DotActStride(k));
  }
}

}  // namespace

int64_t Int8QuadsBytes(int64_t n, int64_t k) { return panels::Count(n) * PanelBytes(k); }

void RepackInt8Quads(const int8_t* q, int64_t n, int64_t k, uint8_t* panels, int32_t* col_sums) {
  const int64_t quads = (k + 3) / 4;
  for (int64_t p = 0; p < panels::Count(n); ++p) {
    uint8_t* panel = panels + p * PanelBytes(k);
    std::memset(panel, 0, quads * 64);
    for (int64_t c = 0; c < kPanelCols && p * kPanelCols + c < n; ++c) {
      const int8_t* row = q + (p * kPanelCols + c) * k;
      for (int64_t i = 0; i < k; ++i) {
        panel[(i / 4) * 64 + c * 4 + (i % 4)] = static_cast<uint8_t>(row[i]);
      }
    }
  }
  ComputeInt8AzpAdjustment(q, n, k, col_sums);
}

#if defined(TESSERA_INT8_DOT_X86)

HWY_PUSH_ATTRIBUTES("avx512f,avx512vl,avx512bw,avx512vnni,avx2,fma")

namespace {

constexpr int kTileRows = 6;
constexpr int kTileVecs = 4;
constexpr int64_t kKBlockQuads = 512;

struct TileArgs {
  const uint8_t* x;      // first row of the tile
  int64_t x_stride;      // bytes
  const uint8_t* w;      // first panel of the tile
  int64_t panel_bytes;
  int64_t t0, t1;        // K quads [t0, t1) of this block
  bool first, last;      // first / last K block
  int32_t* park;         // accumulators between K blocks: [row][kTileVecs][16]
  // Epilogue (last block), all offset to the tile's first row / column.
  float* y;
  int64_t y_stride;
  const float* bias;     // or null
  const int32_t* col_sums;
  const float* w_scales;  // per column when w_per_row, else one
  bool w_per_row;
  const float* a_scales;  // per row when a_per_token, else one
  const int32_t* azp;     // null (symmetric), or per row when a_per_token, else one
  bool a_per_token;
  __mmask16 store[kTileVecs];  // lanes of each panel inside [n_begin, n_end)
};

// acc + Σ u8 × s8 per 4-byte group. Inline asm rather than _mm512_dpbusd_epi32: with 24 such
// accumulators GCC 12 copies every one through the stack on each step (the intrinsic's tied
// operand defeats its register allocator), which halved the kernel's rate.
inline __m512i Dpbusd(__m512i acc, __m512i u8, __m512i s8) {
  asm("vpdpbusd %2, %1, %0" : "+v"(acc) : "v"(u8), "v"(s8));
  return acc;
}

template <int MR, int NV>
void Tile(const TileArgs& a) {
  __m512i acc[MR][NV];
  if (a.first) {
    for (int i = 0; i < MR; ++i) {
      for (int j = 0; j < NV; ++j) acc[i][j] = _mm512_setzero_si512();
    }
  } else {
    for (int i = 0; i < MR; ++i) {
      for (int j = 0; j < NV; ++j) acc[i][j] = _mm512_loadu_si512(a.park + (i * kTileVecs + j) * 16);
    }
  }
  // Activation quads as int32 (the rows are 4-byte aligned: the stride is a multiple of 4).
  const int32_t* x32 = reinterpret_cast<const int32_t*>(a.x);
  const int64_t xs = a.x_stride / 4;
  for (int64_t t = a.t0; t < a.t1; ++t) {
    __m512i wv[NV];
    for (int j = 0; j < NV; ++j) wv[j] = _mm512_load_si512(a.w + j * a.panel_bytes + 64 * t);
    for (int i = 0; i < MR; ++i) {
      const __m512i xv = _mm512_set1_epi32(x32[i * xs + t]);
      for (int j = 0; j < NV; ++j) acc[i][j] = Dpbusd(acc[i][j], xv, wv[j]);
    }
  }
  if (!a.last) {
    for (int i = 0; i < MR; ++i) {
      for (int j = 0; j < NV; ++j) _mm512_storeu_si512(a.park + (i * kTileVecs + j) * 16, acc[i][j]);
    }
    return;
  }
  // y = sa · (sw · float(acc − (128 + azp)·Σqw)) (+ bias): the reference's operations and order;
  // the int32 arithmetic wraps, but the true result fits (Int8DotSupportsK), so it is exact.
  for (int j = 0; j < NV; ++j) {
    const __mmask16 m = a.store[j];
    const __m512i sums = _mm512_maskz_loadu_epi32(m, a.col_sums + 16 * j);
    const __m512 sw = a.w_per_row ? _mm512_maskz_loadu_ps(m, a.w_scales + 16 * j)
                                  : _mm512_set1_ps(a.w_scales[0]);
    const __m512 b = a.bias != nullptr ? _mm512_maskz_loadu_ps(m, a.bias + 16 * j)
                                       : _mm512_setzero_ps();
    for (int i = 0; i < MR; ++i) {
      const int32_t azp = a.azp == nullptr ? 0 : a.azp[a.a_per_token ? i : 0];
      const __m512i corr = _mm512_mullo_epi32(_mm512_set1_epi32(128 + azp), sums);
      const __m512 f = _mm512_cvtepi32_ps(_mm512_sub_epi32(acc[i][j], corr));
      const __m512 sa = _mm512_set1_ps(a.a_scales[a.a_per_token ? i : 0]);
      __m512 v = _mm512_mul_ps(sa, _mm512_mul_ps(sw, f));
      if (a.bias != nullptr) v = _mm512_add_ps(v, b);
      _mm512_mask_storeu_ps(a.y + i * a.y_stride + 16 * j, m, v);
    }
  }
}

// |v| with NaN lanes zeroed (std::max(amax, |x|) keeps amax when |x| is NaN).
__m512 AbsOrdered(__m512 v) {
  const __mmask16 ordered = _mm512_cmp_ps_mask(v, v, _CMP_ORD_Q);
  return _mm512_castsi512_ps(_mm512_maskz_and_epi32(ordered, _mm512_castps_si512(v),
                                                    _mm512_set1_epi32(0x7FFFFFFF)));
}

void QuantizeSymmetricU8Avx512(const float* x, int64_t k, int64_t r0, int64_t r1, float* scales,
                               uint8_t* u8) {
  const int64_t stride = Int8DotActStride(k);
  for (int64_t r = r0; r < r1; ++r) {
    const float* xr = x + r * k;
    uint8_t* dst = u8 + r * stride;
    __m512 acc = _mm512_setzero_ps();
    for (int64_t i = 0; i < k; i += 16) {
      const __mmask16 m = k - i >= 16 ? 0xFFFF : static_cast<__mmask16>((1u << (k - i)) - 1);
      acc = _mm512_max_ps(acc, AbsOrdered(_mm512_maskz_loadu_ps(m, xr + i)));
    }
    const float amax = _mm512_reduce_max_ps(acc);
    scales[r] = amax / 127.0f;
    std::fill(dst, dst + stride, uint8_t{128});
    if (amax == 0.0f) continue;
    const __m512 mult = _mm512_set1_ps(127.0f / amax);
    for (int64_t i = 0; i < k; i += 16) {
      const __mmask16 m = k - i >= 16 ? 0xFFFF : static_cast<__mmask16>((1u << (k - i)) - 1);
      const __m512 v = _mm512_mul_ps(_mm512_maskz_loadu_ps(m, xr + i), mult);
      const __mmask16 ordered = _mm512_cmp_ps_mask(v, v, _CMP_ORD_Q);
      // Clamped to the int8 range first (what the saturating conversions give), then rounded
      // half-even by the conversion; NaN lanes give code 0.
      const __m512 c = _mm512_min_ps(_mm512_max_ps(v, _mm512_set1_ps(-128.0f)), _mm512_set1_ps(127.0f));
      const __m512i q = _mm512_maskz_cvtps_epi32(ordered, c);
      const __m128i b = _mm_xor_si128(_mm512_cvtsepi32_epi8(q), _mm_set1_epi8(static_cast<char>(0x80)));
      _mm_mask_storeu_epi8(dst + i, m, b);
    }
  }
}

using TileFn = void (*)(const TileArgs&);

template <int MR>
constexpr TileFn TileFor(int nv) {
  switch (nv) {
    case 1: return &Tile<MR, 1>;
    case 2: return &Tile<MR, 2>;
    case 3: return &Tile<MR, 3>;
    default: return &Tile<MR, 4>;
  }
}

TileFn PickTile(int mr, int nv) {
  static_assert(kTileRows == 6 && kTileVecs == 4, "PickTile covers 6 x 4 tiles");
  switch (mr) {
    case 1: return TileFor<1>(nv);
    case 2: return TileFor<2>(nv);
    case 3: return TileFor<3>(nv);
    case 4: return TileFor<4>(nv);
    case 5: return TileFor<5>(nv);
    default: return TileFor<6>(nv);
  }
}

}  // namespace

void Int8DotMatmul(const Int8DotWeights& w, const uint8_t* u8, const Int8Activations& act,
                   int64_t rows, const float* bias, float* y, int64_t n_begin, int64_t n_end) {
  if (rows <= 0 || n_begin >= n_end) return;
  const int64_t quads = (w.k + 3) / 4;
  const int64_t block = rows > kTileRows ? kKBlockQuads : quads;
  thread_local std::vector<int32_t> park;
  if (block < quads && static_cast<int64_t>(park.size()) < rows * kTileVecs * 16) {
    park.resize(rows * kTileVecs * 16);
  }
  TileArgs a;
  a.x_stride = Int8DotActStride(w.k);
  a.panel_bytes = PanelBytes(w.k);
  a.y_stride = w.n;
  a.w_per_row = w.per_row;
  a.a_per_token = act.per_token;
  const int64_t p_begin = n_begin / kPanelCols, p_end = panels::Count(n_end);
  for (int64_t p0 = p_begin; p0 < p_end; p0 += kTileVecs) {
    const int nv = static_cast<int>(std::min<int64_t>(kTileVecs, p_end - p0));
    for (int j = 0; j < kTileVecs; ++j) a.store[j] = panels::StoreMask(p0 + j, n_begin, n_end);
    const int64_t col = p0 * kPanelCols;
    a.w = w.panels + p0 * a.panel_bytes;
    a.bias = bias != nullptr ? bias + col : nullptr;
    a.col_sums = w.col_sums + col;
    a.w_scales = w.per_row ? w.scales + col : w.scales;
    for (int64_t t0 = 0; t0 < quads; t0 += block) {
      a.t0 = t0;
      a.t1 = std::min(quads, t0 + block);
      a.first = t0 == 0;
      a.last = a.t1 == quads;
      for (int64_t m0 = 0; m0 < rows; m0 += kTileRows) {
        const int mr = static_cast<int>(std::min<int64_t>(kTileRows, rows - m0));
        a.x = u8 + m0 * a.x_stride;
        a.park = park.empty() ? nullptr : park.data() + m0 * kTileVecs * 16;
        a.y = y + m0 * w.n + col;
        a.a_scales = act.per_token ? act.scales + m0 : act.scales;
        a.azp = act.azp == nullptr ? nullptr : act.per_token ? act.azp + m0 : act.azp;
        PickTile(mr, nv)(a);
      }
    }
  }
}

HWY_POP_ATTRIBUTES

// Outside the AVX-512 attributes: it runs on every CPU and only then picks the AVX-512 path.
void QuantizeInt8PerTokenSymmetricU8(const float* x, int64_t k, int64_t r0, int64_t r1,
                                     float* scales, uint8_t* u8) {
  if (Int8DotAvailable()) return QuantizeSymmetricU8Avx512(x, k, r0, r1, scales, u8);
  QuantizeSymmetricU8Reference(x, k, r0, r1, scales, u8);
}

#else  // not x86-64 GCC/Clang: never called (Int8DotAvailable() is false), defined for the link.

void QuantizeInt8PerTokenSymmetricU8(const float* x, int64_t k, int64_t r0, int64_t r1,
                                     float* scales, uint8_t* u8) {
  QuantizeSymmetricU8Reference(x, k, r0, r1, scales, u8);
}

void Int8DotMatmul(const Int8DotWeights&, const uint8_t*, const Int8Activations&, int64_t,
                   const float*, float*, int64_t, int64_t) {}

#endif

}  // namespace tessera::kernels::cpu::fast
