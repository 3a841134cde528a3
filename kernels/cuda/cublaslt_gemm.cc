#include "kernels/cuda/cublaslt_gemm.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "kernels/cuda/cuda_status.h"

namespace tessera::kernels::cuda {
namespace {

template <typename T>
absl::Status SetAttr(cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attr,
                     const T& value) {
  RETURN_IF_CUBLAS_ERROR(cublasLtMatmulDescSetAttribute(desc, attr, &value, sizeof(value)));
  return absl::OkStatus();
}

int32_t ToCublasScaleMode(LtScaleMode mode) {
  switch (mode) {
    case LtScaleMode::kNone:
    case LtScaleMode::kScalar: return CUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F;
    case LtScaleMode::kOuterVector: return CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F;
    case LtScaleMode::kVec128: return CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F;
    case LtScaleMode::kBlock128: return CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F;
    case LtScaleMode::kVec16Ue4m3: return CUBLASLT_MATMUL_MATRIX_SCALE_VEC16_UE4M3;
  }
  return CUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F;
}

absl::Status Validate(const LtGemmConfig& c) {
  if (c.m <= 0 || c.n <= 0 || c.k <= 0) {
    return absl::InvalidArgumentError(absl::StrCat("cuBLASLt gemm: bad shape ", c.ToString()));
  }
  // FP8/FP4 operands need K % 16 == 0 and 16-byte aligned leading dimensions; bf16 takes any
  // shape (unaligned ones get slower kernels).
  if (c.kind != LtGemmKind::kBf16 && (c.k % 16 != 0 || c.n % 8 != 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("cuBLASLt gemm needs K % 16 == 0 and N % 8 == 0: ", c.ToString()));
  }
  const bool fp8 = c.kind == LtGemmKind::kFp8;
  auto fp8_mode_ok = [](LtScaleMode m) {
    return m == LtScaleMode::kNone || m == LtScaleMode::kScalar ||
           m == LtScaleMode::kOuterVector || m == LtScaleMode::kVec128 ||
           m == LtScaleMode::kBlock128;
  };
  if (fp8 && (!fp8_mode_ok(c.weight_scale) || !fp8_mode_ok(c.activation_scale))) {
    return absl::InvalidArgumentError("FP8 gemm: VEC16_UE4M3 is an NVFP4 scale mode");
  }
  if (fp8 && (c.weight_scale == LtScaleMode::kBlock128) !=
                 (c.activation_scale == LtScaleMode::kVec128)) {
    return absl::InvalidArgumentError(
        "FP8 block scaling pairs 128x128 weight blocks with per-token-group-128 activations");
  }
  if (c.kind == LtGemmKind::kNvfp4 && c.k % 32 != 0) {
    // A row of packed E2M1 codes is K / 2 bytes and must be a 16-byte multiple.
    return absl::InvalidArgumentError(absl::StrCat("NVFP4 gemm needs K % 32 == 0: ", c.ToString()));
  }
  if (c.kind == LtGemmKind::kNvfp4 && (c.weight_scale != LtScaleMode::kVec16Ue4m3 ||
                                       c.activation_scale != LtScaleMode::kVec16Ue4m3)) {
    return absl::InvalidArgumentError("NVFP4 gemm needs VEC16_UE4M3 scales on both operands");
  }
  if (c.kind == LtGemmKind::kBf16 &&
      (c.weight_scale != LtScaleMode::kNone || c.activation_scale != LtScaleMode::kNone)) {
    return absl::InvalidArgumentError("bf16 gemm takes no scales");
  }
  return absl::OkStatus();
}

}  // namespace

absl::string_view LtScaleModeName(LtScaleMode mode) {
  switch (mode) {
    case LtScaleMode::kNone: return "none";
    case LtScaleMode::kScalar: return "scalar";
    case LtScaleMode::kOuterVector: return "outer-vec";
    case LtScaleMode::kVec128: return "vec128";
    case LtScaleMode::kBlock128: return "blk128x128";
    case LtScaleMode::kVec16Ue4m3: return "vec16-ue4m3";
  }
  return "?";
}

std::string LtGemmConfig::ToString() const {
  const char* kinds[] = {"fp8", "nvfp4", "bf16"};
  return absl::StrCat(kinds[static_cast<int>(kind)], " m=", m, " n=", n, " k=", k,
                      " w-scale=", LtScaleModeName(weight_scale),
                      " a-scale=", LtScaleModeName(activation_scale),
                      f32_output ? " out=f32" : " out=bf16");
}

absl::StatusOr<LtDescriptors> LtDescriptors::Create(const LtGemmConfig& c) {
  TESSERA_RETURN_IF_ERROR(Validate(c));
  LtDescriptors d;
  RETURN_IF_CUBLAS_ERROR(cublasLtMatmulDescCreate(&d.desc_, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  TESSERA_RETURN_IF_ERROR(SetAttr<int32_t>(d.desc_, CUBLASLT_MATMUL_DESC_TRANSA, CUBLAS_OP_T));
  TESSERA_RETURN_IF_ERROR(SetAttr<int32_t>(d.desc_, CUBLASLT_MATMUL_DESC_TRANSB, CUBLAS_OP_N));
  if (c.weight_scale != LtScaleMode::kNone) {
    TESSERA_RETURN_IF_ERROR(SetAttr<int32_t>(d.desc_, CUBLASLT_MATMUL_DESC_A_SCALE_MODE,
                                             ToCublasScaleMode(c.weight_scale)));
  }
  if (c.activation_scale != LtScaleMode::kNone) {
    TESSERA_RETURN_IF_ERROR(SetAttr<int32_t>(d.desc_, CUBLASLT_MATMUL_DESC_B_SCALE_MODE,
                                             ToCublasScaleMode(c.activation_scale)));
  }
  if (c.kind == LtGemmKind::kFp8) {
    // Full-precision accumulation: without it Hopper's FP8 MMA accumulates in reduced precision.
    TESSERA_RETURN_IF_ERROR(SetAttr<int8_t>(d.desc_, CUBLASLT_MATMUL_DESC_FAST_ACCUM, 0));
  }
  cudaDataType_t ab_type = CUDA_R_16BF;
  if (c.kind == LtGemmKind::kFp8) ab_type = CUDA_R_8F_E4M3;
  if (c.kind == LtGemmKind::kNvfp4) ab_type = CUDA_R_4F_E2M1;
  const cudaDataType_t out_type = c.f32_output ? CUDA_R_32F : CUDA_R_16BF;
  const auto u = [](int64_t v) { return static_cast<uint64_t>(v); };
  RETURN_IF_CUBLAS_ERROR(cublasLtMatrixLayoutCreate(&d.a_, ab_type, u(c.k), u(c.n), c.k));
  RETURN_IF_CUBLAS_ERROR(cublasLtMatrixLayoutCreate(&d.b_, ab_type, u(c.k), u(c.m), c.k));
  RETURN_IF_CUBLAS_ERROR(cublasLtMatrixLayoutCreate(&d.c_, out_type, u(c.n), u(c.m), c.n));
  RETURN_IF_CUBLAS_ERROR(cublasLtMatrixLayoutCreate(&d.d_, out_type, u(c.n), u(c.m), c.n));
  return d;
}

LtDescriptors::LtDescriptors(LtDescriptors&& o) noexcept
    : desc_(std::exchange(o.desc_, nullptr)),
      a_(std::exchange(o.a_, nullptr)),
      b_(std::exchange(o.b_, nullptr)),
      c_(std::exchange(o.c_, nullptr)),
      d_(std::exchange(o.d_, nullptr)) {}

LtDescriptors::~LtDescriptors() {
  for (cublasLtMatrixLayout_t l : {a_, b_, c_, d_}) {
    if (l != nullptr) cublasLtMatrixLayoutDestroy(l);
  }
  if (desc_ != nullptr) cublasLtMatmulDescDestroy(desc_);
}

absl::Status LtDescriptors::SetScalePointers(const void* weight_scales,
                                             const void* activation_scales) {
  TESSERA_RETURN_IF_ERROR(SetAttr(desc_, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, weight_scales));
  TESSERA_RETURN_IF_ERROR(
      SetAttr(desc_, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, activation_scales));
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<CublasLtGemm>> CublasLtGemm::Create(size_t workspace_bytes) {
  auto g = std::make_unique<CublasLtGemm>(PrivateTag{});
  RETURN_IF_CUBLAS_ERROR(cublasLtCreate(&g->handle_));
  // At least 256 bytes even when no workspace is wanted: GetPlan needs a real device address to
  // stand in for the scale pointers.
  TESSERA_ASSIGN_OR_RETURN(g->workspace_,
                           DeviceBuffer::Allocate(std::max<size_t>(workspace_bytes, 256)));
  return g;
}

CublasLtGemm::~CublasLtGemm() {
  if (handle_ != nullptr) cublasLtDestroy(handle_);
}

int64_t CublasLtGemm::cached_plans() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int64_t>(plans_.size());
}

absl::StatusOr<CublasLtGemm::Plan*> CublasLtGemm::GetPlan(const LtGemmConfig& config) {
  absl::MutexLock lock(&mu_);
  auto it = plans_.find(config);
  if (it != plans_.end()) return it->second.get();
  // A configuration cuBLASLt refused once is refused again without asking: callers that fall
  // back to another configuration (an f32-output FP8 GEMM) would otherwise pay the heuristic
  // query on every eager pass.
  if (auto refused = refused_.find(config); refused != refused_.end()) return refused->second;
  absl::StatusOr<Plan*> plan = BuildPlan(config);
  // Only refusals (no algorithm, an unsupported combination); a transient failure (memory, an
  // uninitialized handle) is asked again next time.
  if (plan.status().code() == absl::StatusCode::kUnimplemented ||
      plan.status().code() == absl::StatusCode::kInvalidArgument) {
    refused_.emplace(config, plan.status());
  }
  return plan;
}

absl::StatusOr<CublasLtGemm::Plan*> CublasLtGemm::BuildPlan(const LtGemmConfig& config) {
  TESSERA_ASSIGN_OR_RETURN(LtDescriptors descriptors, LtDescriptors::Create(config));
  // With a scale mode set, cuBLASLt 13.1 answers the heuristic query with INVALID_VALUE while the
  // matching scale pointer is null (seen on an H100). The real pointers change per call and are
  // set in Run; any device address stands in for them here.
  const void* stand_in = workspace_.data();
  TESSERA_RETURN_IF_ERROR(descriptors.SetScalePointers(
      config.weight_scale != LtScaleMode::kNone ? stand_in : nullptr,
      config.activation_scale != LtScaleMode::kNone ? stand_in : nullptr));
  cublasLtMatmulPreference_t pref = nullptr;
  RETURN_IF_CUBLAS_ERROR(cublasLtMatmulPreferenceCreate(&pref));
  const uint64_t ws = workspace_.bytes();
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  const cublasStatus_t set_st = cublasLtMatmulPreferenceSetAttribute(
      pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws));
  const cublasStatus_t st =
      set_st != CUBLAS_STATUS_SUCCESS
          ? set_st
          : cublasLtMatmulAlgoGetHeuristic(handle_, descriptors.desc(), descriptors.a(),
                                           descriptors.b(), descriptors.c(), descriptors.d(),
                                           pref, 1, &result, &found);
  cublasLtMatmulPreferenceDestroy(pref);
  RETURN_IF_CUBLAS_ERROR(st);
  if (found == 0) {
    return absl::UnimplementedError(
        absl::StrCat("cuBLASLt has no algorithm for ", config.ToString(), " on this device"));
  }
  auto plan = std::make_unique<Plan>(Plan{std::move(descriptors), result.algo});
  Plan* raw = plan.get();
  plans_.emplace(config, std::move(plan));
  return raw;
}

absl::Status CublasLtGemm::Run(const LtGemmConfig& config, const LtGemmArgs& args,
                               cudaStream_t stream) {
  if (args.weights == nullptr || args.activations == nullptr || args.out == nullptr) {
    return absl::InvalidArgumentError("cuBLASLt gemm: null operand");
  }
  if ((config.weight_scale != LtScaleMode::kNone) != (args.weight_scales != nullptr) ||
      (config.activation_scale != LtScaleMode::kNone) != (args.activation_scales != nullptr)) {
    return absl::InvalidArgumentError("cuBLASLt gemm: scale pointers do not match the modes");
  }
  TESSERA_ASSIGN_OR_RETURN(Plan * plan, GetPlan(config));
  // The cached descriptor is shared by calls of the same shape; the scale pointers change per
  // call, so setting them and launching happen under the lock.
  absl::MutexLock lock(&mu_);
  TESSERA_RETURN_IF_ERROR(
      plan->descriptors.SetScalePointers(args.weight_scales, args.activation_scales));
  const float beta = 0.0f;
  RETURN_IF_CUBLAS_ERROR(cublasLtMatmul(
      handle_, plan->descriptors.desc(), &args.alpha, args.weights, plan->descriptors.a(),
      args.activations, plan->descriptors.b(), &beta, args.out, plan->descriptors.c(), args.out,
      plan->descriptors.d(), &plan->algo, workspace_.data(), workspace_.bytes(), stream));
  return absl::OkStatus();
}

}  // namespace tessera::kernels::cuda
