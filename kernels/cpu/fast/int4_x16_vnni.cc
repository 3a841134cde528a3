// AVX-512 VNNI kernel of q4_0_x16.h. Intrinsics under target attributes (Highway 1.0.3 has no
// vpdpbusd); called only after the CPUID check in q8_act_vnni.cc (internal::HasVnni).
//
// Per column group and block: 4 loads of 64 code bytes (4 K values x 2 nibbles x 16 columns each)
// are split into low and high nibbles once, then every activation row of the tile (up to 8, kept
// in registers) does 8 vpdpbusd with its 4-byte code groups broadcast, one int-to-float convert
// and two FMAs: the canonical order of the header, lane = column.
#if defined(__GNUC__) && !defined(__clang__)
// GCC 12's false "may be used uninitialized" inside avx512fintrin.h (see q8_act_vnni.cc).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "hwy/base.h"
#include "kernels/cpu/fast/q4_0_x16.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))

HWY_PUSH_ATTRIBUTES("avx512f,avx512vl,avx512dq,avx512bw,avx512vnni,avx2,fma,f16c")

namespace tessera::kernels::cpu::fast::internal {
namespace {

constexpr int64_t kCols = 16;
#ifndef TESSERA_Q4X16_PREFETCH
#define TESSERA_Q4X16_PREFETCH 8
#endif
constexpr int64_t kPrefetchBlocks = TESSERA_Q4X16_PREFETCH;

int64_t ScaleAreaBytes(int64_t blocks) { return (blocks * kCols * 2 + 63) / 64 * 64; }

// acc += w (unsigned bytes) · the 4 signed bytes at p broadcast to every lane. Written as inline
// asm so that the broadcast is the instruction's embedded {1to16} memory operand: GCC 12 emits a
// separate vpbroadcastd for _mm512_set1_epi32, one extra uop per vpdpbusd in the hottest loop.
inline __m512i DpbusdBcast(__m512i acc, __m512i w, const int8_t* p) {
#if defined(__GNUC__)
  __asm__("vpdpbusd %2%{1to16%}, %1, %0" : "+v"(acc) : "v"(w), "m"(*reinterpret_cast<const int32_t*>(p)));
  return acc;
#else
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm512_dpbusd_epi32(acc, w, _mm512_set1_epi32(v));
#endif
}

// Accumulators of rows [r0, r0 + MR) for one column group.
template <int MR>
void Tile(const uint8_t* group, int64_t blocks, const Q4_0x16Acts& a, int64_t k, int64_t r0,
          __m512* out) {
  const uint8_t* scales = group;
  const uint8_t* codes = group + ScaleAreaBytes(blocks);
  const __m512i m4 = _mm512_set1_epi8(0x0F);
  const __m512 eight = _mm512_set1_ps(8.0f);
  __m512 acc[MR];
  for (int r = 0; r < MR; ++r) acc[r] = _mm512_setzero_ps();
  const int8_t* xrow[MR];
  for (int r = 0; r < MR; ++r) xrow[r] = a.q + (r0 + r) * k;
  for (int64_t b = 0; b < blocks; ++b) {
    const __m512 sw = _mm512_cvtph_ps(
        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(scales + b * kCols * 2)));
    if constexpr (MR <= 2) {
      // One or two rows: the loop is bound by DRAM latency; fetch kPrefetchBlocks ahead (the
      // next group's tile follows contiguously, so running past this one's end is useful too).
      const uint8_t* ahead = codes + (b + kPrefetchBlocks) * 256;
      for (int l = 0; l < 4; ++l) _mm_prefetch(reinterpret_cast<const char*>(ahead + 64 * l), _MM_HINT_T0);
    }
    __m512i isum[MR];
    for (int r = 0; r < MR; ++r) isum[r] = _mm512_setzero_si512();
    for (int q = 0; q < 4; ++q) {
      const __m512i v = _mm512_loadu_si512(codes + b * 256 + q * 64);
      const __m512i lo = _mm512_and_si512(v, m4);
      const __m512i hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), m4);
      for (int r = 0; r < MR; ++r) {
        const int8_t* x = xrow[r] + b * 32 + 8 * q;
        isum[r] = DpbusdBcast(isum[r], lo, x);
        isum[r] = DpbusdBcast(isum[r], hi, x + 4);
      }
    }
    for (int r = 0; r < MR; ++r) {
      const int64_t off = (r0 + r) * blocks + b;
      const __m512 t = _mm512_fnmadd_ps(eight, _mm512_set1_ps(a.s[off]), _mm512_cvtepi32_ps(isum[r]));
      acc[r] = _mm512_fmadd_ps(t, _mm512_mul_ps(sw, _mm512_set1_ps(a.d[off])), acc[r]);
    }
  }
  for (int r = 0; r < MR; ++r) out[r] = acc[r];
}

