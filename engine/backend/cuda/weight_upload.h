// Weight upload for the CUDA decoder: turns one module of the precision plan (its LinearSpec,
// with the kernel CudaKernelSelector chose) into device tensors in the layout that kernel reads,
// carved from the weights region of the device arena. The host side mirrors
// model::PlanLinearFactory exactly — a dense view, LoadPackedWeights, QuantizeOnline for
// "online RTN", or a dequantization to bf16 — and then repacks:
//   cuda/cublaslt-bf16            f32/bf16/f16 (or dequantized) -> bf16 [N, K]
//   cuda/fp8-w8a16-dequant-bf16   FP8 codes x scales -> bf16 [N, K] (the W8A16 fallback)
//   cuda/w4a16-mma-{nvfp4,mxfp4}  codes [N, K/2] and block scales as stored; the NVFP4
//                                 compressed-tensors divisor becomes the multiplier 1/divisor
//   cuda/w4a16-mma-int4           one code per byte -> nibble pairs along K; f32 scales/zeros
//   cuda/nvfp4-w4a4-cublaslt      codes [N, K/2] as stored; block scales swizzled once into
//                                 cuBLASLt's 128x4-tile VEC16_UE4M3 layout (zero padding); the
//                                 static activation global scale g as a device float; the GEMM's
//                                 alpha = Nvfp4Alpha(α_w, g), the product the CPU reference uses
//   cuda/fp8-w8a8-*               E4M3 [N, K], f32 weight scales (tensor / per row / 128x128
//                                 blocks [N/128, K/128], cuBLASLt's BLK128x128 order), the static
//                                 input scale and the fbgemm scale upper bound as device floats
// DeviceLinearBytes says how much each module takes before anything is read, so the arena is
// sized with one cudaMalloc up front.
#ifndef TESSERA_ENGINE_BACKEND_CUDA_WEIGHT_UPLOAD_H_
#define TESSERA_ENGINE_BACKEND_CUDA_WEIGHT_UPLOAD_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "engine/backend/cuda/device_arena.h"
#include "engine/io/tensor_store.h"
#include "engine/quant/linear_spec.h"
#include "engine/quant/quant_config.h"
#include "kernels/cuda/fp8_gemm.h"
#include "kernels/cuda/w4a16_gemm.h"

namespace tessera::backend::cuda {

enum class DeviceLinearKind { kBf16, kW4A16, kFp8W8A8, kNvfp4W4A4 };

// One linear layer on the device. Pointers are into the arena (the decoder owns it).
struct DeviceLinear {
  std::string module;
  DeviceLinearKind kind = DeviceLinearKind::kBf16;
  int64_t n = 0, k = 0;
  const float* bias = nullptr;  // [N] or null

  const uint16_t* bf16 = nullptr;  // kBf16: [N, K] bf16 bits

  kernels::cuda::W4A16Weights w4;  // kW4A16

  // kFp8W8A8
  const uint8_t* fp8 = nullptr;        // [N, K] E4M3
  const float* fp8_scales = nullptr;   // per the problem's weight granularity
  kernels::cuda::Fp8GemmProblem fp8_problem;
  kernels::cuda::Fp8Path fp8_path = kernels::cuda::Fp8Path::kCublasLtScaled;
  const float* static_input_scale = nullptr;  // 1 float when activations are static per-tensor
  const float* scale_ub = nullptr;            // 1 float (fbgemm activation_scale_ub) or null
  int64_t activation_group = 0;               // per-token-group size (128) or 0

  // kNvfp4W4A4
  const uint8_t* fp4 = nullptr;             // [N, K/2] E2M1 pairs
  const uint8_t* fp4_scales = nullptr;      // SwizzledScaleBytes(N, K/16) UE4M3, swizzled
  const float* act_global_scale = nullptr;  // 1 float: the static activation divisor g
  float fp4_alpha = 1.0f;                   // Nvfp4Alpha(α_w, g)
};

// The layout kind of a kernel id of CudaKernelSelector; UNIMPLEMENTED for ids the decoder does
// not run (naming the module).
absl::StatusOr<DeviceLinearKind> DeviceLinearKindFor(const quant::LinearSpec& spec);

// Arena bytes UploadLinear carves for `spec` (with a bias of N floats when has_bias).
absl::StatusOr<size_t> DeviceLinearBytes(const quant::LinearSpec& spec, bool has_bias);

// Reads, repacks and copies one module. `weight_name` is the checkpoint tensor ("....weight");
// `bias` is empty or N values. Synchronous (load time only).
absl::StatusOr<DeviceLinear> UploadLinear(const quant::LinearSpec& spec,
                                          const std::string& weight_name,
                                          const io::TensorStore& store,
                                          const quant::QuantConfig& quant_config,
                                          absl::Span<const float> bias, ArenaRegion& region);

// Copies host bytes into arena memory (synchronous); for norms, tables and the like.
absl::Status CopyToDevice(void* dst, const void* src, size_t bytes);
template <typename T>
absl::StatusOr<T*> UploadVector(absl::Span<const T> values, ArenaRegion& region,
                                absl::string_view what) {
  absl::StatusOr<T*> dst = region.AllocateArray<T>(static_cast<int64_t>(values.size()), what);
  if (!dst.ok()) return dst.status();
  if (absl::Status st = CopyToDevice(*dst, values.data(), values.size() * sizeof(T)); !st.ok()) {
    return st;
  }
  return *dst;
}

}  // namespace tessera::backend::cuda

#endif  // TESSERA_ENGINE_BACKEND_CUDA_WEIGHT_UPLOAD_H_
