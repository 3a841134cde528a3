// AVX-512 VNNI kernel of int8_dot_matmul.h: the K-quad panels run through the shared tile driver
// (panel_gemm.h) with int32 accumulators, a policy that broadcasts one u8 activation quad per row
// into `vpdpbusd` against each panel's 64-byte quad vector, and the W8A8 epilogue. Integer sums
// are exact, so neither the tiling nor the parking can change a result.
#if defined(__GNUC__) && !defined(__clang__)
// GCC 12 reports a false "may be used uninitialized" inside its own avx512fintrin.h (the
// _mm512_undefined_* placeholders of its mask intrinsics) once they are inlined here.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include "kernels/cpu/fast/int8_dot_matmul.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "kernels/cpu/fast/amx.h"
#include "kernels/cpu/fast/amx_panel_gemm.h"
#include "kernels/cpu/fast/avx2_panels.h"
#include "kernels/cpu/fast/column_panels.h"

#include "kernels/cpu/quant/activation_quant.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#include "hwy/aligned_allocator.h"
#include "hwy/base.h"
#define TESSERA_INT8_DOT_X86 1
#endif

namespace tessera::kernels::cpu::fast {
namespace {

int64_t PanelBytes(int64_t k) { return Int8PanelKTiles(k) * amx::kTileBytes; }

}  // namespace

bool Int8DotAvailable() {
  static const bool has = TESSERA_HAS_AVX512_WITH("avx512vnni");
  return has;
}

bool Int8DotUsable() { return Int8DotAvailable() || internal::Avx2PanelsAvailable(); }

const char* Int8DotKernelName() {
  if (!Int8DotUsable()) return "none";
  return !Int8DotAvailable() ? "avx2" : AmxInt8Usable() ? "amx" : "avx512-vnni";
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
  panels::RepackPanels<1>(reinterpret_cast<const uint8_t*>(q), k, n, k, PanelBytes(k), panels,
                          [](int64_t i, int64_t c) { return (i / 4) * 64 + c * 4 + (i % 4); });
  ComputeInt8AzpAdjustment(q, n, k, col_sums);
}

#if defined(TESSERA_INT8_DOT_X86)

}  // namespace tessera::kernels::cpu::fast

HWY_PUSH_ATTRIBUTES("avx512f,avx512vl,avx512bw,avx512vnni,avx2,fma")

#include "kernels/cpu/fast/panel_gemm.h"

namespace tessera::kernels::cpu::fast {
namespace {

// acc + Σ u8 × s8 per 4-byte group. Inline asm rather than _mm512_dpbusd_epi32: with 24 such
// accumulators GCC 12 copies every one through the stack on each step (the intrinsic's tied
// operand defeats its register allocator), which halved the kernel's rate.
inline __m512i Dpbusd(__m512i acc, __m512i u8, __m512i s8) {
  asm("vpdpbusd %2, %1, %0" : "+v"(acc) : "v"(u8), "v"(s8));
  return acc;
}

// One K quad of 16 columns is a 64-byte vector; a block of 512 quads is 32 KiB per panel.
// acts: the u8 activations as quads.
struct Int8Quads : internal::Int8TileArgs {
  using Acc = __m512i;
  using WVec = __m512i;
  static constexpr int64_t kStepBytes = 64;
  static constexpr int64_t kBlockSteps = 512;

