// Entry point of the FP8 W8A8 family: the capability query with its arch cascade (sm_80: none;
// sm_89: scalar scales in cuBLASLt, vector scales in our epilogue; sm_90+: all scale modes in
// cuBLASLt), validation, and the epilogue kernel.
#include <cstdint>

#include "absl/strings/str_cat.h"
#include "kernels/cuda/cuda_status.h"
#include "kernels/cuda/decoder_ops.h"
#include "kernels/cuda/device.h"
#include "kernels/cuda/fp8_gemm.h"
#include "kernels/numeric/half.h"

namespace tessera::kernels::cuda {
namespace {

constexpr int kThreads = 256;

__global__ void Fp8EpilogueKernel(const float* __restrict__ acc, int64_t m, int64_t n,
                                  const float* __restrict__ sa, int64_t sa_stride,
                                  const float* __restrict__ sw, int64_t sw_stride,
                                  uint16_t* __restrict__ y) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= m * n) return;
  const int64_t row = i / n, col = i % n;
  y[i] = numeric::FloatToBf16(sa[row * sa_stride] * (sw[col * sw_stride] * acc[i]));
}

}  // namespace

absl::string_view Fp8PathName(Fp8Path path) {
  return path == Fp8Path::kCublasLtScaled ? "cublaslt-scaled" : "cublaslt+epilogue";
}

absl::StatusOr<Fp8Path> ChooseFp8Path(const Fp8GemmProblem& p, int sm) {
  const bool block_w = p.weight == Fp8WeightScale::kBlock128;
  const bool group_a = p.act == Fp8ActScale::kPerTokenGroup128;
  if (block_w != group_a) {
    return absl::InvalidArgumentError(
        "FP8: 128x128 weight blocks go with per-token-group-128 activations and nothing else");
  }
  if (p.n <= 0 || p.k <= 0 || p.k % 16 != 0 || p.n % 8 != 0) {
    return absl::InvalidArgumentError(absl::StrCat("FP8 gemm [", p.n, " x ", p.k,
                                                   "]: cuBLASLt needs K % 16 == 0, N % 8 == 0"));
  }
  if (sm < 89) {
    return absl::UnimplementedError(absl::StrCat("sm_", sm, " has no FP8 MMA"));
  }
  if (block_w) {
    if (sm < 90) {
      return absl::UnimplementedError(
          absl::StrCat("sm_", sm, ": cuBLASLt 128x128 block scaling needs sm_90+"));
    }
    if (p.k % 128 != 0 || p.n % 128 != 0) {
      // Unimplemented, not invalid: the selector falls back to W8A16 for such a layer.
      return absl::UnimplementedError(absl::StrCat("FP8 gemm [", p.n, " x ", p.k,
                                                   "]: cuBLASLt block scaling needs N and K "
                                                   "multiples of 128"));
    }
    return Fp8Path::kCublasLtScaled;
  }
  const bool tensor_a = p.act == Fp8ActScale::kPerTensor;
  const bool tensor_w = p.weight == Fp8WeightScale::kPerTensor;
  if (tensor_a && tensor_w) return Fp8Path::kCublasLtScaled;
  if (!tensor_a && !tensor_w && sm >= 90) return Fp8Path::kCublasLtScaled;
  // Vector scales on sm_89, or one per-tensor side mixed with a vector side: our epilogue.
  if (!CanRunGenericKernels(sm)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "FP8 epilogue: not compiled for sm_", sm, " (CMAKE_CUDA_ARCHITECTURES=",
        CompiledArchsString(), ")"));
  }
  return Fp8Path::kCublasLtThenEpilogue;
}

LtGemmConfig Fp8LtConfig(const Fp8GemmProblem& p, int64_t m, Fp8Path path) {
  LtGemmConfig c;
  c.kind = LtGemmKind::kFp8;
  c.m = m;
  c.n = p.n;
  c.k = p.k;
  if (path == Fp8Path::kCublasLtThenEpilogue) {
    c.f32_output = true;  // scales are applied by Fp8ScaleEpilogue
    return c;
  }
  switch (p.weight) {
    case Fp8WeightScale::kPerTensor: c.weight_scale = LtScaleMode::kScalar; break;
    case Fp8WeightScale::kPerChannel: c.weight_scale = LtScaleMode::kOuterVector; break;
    case Fp8WeightScale::kBlock128: c.weight_scale = LtScaleMode::kBlock128; break;
  }
  switch (p.act) {
    case Fp8ActScale::kPerTensor: c.activation_scale = LtScaleMode::kScalar; break;
    case Fp8ActScale::kPerToken: c.activation_scale = LtScaleMode::kOuterVector; break;
    case Fp8ActScale::kPerTokenGroup128: c.activation_scale = LtScaleMode::kVec128; break;
  }
  return c;
}

