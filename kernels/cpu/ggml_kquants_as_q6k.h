// GGUF's 2- and 3-bit K-quants rewritten as Q6_K blocks, so that the CPU paths that take Q6_K with
// exact activations (the quantized panels, FastMatmul) run them; with int8 activations they have
// their own tiles (int4_x16.h kQ3_Kx16, kQ2_Kx16), which give these rewrites' integers.
// Q6_K's weight is (d·sc)·(u − 32) with an int8 scale per 16 values and u in [0, 63].
// * Q3_K: (d·(sc − 32))·q with a 6-bit scale per 16 values and q in [−4, 3] is exactly that form:
//   u = q + 32, the scale sc − 32 and the f16 d carry over, and ggml evaluates both products in
//   the same order, so the rewrite dequantizes to the same floats bit for bit.
// * Q2_K: (d·sc)·q − dmin·m with 4-bit sc and m per 16 values and q in [0, 3] is affine. Its
//   product term becomes Q6_K (u = q + 32, scale sc, the f16 d) and its offset term −dmin·m (exact
//   in f32: 11 by 4 bits) one f32 per 16 values, which the caller adds as a second, 16x shorter
//   product with the sums of x over each 16: Σ w·x = Σ (d·sc)·q·x − Σ_16 dmin·m·Σ_16 x. The Q6_K
//   value plus its offset is ggml's (d·sc)·q − dmin·m bit for bit (the same two roundings).
// Cost: with exact activations they run the Q6_K panels at 6.5625 bits per weight (plus Q2_K's
// offsets, 2 more): 1.9x Q3_K's 3.4375 and 3.3x Q2_K's 2.625.
#ifndef TESSERA_KERNELS_CPU_GGML_KQUANTS_AS_Q6K_H_
#define TESSERA_KERNELS_CPU_GGML_KQUANTS_AS_Q6K_H_

#include <cstdint>

#include "kernels/cpu/ggml_dequant.h"

namespace tessera::kernels::cpu {

// Whether a GGUF block type has a Q6_K rewrite below (Q3_K and Q2_K), which DenseLinear runs with
// exact activations (with int8 ones they take their own tiles).
inline bool RunsAsQ6K(GgmlBlockType type) {
  return type == GgmlBlockType::kQ3_K || type == GgmlBlockType::kQ2_K;
}

inline constexpr int64_t kQ2KBlockBytes = 84;
inline constexpr int64_t kQ3KBlockBytes = 110;
inline constexpr int64_t kQ6KBlockBytes = 210;

// Writes `blocks` Q6_K blocks (210 bytes each) at `q6k` from as many Q3_K blocks (110 bytes
// each) at `q3k`; DequantizeGgmlBlocks gives the same floats for both.
void Q3KBlocksAsQ6K(const uint8_t* q3k, int64_t blocks, uint8_t* q6k);

// Writes `blocks` Q6_K blocks at `q6k` (the product terms) and 16 floats per block at `offsets`
// (−dmin·m of each 16 values, in order) from as many Q2_K blocks (84 bytes each) at `q2k`.
void Q2KBlocksAsQ6K(const uint8_t* q2k, int64_t blocks, uint8_t* q6k, float* offsets);

}  // namespace tessera::kernels::cpu

#endif  // TESSERA_KERNELS_CPU_GGML_KQUANTS_AS_Q6K_H_
