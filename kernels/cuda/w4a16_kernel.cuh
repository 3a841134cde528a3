// The W4A16 tensor-core kernel, templated on a dequantization functor (one per 4-bit format).
//
// Tiling: a warp computes a 16 x 32 tile of y (four m16n8 tiles), a block of four warps 16 x 128.
// K advances in chunks of 64. Within a chunk, lane (g = lane / 4, t = lane % 4) owns the 16
// consecutive K elements [16t, 16t + 16): eight weight bytes (one uint2 load) per output column
// and 32 bytes of each of its two activation rows. The m16n8k16 fragments expect lane t to hold
// logical K columns {2t, 2t+1, 2t+8, 2t+9}; because a dot product does not care which K index
// sits in which MMA slot as long as A and B agree, mma step s maps those slots to the physical
// elements 16t + 4s + {0, 1, 2, 3} for both operands. The mapping depends only on t (never on g),
// so every (A row, B column) pair multiplies matching K elements. This keeps every lane's loads
// contiguous, lets one NVFP4/MXFP4/INT4 scale cover all 16 of its elements, and needs neither
// shared memory nor ldmatrix.
#ifndef TESSERA_KERNELS_CUDA_W4A16_KERNEL_CUH_
#define TESSERA_KERNELS_CUDA_W4A16_KERNEL_CUH_

#include <cstdint>

#include "kernels/numeric/e8m0.h"
#include "kernels/numeric/fp4.h"
#include "kernels/numeric/fp8.h"
#include "kernels/numeric/half.h"