absl::Status Fp8ScaleEpilogue(const float* acc, int64_t m, int64_t n, const float* sa,
                              int64_t sa_stride, const float* sw, int64_t sw_stride, uint16_t* y,
                              cudaStream_t stream) {
  if (m < 0 || n <= 0 || (m * n) / kThreads >= INT32_MAX) {
    return absl::InvalidArgumentError("FP8 epilogue: bad shape");
  }
  if (m == 0) return absl::OkStatus();
  const int64_t grid = (m * n + kThreads - 1) / kThreads;
  Fp8EpilogueKernel<<<static_cast<unsigned>(grid), kThreads, 0, stream>>>(acc, m, n, sa,
                                                                          sa_stride, sw,
                                                                          sw_stride, y);
  RETURN_IF_LAUNCH_ERROR();
  return absl::OkStatus();
}

absl::Status Fp8Gemm(CublasLtGemm& lt, const Fp8GemmProblem& p, Fp8Path path,
                     const Fp8GemmArgs& a, cudaStream_t stream) {
  if (a.w == nullptr || a.x == nullptr || a.y == nullptr || a.w_scales == nullptr ||
      a.x_scales == nullptr) {
    return absl::InvalidArgumentError("FP8 gemm: null operand or scale");
  }
  if (a.m <= 0) return a.m == 0 ? absl::OkStatus() : absl::InvalidArgumentError("FP8: m < 0");
  if (Fp8GemmRows(p, a.m) != a.m) {
    return absl::InvalidArgumentError(absl::StrCat(
        "FP8 block-scaled gemm: ", a.m, " rows; pad them to ", Fp8GemmRows(p, a.m),
        " (cuBLASLt needs M % 4 == 0)"));
  }
  const LtGemmConfig config = Fp8LtConfig(p, a.m, path);
  if (path == Fp8Path::kCublasLtScaled) {
    if (a.y_f32 != nullptr) {
      LtGemmConfig f32 = config;
      f32.f32_output = true;
      const absl::Status st =
          lt.Run(f32, {a.w, a.x, a.w_scales, a.x_scales, 1.0f, a.y_f32}, stream);
      if (st.ok()) {
        return a.bias != nullptr ? AddBiasRows(a.y_f32, a.bias, a.m, p.n, stream) : st;
      }
      // Refusals come from building the plan, before any launch.
      if (st.code() != absl::StatusCode::kUnimplemented &&
          st.code() != absl::StatusCode::kInvalidArgument) {
        return st;
      }
    }
    TESSERA_RETURN_IF_ERROR(lt.Run(config, {a.w, a.x, a.w_scales, a.x_scales, 1.0f, a.y}, stream));
  } else {
    if (a.f32_scratch == nullptr) return absl::InvalidArgumentError("FP8 epilogue needs scratch");
    TESSERA_RETURN_IF_ERROR(
        lt.Run(config, {a.w, a.x, nullptr, nullptr, 1.0f, a.f32_scratch}, stream));
    const int64_t sa_stride = p.act == Fp8ActScale::kPerTensor ? 0 : 1;
    const int64_t sw_stride = p.weight == Fp8WeightScale::kPerTensor ? 0 : 1;
    TESSERA_RETURN_IF_ERROR(Fp8ScaleEpilogue(a.f32_scratch, a.m, p.n, a.x_scales, sa_stride,
                                             a.w_scales, sw_stride, a.y, stream));
  }
  return a.y_f32 != nullptr ? Bf16RowsToF32(a.y, a.m, p.n, a.bias, a.y_f32, stream)
                            : absl::OkStatus();
}

}  // namespace tessera::kernels::cuda
