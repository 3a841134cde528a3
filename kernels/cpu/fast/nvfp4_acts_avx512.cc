// AVX-512 form of QuantizeNvfp4 (kernels/cpu/quant/activation_quant.h) fused with
// PackNvfp4ActsInt4x16 (int4_x16.h): float activations straight to the W4A4 tile kernel's int8
// codes 2·e2m1, half-block scales and code sums, bit-identical to the two reference steps. One
// 16-element NVFP4 block is one zmm register: its amax (NaNs ignored, as std::max does), the
// block scale (scalar: e4m3 encode of g·amax/6 and the multiplier g/sf, the same f32 operations
// in the same order), then x·multiplier and E2M1 round-to-nearest-even by seven threshold
// compares. The thresholds are the midpoints between E2M1 values, ties going to the even code:
// |v| > 0.25 -> 0.5, >= 0.75 -> 1, > 1.25 -> 1.5, >= 1.75 -> 2, > 2.5 -> 3, >= 3.5 -> 4, > 5 -> 6
// (saturating above 6, inf included); NaN gives +6 like numeric::EncodeE2m1; negative inputs keep
// their sign, and -0 decodes to 0 like the reference table. Called only after the CPUID check (HasAvx512Bw).
#if defined(__GNUC__) && !defined(__clang__)
// GCC 12 reports a false "(may be) used uninitialized" inside its own avx512fintrin.h (the
// _mm512_undefined_* placeholders of the reduce and convert intrinsics) once they are inlined.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

#include <immintrin.h>

#include <cstdint>

#include "hwy/base.h"
#include "kernels/numeric/fp4.h"
#include "kernels/numeric/fp8.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))

HWY_PUSH_ATTRIBUTES("avx512f,avx512vl,avx512bw,avx2,fma")

namespace tessera::kernels::cpu::fast::internal {
namespace {

// |v| with NaN lanes zeroed.
__m512 AbsOrdered(__m512 v) {
  const __mmask16 ordered = _mm512_cmp_ps_mask(v, v, _CMP_ORD_Q);
  return _mm512_castsi512_ps(_mm512_maskz_and_epi32(ordered, _mm512_castps_si512(v),
                                                    _mm512_set1_epi32(0x7FFFFFFF)));
}

// amax of 16 floats with NaN lanes ignored (std::max(amax, |x|) keeps amax when |x| is NaN).
float AbsMax16(__m512 v) {
  return _mm512_reduce_max_ps(AbsOrdered(v));
}

// One 16-element block: its int8 codes 2·e2m1 at q, the scale sf / 2 and the code sum.
void QuantizeBlock16(const float* x, float g, int8_t* q, float* d, float* s) {
  const __m512 v = _mm512_loadu_ps(x);
  const float amax = AbsMax16(v);
  const uint8_t sf_code = numeric::EncodeUe4m3(g * amax / numeric::kE2m1Max);
  const float sf = numeric::DecodeUe4m3(sf_code);
  *d = sf * 0.5f;
  if (sf == 0.0f) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(q), _mm_setzero_si128());
    *s = 0.0f;
    return;
  }
  const float multiplier = g / sf;
  const __m512 y = _mm512_mul_ps(v, _mm512_set1_ps(multiplier));
  const __m512 a = _mm512_abs_ps(y);
  const __m512i one = _mm512_set1_epi32(1);
  __m512i mag = _mm512_setzero_si512();
  auto add_if = [&](__mmask16 m) { mag = _mm512_mask_add_epi32(mag, m, mag, one); };
  add_if(_mm512_cmp_ps_mask(a, _mm512_set1_ps(0.25f), _CMP_GT_OQ));
  add_if(_mm512_cmp_ps_mask(a, _mm512_set1_ps(0.75f), _CMP_GE_OQ));
  add_if(_mm512_cmp_ps_mask(a, _mm512_set1_ps(1.25f), _CMP_GT_OQ));
  add_if(_mm512_cmp_ps_mask(a, _mm512_set1_ps(1.75f), _CMP_GE_OQ));
  add_if(_mm512_cmp_ps_mask(a, _mm512_set1_ps(2.5f), _CMP_GT_OQ));
  add_if(_mm512_cmp_ps_mask(a, _mm512_set1_ps(3.5f), _CMP_GE_OQ));
  add_if(_mm512_cmp_ps_mask(a, _mm512_set1_ps(5.0f), _CMP_GT_OQ));
  const __mmask16 nan = _mm512_cmp_ps_mask(y, y, _CMP_UNORD_Q);
  mag = _mm512_mask_mov_epi32(mag, nan, _mm512_set1_epi32(7));
  // 2·E2M1 of magnitude codes 0..7.
  const __m512i twice = _mm512_permutexvar_epi32(
      mag, _mm512_setr_epi32(0, 1, 2, 3, 4, 6, 8, 12, 0, 0, 0, 0, 0, 0, 0, 0));
  const __mmask16 negative =
      _mm512_test_epi32_mask(_mm512_castps_si512(y), _mm512_set1_epi32(INT32_MIN)) & ~nan;
  const __m512i value = _mm512_mask_sub_epi32(twice, negative, _mm512_setzero_si512(), twice);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(q), _mm512_cvtepi32_epi8(value));
  *s = static_cast<float>(_mm512_reduce_add_epi32(value));
}

}  // namespace

void QuantizeNvfp4ActsInt4x16Avx512(const float* x, int64_t len, float g, int8_t* q, float* d,
                                    float* d2, float* s, float* s2) {
  for (int64_t b = 0; b < len / 32; ++b) {
    QuantizeBlock16(x + 32 * b, g, q + 32 * b, d + b, s + b);
    QuantizeBlock16(x + 32 * b + 16, g, q + 32 * b + 16, d2 + b, s2 + b);
  }
}

float AbsMaxIgnoringNanAvx512(const float* x, int64_t n) {
  __m512 acc = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    acc = _mm512_max_ps(acc, AbsOrdered(_mm512_loadu_ps(x + i)));
  }
  float amax = _mm512_reduce_max_ps(acc);
  for (; i < n; ++i) {
    const float a = x[i] < 0 ? -x[i] : x[i];
    if (a > amax) amax = a;  // false for NaN
  }
  return amax;
}

}  // namespace tessera::kernels::cpu::fast::internal

HWY_POP_ATTRIBUTES

#else  // not x86-64 GCC/Clang: never called (HasAvx512Bw() is false), defined for the link.

namespace tessera::kernels::cpu::fast::internal {
void QuantizeNvfp4ActsInt4x16Avx512(const float*, int64_t, float, int8_t*, float*, float*, float*,
                                    float*) {}
float AbsMaxIgnoringNanAvx512(const float*, int64_t) { return 0.0f; }
}  // namespace tessera::kernels::cpu::fast::internal

#endif
