// The AVX2 INT8 W8A8 kernel of avx2_panels.h (Int8DotMatmulAvx2): int8_dot_matmul.cc's quad
// panels and tile policy with `vpmaddwd` in place of `vpdpbusd`, compiled for AVX2 only (this
// translation unit's region).
#include <algorithm>
#include <cstdint>
#include <vector>

#include "hwy/aligned_allocator.h"
#include "kernels/cpu/fast/avx2_panels.h"
#include "kernels/cpu/fast/column_panels.h"
#include "kernels/cpu/fast/int8_dot_matmul.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#include "hwy/base.h"

HWY_PUSH_ATTRIBUTES("avx2,fma,f16c")

#define TESSERA_PANEL_GEMM_AVX2_ONLY 1
#include "kernels/cpu/fast/avx2_lane_mask.h"
#include "kernels/cpu/fast/panel_gemm.h"

namespace tessera::kernels::cpu::fast::internal {
namespace {

// INT8 W8A8 quad panels (RepackInt8Quads: lane c of quad t's 64-byte vector holds w[c, 4t..4t+3])
// with the u8 activations of Int8ActsToU8 (qa + 128): int8_dot_matmul.cc's policy with
// `vpmaddwd` in place of `vpdpbusd`. Each 32-byte half of a quad vector (8 columns) is reordered
// into the columns' (k0, k1) and (k2, k3) byte pairs and sign-extended to int16 words, and each
// row's activation quad (widened to int16 once per call) broadcast as (u0, u1) and (u2, u3);
// `vpmaddwd` multiplies the pairs (u ≤ 255 times |w| ≤ 128: no int16 saturation, as `vpmaddubsw`
// would risk) and adds them into the column's int32 lane. The same exact integer sums as
// `vpdpbusd`, in any order, and the same epilogue instructions: the AVX-512 kernel's bits, and the
// reference's. acts: the activations as int16 pairs.
struct Int8Quads : Int8TileArgs {
  struct Acc {
    __m256i lo, hi;  // columns 0-7, 8-15
  };
  struct WVec {
    __m256i k01_lo, k23_lo, k01_hi, k23_hi;  // int16 (w[c, 4t], w[c, 4t + 1]) per lane, ...
  };
  static constexpr int kRows = 4;  // 8 accumulators, 4 weight vectors, 2 broadcasts
  static constexpr int kVecs = 1;
  static constexpr int64_t kStepBytes = 64;
  static constexpr int64_t kBlockSteps = 512;  // 32 KiB per panel
  static Acc Zero() { return {_mm256_setzero_si256(), _mm256_setzero_si256()}; }
  static Acc Load(const float* p) {
    return {_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)),
            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 8))};
  }
  static void Store(float* p, Acc v) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), v.lo);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p + 8), v.hi);
  }
  // 8 columns' quads -> their (k0, k1) and (k2, k3) pairs as int16 words, column c in lane c.
  HWY_INLINE static void Widen(const uint8_t* p, __m256i* k01, __m256i* k23) {
    const __m256i pairs = _mm256_setr_epi8(0, 1, 4, 5, 8, 9, 12, 13, 2, 3, 6, 7, 10, 11, 14, 15, 0,
                                           1, 4, 5, 8, 9, 12, 13, 2, 3, 6, 7, 10, 11, 14, 15);
    // Per 128-bit lane (4 columns): their k01 pairs, then their k23 pairs; then the k01 pairs of
    // all 8 columns in the low half, the k23 pairs in the high half.
    const __m256i s = _mm256_permute4x64_epi64(
        _mm256_shuffle_epi8(_mm256_load_si256(reinterpret_cast<const __m256i*>(p)), pairs), 0xD8);
    *k01 = _mm256_cvtepi8_epi16(_mm256_castsi256_si128(s));
    *k23 = _mm256_cvtepi8_epi16(_mm256_extracti128_si256(s, 1));
  }
  HWY_INLINE static WVec LoadW(const uint8_t* p) {
    WVec w;
    Widen(p, &w.k01_lo, &w.k23_lo);
    Widen(p + 32, &w.k01_hi, &w.k23_hi);
    return w;
  }
  Int8Quads Rows(int64_t m0) const { return {At(m0)}; }
  template <int NV>
  HWY_INLINE void Madd(int i, int64_t t, const WVec* w, Acc* acc) const {
    const __m256i a01 = _mm256_set1_epi32(acts[i * act_stride + 2 * t]);
    const __m256i a23 = _mm256_set1_epi32(acts[i * act_stride + 2 * t + 1]);
    for (int j = 0; j < NV; ++j) {
      acc[j].lo = _mm256_add_epi32(acc[j].lo, _mm256_madd_epi16(w[j].k01_lo, a01));
      acc[j].hi = _mm256_add_epi32(acc[j].hi, _mm256_madd_epi16(w[j].k01_hi, a01));
      acc[j].lo = _mm256_add_epi32(acc[j].lo, _mm256_madd_epi16(w[j].k23_lo, a23));
      acc[j].hi = _mm256_add_epi32(acc[j].hi, _mm256_madd_epi16(w[j].k23_hi, a23));
    }
  }
  // y = sa · (sw · float(acc − (128 + azp)·Σqw)) (+ bias): int8_dot_matmul.cc's epilogue on ymm
  // halves, the reference's operations and order.
  template <int MR, int NV>
  void Finish(const panels::TileJob& a, Acc (&acc)[MR][NV]) const {
    for (int j = 0; j < NV; ++j) {
      for (int h = 0; h < 2; ++h) {
        const __m256i m = LaneMask(h == 0 ? a.store[j] & 0xFFu : a.store[j] >> 8);
        const int64_t col = a.col0 + 16 * j + 8 * h;
        const __m256i sums = _mm256_maskload_epi32(col_sums + col, m);
        const __m256 sw =
            w_per_row ? _mm256_maskload_ps(w_scales + col, m) : _mm256_set1_ps(w_scales[0]);
        const __m256 b = a.bias != nullptr ? _mm256_maskload_ps(a.bias + 16 * j + 8 * h, m)
                                           : _mm256_setzero_ps();
        for (int i = 0; i < MR; ++i) {
          const int32_t zp = azp == nullptr ? 0 : azp[a_per_token ? i : 0];
          const __m256i corr = _mm256_mullo_epi32(_mm256_set1_epi32(128 + zp), sums);
          const __m256i sum = h == 0 ? acc[i][j].lo : acc[i][j].hi;
          const __m256 f = _mm256_cvtepi32_ps(_mm256_sub_epi32(sum, corr));
          const __m256 sa = _mm256_set1_ps(a_scales[a_per_token ? i : 0]);
          __m256 v = _mm256_mul_ps(sa, _mm256_mul_ps(sw, f));
          if (a.bias != nullptr) v = _mm256_add_ps(v, b);
          _mm256_maskstore_ps(a.y + i * a.y_stride + 16 * j + 8 * h, m, v);
        }
      }
    }
  }
};

}  // namespace

