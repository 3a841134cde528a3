// Entry point of the activation-quantization kernel family: argument validation, launch
// configuration, and the kernels themselves. There is no arch cascade: the encoders are the
// integer kernels/numeric functions, identical on sm_80 .. sm_120, so one generic kernel per
// format serves every arch (the cvt.*.e4m3x2 / e2m1x2 instructions would be faster on sm_89+ /
// sm_100a but cannot be shared with the CPU reference).
#include <cstdint>

#include "absl/strings/str_cat.h"
#include "kernels/cuda/activation_quant.h"
#include "kernels/cuda/cuda_status.h"
#include "kernels/cuda/nvfp4_block_quant.h"
#include "kernels/cuda/nvfp4_scale_layout.h"
#include "kernels/cuda/reduce.cuh"
#include "kernels/numeric/fp8.h"

namespace tessera::kernels::cuda {
namespace {

constexpr int kRowThreads = 256;
constexpr float kFp8Max = 448.0f;
constexpr float kNvfp4GlobalNumerator = 448.0f * 6.0f;

__global__ void Fp8PerTokenKernel(const float* __restrict__ x, int64_t k,
                                  const float* __restrict__ scale_ub, float min_scale,
                                  uint8_t* __restrict__ q, float* __restrict__ scales) {
  const int64_t m = blockIdx.x;
  const float* xr = x + m * k;
  float amax = 0.0f;
  for (int64_t i = threadIdx.x; i < k; i += blockDim.x) amax = fmaxf(amax, fabsf(xr[i]));
  float a = BlockMax(amax);
  if (scale_ub != nullptr) a = fminf(a, *scale_ub);
  float s = fmaxf(a / kFp8Max, min_scale);
  if (s == 0.0f) s = 1.0f;
  if (threadIdx.x == 0) scales[m] = s;
  uint8_t* qr = q + m * k;
  for (int64_t i = threadIdx.x; i < k; i += blockDim.x) qr[i] = numeric::EncodeE4m3(xr[i] / s);
}

// One block per row; warp w handles groups w, w + warps, ...
// Rows [rows, ld) (group-major padding) get zero codes and unit scales.
__global__ void Fp8PerTokenGroupKernel(const float* __restrict__ x, int64_t rows, int64_t ld,
                                       int64_t k, int64_t group_size, float eps, bool group_major,
                                       uint8_t* __restrict__ q, float* __restrict__ scales) {
  const int64_t m = blockIdx.x;
  const int lane = threadIdx.x % kWarpSize;
  const int warps = blockDim.x / kWarpSize;
  const int64_t groups = (k + group_size - 1) / group_size;
  for (int64_t g = threadIdx.x / kWarpSize; g < groups; g += warps) {
    const int64_t begin = g * group_size;
    const int64_t len = min(group_size, k - begin);
    if (m >= rows) {
      if (lane == 0) scales[g * ld + m] = 1.0f;
      for (int64_t i = lane; i < len; i += kWarpSize) q[m * k + begin + i] = 0;
      continue;
    }
    const float* xg = x + m * k + begin;
    float amax = 0.0f;
    for (int64_t i = lane; i < len; i += kWarpSize) amax = fmaxf(amax, fabsf(xg[i]));
    float s = fmaxf(WarpMax(amax), eps) / kFp8Max;
    if (s == 0.0f) s = 1.0f;
    if (lane == 0) scales[group_major ? g * ld + m : m * groups + g] = s;
    uint8_t* qg = q + m * k + begin;
    for (int64_t i = lane; i < len; i += kWarpSize) qg[i] = numeric::EncodeE4m3(xg[i] / s);
  }
}

// Loads the 16 floats of NVFP4 block `block` of x (16-byte aligned) with four float4 loads.
__device__ __forceinline__ void LoadNvfp4Block(const float* __restrict__ x, int64_t block,
                                               float (&v)[kNvfp4BlockElems]) {
  const float4* xb = reinterpret_cast<const float4*>(x + block * kNvfp4BlockElems);
#pragma unroll
  for (int j = 0; j < kNvfp4BlockElems / 4; ++j) {
    const float4 f = xb[j];
    v[4 * j] = f.x;
    v[4 * j + 1] = f.y;
    v[4 * j + 2] = f.z;
    v[4 * j + 3] = f.w;
  }
}

// One thread per block of 16 elements; scales row-major [rows, k/16].
__global__ void Nvfp4Kernel(const float* __restrict__ x, int64_t rows, int64_t k,
                            const float* __restrict__ global_scale, int64_t g_stride,
                            uint8_t* __restrict__ q_packed, uint8_t* __restrict__ block_scales) {
  const int64_t blocks_per_row = k / kNvfp4BlockElems;
  const int64_t idx = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= rows * blocks_per_row) return;
  const int64_t m = idx / blocks_per_row;
  float v[kNvfp4BlockElems];
  LoadNvfp4Block(x, idx, v);
  const Nvfp4Block b = QuantizeNvfp4Block(v, global_scale[m * g_stride]);
  block_scales[idx] = b.scale;
  reinterpret_cast<uint2*>(q_packed)[idx] = make_uint2(b.codes[0], b.codes[1]);
}

// One thread per byte of the swizzled scale buffer, i.e. per (row, scale column) of the padded
// [SwizzledScaleRows(rows), SwizzledScaleCols(k/16)] domain, which SwizzledScaleOffset maps onto
// the buffer one to one: threads inside [rows, k/16] quantize their block, the others write the
// zero padding. Codes stay row-major [rows, k/2].
__global__ void Nvfp4SwizzledKernel(const float* __restrict__ x, int64_t rows, int64_t k,
                                    const float* __restrict__ global_scale, int64_t g_stride,
                                    uint8_t* __restrict__ q_packed,
                                    uint8_t* __restrict__ swizzled_scales) {
  const int64_t cols = k / kNvfp4BlockElems;
  const int64_t padded_cols = SwizzledScaleCols(cols);
  const int64_t idx = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= SwizzledScaleRows(rows) * padded_cols) return;
  const int64_t m = idx / padded_cols, c = idx % padded_cols;
  uint8_t scale = 0;
  if (m < rows && c < cols) {
    float v[kNvfp4BlockElems];
    LoadNvfp4Block(x, m * cols + c, v);
    const Nvfp4Block b = QuantizeNvfp4Block(v, global_scale[m * g_stride]);
    scale = b.scale;
    reinterpret_cast<uint2*>(q_packed)[m * cols + c] = make_uint2(b.codes[0], b.codes[1]);
  }
  swizzled_scales[SwizzledScaleOffset(m, c, cols)] = scale;
}

