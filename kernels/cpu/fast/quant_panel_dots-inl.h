// The pair form's dot-product steps for quant_panel_matmul.cc, internal to it: how a call's
// activations reach the tiles (Acts), each form's accumulator type, and one pair vector of the
// panels into a row's partial sums (`vdpbf16ps` on bf16 pairs, `vpdpwssd` on int16 pairs).
// Include it only inside that file's AVX-512 region (its HWY_PUSH_ATTRIBUTES, VNNI and BF16
// included), after <immintrin.h> and hwy/base.h.
#ifndef TESSERA_KERNELS_CPU_FAST_QUANT_PANEL_DOTS_INL_H_
#define TESSERA_KERNELS_CPU_FAST_QUANT_PANEL_DOTS_INL_H_

#include <cstdint>

namespace tessera::kernels::cpu::fast::panel_dots {

// How a call's activations reach the tiles: f32 x on f32-form panels (FMA), bf16 pairs
// (RoundActsToBf16) on bf16-pair panels, the hi + lo split or hi alone, or int16 pairs
// (QuantizeActsInt16) on the same panels.
enum class Acts { kF32, kSplit, kBf16, kInt16 };

// The accumulators' type: int32 lanes for int16 activations (as f32 registers cast back and forth,
// GCC copied and spilled every `vpdpwssd` accumulator: M = 128 ran below the split's rate).
template <Acts A>
struct AccOf {
  using Type = __m512;
};
template <>
struct AccOf<Acts::kInt16> {
  using Type = __v16si;
};
template <Acts A>
using Acc = typename AccOf<A>::Type;

template <Acts A>
HWY_INLINE Acc<A> ZeroAcc() {
  if constexpr (A == Acts::kInt16) {
    return (__v16si)_mm512_setzero_si512();
  } else {
    return _mm512_setzero_ps();
  }
}

// acc += the int16 pair products of x and w (`vpdpwssd`) on 16 x int32 vectors, GCC's builtin
// called directly: through the intrinsic (__m512i is 8 x int64, the builtin's operands 16 x
// int32) GCC 12 copied every accumulator to another register and spilled it at each step, and
// M = 128 ran at 0.85x the split's rate with half its dot products.
HWY_INLINE __v16si DotInt16Pairs(__v16si acc, __v16si x, __v16si w) {
#if defined(__clang__)
  return (__v16si)_mm512_dpwssd_epi32((__m512i)acc, (__m512i)x, (__m512i)w);
#else
  return __builtin_ia32_vpdpwssd_v16si(acc, x, w);
#endif
}

// One pair vector of each of NV panels (pair pp of the group, kOdd its parity) into row i's
// partial sums a and b.
template <Acts A, int NV, bool kOdd>
HWY_INLINE void PairMadd(const int32_t* hg, const int32_t* lg, const __m512i* w, Acc<A>* a,
                         Acc<A>* b) {
  Acc<A>* acc = kOdd ? b : a;
  if constexpr (A == Acts::kInt16) {
    const __v16si xq = (__v16si)_mm512_set1_epi32(*hg);
    for (int j = 0; j < NV; ++j) acc[j] = DotInt16Pairs(acc[j], xq, (__v16si)w[j]);
  } else if constexpr (A == Acts::kSplit) {
    const __m512bh xh = (__m512bh)_mm512_set1_epi32(*hg);
    const __m512bh xl = (__m512bh)_mm512_set1_epi32(*lg);
    for (int j = 0; j < NV; ++j) a[j] = _mm512_dpbf16_ps(a[j], xh, (__m512bh)w[j]);
    for (int j = 0; j < NV; ++j) b[j] = _mm512_dpbf16_ps(b[j], xl, (__m512bh)w[j]);
  } else {
    const __m512bh xh = (__m512bh)_mm512_set1_epi32(*hg);
    for (int j = 0; j < NV; ++j) acc[j] = _mm512_dpbf16_ps(acc[j], xh, (__m512bh)w[j]);
  }
}

}  // namespace tessera::kernels::cpu::fast::panel_dots

#endif  // TESSERA_KERNELS_CPU_FAST_QUANT_PANEL_DOTS_INL_H_
