// Entry point of the activation-quantization kernel family: argument validation, launch
// configuration, and the kernels themselves. There is no arch cascade: the encoders are the
// integer kernels/numeric functions, identical on sm_80 .. sm_120, so one generic kernel per
// format serves every arch (the cvt.*.e4m3x2 / e2m1x2 instructions would be faster on sm_89+ /
// sm_100a but cannot be shared with the CPU reference).
#include <cstdint>

#include "absl/strings/str_cat.h"
#include "kernels/cuda/activation_quant.h"
#include "kernels/cuda/cuda_status.h"
#include "kernels/cuda/reduce.cuh"
#include "kernels/numeric/fp4.h"
#include "kernels/numeric/fp8.h"

namespace tessera::kernels::cuda {
namespace {

constexpr int kRowThreads = 256;
constexpr float kFp8Max = 448.0f;
constexpr int kNvfp4Block = 16;
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

// One thread per block of 16 elements.
__global__ void Nvfp4Kernel(const float* __restrict__ x, int64_t rows, int64_t k,
                            const float* __restrict__ global_scale, int64_t g_stride,
                            uint8_t* __restrict__ q_packed, uint8_t* __restrict__ block_scales) {
  const int64_t blocks_per_row = k / kNvfp4Block;
  const int64_t idx = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= rows * blocks_per_row) return;
  const int64_t m = idx / blocks_per_row;
  const float g = global_scale[m * g_stride];
  const float4* xb = reinterpret_cast<const float4*>(x + idx * kNvfp4Block);
  float v[kNvfp4Block];
  for (int j = 0; j < kNvfp4Block / 4; ++j) {
    const float4 f = xb[j];
    v[4 * j] = f.x;
    v[4 * j + 1] = f.y;
    v[4 * j + 2] = f.z;
    v[4 * j + 3] = f.w;
  }
  float amax = 0.0f;
  for (int j = 0; j < kNvfp4Block; ++j) amax = fmaxf(amax, fabsf(v[j]));
  // (g * amax) / 6 in this order, as the CPU reference evaluates g * amax / kE2m1Max.
  const uint8_t sf_code = numeric::EncodeUe4m3(g * amax / numeric::kE2m1Max);
  block_scales[idx] = sf_code;
  const float sf = numeric::DecodeUe4m3(sf_code);
  uint32_t packed[2] = {0u, 0u};
  if (sf != 0.0f) {
    const float multiplier = g / sf;
    for (int j = 0; j < kNvfp4Block; j += 2) {
      const uint32_t byte = numeric::PackE2m1Pair(numeric::EncodeE2m1(v[j] * multiplier),
                                                  numeric::EncodeE2m1(v[j + 1] * multiplier));
      packed[j / 8] |= byte << (8 * ((j / 2) % 4));
    }
  }
  reinterpret_cast<uint2*>(q_packed)[idx] = make_uint2(packed[0], packed[1]);
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
  TESSERA_RETURN_IF_ERROR(CheckRows(rows, k));
  if (k % kNvfp4Block != 0) {
    return absl::InvalidArgumentError(absl::StrCat("NVFP4 needs K % 16 == 0, K = ", k));
  }
  if (reinterpret_cast<uintptr_t>(x) % 16 != 0 || reinterpret_cast<uintptr_t>(q_packed) % 8 != 0) {
    return absl::InvalidArgumentError("NVFP4 quantization needs 16-byte aligned x, 8-byte q");
  }
  if (global_scale_row_stride != 0 && global_scale_row_stride != 1) {
    return absl::InvalidArgumentError("global_scale_row_stride must be 0 or 1");
  }
  const int64_t total = rows * (k / kNvfp4Block);
  if (total == 0) return absl::OkStatus();
  const int64_t grid = (total + kRowThreads - 1) / kRowThreads;
  Nvfp4Kernel<<<static_cast<unsigned>(grid), kRowThreads, 0, stream>>>(
      x, rows, k, global_scale, global_scale_row_stride, q_packed, block_scales);
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
