// The NVFP4 quantization of one block of 16 activations, written once as a TESSERA_HD function so
// that the CUDA quantizers (activation_quant_entry.cu: the row-major form and the form that writes
// cuBLASLt's swizzled scales) run the same code the host tests check against the CPU reference
// kernels::cpu::QuantizeNvfp4 bit for bit. The formula and its f32 operation order are the CPU
// reference's (quant-formats.md §8.3):
//   amax = max |v|  (NaN elements skipped, as std::max / fmaxf skip them)
//   sf   = e4m3_rn_satfinite((g * amax) / 6)
//   q    = e2m1_rn_satfinite(v * (g / fp32(sf))),   q = 0 when sf == 0
// with the integer encoders of kernels/numeric, so every arch and the host agree.
#ifndef TESSERA_KERNELS_CUDA_NVFP4_BLOCK_QUANT_H_
#define TESSERA_KERNELS_CUDA_NVFP4_BLOCK_QUANT_H_

#include <cstdint>

#include "kernels/numeric/fp4.h"
#include "kernels/numeric/fp8.h"
#include "kernels/numeric/hd.h"

// Full unrolling keeps the 16 values in registers on the device (a dynamically indexed local
// array would go to local memory, which the ptxas report test forbids). Host compilers get
// nothing: GCC warns about unknown pragmas under -Wall.
#if defined(__CUDA_ARCH__)
#define TESSERA_UNROLL _Pragma("unroll")
#else
#define TESSERA_UNROLL
#endif

namespace tessera::kernels::cuda {

inline constexpr int kNvfp4BlockElems = 16;

// One quantized block: the UE4M3 scale code and 16 E2M1 codes as 8 bytes, byte j holding element
// 2j in its low nibble and 2j + 1 in its high nibble (the checkpoint and cuBLASLt CUDA_R_4F_E2M1
// order), bytes little-endian in the two words (so a uint2 store writes them in memory order).
struct Nvfp4Block {
  uint8_t scale = 0;
  uint32_t codes[2] = {0u, 0u};
};

// Byte j (0..7) of the block's codes.
constexpr TESSERA_HD uint8_t Nvfp4BlockByte(const Nvfp4Block& b, int j) {
  return static_cast<uint8_t>(b.codes[j / 4] >> (8 * (j % 4)));
}

// Quantizes v[0..15] with the global scale g (a divisor).
inline TESSERA_HD Nvfp4Block QuantizeNvfp4Block(const float (&v)[kNvfp4BlockElems], float g) {
  float amax = 0.0f;
  TESSERA_UNROLL
  for (int j = 0; j < kNvfp4BlockElems; ++j) {
    // |v| by clearing the sign bit; `amax < a ? a : amax` keeps amax when a is NaN, like the
    // CPU's std::max(amax, |v|).
    const float a = numeric::BitsToFloat(numeric::FloatToBits(v[j]) & 0x7FFFFFFFu);
    amax = amax < a ? a : amax;
  }
  Nvfp4Block out;
  // (g * amax) / 6 in this order, as the CPU reference evaluates g * amax / kE2m1Max.
  out.scale = numeric::EncodeUe4m3(g * amax / numeric::kE2m1Max);
  const float sf = numeric::DecodeUe4m3(out.scale);
  if (sf == 0.0f) return out;
  const float multiplier = g / sf;
  TESSERA_UNROLL
  for (int j = 0; j < kNvfp4BlockElems; j += 2) {
    const uint32_t byte = numeric::PackE2m1Pair(numeric::EncodeE2m1(v[j] * multiplier),
                                                numeric::EncodeE2m1(v[j + 1] * multiplier));
    out.codes[j / 8] |= byte << (8 * ((j / 2) % 4));
  }
  return out;
}

}  // namespace tessera::kernels::cuda

#endif  // TESSERA_KERNELS_CUDA_NVFP4_BLOCK_QUANT_H_