void Int8DotMatmulAvx2(const Int8DotWeights& w, const uint8_t* u8, const Int8Activations& act,
                       int64_t rows, const float* bias, float* y, int64_t n_begin, int64_t n_end) {
  // The u8 rows zero-extended to int16 (a row's quad then broadcasts as two word pairs with no
  // shuffle per row and step), kWideRows rows at a time so that the buffer stays small (rows are
  // independent: the chunks change no result).
  constexpr int64_t kWideRows = 64;
  const int64_t stride = Int8DotActStride(w.k);  // a multiple of 64
  thread_local hwy::AlignedFreeUniquePtr<int16_t[]> a16;
  thread_local int64_t capacity = 0;
  const int64_t chunk = std::min(rows, kWideRows);
  if (capacity < chunk * stride) {
    capacity = chunk * stride;
    a16 = hwy::AllocateAligned<int16_t>(capacity);
  }
  for (int64_t m0 = 0; m0 < rows; m0 += kWideRows) {
    const int64_t mr = std::min(kWideRows, rows - m0);
    const uint8_t* src = u8 + m0 * stride;
    for (int64_t i = 0; i < mr * stride; i += 16) {
      _mm256_store_si256(
          reinterpret_cast<__m256i*>(a16.get() + i),
          _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i))));
    }
    Int8Activations part = act;
    if (act.per_token) {
      part.scales = act.scales + m0;
      if (act.azp != nullptr) part.azp = act.azp + m0;
    }
    const Int8Quads kernel{{reinterpret_cast<const int32_t*>(a16.get()), stride / 2, w.col_sums,
                            w.scales, w.per_row, part.scales, part.azp, part.per_token}};
    panels::PanelMatmul(kernel, w.panels, Int8QuadsBytes(panels::kCols, w.k), (w.k + 3) / 4, w.n,
                        mr, bias, y + m0 * w.n, n_begin, n_end);
  }
}

}  // namespace tessera::kernels::cpu::fast::internal

HWY_POP_ATTRIBUTES

#else  // not x86-64 GCC/Clang: never called (Avx2PanelsAvailable() is false), defined for the
       // link.

namespace tessera::kernels::cpu::fast::internal {

void Int8DotMatmulAvx2(const Int8DotWeights&, const uint8_t*, const Int8Activations&, int64_t,
                       const float*, float*, int64_t, int64_t) {}

}  // namespace tessera::kernels::cpu::fast::internal

#endif
