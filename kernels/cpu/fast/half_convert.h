// f16 and bf16 tensors to f32, vectorized with Highway's runtime dispatch, for the loader's
// io::ToFloat32 (every f16 / bf16 weight goes through it before online quantization, and the
// scalar loop was a fifth of an online NVFP4 load of TinyLlama-1.1B). Bit for bit
// numeric::HalfToFloat and numeric::Bf16ToFloat: NaN payloads are kept, not quieted as F16C's
// vcvtph2ps would quiet a signalling NaN, so the conversion is integer arithmetic plus one exact
// power-of-two multiply.
#ifndef TESSERA_KERNELS_CPU_FAST_HALF_CONVERT_H_
#define TESSERA_KERNELS_CPU_FAST_HALF_CONVERT_H_

#include <cstdint>

namespace tessera::kernels::cpu::fast {

// dst[i] = numeric::HalfToFloat(element i), i < n; src holds n little-endian 2-byte codes at any
// alignment.
void ConvertF16ToF32(const uint8_t* src, int64_t n, float* dst);

// dst[i] = numeric::Bf16ToFloat(element i), as above.
void ConvertBf16ToF32(const uint8_t* src, int64_t n, float* dst);

}  // namespace tessera::kernels::cpu::fast

#endif  // TESSERA_KERNELS_CPU_FAST_HALF_CONVERT_H_
