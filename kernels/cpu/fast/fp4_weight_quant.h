// Online FP4 weight quantization (NVFP4 and MXFP4 plans applied to a bf16 / f16 / f32
// checkpoint at load) vectorized with Highway's runtime dispatch. The scalar per-element loop
// (numeric::EncodeE2m1 and SetE2m1Nibble for each weight) was most of an online NVFP4 load of
// TinyLlama-1.1B. Same bytes as that loop: block amax is exact in any order (NaN skipped, as
// std::max does), the block scales come from the same scalar expressions (numeric::EncodeUe4m3,
// EncodeE8m0Floor), w / denominator is the same IEEE division, and the E2M1 code is chosen by
// comparing |w / denominator| with the seven rounding boundaries, each strict or not as
// round-to-nearest-even breaks its tie, so every code equals numeric::EncodeE2m1(w / denominator).
#ifndef TESSERA_KERNELS_CPU_FAST_FP4_WEIGHT_QUANT_H_
#define TESSERA_KERNELS_CPU_FAST_FP4_WEIGHT_QUANT_H_

#include <cstdint>

namespace tessera::kernels::cpu::fast {

// packed holds n / 2 bytes (n even): element 2j of x / denominator in the low nibble of byte j,
// element 2j + 1 in the high nibble (quant-formats.md §8.1), each numeric::EncodeE2m1.
void FastEncodeE2m1Divide(const float* x, int64_t n, float denominator, uint8_t* packed);

// ModelOpt's NVFP4 recipe for `rows` rows of k weights (k a multiple of 16; a shorter tail of a
// row is left as it is, as the scalar loop left it), given the tensor's global scale α: per
// block of 16, sf = EncodeUe4m3(amax / (6 α)) (UE4M3(1) where that decodes
// to 0, an all-zero block), codes EncodeE2m1(w / (DecodeE4m3(sf) · α)). packed [rows, k / 2],
// block_scales [rows, k / 16].
void FastQuantizeNvfp4Weights(const float* w, int64_t rows, int64_t k, float global_scale,
                              uint8_t* packed, uint8_t* block_scales);

// The OCP MX FLOOR rule for `rows` rows of k weights (k a multiple of 32, a tail as above): per
// block of 32, e = EncodeE8m0Floor(amax, kE2m1EmaxPow2), codes EncodeE2m1(w / DecodeE8m0(e)).
// packed [rows, k / 2], block_scales [rows, k / 32].
void FastQuantizeMxfp4Weights(const float* w, int64_t rows, int64_t k, uint8_t* packed,
                              uint8_t* block_scales);

}  // namespace tessera::kernels::cpu::fast

#endif  // TESSERA_KERNELS_CPU_FAST_FP4_WEIGHT_QUANT_H_
