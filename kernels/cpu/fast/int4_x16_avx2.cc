// The 256-bit kernels of int4_x16.h for CPUs without AVX-512 VNNI: the same tiles and canonical
// order as int4_x16_vnni.cc, each 64-byte code vector as two 8-column ymm halves (the walk is
// int4_x16_avx2_tiles-inl.h, compiled here once per instruction set). Dispatched by int4_x16.cc
// after its CPUID checks (q8_act_vnni.cc).
//
// AVX2 (Zen 2 / Zen 3, Intel cores before Ice Lake without AVX-VNNI): llama.cpp's integer dot
// product in place of vpdpbusd. vpmaddubsw multiplies the unsigned code bytes by the signed
// activation bytes and adds adjacent pairs into int16 lanes, saturating; vpmaddwd by ones then
// adds the int16 pairs of a column into its int32 lane, which is vpdpbusd's sum of 4. The int16
// stage is exact as long as no lane leaves int16: a pair is at most 2·127·u_max (the quantizer
// clamps activation codes to ±127), so kFlush vpmaddubsw results of one column may be summed in
// int16 before the vpmaddwd (u_max 15: 8; 24, the E2M1 table: 4 of the 5 that fit; 31, Q5_K: 4;
// 63, Q6_K: 2). Byte codes (Q8_0 + 128, INT8 / INT3 / INT2, up to 255) would saturate a pair, so
// they are multiplied as the signed q = u − 128 with llama.cpp's sign trick, |q| times x with
// q's sign (a pair ≤ 2·128·127, widened by one vpmaddwd each), the sums starting at 128·Σx
// (Q8_0: at 0, its zero point being 128) so that each is still Σu·x: 1.25x the single-thread
// M = 1 rate and 1.15-1.4x at M = 16 and 128 of the nibble split they took before, Σu·x = Σlo·x
// + 16·Σhi·x (bench/README.md, thirteenth session).
//
// AVX-VNNI (Intel cores from Alder Lake): the 256-bit VEX vpdpbusd, no int16 stage; its EVEX twin
// (AVX-512 VL + VNNI) is the same instruction, which is how that kernel is tested and measured on
// the AVX-512 machines here.
//
// Every block integer is exact either way, the float epilogue is the VNNI kernel's instruction
// for instruction (8 lanes instead of 16), and the results are the portable loop's bits
// (tests/kernels/cpu/int4_x16_test_util.h runs every kernel).
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "hwy/base.h"
#include "kernels/cpu/fast/int4_x16.h"
#include "kernels/cpu/ggml_iq_dequant.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))

// Plain C++ (no intrinsics), so its inline functions stay outside the target attributes below.
#include "kernels/cpu/fast/int4_x16_layout.h"
#include "kernels/cpu/fast/tile_code_tables.h"

HWY_PUSH_ATTRIBUTES("avx2,fma,f16c")

namespace tessera::kernels::cpu::fast::internal {

#define TESSERA_X16_NS maddubs
#define TESSERA_X16_DPBUSD 0
#include "kernels/cpu/fast/int4_x16_avx2_tiles-inl.h"
#undef TESSERA_X16_NS
#undef TESSERA_X16_DPBUSD

// QuantizeRowQ8Block32 plus the code sums, bit-identical as int4_x16_vnni.cc's AVX-512 twin: amax
// ignores NaN as std::max does (vmaxps returns its second operand when the first is NaN), d and
// 1 / d are the same IEEE operations, vroundps rounds half to even as nearbyint does, NaN products
// become code 0.
void QuantizeActsInt4x16Avx2(const float* x, int64_t k, int64_t r0, int64_t r1, int8_t* q, float* d,
                             float* s, float* s2) {
  const int64_t blocks = k / 32;
  const __m256 lim = _mm256_set1_ps(127.0f), neg_lim = _mm256_set1_ps(-127.0f);
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF));
  const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  auto hsum = [](__m256i v) {
    __m128i t = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    t = _mm_add_epi32(t, _mm_shuffle_epi32(t, _MM_SHUFFLE(1, 0, 3, 2)));
    t = _mm_add_epi32(t, _mm_shuffle_epi32(t, _MM_SHUFFLE(2, 3, 0, 1)));
    return static_cast<float>(_mm_cvtsi128_si32(t));
  };
  for (int64_t r = r0; r < r1; ++r) {
    for (int64_t b = 0; b < blocks; ++b) {
      const float* xb = x + r * k + b * 32;
      __m256 v[4];
      for (int i = 0; i < 4; ++i) v[i] = _mm256_loadu_ps(xb + 8 * i);
      __m256 amax = _mm256_max_ps(_mm256_and_ps(v[0], abs_mask), _mm256_setzero_ps());
      for (int i = 1; i < 4; ++i) amax = _mm256_max_ps(_mm256_and_ps(v[i], abs_mask), amax);
      __m128 m = _mm_max_ps(_mm256_castps256_ps128(amax), _mm256_extractf128_ps(amax, 1));
      m = _mm_max_ps(m, _mm_movehl_ps(m, m));
      m = _mm_max_ss(m, _mm_shuffle_ps(m, m, 1));
      const float db = _mm_cvtss_f32(m) / 127.0f;
      const float id = db != 0.0f ? 1.0f / db : 0.0f;
      const __m256 idv = _mm256_set1_ps(id);
      __m256i c[4];
      for (int i = 0; i < 4; ++i) {
        __m256 t = _mm256_round_ps(_mm256_mul_ps(v[i], idv),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        const __m256 ordered = _mm256_cmp_ps(t, t, _CMP_ORD_Q);
        t = _mm256_min_ps(_mm256_max_ps(t, neg_lim), lim);
        c[i] = _mm256_and_si256(_mm256_cvtps_epi32(t), _mm256_castps_si256(ordered));
      }
      const __m256i bytes = _mm256_permutevar8x32_epi32(
          _mm256_packs_epi16(_mm256_packs_epi32(c[0], c[1]), _mm256_packs_epi32(c[2], c[3])),
          order);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + r * k + b * 32), bytes);
      d[r * blocks + b] = db;
      const __m256i first = _mm256_add_epi32(c[0], c[1]), second = _mm256_add_epi32(c[2], c[3]);
      if (s2 != nullptr) {
        s[r * blocks + b] = hsum(first);
        s2[r * blocks + b] = hsum(second);
      } else {
        s[r * blocks + b] = hsum(_mm256_add_epi32(first, second));
      }
    }
  }
}

