// Activations as int16 codes with one f32 scale per group of K, for the bf16-pair panels' int16
// route (quant_panel_matmul.h, QuantPanelInt16Matmul): one `vpdpwssd` per weight pair where exact
// f32 activations take two `vdpbf16ps` (the hi + lo split), within 2^-16 of each group's largest
// |x| (bf16 activations: 2^-9 of each |x|; coarser than that only for elements below 2^-7 of
// their group's maximum, such as a small channel beside an outlier).
//
// Per row and group g of `group` k: amax = max |x| over the group, d = amax / 32767 (f32),
// q = round-to-nearest-even(x · (32767 / amax)) in double, so |q| ≤ 32767 and x̂ = d · q is within
// 1.005 · 2^-16 · amax of x (plus 2^-134 for groups below amax ≈ 2^-111, whose d is an f32
// subnormal). The products with the panels' code values (INT4 q − 8, 2 · e2m1,
// byte codes of at most 6 bits) sum exactly in int32 over a group of up to 128 k; the panel kernel
// then folds d · that sum, and Σx̂ = d · Σq (Σq exact) for the integer formats' zero points. A
// group holding NaN or ±inf gets d = NaN (its q zero), so every output it reaches is NaN, as the
// split's are; an all-zero group gets d = 0. Rows are independent: a row's codes and scales are
// the same in any call (batch invariance).
#ifndef TESSERA_KERNELS_CPU_FAST_INT16_ACT_QUANT_H_
#define TESSERA_KERNELS_CPU_FAST_INT16_ACT_QUANT_H_

#include <cstdint>

namespace tessera::kernels::cpu::fast {

// One call's int16 activations as QuantizeActsInt16 writes them.
struct Int16Acts {
  const int16_t* q = nullptr;     // [rows, Bf16DotActStride(k)], zero past k
  const float* scales = nullptr;  // [rows, k / group]: d
  const float* sums = nullptr;    // [rows, k / group]: d · Σq
};

// Whether this CPU runs QuantizeActsInt16 (AVX-512 F / BW / VL; not under TESSERA_CPU_ISA=avx2).
bool Int16ActsAvailable();

// Rows [r0, r1) of x [rows, k] into q, scales and sums (shapes as Int16Acts; `group` a multiple of
// 16 dividing k). Requires Int16ActsAvailable().
void QuantizeActsInt16(const float* x, int64_t k, int64_t group, int64_t r0, int64_t r1, int16_t* q,
                       float* scales, float* sums);

// The same numbers one group at a time in portable C++ (x[0, n) to q[0, n), its d and d · Σq):
// the reference path's quantizer (QuantizedLinear's ForwardReference multiplies x̂ = d · q) and
// the test oracle of QuantizeActsInt16, which matches it bit for bit.
void QuantizeGroupInt16Scalar(const float* x, int64_t n, int16_t* q, float* scale, float* sum);

}  // namespace tessera::kernels::cpu::fast

#endif  // TESSERA_KERNELS_CPU_FAST_INT16_ACT_QUANT_H_