__global__ void Nvfp4GlobalScaleKernel(const float* __restrict__ x, int64_t k,
                                       float* __restrict__ global_scales) {
  const int64_t m = blockIdx.x;
  float amax = 0.0f;
  for (int64_t i = threadIdx.x; i < k; i += blockDim.x) amax = fmaxf(amax, fabsf(x[m * k + i]));
  amax = BlockMax(amax);
  if (threadIdx.x == 0) global_scales[m] = amax == 0.0f ? 1.0f : kNvfp4GlobalNumerator / amax;
}

absl::Status CheckRows(int64_t rows, int64_t k) {
  if (rows < 0 || k <= 0) {
    return absl::InvalidArgumentError(absl::StrCat("bad activation shape [", rows, ", ", k, "]"));
  }
  if (rows > INT32_MAX) return absl::InvalidArgumentError("too many rows for one launch");
  return absl::OkStatus();
}

absl::Status CheckNvfp4(const float* x, int64_t rows, int64_t k, int64_t global_scale_row_stride,
                        const uint8_t* q_packed) {
  TESSERA_RETURN_IF_ERROR(CheckRows(rows, k));
  if (k % kNvfp4BlockElems != 0) {
    return absl::InvalidArgumentError(absl::StrCat("NVFP4 needs K % 16 == 0, K = ", k));
  }
  if (reinterpret_cast<uintptr_t>(x) % 16 != 0 || reinterpret_cast<uintptr_t>(q_packed) % 8 != 0) {
    return absl::InvalidArgumentError("NVFP4 quantization needs 16-byte aligned x, 8-byte q");
  }
  if (global_scale_row_stride != 0 && global_scale_row_stride != 1) {
    return absl::InvalidArgumentError("global_scale_row_stride must be 0 or 1");
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status QuantizeFp8PerToken(const float* x, int64_t rows, int64_t k, const float* scale_ub,
                                 float min_scale, uint8_t* q, float* scales, cudaStream_t stream) {
  TESSERA_RETURN_IF_ERROR(CheckRows(rows, k));
  if (!(min_scale >= 0.0f)) return absl::InvalidArgumentError("min_scale must be >= 0");
  if (rows == 0) return absl::OkStatus();
  Fp8PerTokenKernel<<<static_cast<unsigned>(rows), kRowThreads, 0, stream>>>(x, k, scale_ub,
                                                                             min_scale, q, scales);
  RETURN_IF_LAUNCH_ERROR();
  return absl::OkStatus();
}

absl::Status QuantizeFp8PerTokenGroup(const float* x, int64_t rows, int64_t k, int64_t group_size,
                                      float eps, GroupScaleLayout layout, uint8_t* q,
                                      float* scales, cudaStream_t stream) {
  TESSERA_RETURN_IF_ERROR(CheckRows(rows, k));
  if (group_size <= 0) return absl::InvalidArgumentError("group_size must be positive");
  if (rows == 0) return absl::OkStatus();
  Fp8PerTokenGroupKernel<<<static_cast<unsigned>(rows), kRowThreads, 0, stream>>>(
      x, rows, rows, k, group_size, eps, layout == GroupScaleLayout::kGroupMajor, q, scales);
  RETURN_IF_LAUNCH_ERROR();
  return absl::OkStatus();
}

absl::Status QuantizeFp8PerTokenGroupPadded(const float* x, int64_t rows, int64_t padded_rows,
                                            int64_t k, int64_t group_size, float eps, uint8_t* q,
                                            float* scales, cudaStream_t stream) {
  TESSERA_RETURN_IF_ERROR(CheckRows(padded_rows, k));
  if (group_size <= 0) return absl::InvalidArgumentError("group_size must be positive");
  if (rows < 0 || padded_rows < rows) {
    return absl::InvalidArgumentError(
        absl::StrCat("fp8 group quant: ", padded_rows, " padded rows < ", rows, " rows"));
  }
  if (padded_rows == 0) return absl::OkStatus();
  Fp8PerTokenGroupKernel<<<static_cast<unsigned>(padded_rows), kRowThreads, 0, stream>>>(
      x, rows, padded_rows, k, group_size, eps, true, q, scales);
  RETURN_IF_LAUNCH_ERROR();
  return absl::OkStatus();
}

absl::Status QuantizeNvfp4(const float* x, int64_t rows, int64_t k, const float* global_scale,
                           int64_t global_scale_row_stride, uint8_t* q_packed,
                           uint8_t* block_scales, cudaStream_t stream) {
  TESSERA_RETURN_IF_ERROR(CheckNvfp4(x, rows, k, global_scale_row_stride, q_packed));
  const int64_t total = rows * (k / kNvfp4BlockElems);
  if (total == 0) return absl::OkStatus();
  const int64_t grid = (total + kRowThreads - 1) / kRowThreads;
  Nvfp4Kernel<<<static_cast<unsigned>(grid), kRowThreads, 0, stream>>>(
      x, rows, k, global_scale, global_scale_row_stride, q_packed, block_scales);
  RETURN_IF_LAUNCH_ERROR();
  return absl::OkStatus();
}

absl::Status QuantizeNvfp4Swizzled(const float* x, int64_t rows, int64_t k,
                                   const float* global_scale, int64_t global_scale_row_stride,
                                   uint8_t* q_packed, uint8_t* swizzled_scales,
                                   cudaStream_t stream) {
  TESSERA_RETURN_IF_ERROR(CheckNvfp4(x, rows, k, global_scale_row_stride, q_packed));
  if (rows == 0) return absl::OkStatus();
  const int64_t total = SwizzledScaleBytes(rows, k / kNvfp4BlockElems);
  const int64_t grid = (total + kRowThreads - 1) / kRowThreads;
  if (grid > INT32_MAX) return absl::InvalidArgumentError("NVFP4 quantization: too many blocks");
  Nvfp4SwizzledKernel<<<static_cast<unsigned>(grid), kRowThreads, 0, stream>>>(
      x, rows, k, global_scale, global_scale_row_stride, q_packed, swizzled_scales);
  RETURN_IF_LAUNCH_ERROR();
  return absl::OkStatus();
}

absl::Status Nvfp4DynamicGlobalScalePerRow(const float* x, int64_t rows, int64_t k,
                                           float* global_scales, cudaStream_t stream) {
  TESSERA_RETURN_IF_ERROR(CheckRows(rows, k));
  if (rows == 0) return absl::OkStatus();
  Nvfp4GlobalScaleKernel<<<static_cast<unsigned>(rows), kRowThreads, 0, stream>>>(x, k,
                                                                                  global_scales);
  RETURN_IF_LAUNCH_ERROR();
  return absl::OkStatus();
}

}  // namespace tessera::kernels::cuda
