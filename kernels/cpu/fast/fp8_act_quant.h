// FP8 E4M3 activation quantization (the dynamic per-token, per-token-group and static schemes of
// kernels/cpu/quant/activation_quant.h) vectorized with Highway's runtime dispatch, for the CPU
// W8A8 layers. Same contracts and the same bytes: amax is exact in any order (NaN skipped, as
// std::max does there), the scales come from the same scalar expressions, x / s is the same IEEE
// division, and the E4M3 rounding is exact arithmetic (clamp to 448, a magic-number add that
// rounds to the code's quantum in round-to-nearest-even, then the bits rebiased), so every code
// equals numeric::EncodeE4m3(x / s). The scalar encoder was ~5% of an FP8 W8A8 decode step,
// on one thread while the other waited.
#ifndef TESSERA_KERNELS_CPU_FAST_FP8_ACT_QUANT_H_
#define TESSERA_KERNELS_CPU_FAST_FP8_ACT_QUANT_H_

#include <cstdint>

namespace tessera::kernels::cpu::fast {

// q[i] = EncodeE4m3(x[i] / scale), i < n. Every function here also writes, when `decoded` is
// not null, decoded[i] = DecodeE4m3(q[i]) (the value the W8A8 kernels multiply; NaN codes give the
// quiet NaN with the code's sign), from the same registers.
void FastEncodeE4m3Divide(const float* x, int64_t n, float scale, uint8_t* q,
                          float* decoded = nullptr);

// As QuantizeFp8PerToken (kernels/cpu/quant/activation_quant.h).
void FastQuantizeFp8PerToken(const float* x, int64_t rows, int64_t k, const float* scale_ub,
                             float min_scale, uint8_t* q, float* scales, float* decoded = nullptr);

// As QuantizeFp8PerTokenGroup.
void FastQuantizeFp8PerTokenGroup(const float* x, int64_t rows, int64_t k, int64_t group_size,
                                  float eps, uint8_t* q, float* scales, float* decoded = nullptr);

}  // namespace tessera::kernels::cpu::fast

#endif  // TESSERA_KERNELS_CPU_FAST_FP8_ACT_QUANT_H_
