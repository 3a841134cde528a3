// The decoder's row-wise kernels (kernels/cpu/elementwise.h, kernels/cpu/rope.h) vectorized with
// Highway's runtime dispatch, same contracts. What stays bit-identical to the scalar kernels and
// what does not:
//  * FastRmsNorm: the sum of squares in double over vector lanes (each square is exact in double,
//    so only the double additions' order differs; the f32 result is the scalar kernel's except in
//    rare last-bit ties), then the same f32 multiplies.
//  * FastSwiGlu: exp from Highway's polynomial (within a few ulp of std::exp, its argument
//    clamped where std::exp overflows), so silu(g) · up agrees with the scalar kernel to a few ulp,
//    not bit for bit.
//  * FastAddInPlace and FastApplyRope: the same f32 operations (no fused multiply-add),
//  bit-identical.
//    RoPE takes the cos / sin tables of RopeCosSin (kernels/cpu/rope.h), so a row computes them
//    once for its q and k heads.
// Every element depends only on its own row, so results do not depend on which rows share a batch.
#ifndef TESSERA_KERNELS_CPU_FAST_FAST_ELEMENTWISE_H_
#define TESSERA_KERNELS_CPU_FAST_FAST_ELEMENTWISE_H_

#include <cstdint>

#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/rope.h"

namespace tessera::kernels::cpu::fast {

// out[i] = weight[i] · (x[i] / sqrt(mean(x²) + eps)) per row of n (x may alias out).
void FastRmsNorm(const float* x, const float* weight, int64_t rows, int64_t n, float eps,
                 float* out);

// out[i] = silu(gate[i]) · up[i] (out may alias gate or up).
void FastSwiGlu(const float* gate, const float* up, int64_t n, float* out);

// As SwiGluClamped (out may alias gate or up); exp from Highway's polynomial as FastSwiGlu, so
// within a few ulp of the scalar kernel.
void FastSwiGluClamped(const float* gate, const float* up, int64_t n, float alpha, float limit,
                       float* out);

// As GeluGlu (out may alias gate or up). kTanh: tanh from Highway's polynomial, agreeing with
// the scalar kernel to a few ulp; kErf: std::erf per element (Gemma 1 configs through
// transformers' "gelu" only), the scalar kernel's bits.
void FastGeluGlu(const float* gate, const float* up, int64_t n, GeluApprox approx, float* out);

// y[i] += x[i]
void FastAddInPlace(float* y, const float* x, int64_t n);

// As ApplyRope (both pairings; rope_dim ≤ head_dim, even) with the rope_dim / 2 entries of
// RopeCosSin for the row's position.
void FastApplyRope(float* x, int64_t heads, int64_t head_dim, int64_t rope_dim, const float* cos,
                   const float* sin, RopePairing pairing);

}  // namespace tessera::kernels::cpu::fast

#endif  // TESSERA_KERNELS_CPU_FAST_FAST_ELEMENTWISE_H_
