#include "engine/backend/cuda/cuda_kernel_selector.h"

#include "absl/strings/str_cat.h"
#include "kernels/cuda/device.h"
#include "kernels/cuda/fp8_gemm.h"
#include "kernels/cuda/nvfp4_gemm.h"
#include "kernels/cuda/w4a16_gemm.h"

namespace tessera::backend::cuda {
namespace {

namespace kc = ::tessera::kernels::cuda;
using quant::ActivationFormat;
using quant::LinearSpec;
using quant::ScaleGranularity;
using quant::WeightFormat;

void AppendReason(LinearSpec* spec, absl::string_view text) {
  spec->reason = spec->reason.empty() ? std::string(text) : absl::StrCat(spec->reason, "; ", text);
}

absl::Status GenericKernelsRun(int sm, absl::string_view what) {
  if (sm < 80) {
    return absl::UnimplementedError(
        absl::StrCat(what, ": sm_", sm, " is below the CUDA backend's minimum sm_80"));
  }
  if (!kc::CanRunGenericKernels(sm)) {
    return absl::FailedPreconditionError(absl::StrCat(what, ": not compiled for sm_", sm,
                                                      " (CMAKE_CUDA_ARCHITECTURES=",
                                                      kc::CompiledArchsString(), ")"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<kc::Fp8GemmProblem> Fp8ProblemFor(const LinearSpec& s) {
  kc::Fp8GemmProblem p;
  p.n = s.n;
  p.k = s.k;
  switch (s.activation_scale) {
    case ScaleGranularity::kTensor: p.act = kc::Fp8ActScale::kPerTensor; break;
    case ScaleGranularity::kColwise: p.act = kc::Fp8ActScale::kPerToken; break;
    case ScaleGranularity::kGroup:
      if (s.activation_group != 128) {
        return absl::UnimplementedError(
            absl::StrCat("FP8 activation groups of ", s.activation_group, " (only 128)"));
      }
      p.act = kc::Fp8ActScale::kPerTokenGroup128;
      break;
    default:
      return absl::UnimplementedError(absl::StrCat(
          "FP8 activation scale ", quant::ScaleGranularityName(s.activation_scale)));
  }
  switch (s.weight_scale) {
    case ScaleGranularity::kTensor: p.weight = kc::Fp8WeightScale::kPerTensor; break;
    case ScaleGranularity::kRowwise: p.weight = kc::Fp8WeightScale::kPerChannel; break;
    case ScaleGranularity::kBlock:
      if (s.block_n != 128 || s.block_k != 128) {
        return absl::UnimplementedError(
            absl::StrCat("FP8 weight blocks ", s.block_n, "x", s.block_k, " (only 128x128)"));
      }
      p.weight = kc::Fp8WeightScale::kBlock128;
      break;
    default:
      return absl::UnimplementedError(absl::StrCat(
          "FP8 weight scale ", quant::ScaleGranularityName(s.weight_scale)));
  }
  return p;
}

std::string CudaKernelSelector::name() const { return absl::StrCat("cuda sm_", sm_); }

absl::Status CudaKernelSelector::Select(LinearSpec* spec) const {
  switch (spec->weight_format) {
    case WeightFormat::kF32:
    case WeightFormat::kBF16:
    case WeightFormat::kF16:
      if (absl::Status st = GenericKernelsRun(sm_, spec->module); !st.ok()) return st;
      spec->kernel = "cuda/cublaslt-bf16";
      return absl::OkStatus();
    case WeightFormat::kFp8E4m3:
      return SelectFp8(spec);
    case WeightFormat::kNvfp4:
      if (spec->activation == ActivationFormat::kNvfp4) return SelectNvfp4W4A4(spec);
      return SelectW4A16(spec);
    case WeightFormat::kMxfp4:
    case WeightFormat::kInt4:
    case WeightFormat::kInt4Awq:
      return SelectW4A16(spec);
    case WeightFormat::kBnb4bit:
      // No 4-bit codebook GEMM on CUDA yet: dequantized to bf16 at upload (the weights
      // bitsandbytes' own CUDA path multiplies, cast to its bf16 compute dtype), 4x the memory.
      if (absl::Status st = GenericKernelsRun(sm_, spec->module); !st.ok()) return st;
      spec->kernel = "cuda/bnb4-dequant-bf16";
      AppendReason(spec, "fallback: no CUDA kernel for bitsandbytes 4-bit, dequantized to bf16");
      return absl::OkStatus();
    default:
      return absl::UnimplementedError(
          absl::StrCat(spec->module, ": no CUDA kernel for ",
                       quant::WeightFormatName(spec->weight_format), " weights (use the CPU)"));
  }
}

absl::Status CudaKernelSelector::SelectFp8(LinearSpec* spec) const {
  std::string why;
  if (spec->activation == ActivationFormat::kFp8 &&
      spec->activation_scale == ScaleGranularity::kTensor &&
      spec->activation_origin == quant::ScaleOrigin::kDynamic) {
    why = "dynamic per-tensor FP8 activations have no CUDA quantizer";
  } else if (spec->activation == ActivationFormat::kFp8) {
    absl::StatusOr<kc::Fp8GemmProblem> problem = Fp8ProblemFor(*spec);
    absl::StatusOr<kc::Fp8Path> path =
        problem.ok() ? kc::ChooseFp8Path(*problem, sm_) : problem.status();
    if (path.ok()) {
      spec->kernel = absl::StrCat("cuda/fp8-w8a8-", kc::Fp8PathName(*path));
      return absl::OkStatus();
    }
    if (path.status().code() == absl::StatusCode::kInvalidArgument) return path.status();
    why = std::string(path.status().message());
  }
  // W8A16: the weights are dequantized to bf16 at upload and run through the bf16 GEMM.
  if (absl::Status st = GenericKernelsRun(sm_, spec->module); !st.ok()) return st;
  spec->kernel = "cuda/fp8-w8a16-dequant-bf16";
  if (!why.empty()) AppendReason(spec, absl::StrCat("fallback: ", why, ", using W8A16"));
  return absl::OkStatus();
}

absl::Status CudaKernelSelector::SelectNvfp4W4A4(LinearSpec* spec) const {
  absl::Status st = kc::SupportsNvfp4W4A4(spec->n, spec->k, sm_);
  if (st.ok() && spec->nvfp4_scales_signed_or_nan) {
    st = absl::UnimplementedError(
        "block scale bytes with the sign bit or NaN (cuBLASLt reads them as unsigned UE4M3)");
  }
  if (st.ok() && spec->activation_origin == quant::ScaleOrigin::kDynamic) {
    // Checkpoints carry a static input global scale; the online "nvfp4" scheme computes one per
    // row from the row's amax, and the GEMM's alpha (α_w / g) is a single scalar.
    st = absl::UnimplementedError(
        "dynamic NVFP4 activation global scales (one per row) cannot fold into cuBLASLt's "
        "scalar alpha");
  }
  if (st.ok()) {
    spec->kernel = std::string(kNvfp4W4A4Kernel);
    return absl::OkStatus();
  }
  if (st.code() == absl::StatusCode::kInvalidArgument) {
    return absl::Status(st.code(), absl::StrCat(spec->module, ": ", st.message()));
  }
  if (absl::Status w4 = SelectW4A16(spec); !w4.ok()) return w4;
  AppendReason(spec, absl::StrCat("fallback: ", st.message(), ", using W4A16"));
  return absl::OkStatus();
}

absl::Status CudaKernelSelector::SelectW4A16(LinearSpec* spec) const {
  kc::W4A16Problem p;
  p.n = spec->n;
  p.k = spec->k;
  switch (spec->weight_format) {
    case WeightFormat::kNvfp4: p.format = kc::W4Format::kNvfp4; break;
    case WeightFormat::kMxfp4: p.format = kc::W4Format::kMxfp4; break;
    default:
      p.format = kc::W4Format::kInt4;
      p.group_size = spec->group_size == -1 ? spec->k : spec->group_size;
      p.act_order = spec->act_order;
  }
  if (absl::Status st = kc::SupportsW4A16(p, sm_); !st.ok()) {
    return absl::Status(st.code(), absl::StrCat(spec->module, ": ", st.message()));
  }
  const char* names[] = {"nvfp4", "mxfp4", "int4"};
  spec->kernel = absl::StrCat("cuda/w4a16-mma-", names[static_cast<int>(p.format)]);
  return absl::OkStatus();
}

}  // namespace tessera::backend::cuda
