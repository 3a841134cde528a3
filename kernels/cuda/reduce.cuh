// Warp- and block-level reductions shared by the row-wise kernels (activation quantization,
// RMSNorm). Max reductions are exact and order-independent, so kernels built on them produce the
// same scales as the CPU reference bit for bit; sums are used only where the tests allow a
// tolerance. fmaxf ignores NaN operands, which matches std::max(amax, fabs(x)) on the CPU
// (a NaN element never becomes the running maximum).
#ifndef TESSERA_KERNELS_CUDA_REDUCE_CUH_
#define TESSERA_KERNELS_CUDA_REDUCE_CUH_

namespace tessera::kernels::cuda {

inline constexpr int kWarpSize = 32;

__device__ __forceinline__ float WarpMax(float v) {
  for (int offset = kWarpSize / 2; offset > 0; offset /= 2) {
    v = fmaxf(v, __shfl_xor_sync(0xFFFFFFFFu, v, offset));
  }
  return v;
}

template <typename T>
__device__ __forceinline__ T WarpSum(T v) {
  for (int offset = kWarpSize / 2; offset > 0; offset /= 2) {
    v += __shfl_xor_sync(0xFFFFFFFFu, v, offset);
  }
  return v;
}

// Block-wide max over every thread's `v`; every thread gets the result. blockDim.x must be a
// multiple of 32 and at most 1024. Contains __syncthreads: call from all threads.
__device__ __forceinline__ float BlockMax(float v) {
  __shared__ float partial[kWarpSize];
  const int lane = threadIdx.x % kWarpSize;
  const int warp = threadIdx.x / kWarpSize;
  v = WarpMax(v);
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  const int warps = blockDim.x / kWarpSize;
  v = lane < warps ? partial[lane] : 0.0f;  // every value reduced here is >= 0
  v = WarpMax(v);
  __syncthreads();  // `partial` may be reused by a following reduction
  return v;
}

// Block-wide sum (same contract as BlockMax).
template <typename T>
__device__ __forceinline__ T BlockSum(T v) {
  __shared__ T partial[kWarpSize];
  const int lane = threadIdx.x % kWarpSize;
  const int warp = threadIdx.x / kWarpSize;
  v = WarpSum(v);
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  const int warps = blockDim.x / kWarpSize;
  v = lane < warps ? partial[lane] : T(0);
  v = WarpSum(v);
  __syncthreads();
  return v;
}

}  // namespace tessera::kernels::cuda

#endif  // TESSERA_KERNELS_CUDA_REDUCE_CUH_