template <int MR>
void Rows(const FastWeights& w, const Q4_0x16Acts& a, const float* bias, float* y, int64_t g,
          int64_t c0, int64_t c1, int64_t r0) {
  const int64_t blocks = w.k / 32;
  __m512 acc[MR];
  Tile<MR>(w.data + g * w.row_stride, blocks, a, w.k, r0, acc);
  const __mmask16 m = static_cast<__mmask16>(((1u << (c1 - c0)) - 1) << c0);
  const int64_t n0 = g * kCols;
  for (int r = 0; r < MR; ++r) {
    __m512 v = acc[r];
    if (bias != nullptr) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(m, bias + n0));
    _mm512_mask_storeu_ps(y + (r0 + r) * w.n + n0, m, v);
  }
}

}  // namespace

// QuantizeRowQ8Block32 vectorized, bit-identical: amax ignores NaN as std::max does (vmaxps
// returns its second operand when the first is NaN), d = amax / 127 and id = 1 / d are the same
// IEEE operations, vroundscaleps rounds half to even as nearbyint does in the default mode, and
// NaN products become code 0.
void QuantizeActsQ4_0x16Avx512(const float* x, int64_t k, int64_t r0, int64_t r1, int8_t* q,
                               float* d, float* s) {
  const int64_t blocks = k / 32;
  const __m512 lim = _mm512_set1_ps(127.0f), neg_lim = _mm512_set1_ps(-127.0f);
  const __m512 sign = _mm512_castsi512_ps(_mm512_set1_epi32(0x7FFFFFFF));
  for (int64_t r = r0; r < r1; ++r) {
    for (int64_t b = 0; b < blocks; ++b) {
      const float* xb = x + r * k + b * 32;
      const __m512 v0 = _mm512_loadu_ps(xb), v1 = _mm512_loadu_ps(xb + 16);
      __m512 amax = _mm512_max_ps(_mm512_and_ps(v0, sign), _mm512_setzero_ps());
      amax = _mm512_max_ps(_mm512_and_ps(v1, sign), amax);
      const float db = _mm512_reduce_max_ps(amax) / 127.0f;
      const float id = db != 0.0f ? 1.0f / db : 0.0f;
      const __m512 idv = _mm512_set1_ps(id);
      __m512i codes[2];
      const __m512 vs[2] = {v0, v1};
      for (int h = 0; h < 2; ++h) {
        __m512 t = _mm512_roundscale_ps(_mm512_mul_ps(vs[h], idv), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        const __mmask16 ordered = _mm512_cmp_ps_mask(t, t, _CMP_ORD_Q);
        t = _mm512_min_ps(_mm512_max_ps(t, neg_lim), lim);
        codes[h] = _mm512_maskz_cvtps_epi32(ordered, t);
      }
      _mm_storeu_si128(reinterpret_cast<__m128i*>(q + r * k + b * 32), _mm512_cvtsepi32_epi8(codes[0]));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(q + r * k + b * 32 + 16), _mm512_cvtsepi32_epi8(codes[1]));
      d[r * blocks + b] = db;
      s[r * blocks + b] = static_cast<float>(_mm512_reduce_add_epi32(_mm512_add_epi32(codes[0], codes[1])));
    }
  }
}

void Q4_0x16MatmulVnni(const FastWeights& w, const Q4_0x16Acts& a, const float* bias, float* y,
                       int64_t n_begin, int64_t n_end) {
  for (int64_t g = n_begin / kCols; g * kCols < n_end; ++g) {
    // Columns of this group inside [n_begin, n_end) (the mask keeps other callers' columns and
    // the padding untouched; bias and y are only read / written under it).
    const int64_t c0 = std::max<int64_t>(n_begin - g * kCols, 0);
    const int64_t c1 = std::min<int64_t>(n_end - g * kCols, kCols);
    for (int64_t r0 = 0; r0 < a.rows; r0 += 8) {
      switch (std::min<int64_t>(8, a.rows - r0)) {
        case 1: Rows<1>(w, a, bias, y, g, c0, c1, r0); break;
        case 2: Rows<2>(w, a, bias, y, g, c0, c1, r0); break;
        case 3: Rows<3>(w, a, bias, y, g, c0, c1, r0); break;
        case 4: Rows<4>(w, a, bias, y, g, c0, c1, r0); break;
        case 5: Rows<5>(w, a, bias, y, g, c0, c1, r0); break;
        case 6: Rows<6>(w, a, bias, y, g, c0, c1, r0); break;
        case 7: Rows<7>(w, a, bias, y, g, c0, c1, r0); break;
        default: Rows<8>(w, a, bias, y, g, c0, c1, r0); break;
      }
    }
  }
}

}  // namespace tessera::kernels::cpu::fast::internal

HWY_POP_ATTRIBUTES

#else  // not x86-64 GCC/Clang

namespace tessera::kernels::cpu::fast::internal {
void Q4_0x16MatmulVnni(const FastWeights&, const Q4_0x16Acts&, const float*, float*, int64_t,
                       int64_t) {}
void QuantizeActsQ4_0x16Avx512(const float*, int64_t, int64_t, int64_t, int8_t*, float*, float*) {}
}  // namespace tessera::kernels::cpu::fast::internal

#endif
