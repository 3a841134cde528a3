// cuBLASLt matmuls of the CUDA backend: FP8 E4M3 W8A8 (per-tensor scale pointers, and the
// outer-vector and 128-block scale modes of CUDA 13's CUBLASLT_MATMUL_DESC_{A,B}_SCALE_MODE),
// NVFP4 W4A4 with VEC16_UE4M3 block scales, and plain bf16 (dense layers, W8A16 fallback).
//
// Split in two so that the part that needs no GPU is testable in CI: LtDescriptors builds the
// matmul descriptor and the four matrix layouts (cublasLtMatmulDescCreate and friends work
// without a device), and CublasLtGemm owns the handle (cublasLtCreate needs a device and reports
// NOT_INITIALIZED -> UNAVAILABLE without one), the reused workspace, and a per-shape cache of
// heuristic algorithm choices.
//
// Operand mapping: our y[M, N] = x[M, K] · W[N, K]ᵀ, row-major, is cuBLAS's column-major
// D[N, M] = op(A)·op(B) with A = W (K x N, transposed: the "TN" form FP8 and FP4 require), B = x
// (K x M) and D's leading dimension N. cuBLAS's "A" scales are therefore per output channel and
// its "B" scales per token.
#ifndef TESSERA_KERNELS_CUDA_CUBLASLT_GEMM_H_
#define TESSERA_KERNELS_CUDA_CUBLASLT_GEMM_H_

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "kernels/cuda/device_memory.h"
#include "kernels/cuda/nvfp4_scale_layout.h"  // the VEC16_UE4M3 scale layout

namespace tessera::kernels::cuda {

enum class LtScaleMode {
  kNone,         // no scale pointer (scale 1)
  kScalar,       // SCALAR_32F: one f32 (per-tensor)
  kOuterVector,  // OUTER_VEC_32F: one f32 per row of the operand (per channel / per token)
  kVec128,       // VEC128_32F: one f32 per 128 K elements of each row (per-token-group)
  kBlock128,     // BLK128x128_32F: one f32 per 128 x 128 block (DeepSeek weight blocks)
  kVec16Ue4m3,   // VEC16_UE4M3: NVFP4 block scales (swizzled 128x4 tiles)
};
absl::string_view LtScaleModeName(LtScaleMode mode);

enum class LtGemmKind { kFp8, kNvfp4, kBf16 };

struct LtGemmConfig {
  LtGemmKind kind = LtGemmKind::kFp8;
  int64_t m = 0, n = 0, k = 0;  // our M (tokens), N (out features), K
  LtScaleMode weight_scale = LtScaleMode::kNone;      // cuBLAS A
  LtScaleMode activation_scale = LtScaleMode::kNone;  // cuBLAS B
  bool f32_output = false;  // D in f32 (for our epilogue) instead of bf16
  bool operator==(const LtGemmConfig&) const = default;
  template <typename H>
  friend H AbslHashValue(H h, const LtGemmConfig& c) {
    return H::combine(std::move(h), c.kind, c.m, c.n, c.k, c.weight_scale, c.activation_scale,
                      c.f32_output);
  }
  std::string ToString() const;
};

// Matmul descriptor + layouts for one configuration, created without a device.
class LtDescriptors {
 public:
  static absl::StatusOr<LtDescriptors> Create(const LtGemmConfig& config);
  LtDescriptors(LtDescriptors&& other) noexcept;
  LtDescriptors& operator=(LtDescriptors&&) = delete;
  LtDescriptors(const LtDescriptors&) = delete;
  ~LtDescriptors();

  cublasLtMatmulDesc_t desc() const { return desc_; }
  cublasLtMatrixLayout_t a() const { return a_; }
  cublasLtMatrixLayout_t b() const { return b_; }
  cublasLtMatrixLayout_t c() const { return c_; }
  cublasLtMatrixLayout_t d() const { return d_; }
  // Points the descriptor at device scales (nullptr for modes kNone).
  absl::Status SetScalePointers(const void* weight_scales, const void* activation_scales);

 private:
  LtDescriptors() = default;
  cublasLtMatmulDesc_t desc_ = nullptr;
  cublasLtMatrixLayout_t a_ = nullptr, b_ = nullptr, c_ = nullptr, d_ = nullptr;
};

// Device pointers of one call.
struct LtGemmArgs {
  const void* weights = nullptr;      // FP8 [N, K] bytes, NVFP4 [N, K/2], bf16 [N, K]
  const void* activations = nullptr;  // same element type, [M, K]
  const void* weight_scales = nullptr;
  const void* activation_scales = nullptr;
  float alpha = 1.0f;  // host scalar (NVFP4 α, or 1)
  void* out = nullptr;  // [M, N] bf16 (or f32 with f32_output)
};

class CublasLtGemm {
 public:
  static constexpr size_t kDefaultWorkspaceBytes = size_t{32} << 20;
  // UNAVAILABLE without a device.
  static absl::StatusOr<std::unique_ptr<CublasLtGemm>> Create(
      size_t workspace_bytes = kDefaultWorkspaceBytes);
  struct PrivateTag {};  // only Create constructs (through std::make_unique)
  explicit CublasLtGemm(PrivateTag) {}
  ~CublasLtGemm();
  CublasLtGemm(const CublasLtGemm&) = delete;
  CublasLtGemm& operator=(const CublasLtGemm&) = delete;

  // Runs one matmul. The first call for a configuration builds its descriptors and asks the
  // heuristic for an algorithm; both are cached (the shape set of a model is small).
  absl::Status Run(const LtGemmConfig& config, const LtGemmArgs& args, cudaStream_t stream);
  int64_t cached_plans() const;

 private:
  struct Plan {
    LtDescriptors descriptors;
    cublasLtMatmulAlgo_t algo;
  };
  absl::StatusOr<Plan*> GetPlan(const LtGemmConfig& config);
  absl::StatusOr<Plan*> BuildPlan(const LtGemmConfig& config) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  cublasLtHandle_t handle_ = nullptr;
  DeviceBuffer workspace_;
  mutable absl::Mutex mu_;
  absl::flat_hash_map<LtGemmConfig, std::unique_ptr<Plan>> plans_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<LtGemmConfig, absl::Status> refused_ ABSL_GUARDED_BY(mu_);
};

}  // namespace tessera::kernels::cuda

#endif  // TESSERA_KERNELS_CUDA_CUBLASLT_GEMM_H_
