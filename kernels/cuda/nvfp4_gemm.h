// NVFP4 W4A4 linear layers on Blackwell through cuBLASLt's block-scaled FP4 GEMM
// (quant-formats.md §8.3): E2M1 operands (CUDA_R_4F_E2M1) with a UE4M3 scale per 16 elements on
// both sides (CUBLASLT_MATMUL_MATRIX_SCALE_VEC16_UE4M3, scales in the swizzled 128x4-tile layout
// of nvfp4_scale_layout.h), f32 accumulation, alpha on the result and bf16 output:
//   y[m, n] = bf16(alpha · Σ_b sf_x[m, b] · sf_w[n, b] · Σ_{k∈b} e2m1(x) · e2m1(w))
// which is the CPU reference kernels::cpu::MatmulNvfp4W4A4 up to the order of the f32 sum over
// blocks and the final bf16 rounding. alpha is Nvfp4Alpha(weight global scale, activation global
// scale): one number per layer, which is why only a STATIC activation global scale fits — a
// per-row dynamic one would need a per-row alpha that cuBLASLt's scalar cannot carry.
//
// This file is the family's capability query (which arch and shapes take the path; the kernel
// selector turns every refusal into a W4A16 fallback with the reason) and the launcher. The
// activations come from QuantizeNvfp4Swizzled (activation_quant.h).
#ifndef TESSERA_KERNELS_CUDA_NVFP4_GEMM_H_
#define TESSERA_KERNELS_CUDA_NVFP4_GEMM_H_

#include <cuda_runtime_api.h>

#include <cstdint>

#include "absl/status/status.h"
#include "kernels/cuda/cublaslt_gemm.h"

namespace tessera::kernels::cuda {

// K must be a multiple of this: cuBLASLt wants 16-byte aligned leading dimensions, and a row of
// packed E2M1 codes is K / 2 bytes.
inline constexpr int64_t kNvfp4GemmKMultiple = 32;
// N must be a multiple of this: the bf16 output rows (leading dimension N) are 16-byte aligned.
inline constexpr int64_t kNvfp4GemmNMultiple = 8;

// OK when an [N, K] NVFP4 W4A4 layer runs on this path on `sm`. Otherwise the reason:
// UNIMPLEMENTED "sm_90 has no FP4 MMA" below sm_100, FAILED_PRECONDITION "not compiled for
// sm_100a (...)" when the build lacks the arch-specific target, UNIMPLEMENTED for shapes cuBLASLt
// cannot take, INVALID_ARGUMENT for non-positive shapes. Needs no device.
absl::Status SupportsNvfp4W4A4(int64_t n, int64_t k, int sm);

// The cuBLASLt configuration of an M-row call (testable without a device).
LtGemmConfig Nvfp4LtConfig(int64_t m, int64_t n, int64_t k);

// Device pointers of one call. Every pointer must be 16-byte aligned (cudaMalloc and the decoder
// arena give 256).
struct Nvfp4W4A4Args {
  const uint8_t* w = nullptr;         // [N, K/2] E2M1 pairs, element 2j in the low nibble
  const uint8_t* w_scales = nullptr;  // SwizzledScaleBytes(N, K/16) UE4M3, swizzled at upload
  const uint8_t* x = nullptr;         // [M, K/2] from QuantizeNvfp4Swizzled
  const uint8_t* x_scales = nullptr;  // SwizzledScaleBytes(M, K/16), zero padding
  int64_t m = 0;
  float alpha = 1.0f;     // Nvfp4Alpha(α_w, g): multiplies the f32 accumulator
  uint16_t* y = nullptr;  // [M, N] bf16
};

// y = alpha · x · wᵀ for an [n, k] layer that SupportsNvfp4W4A4 accepted on this device.
absl::Status Nvfp4W4A4Gemm(CublasLtGemm& lt, int64_t n, int64_t k, const Nvfp4W4A4Args& args,
                           cudaStream_t stream);

}  // namespace tessera::kernels::cuda

#endif  // TESSERA_KERNELS_CUDA_NVFP4_GEMM_H_
