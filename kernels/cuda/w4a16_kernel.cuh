// The W4A16 tensor-core kernel, templated on a dequantization functor (one per 4-bit format).
//
// Tiling: a block of eight warps computes a 16 x 16 or 16 x 32 tile of y (kTiles m16n8 tiles).
// The eight warps split K: warp w takes the 64-wide K chunks w, w + 8, w + 16, ..., so together
// they stream 256 contiguous weight bytes per column per round, and their partial tiles are
// summed through shared memory in warp order — a fixed order, so a row's result never depends on
// M (batch invariance) and decode (M = 1) still puts N / 32 or N / 16 blocks of eight warps on
// the GPU instead of N / 128 (the first version, all warps along N, kept an H100 at 3% of its
// bandwidth for M = 1, N = K = 8192). Each warp loads the next chunk's weights, scales and
// activations before it multiplies the current one, and the FP4 formats decode through a
// byte -> bf16x2 table. A deeper register ring (three or four chunks ahead: 228-255 registers,
// one block per SM) was tried on an H200 and ran 1.3-2x slower.
//
// Within a chunk, lane (g = lane / 4, t = lane % 4) owns the 16
// consecutive K elements [16t, 16t + 16): eight weight bytes (one uint2 load) per output column
// and 32 bytes of each of its two activation rows. The m16n8k16 fragments expect lane t to hold
// logical K columns {2t, 2t+1, 2t+8, 2t+9}; because a dot product does not care which K index
// sits in which MMA slot as long as A and B agree, mma step s maps those slots to the physical
// elements 16t + 4s + {0, 1, 2, 3} for both operands. The mapping depends only on t (never on g),
// so every (A row, B column) pair multiplies matching K elements. This keeps every lane's loads
// contiguous, lets one NVFP4/MXFP4/INT4 scale cover all 16 of its elements, and needs no
// ldmatrix.
#ifndef TESSERA_KERNELS_CUDA_W4A16_KERNEL_CUH_
#define TESSERA_KERNELS_CUDA_W4A16_KERNEL_CUH_

#include <cstdint>

#include "kernels/numeric/e8m0.h"
#include "kernels/numeric/fp4.h"
#include "kernels/numeric/fp8.h"
#include "kernels/numeric/half.h"

