// AVX-512 kernels of float_panel_matmul.h: the f16 and f32 K panels run through the shared tile
// driver (panel_gemm.h) with a policy that loads each panel's 16 weights of a k (f16 widened with
// `vcvtph2ps`) and multiplies one broadcast f32 activation per row into them. Without AVX-512 the
// calls go to the AVX2 twins (avx2_panels.h).
#if defined(__GNUC__) && !defined(__clang__)
// GCC 12 reports a false "may be used uninitialized" inside its own avx512fintrin.h (the
// _mm512_undefined_* placeholders of its mask intrinsics) once they are inlined here.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include "kernels/cpu/fast/float_panel_matmul.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "kernels/cpu/fast/avx2_panels.h"
#include "kernels/cpu/fast/column_panels.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#include "hwy/base.h"
#define TESSERA_F16_PANEL_X86 1
#endif

namespace tessera::kernels::cpu::fast {

namespace {

bool Avx512FloatPanels() {
  static const bool has = TESSERA_HAS_AVX512_WITH("avx512f");
  return has;
}

}  // namespace

bool F16PanelAvailable() { return Avx512FloatPanels() || internal::Avx2PanelsAvailable(); }

const char* FloatPanelTargetName() { return Avx512FloatPanels() ? "avx512" : "avx2"; }

// k rows of 32 bytes, padded to whole 64-byte lines.
int64_t F16PanelsBytes(int64_t n, int64_t k) {
  return panels::Count(n) * panels::PairPanelBytes(k);
}

FastWeights RepackF16Panels(const FastWeights& src, uint8_t* dst) {
  return panels::RepackFloatPanels<2>(src, FastFormat::kF16Panels, panels::PairPanelBytes(src.k),
                                      dst, [](int64_t i, int64_t c) {
                                        return i * panels::kCols + c;  // k = i, one 32-byte vector
                                      });
}

// k rows of 64 bytes.
int64_t F32PanelsBytes(int64_t n, int64_t k) { return panels::Count(n) * k * 64; }

FastWeights RepackF32Panels(const FastWeights& src, uint8_t* dst) {
  return panels::RepackFloatPanels<4>(src, FastFormat::kF32Panels, src.k * 64, dst,
                                      [](int64_t i, int64_t c) { return i * panels::kCols + c; });
}

#if defined(TESSERA_F16_PANEL_X86)

}  // namespace tessera::kernels::cpu::fast

HWY_PUSH_ATTRIBUTES("avx512f,avx512vl,avx512bw,avx2,fma,f16c")

#include "kernels/cpu/fast/panel_gemm.h"

namespace tessera::kernels::cpu::fast {
namespace {

// One k of 16 columns is a 32-byte vector of f16 (kF16) or a 64-byte one of f32; a block of
// kBlockSteps k is 32 KiB per panel either way.
template <bool kF16>
struct FloatPanels : panels::FloatAccumulators {
  using WVec = __m512;
  static constexpr int64_t kStepBytes = kF16 ? 32 : 64;
  static constexpr int64_t kBlockSteps = kF16 ? 1024 : 512;
  const float* x;  // the tile's first row
  int64_t stride;  // elements between rows (k)
  HWY_INLINE static WVec LoadW(const uint8_t* p) {
    if constexpr (kF16) {
      return _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(p)));
    } else {
      return _mm512_load_ps(reinterpret_cast<const float*>(p));
    }
  }
  FloatPanels Rows(int64_t m0) const { return {{}, x + m0 * stride, stride}; }
  template <int NV>
  HWY_INLINE void Madd(int i, int64_t t, const WVec* w, Acc* acc) const {
    const __m512 xv = _mm512_set1_ps(x[i * stride + t]);
    for (int j = 0; j < NV; ++j) acc[j] = _mm512_fmadd_ps(xv, w[j], acc[j]);
  }
};

template <bool kF16>
void FloatPanelMatmulAvx512(const FastWeights& w, const float* x, int64_t rows, const float* bias,
                            float* y, int64_t n_begin, int64_t n_end) {
  panels::PanelMatmul(FloatPanels<kF16>{{}, x, w.k}, w.data, w.row_stride, w.k, w.n, rows, bias, y,
                      n_begin, n_end);
}

}  // namespace

HWY_POP_ATTRIBUTES

// Outside the AVX-512 attributes: they run on AVX2-only CPUs too, and only then pick a path.
void F16PanelMatmul(const FastWeights& w, const float* x, int64_t rows, const float* bias, float* y,
                    int64_t n_begin, int64_t n_end) {
  if (!Avx512FloatPanels())
    return internal::F16PanelMatmulAvx2(w, x, rows, bias, y, n_begin, n_end);
  FloatPanelMatmulAvx512<true>(w, x, rows, bias, y, n_begin, n_end);
}

void F32PanelMatmul(const FastWeights& w, const float* x, int64_t rows, const float* bias, float* y,
                    int64_t n_begin, int64_t n_end) {
  if (!Avx512FloatPanels())
    return internal::F32PanelMatmulAvx2(w, x, rows, bias, y, n_begin, n_end);
  FloatPanelMatmulAvx512<false>(w, x, rows, bias, y, n_begin, n_end);
}

#else  // not x86-64 GCC/Clang: never called (F16PanelAvailable() is false), defined for the link.

void F16PanelMatmul(const FastWeights&, const float*, int64_t, const float*, float*, int64_t,
                    int64_t) {}
void F32PanelMatmul(const FastWeights&, const float*, int64_t, const float*, float*, int64_t,
                    int64_t) {}

#endif

}  // namespace tessera::kernels::cpu::fast