  static Acc Zero() { return _mm512_setzero_si512(); }
  static Acc Load(const float* p) { return _mm512_loadu_si512(p); }
  static void Store(float* p, Acc v) { _mm512_storeu_si512(p, v); }
  static WVec LoadW(const uint8_t* p) { return _mm512_load_si512(p); }
  Int8Quads Rows(int64_t m0) const { return {At(m0)}; }
  template <int NV>
  HWY_INLINE void Madd(int i, int64_t t, const WVec* w, Acc* acc) const {
    const __m512i xv = _mm512_set1_epi32(acts[i * act_stride + t]);
    for (int j = 0; j < NV; ++j) acc[j] = Dpbusd(acc[j], xv, w[j]);
  }
  // y = sa · (sw · float(acc − (128 + azp)·Σqw)) (+ bias): the reference's operations and order;
  // the int32 arithmetic wraps, but the true result fits (Int8DotSupportsK), so it is exact.
  template <int MR, int NV>
  void Finish(const panels::TileJob& a, Acc (&acc)[MR][NV]) const {
    for (int j = 0; j < NV; ++j) {
      const __mmask16 m = a.store[j];
      const int64_t col = a.col0 + 16 * j;
      const __m512i sums = _mm512_maskz_loadu_epi32(m, col_sums + col);
      const __m512 sw = w_per_row ? _mm512_maskz_loadu_ps(m, w_scales + col)
                                  : _mm512_set1_ps(w_scales[0]);
      const __m512 b = a.bias != nullptr ? _mm512_maskz_loadu_ps(m, a.bias + 16 * j)
                                         : _mm512_setzero_ps();
      for (int i = 0; i < MR; ++i) {
        const int32_t zp = azp == nullptr ? 0 : azp[a_per_token ? i : 0];
        const __m512i corr = _mm512_mullo_epi32(_mm512_set1_epi32(128 + zp), sums);
        const __m512 f = _mm512_cvtepi32_ps(_mm512_sub_epi32(acc[i][j], corr));
        const __m512 sa = _mm512_set1_ps(a_scales[a_per_token ? i : 0]);
        __m512 v = _mm512_mul_ps(sa, _mm512_mul_ps(sw, f));
        if (a.bias != nullptr) v = _mm512_add_ps(v, b);
        _mm512_mask_storeu_ps(a.y + i * a.y_stride + 16 * j, m, v);
      }
    }
  }
};

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

}  // namespace

void Int8DotMatmulAvx512(const Int8DotWeights& w, const uint8_t* u8, const Int8Activations& act,
                         int64_t rows, const float* bias, float* y, int64_t n_begin,
                         int64_t n_end) {
  const Int8Quads kernel{{reinterpret_cast<const int32_t*>(u8), Int8DotActStride(w.k) / 4,
                          w.col_sums, w.scales, w.per_row, act.scales, act.azp, act.per_token}};
  panels::PanelMatmul(kernel, w.panels, PanelBytes(w.k), (w.k + 3) / 4, w.n, rows, bias, y,
                      n_begin, n_end);
}

HWY_POP_ATTRIBUTES

namespace {

// The AMX kernel against the AVX-512 one on a random 35 x 200 x 40 problem (two row tiles and a
// partial one, a partial K tile, a partial column pair; per-token scales and zero points, per-row
// weight scales, a bias): the same bits.
bool AmxInt8SelfCheck() {
  const int64_t n = 40, k = 200, rows = 35, stride = Int8DotActStride(k);
  uint32_t state = 777;
  auto next = [&] {
    state = state * 1664525u + 1013904223u;
    return state >> 8;
  };
  std::vector<int8_t> q(n * k), qa(rows * k);
  for (auto& v : q) v = static_cast<int8_t>(static_cast<int>(next() % 255) - 127);
  for (auto& v : qa) v = static_cast<int8_t>(static_cast<int>(next() % 256) - 128);
  std::vector<float> w_scales(n), a_scales(rows), bias(n);
  std::vector<int32_t> azp(rows), col_sums(n);
  for (auto& v : w_scales) v = 1e-3f * static_cast<float>(1 + next() % 100);
  for (auto& v : a_scales) v = 1e-2f * static_cast<float>(1 + next() % 100);
  for (auto& v : azp) v = static_cast<int32_t>(next() % 256) - 128;
  for (auto& v : bias) v = static_cast<float>(next() % 1000) * 1e-3f - 0.5f;
  const auto panels = hwy::AllocateAligned<uint8_t>(Int8QuadsBytes(n, k));
  RepackInt8Quads(q.data(), n, k, panels.get(), col_sums.data());
  std::vector<uint8_t> u8(rows * stride);
  Int8ActsToU8(qa.data(), k, 0, rows, u8.data());
  const Int8DotWeights w{panels.get(), col_sums.data(), w_scales.data(), true, n, k};
  Int8Activations a;
  a.scales = a_scales.data();
  a.azp = azp.data();
  a.per_token = true;
  std::vector<float> want(rows * n), got(rows * n);
  Int8DotMatmulAvx512(w, u8.data(), a, rows, bias.data(), want.data(), 0, n);
  internal::AmxInt8DotMatmul(w, u8.data(), a, rows, bias.data(), got.data(), 0, n);
  return std::memcmp(want.data(), got.data(), want.size() * sizeof(float)) == 0;
}

}  // namespace

bool AmxInt8Usable() {
  static const bool ok = Int8DotAvailable() && AmxPassesSelfCheck(AmxInt8SelfCheck, "int8");
  return ok;
}

void Int8DotMatmul(const Int8DotWeights& w, const uint8_t* u8, const Int8Activations& act,
                   int64_t rows, const float* bias, float* y, int64_t n_begin, int64_t n_end) {
  if (!Int8DotAvailable())
    return internal::Int8DotMatmulAvx2(w, u8, act, rows, bias, y, n_begin, n_end);
  if (AmxInt8Usable()) return internal::AmxInt8DotMatmul(w, u8, act, rows, bias, y, n_begin, n_end);
  Int8DotMatmulAvx512(w, u8, act, rows, bias, y, n_begin, n_end);
}

// Outside the AVX-512 attributes: it runs on every CPU and only then picks the AVX-512 path.
void QuantizeInt8PerTokenSymmetricU8(const float* x, int64_t k, int64_t r0, int64_t r1,
                                     float* scales, uint8_t* u8) {
  if (Int8DotAvailable()) return QuantizeSymmetricU8Avx512(x, k, r0, r1, scales, u8);
  QuantizeSymmetricU8Reference(x, k, r0, r1, scales, u8);
}

#else  // not x86-64 GCC/Clang: never called (Int8DotUsable() is false), defined for the link.

void QuantizeInt8PerTokenSymmetricU8(const float* x, int64_t k, int64_t r0, int64_t r1,
                                     float* scales, uint8_t* u8) {
  QuantizeSymmetricU8Reference(x, k, r0, r1, scales, u8);
}

bool AmxInt8Usable() { return false; }
void Int8DotMatmul(const Int8DotWeights&, const uint8_t*, const Int8Activations&, int64_t,
                   const float*, float*, int64_t, int64_t) {}

#endif

}  // namespace tessera::kernels::cpu::fast
