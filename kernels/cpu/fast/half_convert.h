// f16 and bf16 tensors to f32 and back, vectorized with Highway's runtime dispatch. To f32: for the
// loader's io::ToFloat32 (every f16 / bf16 weight goes through it before online quantization, and
// the scalar loop was a fifth of an online NVFP4 load of TinyLlama-1.1B); bit for bit
// numeric::HalfToFloat and numeric::Bf16ToFloat: NaN payloads are kept, not quieted as F16C's
// vcvtph2ps would quiet a signalling NaN, so the conversion is integer arithmetic plus one exact
// power-of-two multiply. From f32: for the decoder's f16 / bf16 KV cache stores (each new
// position's K and V rows per layer; the scalar encoder was ~1% of a Qwen3-0.6B decode step, all
// of it on the thread the others wait for); bit for bit numeric::FloatToHalf and FloatToBf16
// (round to nearest even, f16 overflow to inf, subnormals kept, NaN quieted with its payload's top
// bits), in integer arithmetic plus one float add for f16 subnormals, on every target alike.
#ifndef TESSERA_KERNELS_CPU_FAST_HALF_CONVERT_H_
#define TESSERA_KERNELS_CPU_FAST_HALF_CONVERT_H_

#include <cstdint>

namespace tessera::kernels::cpu::fast {

// dst[i] = numeric::HalfToFloat(element i), i < n; src holds n little-endian 2-byte codes at any
// alignment.
void ConvertF16ToF32(const uint8_t* src, int64_t n, float* dst);

// dst[i] = numeric::Bf16ToFloat(element i), as above.
void ConvertBf16ToF32(const uint8_t* src, int64_t n, float* dst);

// dst[i] = numeric::FloatToHalf(src[i]), i < n.
void ConvertF32ToF16(const float* src, int64_t n, uint16_t* dst);

// dst[i] = numeric::FloatToBf16(src[i]), i < n.
void ConvertF32ToBf16(const float* src, int64_t n, uint16_t* dst);

}  // namespace tessera::kernels::cpu::fast

#endif  // TESSERA_KERNELS_CPU_FAST_HALF_CONVERT_H_
