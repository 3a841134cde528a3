// AVX-512 body of int16_act_quant.h: a group's amax by an unsigned max over the |x| bit patterns
// (NaN and inf sort above every finite value, so one compare finds them), then 16 x at a time
// widened to double, multiplied by 32767 / amax and converted with round-to-nearest-even.
#if defined(__GNUC__) && !defined(__clang__)
// GCC 12 reports a false "may be used uninitialized" inside its own avx512fintrin.h (the
// _mm512_undefined_* placeholders of the reduce and convert intrinsics) once they are inlined.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include "kernels/cpu/fast/int16_act_quant.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

#include "kernels/cpu/fast/bf16_dot_matmul.h"
#include "kernels/cpu/fast/column_panels.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#include "hwy/base.h"
#define TESSERA_INT16_ACTS_X86 1
#endif

namespace tessera::kernels::cpu::fast {

bool Int16ActsAvailable() {
  static const bool has = TESSERA_HAS_AVX512_WITH("avx512bw");
  return has;
}

void QuantizeGroupInt16Scalar(const float* x, int64_t n, int16_t* q, float* scale, float* sum) {
  uint32_t bits = 0;
  for (int64_t i = 0; i < n; ++i)
    bits = std::max(bits, std::bit_cast<uint32_t>(x[i]) & 0x7FFFFFFFu);
  if (bits == 0 || bits >= 0x7F800000u) {
    std::fill(q, q + n, int16_t{0});
    *scale = bits == 0 ? 0.0f : std::numeric_limits<float>::quiet_NaN();
    *sum = *scale;
    return;
  }
  const double amax = std::bit_cast<float>(bits), inv = 32767.0 / amax;
  int32_t total = 0;
  for (int64_t i = 0; i < n; ++i) {
    // The product in double (exact operands, one rounding), then round-to-nearest-even as the
    // vector conversion does under the default rounding mode.
    q[i] = static_cast<int16_t>(std::nearbyint(static_cast<double>(x[i]) * inv));
    total += q[i];
  }
  *scale = static_cast<float>(amax / 32767.0);
  *sum = *scale * static_cast<float>(total);
}

#if defined(TESSERA_INT16_ACTS_X86)

}  // namespace tessera::kernels::cpu::fast

HWY_PUSH_ATTRIBUTES("avx512f,avx512vl,avx512bw,avx2,fma")

namespace tessera::kernels::cpu::fast {
namespace {

constexpr uint32_t kInfBits = 0x7F800000u;

void QuantizeGroup(const float* x, int64_t n, int16_t* q, float* scale, float* sum) {
  __m512i top = _mm512_setzero_si512();
  for (int64_t i = 0; i < n; i += 16) {
    top = _mm512_max_epu32(
        top, _mm512_and_si512(_mm512_loadu_si512(x + i), _mm512_set1_epi32(0x7FFFFFFF)));
  }
  const uint32_t bits = _mm512_reduce_max_epu32(top);
  if (bits == 0 || bits >= kInfBits) {
    std::memset(q, 0, n * sizeof(int16_t));
    *scale = bits == 0 ? 0.0f : std::numeric_limits<float>::quiet_NaN();
    *sum = *scale;
    return;
  }
  const double amax = std::bit_cast<float>(bits);
  const __m512d inv = _mm512_set1_pd(32767.0 / amax);
  __m512i total = _mm512_setzero_si512();
  for (int64_t i = 0; i < n; i += 16) {
    const __m512i v = _mm512_loadu_si512(x + i);
    const __m512d lo = _mm512_cvtps_pd(_mm256_castsi256_ps(_mm512_castsi512_si256(v)));
    const __m512d hi = _mm512_cvtps_pd(_mm256_castsi256_ps(_mm512_extracti64x4_epi64(v, 1)));
    constexpr int kRound = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
    const __m256i ql = _mm512_cvt_roundpd_epi32(_mm512_mul_pd(lo, inv), kRound);
    const __m256i qh = _mm512_cvt_roundpd_epi32(_mm512_mul_pd(hi, inv), kRound);
    const __m512i codes = _mm512_inserti64x4(_mm512_castsi256_si512(ql), qh, 1);
    total = _mm512_add_epi32(total, codes);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + i), _mm512_cvtepi32_epi16(codes));
  }
  *scale = static_cast<float>(amax / 32767.0);
  // |Σq| ≤ 128 · 32767 < 2^24: exact in f32.
  *sum = *scale * static_cast<float>(_mm512_reduce_add_epi32(total));
}

}  // namespace

void QuantizeActsInt16(const float* x, int64_t k, int64_t group, int64_t r0, int64_t r1, int16_t* q,
                       float* scales, float* sums) {
  const int64_t stride = Bf16DotActStride(k), groups = k / group;
  for (int64_t m = r0; m < r1; ++m) {
    for (int64_t g = 0; g < groups; ++g) {
      QuantizeGroup(x + m * k + g * group, group, q + m * stride + g * group,
                    scales + m * groups + g, sums + m * groups + g);
    }
    std::memset(q + m * stride + k, 0, (stride - k) * sizeof(int16_t));
  }
}

HWY_POP_ATTRIBUTES

#else  // not x86-64 GCC/Clang: never called (Int16ActsAvailable() is false), for the link.

void QuantizeActsInt16(const float*, int64_t, int64_t, int64_t, int64_t, int16_t*, float*, float*) {
}

#endif

}  // namespace tessera::kernels::cpu::fast