namespace tessera::kernels::cuda::w4a16 {

// Columns per block: kTiles m16n8 tiles, 8 * kTiles columns. Both widths compute every column
// with the same operations in the same order (the K split is per column), so the choice changes
// no result bit; W4A16Gemm picks it per launch from the grid's fit on the device (see there).
inline constexpr int kNarrowTiles = 2;  // 16 columns: 80 registers, three blocks per SM
inline constexpr int kWideTiles = 4;    // 32 columns: ~124 registers, two blocks per SM
inline constexpr int kWarpsPerBlock = 8;  // the K split
inline constexpr int kBlockM = 16;
inline constexpr int kChunk = 64;

// Two bf16 in one 32-bit MMA operand register, `lo` in the low half (lower K), each rounded to
// nearest-even by one hardware conversion (the same bits as numeric::FloatToBf16 except for
// NaN payloads).
__device__ __forceinline__ uint32_t PackBf16x2(float lo, float hi) {
  uint32_t r;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}

// a · b per bf16 half, rounded once (fma with −0 so that signed zeros survive; sm_80 has bf16x2
// fma but no bf16x2 mul).
__device__ __forceinline__ uint32_t MulBf16x2(uint32_t a, uint32_t b) {
  uint32_t r;
  asm("fma.rn.bf16x2 %0, %1, %2, %3;" : "=r"(r) : "r"(a), "r"(b), "r"(0x80008000u));
  return r;
}

// The E2M1 pair table in shared memory: entry `byte` holds bf16x2(E2M1(low nibble),
// E2M1(high nibble)). One lookup replaces two software decodes and conversions per byte.
inline constexpr int kE2m1PairTableSize = 256;
__device__ __forceinline__ void FillE2m1PairTable(uint32_t* table) {
  for (int i = threadIdx.x; i < kE2m1PairTableSize; i += blockDim.x) {
    const uint8_t byte = static_cast<uint8_t>(i);
    table[i] = PackBf16x2(numeric::DecodeE2m1(numeric::LowNibble(byte)),
                          numeric::DecodeE2m1(numeric::HighNibble(byte)));
  }
}

// NVFP4: e2m1 · ue4m3 scale of the 16-block, multiplied in bf16: both factors are exact in bf16
// and their product has at most 6 significant bits, so the bf16 product is exact — the same
// bits as the f32 product rounded to bf16.
struct Nvfp4Dequant {
  const uint8_t* block_scales;
  int64_t k;
  __device__ __forceinline__ uint32_t Scale(int64_t n, int64_t k0) const {
    const uint32_t s = numeric::FloatToBf16(
        numeric::DecodeUe4m3(block_scales[n * (k / 16) + k0 / 16]));
    return s | (s << 16);
  }
  __device__ __forceinline__ uint32_t Pair(uint8_t byte, uint32_t scale,
                                           const uint32_t* table) const {
    return MulBf16x2(table[byte], scale);
  }
};

// MXFP4: e2m1 · 2^(e − 127), a power of two, so the bf16 product is exact as well (a NaN scale
// gives NaN weights, as on the CPU).
struct Mxfp4Dequant {
  const uint8_t* scales;
  int64_t k;
  __device__ __forceinline__ uint32_t Scale(int64_t n, int64_t k0) const {
    const uint32_t s = numeric::FloatToBf16(numeric::DecodeE8m0(scales[n * (k / 32) + k0 / 32]));
    return s | (s << 16);
  }
  __device__ __forceinline__ uint32_t Pair(uint8_t byte, uint32_t scale,
                                           const uint32_t* table) const {
    return MulBf16x2(table[byte], scale);
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
  __device__ __forceinline__ uint32_t Pair(uint8_t byte, GroupParams p, const uint32_t*) const {
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

// Everything one lane reads for one K chunk: its weight words and scales for kTiles columns
// (zeros past N) and its 16 elements of activation rows g and g + 8 (zeros past M). The main
// loop loads chunk i + 1 into one of these while it multiplies chunk i, so the global-memory
// latency of weights, scales and activations overlaps the dequantization and the MMAs.
template <int kTiles, typename Scale>
struct ChunkOperands {
  uint2 w[kTiles];
  Scale scale[kTiles];
  uint32_t x_lo[8], x_hi[8];
};

template <int kTiles, typename Dequant, typename Scale>
__device__ __forceinline__ void LoadChunk(const uint8_t* __restrict__ packed,
                                          const Dequant& dequant, int64_t n, int64_t k,
                                          const uint16_t* __restrict__ x, int64_t m,
                                          int64_t row0, int64_t col0, int g, int64_t k0,
                                          ChunkOperands<kTiles, Scale>& c) {
#pragma unroll
  for (int nt = 0; nt < kTiles; ++nt) {
    const int64_t col = col0 + nt * 8 + g;
    c.w[nt] = col < n ? *reinterpret_cast<const uint2*>(packed + col * (k / 2) + k0 / 2)
                      : make_uint2(0, 0);
    c.scale[nt] = dequant.Scale(col < n ? col : 0, k0);
  }
  LoadActivations(x, m, k, row0 + g, k0, c.x_lo);
  LoadActivations(x, m, k, row0 + g + 8, k0, c.x_hi);
}

// One block's tile: columns [col_block · 8 · kTiles, +8 · kTiles) of rows [blockIdx.y · 16, +16).
template <typename Dequant, int kTiles>
__device__ __forceinline__ void W4A16Tile(const uint8_t* __restrict__ packed,
                                          const Dequant& dequant, float alpha, int64_t n,
                                          int64_t k, const uint16_t* __restrict__ x, int64_t m,
                                          const float* __restrict__ bias, float* __restrict__ y,
                                          int64_t col_block) {
  using Scale = decltype(dequant.Scale(0, 0));
  const int lane = threadIdx.x % 32;
  const int warp = threadIdx.x / 32;
  const int g = lane / 4;
  const int t = lane % 4;
  const int64_t row0 = static_cast<int64_t>(blockIdx.y) * kBlockM;
  const int64_t col0 = col_block * (8 * kTiles);
  __shared__ uint32_t e2m1_pairs[kE2m1PairTableSize];
  FillE2m1PairTable(e2m1_pairs);
  __syncthreads();

  float acc[kTiles][4] = {};
  constexpr int64_t kStride = static_cast<int64_t>(kChunk) * kWarpsPerBlock;
  int64_t kc = static_cast<int64_t>(warp) * kChunk;
  ChunkOperands<kTiles, Scale> next;
  if (kc < k) LoadChunk(packed, dequant, n, k, x, m, row0, col0, g, kc + 16 * t, next);
  for (; kc < k; kc += kStride) {
    const ChunkOperands<kTiles, Scale> cur = next;
    if (kc + kStride < k) {
      LoadChunk(packed, dequant, n, k, x, m, row0, col0, g, kc + kStride + 16 * t, next);
    }
#pragma unroll
    for (int nt = 0; nt < kTiles; ++nt) {
#pragma unroll
      for (int s = 0; s < 4; ++s) {
        const uint32_t word = s < 2 ? cur.w[nt].x : cur.w[nt].y;
        const uint8_t byte0 = static_cast<uint8_t>(word >> (16 * (s % 2)));
        const uint8_t byte1 = static_cast<uint8_t>(word >> (16 * (s % 2) + 8));
        // Columns past N load zero bytes; their results are never stored.
        const uint32_t b0 = dequant.Pair(byte0, cur.scale[nt], e2m1_pairs);  // 16t + 4s + {0,1}
        const uint32_t b1 = dequant.Pair(byte1, cur.scale[nt], e2m1_pairs);  // 16t + 4s + {2,3}
        const uint32_t a[4] = {cur.x_lo[2 * s], cur.x_hi[2 * s], cur.x_lo[2 * s + 1],
                               cur.x_hi[2 * s + 1]};
        MmaBf16(acc[nt], a, b0, b1);
      }
    }
  }

  // The K split's partial tiles, summed in warp order.
  __shared__ float partial[kWarpsPerBlock][kTiles * 4][32];
#pragma unroll
  for (int nt = 0; nt < kTiles; ++nt) {
#pragma unroll
    for (int i = 0; i < 4; ++i) partial[warp][nt * 4 + i][lane] = acc[nt][i];
  }
  __syncthreads();
  if (warp != 0) return;
#pragma unroll
  for (int nt = 0; nt < kTiles; ++nt) {
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      float sum = partial[0][nt * 4 + i][lane];
#pragma unroll
      for (int w = 1; w < kWarpsPerBlock; ++w) sum += partial[w][nt * 4 + i][lane];
      const int64_t row = row0 + g + (i / 2) * 8;
      const int64_t col = col0 + nt * 8 + 2 * t + (i % 2);
      if (row < m && col < n) {
        // Rounded twice, never fused into one FMA, so that both tile widths (and any
        // contraction choice of the compiler) store the same bits.
        float v = __fmul_rn(sum, alpha);
        if (bias != nullptr) v = __fadd_rn(v, bias[col]);
        y[row * n + col] = v;
      }
    }
  }
}

template <typename Dequant, int kTiles>
__global__ void __launch_bounds__(kWarpsPerBlock * 32)
    W4A16Kernel(const uint8_t* __restrict__ packed, Dequant dequant, float alpha, int64_t n,
                int64_t k, const uint16_t* __restrict__ x, int64_t m,
                const float* __restrict__ bias, float* __restrict__ y) {
  W4A16Tile<Dequant, kTiles>(packed, dequant, alpha, n, k, x, m, bias, y, blockIdx.x);
}

// Up to kMaxGroupMembers layers that read the same activations (q, k and v; gate and up) in one
// launch: their column blocks laid end to end along blockIdx.x, member i's ending at
// block_end[i]. Each column is computed as W4A16Kernel computes it (same bits); one launch
// instead of three puts a decode step's small-N layers on the GPU together.
inline constexpr int kMaxGroupMembers = 3;

template <typename Dequant>
struct GroupMember {
  const uint8_t* packed;
  Dequant dequant;
  float alpha;
  int64_t n;
  const float* bias;
  float* y;
};

template <typename Dequant>
struct Group {
  GroupMember<Dequant> member[kMaxGroupMembers];
  int64_t block_end[kMaxGroupMembers];  // unused entries hold the last one's end
};

// W4A16GemmGroup launches it with narrow tiles, and only where the whole grid is resident at once
// (by this kernel's own occupancy: ~92 registers, two blocks per SM; held to W4A16Kernel's 80,
// three blocks, it spilled on sm_80 / sm_89).
template <typename Dequant, int kTiles>
__global__ void __launch_bounds__(kWarpsPerBlock * 32)
    W4A16GroupKernel(Group<Dequant> group, int64_t k, const uint16_t* __restrict__ x,
                     int64_t m) {
  static_assert(kMaxGroupMembers == 3);
  const int64_t block = blockIdx.x;
  // Constant indices only, so that the members stay in the parameter space.
  const int i = block < group.block_end[0] ? 0 : block < group.block_end[1] ? 1 : 2;
  const auto pick = [i](const auto& a, const auto& b, const auto& c) {
    return i == 0 ? a : i == 1 ? b : c;
  };
  const GroupMember<Dequant>& g0 = group.member[0];
  const GroupMember<Dequant>& g1 = group.member[1];
  const GroupMember<Dequant>& g2 = group.member[2];
  const int64_t first = pick(int64_t{0}, group.block_end[0], group.block_end[1]);
  W4A16Tile<Dequant, kTiles>(pick(g0.packed, g1.packed, g2.packed),
                             pick(g0.dequant, g1.dequant, g2.dequant),
                             pick(g0.alpha, g1.alpha, g2.alpha), pick(g0.n, g1.n, g2.n), k, x, m,
                             pick(g0.bias, g1.bias, g2.bias), pick(g0.y, g1.y, g2.y),
                             block - first);
}

// out[n, k] bf16 = the MMA operand values of W4A16Kernel: one thread per weight byte (two
// elements), rows of K / 2 bytes.
template <typename Dequant>
__global__ void __launch_bounds__(256)
    DequantizeKernel(const uint8_t* __restrict__ packed, Dequant dequant, int64_t n, int64_t k,
                     uint32_t* __restrict__ out) {
  __shared__ uint32_t e2m1_pairs[kE2m1PairTableSize];
  FillE2m1PairTable(e2m1_pairs);
  __syncthreads();
  const int64_t bytes = n * (k / 2);
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < bytes;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t row = i / (k / 2), k0 = 2 * (i % (k / 2));
    out[i] = dequant.Pair(packed[i], dequant.Scale(row, k0), e2m1_pairs);
  }
}

}  // namespace tessera::kernels::cuda::w4a16

#endif  // TESSERA_KERNELS_CUDA_W4A16_KERNEL_CUH_