namespace tessera::kernels::cuda::w4a16 {

inline constexpr int kWarpN = 32;     // columns per warp
inline constexpr int kTilesN = kWarpN / 8;
inline constexpr int kWarpsPerBlock = 4;
inline constexpr int kBlockN = kWarpN * kWarpsPerBlock;
inline constexpr int kBlockM = 16;
inline constexpr int kChunk = 64;

// Two bf16 bit patterns in one 32-bit MMA operand register, `lo` in the low half (lower K).
__device__ __forceinline__ uint32_t PackBf16x2(float lo, float hi) {
  return static_cast<uint32_t>(numeric::FloatToBf16(lo)) |
         (static_cast<uint32_t>(numeric::FloatToBf16(hi)) << 16);
}

// NVFP4: e2m1 · fp32(ue4m3 scale of the 16-block). Exact in bf16.
struct Nvfp4Dequant {
  const uint8_t* block_scales;
  int64_t k;
  __device__ __forceinline__ float Scale(int64_t n, int64_t k0) const {
    return numeric::DecodeUe4m3(block_scales[n * (k / 16) + k0 / 16]);
  }
  __device__ __forceinline__ uint32_t Pair(uint8_t byte, float scale) const {
    return PackBf16x2(numeric::DecodeE2m1(numeric::LowNibble(byte)) * scale,
                      numeric::DecodeE2m1(numeric::HighNibble(byte)) * scale);
  }
};

// MXFP4: e2m1 · 2^(e − 127). Exact in bf16 (a NaN scale gives NaN weights, as on the CPU).
struct Mxfp4Dequant {
  const uint8_t* scales;
  int64_t k;
  __device__ __forceinline__ float Scale(int64_t n, int64_t k0) const {
    return numeric::DecodeE8m0(scales[n * (k / 32) + k0 / 32]);
  }
  __device__ __forceinline__ uint32_t Pair(uint8_t byte, float scale) const {
    return PackBf16x2(numeric::DecodeE2m1(numeric::LowNibble(byte)) * scale,
                      numeric::DecodeE2m1(numeric::HighNibble(byte)) * scale);
  }
};

// INT4: (q − zero) · scale in f32 (the CPU reference's order), rounded to bf16.
struct Int4Dequant {
  const float* scales;
  const float* zeros;
  int64_t groups;
  int64_t group_size;
  struct GroupParams {
    float scale, zero;
  };
  __device__ __forceinline__ GroupParams Scale(int64_t n, int64_t k0) const {
    const int64_t idx = n * groups + k0 / group_size;
    return {scales[idx], zeros[idx]};
  }
  __device__ __forceinline__ uint32_t Pair(uint8_t byte, GroupParams p) const {
    return PackBf16x2((static_cast<float>(numeric::LowNibble(byte)) - p.zero) * p.scale,
                      (static_cast<float>(numeric::HighNibble(byte)) - p.zero) * p.scale);
  }
};

__device__ __forceinline__ void MmaBf16(float (&d)[4], const uint32_t (&a)[4], uint32_t b0,
                                        uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
      "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// Loads the 16 bf16 of row `row` at [k0, k0 + 16) as eight 32-bit words (zeros past M).
__device__ __forceinline__ void LoadActivations(const uint16_t* x, int64_t m, int64_t k,
                                                int64_t row, int64_t k0, uint32_t (&w)[8]) {
  uint4 lo = make_uint4(0, 0, 0, 0), hi = make_uint4(0, 0, 0, 0);
  if (row < m) {
    const uint4* p = reinterpret_cast<const uint4*>(x + row * k + k0);
    lo = p[0];
    hi = p[1];
  }
  w[0] = lo.x; w[1] = lo.y; w[2] = lo.z; w[3] = lo.w;
  w[4] = hi.x; w[5] = hi.y; w[6] = hi.z; w[7] = hi.w;
}

template <typename Dequant>
__global__ void __launch_bounds__(kWarpsPerBlock * 32)
    W4A16Kernel(const uint8_t* __restrict__ packed, Dequant dequant, float alpha, int64_t n,
                int64_t k, const uint16_t* __restrict__ x, int64_t m,
                const float* __restrict__ bias, float* __restrict__ y) {
  const int lane = threadIdx.x % 32;
  const int warp = threadIdx.x / 32;
  const int g = lane / 4;
  const int t = lane % 4;
  const int64_t row0 = static_cast<int64_t>(blockIdx.y) * kBlockM;
  const int64_t col0 = static_cast<int64_t>(blockIdx.x) * kBlockN + warp * kWarpN;

  float acc[kTilesN][4] = {};
  for (int64_t kc = 0; kc < k; kc += kChunk) {
    const int64_t k0 = kc + 16 * t;  // this lane's 16 elements
    uint32_t x_lo[8], x_hi[8];       // rows g and g + 8
    LoadActivations(x, m, k, row0 + g, k0, x_lo);
    LoadActivations(x, m, k, row0 + g + 8, k0, x_hi);
#pragma unroll
    for (int nt = 0; nt < kTilesN; ++nt) {
      const int64_t col = col0 + nt * 8 + g;
      uint2 wbytes = make_uint2(0, 0);
      if (col < n) wbytes = *reinterpret_cast<const uint2*>(packed + col * (k / 2) + k0 / 2);
      const auto scale = dequant.Scale(col < n ? col : 0, k0);
#pragma unroll
      for (int s = 0; s < 4; ++s) {
        const uint32_t word = s < 2 ? wbytes.x : wbytes.y;
        const uint8_t byte0 = static_cast<uint8_t>(word >> (16 * (s % 2)));
        const uint8_t byte1 = static_cast<uint8_t>(word >> (16 * (s % 2) + 8));
        // Columns past N load zero bytes; their results are never stored.
        const uint32_t b0 = dequant.Pair(byte0, scale);  // elements 16t + 4s + {0, 1}
        const uint32_t b1 = dequant.Pair(byte1, scale);  // elements 16t + 4s + {2, 3}
        const uint32_t a[4] = {x_lo[2 * s], x_hi[2 * s], x_lo[2 * s + 1], x_hi[2 * s + 1]};
        MmaBf16(acc[nt], a, b0, b1);
      }
    }
  }
#pragma unroll
  for (int nt = 0; nt < kTilesN; ++nt) {
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int64_t row = row0 + g + (i / 2) * 8;
      const int64_t col = col0 + nt * 8 + 2 * t + (i % 2);
      if (row < m && col < n) {
        float v = acc[nt][i] * alpha;
        if (bias != nullptr) v += bias[col];
        y[row * n + col] = v;
      }
    }
  }
}

}  // namespace tessera::kernels::cuda::w4a16

#endif  // TESSERA_KERNELS_CUDA_W4A16_KERNEL_CUH_