void Int4x16MatmulAvx2(const FastWeights& w, const Int4x16Acts& a, const int32_t* zero_sums,
                       const float* bias, float* y, int64_t n_begin, int64_t n_end) {
  maddubs::MatmulTiles(w, a, zero_sums, bias, y, n_begin, n_end);
}

}  // namespace tessera::kernels::cpu::fast::internal

HWY_POP_ATTRIBUTES

// The same walk with the 256-bit vpdpbusd: VEX (AVX-VNNI: Intel cores from Alder Lake, without
// AVX-512) and its EVEX twin (AVX-512 VL + VNNI), which runs the same instruction on the
// AVX-512 machines here.
HWY_PUSH_ATTRIBUTES("avx2,fma,f16c,avxvnni")
namespace tessera::kernels::cpu::fast::internal {
#define TESSERA_X16_NS vex_vnni
#define TESSERA_X16_DPBUSD 1
#include "kernels/cpu/fast/int4_x16_avx2_tiles-inl.h"
#undef TESSERA_X16_NS
#undef TESSERA_X16_DPBUSD
void Int4x16MatmulAvxVnni(const FastWeights& w, const Int4x16Acts& a, const int32_t* zero_sums,
                          const float* bias, float* y, int64_t n_begin, int64_t n_end) {
  vex_vnni::MatmulTiles(w, a, zero_sums, bias, y, n_begin, n_end);
}
}  // namespace tessera::kernels::cpu::fast::internal
HWY_POP_ATTRIBUTES

HWY_PUSH_ATTRIBUTES("avx2,fma,f16c,avx512f,avx512vl,avx512vnni")
namespace tessera::kernels::cpu::fast::internal {
#define TESSERA_X16_NS evex_vnni
#define TESSERA_X16_DPBUSD 2
#include "kernels/cpu/fast/int4_x16_avx2_tiles-inl.h"
#undef TESSERA_X16_NS
#undef TESSERA_X16_DPBUSD
void Int4x16MatmulAvxVnniEvex(const FastWeights& w, const Int4x16Acts& a,
                              const int32_t* zero_sums, const float* bias, float* y,
                              int64_t n_begin, int64_t n_end) {
  evex_vnni::MatmulTiles(w, a, zero_sums, bias, y, n_begin, n_end);
}
}  // namespace tessera::kernels::cpu::fast::internal
HWY_POP_ATTRIBUTES

#else  // not x86-64 GCC/Clang

namespace tessera::kernels::cpu::fast::internal {
void Int4x16MatmulAvx2(const FastWeights&, const Int4x16Acts&, const int32_t*, const float*, float*,
                       int64_t, int64_t) {}
void QuantizeActsInt4x16Avx2(const float*, int64_t, int64_t, int64_t, int8_t*, float*, float*,
                             float*) {}
void Int4x16MatmulAvxVnni(const FastWeights&, const Int4x16Acts&, const int32_t*, const float*,
                          float*, int64_t, int64_t) {}
void Int4x16MatmulAvxVnniEvex(const FastWeights&, const Int4x16Acts&, const int32_t*,
                              const float*, float*, int64_t, int64_t) {}
}  // namespace tessera::kernels::cpu::fast::internal

#endif
