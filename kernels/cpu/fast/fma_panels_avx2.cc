// AVX2 kernels of fma_panels_avx2.h: policies for the shared tile driver (panel_gemm.h) whose
// accumulator is one panel's 16 lanes as two ymm, compiled for AVX2 + FMA + F16C only (this
// translation unit's region), so nothing here needs AVX-512.
#include "kernels/cpu/fast/fma_panels_avx2.h"

#include <algorithm>
#include <vector>

#include "kernels/cpu/fast/column_panels.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#include "hwy/base.h"
#define TESSERA_FMA_PANELS_X86 1
#endif

namespace tessera::kernels::cpu::fast::internal {

bool FmaPanelsAvx2Available() {
#if defined(TESSERA_FMA_PANELS_X86)
  static const bool has = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
                          __builtin_cpu_supports("f16c");
  return has;
#else
  return false;
#endif
}

}  // namespace tessera::kernels::cpu::fast::internal

#if defined(TESSERA_FMA_PANELS_X86)

HWY_PUSH_ATTRIBUTES("avx2,fma,f16c")

#define TESSERA_PANEL_GEMM_AVX2_ONLY 1
#include "kernels/cpu/fast/panel_gemm.h"

namespace tessera::kernels::cpu::fast::internal {
namespace {

// One panel's 16 f32 lanes: columns 0-7 and 8-15.
struct Ymm16 {
  __m256 lo, hi;
};

// The lanes of an 8-column half whose bits are set in `bits` (bit c: column c), as a
// vmaskmov mask.
HWY_INLINE __m256i LaneMask(unsigned bits) {
  const __m256i lane_bits = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
  return _mm256_cmpeq_epi32(_mm256_and_si256(_mm256_set1_epi32(static_cast<int>(bits)), lane_bits),
                            lane_bits);
}

// The f32 accumulators and epilogue (panel_gemm.h's FloatAccumulators on two ymm): output (m, n)
// = acc + bias[n], masked stores. Six rows of one panel: 12 accumulators, two weight halves and
// a broadcast activation fill 15 of the 16 ymm.
struct Avx2Accumulators {
  static constexpr int kRows = 6;
  static constexpr int kVecs = 1;
  using Acc = Ymm16;
  static Acc Zero() { return {_mm256_setzero_ps(), _mm256_setzero_ps()}; }
  static Acc Load(const float* p) { return {_mm256_loadu_ps(p), _mm256_loadu_ps(p + 8)}; }
  static void Store(float* p, Acc v) {
    _mm256_storeu_ps(p, v.lo);
    _mm256_storeu_ps(p + 8, v.hi);
  }
  template <int MR, int NV>
  void Finish(const panels::TileJob& a, Acc (&acc)[MR][NV]) const {
    for (int j = 0; j < NV; ++j) {
      const __m256i m_lo = LaneMask(a.store[j] & 0xFFu), m_hi = LaneMask(a.store[j] >> 8);
      const bool bias = a.bias != nullptr;
      const __m256 b_lo = bias ? _mm256_maskload_ps(a.bias + 16 * j, m_lo) : _mm256_setzero_ps();
      const __m256 b_hi = bias ? _mm256_maskload_ps(a.bias + 16 * j + 8, m_hi) : _mm256_setzero_ps();
      for (int i = 0; i < MR; ++i) {
        float* out = a.y + i * a.y_stride + 16 * j;
        _mm256_maskstore_ps(out, m_lo, bias ? _mm256_add_ps(acc[i][j].lo, b_lo) : acc[i][j].lo);
        _mm256_maskstore_ps(out + 8, m_hi, bias ? _mm256_add_ps(acc[i][j].hi, b_hi) : acc[i][j].hi);
      }
    }
  }
};

// f16 (kF16: 32 bytes, two vcvtph2ps) or f32 (64 bytes) K panels, one broadcast activation per
// row and k: float_panel_matmul.cc's FloatPanels on ymm halves.
template <bool kF16>
struct FloatPanels : Avx2Accumulators {
  using WVec = Ymm16;
  static constexpr int64_t kStepBytes = kF16 ? 32 : 64;
  static constexpr int64_t kBlockSteps = kF16 ? 1024 : 512;
  const float* x;  // the tile's first row
  int64_t stride;  // elements between rows (k)
  HWY_INLINE static WVec LoadW(const uint8_t* p) {
    if constexpr (kF16) {
      return {_mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(p))),
              _mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(p + 16)))};
    } else {
      const float* f = reinterpret_cast<const float*>(p);
      return {_mm256_load_ps(f), _mm256_load_ps(f + 8)};
    }
  }
  FloatPanels Rows(int64_t m0) const { return {{}, x + m0 * stride, stride}; }
  template <int NV>
  HWY_INLINE void Madd(int i, int64_t t, const WVec* w, Acc* acc) const {
    const __m256 xv = _mm256_set1_ps(x[i * stride + t]);
    for (int j = 0; j < NV; ++j) {
      acc[j].lo = _mm256_fmadd_ps(xv, w[j].lo, acc[j].lo);
      acc[j].hi = _mm256_fmadd_ps(xv, w[j].hi, acc[j].hi);
    }
  }
};

}  // namespace

void F16PanelMatmulAvx2(const FastWeights& w, const float* x, int64_t rows, const float* bias,
                        float* y, int64_t n_begin, int64_t n_end) {
  panels::PanelMatmul(FloatPanels<true>{{}, x, w.k}, w.data, w.row_stride, w.k, w.n, rows, bias, y,
                      n_begin, n_end);
}

void F32PanelMatmulAvx2(const FastWeights& w, const float* x, int64_t rows, const float* bias,
                        float* y, int64_t n_begin, int64_t n_end) {
  panels::PanelMatmul(FloatPanels<false>{{}, x, w.k}, w.data, w.row_stride, w.k, w.n, rows, bias,
                      y, n_begin, n_end);
}

}  // namespace tessera::kernels::cpu::fast::internal

HWY_POP_ATTRIBUTES

#else  // not x86-64 GCC/Clang: never called (FmaPanelsAvx2Available() is false), defined for the
       // link.

namespace tessera::kernels::cpu::fast::internal {

void F16PanelMatmulAvx2(const FastWeights&, const float*, int64_t, const float*, float*, int64_t,
                        int64_t) {}
void F32PanelMatmulAvx2(const FastWeights&, const float*, int64_t, const float*, float*, int64_t,
                        int64_t) {}

}  // namespace tessera::kernels::cpu::fast::internal

#endif
