#include "engine/backend/cuda/weight_upload.h"

#include <cuda_runtime_api.h>

#include <cmath>
#include <cstring>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "engine/backend/cuda/cuda_kernel_selector.h"
#include "engine/common/status_macros.h"
#include "engine/quant/packed_weights.h"
#include "kernels/cpu/quant/fp4_matmul.h"  // Nvfp4Alpha, kNvfp4BlockSize
#include "kernels/cpu/quant/int_weight_only_matmul.h"
#include "kernels/cuda/cuda_status.h"
#include "kernels/cuda/nvfp4_scale_layout.h"
#include "kernels/numeric/half.h"

namespace tessera::backend::cuda {
namespace {

namespace kc = ::tessera::kernels::cuda;
using quant::LinearSpec;
using quant::ScaleGranularity;
using quant::WeightFormat;

// Bytes of the per-format pieces; each is one arena allocation (hence ArenaAligned).
int64_t Int4Groups(const LinearSpec& s) {
  return s.group_size > 0 ? s.k / s.group_size : 1;
}
int64_t Fp8WeightScaleCount(const LinearSpec& s) {
  switch (s.weight_scale) {
    case ScaleGranularity::kTensor: return 1;
    case ScaleGranularity::kBlock:
      return ((s.n + s.block_n - 1) / s.block_n) * ((s.k + s.block_k - 1) / s.block_k);
    default: return s.n;
  }
}

std::string PrefixOf(const std::string& weight_name) {
  return absl::EndsWith(weight_name, ".weight")
             ? weight_name.substr(0, weight_name.size() - 7)
             : weight_name;
}

// The packed weights exactly as model::PlanLinearFactory obtains them.
absl::StatusOr<quant::PackedWeights> LoadPacked(const LinearSpec& spec,
                                                const std::string& weight_name,
                                                const io::TensorStore& store) {
  if (spec.source == "online RTN") {
    TESSERA_ASSIGN_OR_RETURN(io::TensorView view, store.Get(weight_name));
    TESSERA_ASSIGN_OR_RETURN(std::vector<float> w, io::ToFloat32(view));
    return quant::QuantizeOnline(spec, w);
  }
  return quant::LoadPackedWeights(spec, PrefixOf(weight_name), store);
}

std::vector<uint16_t> DequantizeToBf16(const quant::PackedWeights& packed) {
  const int64_t n = packed.spec.n, k = packed.spec.k;
  std::vector<uint16_t> out(n * k);
  std::vector<float> row(k);
  for (int64_t r = 0; r < n; ++r) {
    packed.DequantizeRow(r, row.data());
    for (int64_t i = 0; i < k; ++i) out[r * k + i] = numeric::FloatToBf16(row[i]);
  }
  return out;
}

// bf16 [N, K] for the cuBLASLt bf16 GEMM: a dense tensor converted (bf16 copied bit for bit),
// a quantized layer the plan dequantizes ("dequantized from ..."), FP8 for W8A16, or bitsandbytes
// 4-bit (no CUDA kernel of its own).
absl::StatusOr<std::vector<uint16_t>> Bf16Weights(const LinearSpec& spec,
                                                  const std::string& weight_name,
                                                  const io::TensorStore& store,
                                                  const quant::QuantConfig& quant_config) {
  if (spec.weight_format == WeightFormat::kFp8E4m3 ||
      spec.weight_format == WeightFormat::kBnb4bit) {
    TESSERA_ASSIGN_OR_RETURN(quant::PackedWeights packed, LoadPacked(spec, weight_name, store));
    return DequantizeToBf16(packed);
  }
  if (absl::StartsWith(spec.source, "dequantized from")) {
    TESSERA_ASSIGN_OR_RETURN(
        LinearSpec stored,
        quant_config.Resolve(spec.module, PrefixOf(weight_name), spec.n, spec.k, store));
    TESSERA_ASSIGN_OR_RETURN(quant::PackedWeights packed,
                             quant::LoadPackedWeights(stored, PrefixOf(weight_name), store));
    return DequantizeToBf16(packed);
  }
  TESSERA_ASSIGN_OR_RETURN(io::TensorView view, store.Get(weight_name));
  if (view.numel() != spec.n * spec.k) {
    return absl::InvalidArgumentError(absl::StrCat("tensor '", weight_name, "' has shape ",
                                                   view.ShapeString(), ", expected [", spec.n,
                                                   ", ", spec.k, "]"));
  }
  std::vector<uint16_t> out(spec.n * spec.k);
  if (view.dtype == io::DType::kBF16) {
    std::memcpy(out.data(), view.bytes.data(), out.size() * 2);  // exact
    return out;
  }
  TESSERA_ASSIGN_OR_RETURN(std::vector<float> f32, io::ToFloat32(view));
  for (size_t i = 0; i < out.size(); ++i) out[i] = numeric::FloatToBf16(f32[i]);
  return out;
}

absl::Status ExpectSize(const LinearSpec& spec, absl::string_view what, size_t got,
                        size_t want) {
  if (got == want) return absl::OkStatus();
  return absl::InternalError(absl::StrCat(spec.module, ": ", what, " has ", got,
                                          " elements, the CUDA layout needs ", want));
}

absl::Status UploadW4A16(const LinearSpec& spec, const quant::PackedWeights& p,
                         ArenaRegion& region, DeviceLinear* out) {
  const int64_t n = spec.n, k = spec.k;
  kc::W4A16Weights& w = out->w4;
  if (spec.weight_format == WeightFormat::kNvfp4 || spec.weight_format == WeightFormat::kMxfp4) {
    const bool nv = spec.weight_format == WeightFormat::kNvfp4;
    w.format = nv ? kc::W4Format::kNvfp4 : kc::W4Format::kMxfp4;
    TESSERA_ASSIGN_OR_RETURN(
        w.packed, UploadVector<uint8_t>({p.q, static_cast<size_t>(n * k / 2)}, region, spec.module));
    TESSERA_ASSIGN_OR_RETURN(
        w.block_scales,
        UploadVector<uint8_t>({p.block_scales, static_cast<size_t>(n * k / (nv ? 16 : 32))},
                              region, spec.module));
    // The kernel multiplies by α in f32 after the dot product; compressed-tensors stores a
    // divisor (the CPU divides each block scale by it, a rounding apart from this).
    w.global_scale = p.global_divisor != 0.0f ? 1.0f / p.global_divisor : p.global_scale;
    return absl::OkStatus();
  }
  // INT4 (GPTQ / AWQ / compressed-tensors): the canonical layout holds one code per byte.
  w.format = kc::W4Format::kInt4;
  w.group_size = spec.group_size > 0 ? spec.group_size : k;
  const int64_t groups = Int4Groups(spec);
  TESSERA_RETURN_IF_ERROR(ExpectSize(spec, "scales", p.scales.size(), n * groups));
  TESSERA_RETURN_IF_ERROR(ExpectSize(spec, "zero points", p.zeros.size(), n * groups));
  std::vector<uint8_t> pairs(n * k / 2);
  for (int64_t r = 0; r < n; ++r) kernels::cpu::PackU4Pairs(p.q + r * k, k, &pairs[r * k / 2]);
  TESSERA_ASSIGN_OR_RETURN(w.packed, UploadVector<uint8_t>(pairs, region, spec.module));
  TESSERA_ASSIGN_OR_RETURN(w.scales, UploadVector<float>(p.scales, region, spec.module));
  TESSERA_ASSIGN_OR_RETURN(w.zeros, UploadVector<float>(p.zeros, region, spec.module));
  return absl::OkStatus();
}

absl::Status UploadFp8(const LinearSpec& spec, const quant::PackedWeights& p, ArenaRegion& region,
                       DeviceLinear* out) {
  TESSERA_ASSIGN_OR_RETURN(out->fp8_problem, Fp8ProblemFor(spec));
  out->fp8_path = absl::EndsWith(spec.kernel, "+epilogue") ? kc::Fp8Path::kCublasLtThenEpilogue
                                                           : kc::Fp8Path::kCublasLtScaled;
  TESSERA_RETURN_IF_ERROR(
      ExpectSize(spec, "weight scales", p.scales.size(), Fp8WeightScaleCount(spec)));
  TESSERA_ASSIGN_OR_RETURN(
      out->fp8,
      UploadVector<uint8_t>({p.q, static_cast<size_t>(spec.n * spec.k)}, region, spec.module));
  TESSERA_ASSIGN_OR_RETURN(out->fp8_scales, UploadVector<float>(p.scales, region, spec.module));
  if (spec.activation_origin == quant::ScaleOrigin::kStatic) {
    if (!(p.input_scale > 0.0f)) {
      return absl::InvalidArgumentError(
          absl::StrCat(spec.module, ": static FP8 input scale ", p.input_scale, " is not > 0"));
    }
    const float s = p.input_scale;
    TESSERA_ASSIGN_OR_RETURN(out->static_input_scale,
                             UploadVector<float>({&s, 1}, region, spec.module));
  }
  if (spec.activation_scale_ub) {
    const float ub = *spec.activation_scale_ub;
    TESSERA_ASSIGN_OR_RETURN(out->scale_ub, UploadVector<float>({&ub, 1}, region, spec.module));
  }
  out->activation_group =
      spec.activation_scale == ScaleGranularity::kGroup ? spec.activation_group : 0;
  return absl::OkStatus();
}

absl::Status UploadNvfp4W4A4(const LinearSpec& spec, const quant::PackedWeights& p,
                             ArenaRegion& region, DeviceLinear* out) {
  const int64_t n = spec.n, k = spec.k, scale_cols = k / kernels::cpu::kNvfp4BlockSize;
  if (p.block_scales == nullptr) {
    return absl::InternalError(absl::StrCat(spec.module, ": no NVFP4 block scales"));
  }
  // The GEMM folds 1/g into alpha, so g must be a usable divisor (the CPU would divide by it too).
  const float g = p.input_global_scale;
  if (!(g > 0.0f) || !std::isfinite(g)) {
    return absl::InvalidArgumentError(absl::StrCat(
        spec.module, ": static NVFP4 activation global scale ", g, " is not a positive number"));
  }
  // cuBLASLt reads the scales as unsigned UE4M3 (it ignores the sign bit); the reference decodes
  // them as E4M3. The two agree on every byte producers write: all but a set sign bit and NaN.
  // The selector keeps layers with such bytes on W4A16 (LinearSpec::nvfp4_scales_signed_or_nan),
  // so this only guards specs built some other way.
  for (int64_t i = 0; i < n * scale_cols; ++i) {
    const uint8_t b = p.block_scales[i];
    if ((b & 0x80) != 0 || b == 0x7F) {
      return absl::InvalidArgumentError(absl::StrCat(spec.module, ": NVFP4 block scale byte ",
                                                     static_cast<int>(b), " at ", i,
                                                     " is negative or NaN"));
    }
  }
  TESSERA_ASSIGN_OR_RETURN(
      out->fp4, UploadVector<uint8_t>({p.q, static_cast<size_t>(n * k / 2)}, region, spec.module));
  std::vector<uint8_t> swizzled(static_cast<size_t>(kc::SwizzledScaleBytes(n, scale_cols)));
  kc::SwizzleScales(p.block_scales, n, scale_cols, swizzled.data());
  TESSERA_ASSIGN_OR_RETURN(out->fp4_scales, UploadVector<uint8_t>(swizzled, region, spec.module));
  TESSERA_ASSIGN_OR_RETURN(out->act_global_scale,
                           UploadVector<float>({&g, 1}, region, spec.module));
  // The CPU's α(m) for static inputs, from the same two numbers (α_w is 1 / divisor for CT).
  out->fp4_alpha = kernels::cpu::Nvfp4Alpha(p.global_scale, g);
  return absl::OkStatus();
}

}  // namespace

absl::Status CopyToDevice(void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return absl::OkStatus();
  RETURN_IF_CUDA_ERROR(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice));
  return absl::OkStatus();
}

absl::StatusOr<DeviceLinearKind> DeviceLinearKindFor(const LinearSpec& spec) {
  const std::string& id = spec.kernel;
  if (id == "cuda/cublaslt-bf16" || id == "cuda/fp8-w8a16-dequant-bf16" ||
      id == "cuda/bnb4-dequant-bf16") {
    // cuBLASLt takes bf16 GEMMs of any shape (odd ones, like stories260K's ffn of 172, get
    // unvectorized kernels), so there is no shape rule to check here.
    return DeviceLinearKind::kBf16;
  }
  if (absl::StartsWith(id, "cuda/w4a16-mma-")) return DeviceLinearKind::kW4A16;
  if (absl::StartsWith(id, "cuda/fp8-w8a8-")) return DeviceLinearKind::kFp8W8A8;
  if (id == kNvfp4W4A4Kernel) return DeviceLinearKind::kNvfp4W4A4;
  return absl::UnimplementedError(absl::StrCat(
      spec.module, ": the CUDA decoder has no path for kernel '", id, "' (",
      quant::WeightFormatName(spec.weight_format), " weights)"));
}

absl::StatusOr<size_t> DeviceLinearBytes(const LinearSpec& spec, bool has_bias) {
  TESSERA_ASSIGN_OR_RETURN(DeviceLinearKind kind, DeviceLinearKindFor(spec));
  const size_t n = static_cast<size_t>(spec.n), k = static_cast<size_t>(spec.k);
  size_t bytes = has_bias ? ArenaAligned(n * sizeof(float)) : 0;
  switch (kind) {
    case DeviceLinearKind::kBf16: return bytes + ArenaAligned(n * k * 2);
    case DeviceLinearKind::kW4A16:
      bytes += ArenaAligned(n * k / 2);
      if (spec.weight_format == WeightFormat::kNvfp4) return bytes + ArenaAligned(n * k / 16);
      if (spec.weight_format == WeightFormat::kMxfp4) return bytes + ArenaAligned(n * k / 32);
      return bytes + 2 * ArenaAligned(n * static_cast<size_t>(Int4Groups(spec)) * sizeof(float));
    case DeviceLinearKind::kNvfp4W4A4:
      return bytes + ArenaAligned(n * k / 2) +
             ArenaAligned(static_cast<size_t>(kc::SwizzledScaleBytes(spec.n, spec.k / 16))) +
             ArenaAligned(sizeof(float));
    case DeviceLinearKind::kFp8W8A8:
      return bytes + ArenaAligned(n * k) +
             ArenaAligned(static_cast<size_t>(Fp8WeightScaleCount(spec)) * sizeof(float)) +
             2 * ArenaAligned(sizeof(float));
  }
  return absl::InternalError("unknown device linear kind");
}

absl::StatusOr<DeviceLinear> UploadLinear(const LinearSpec& spec, const std::string& weight_name,
                                          const io::TensorStore& store,
                                          const quant::QuantConfig& quant_config,
                                          absl::Span<const float> bias, ArenaRegion& region) {
  DeviceLinear out;
  out.module = spec.module;
  out.n = spec.n;
  out.k = spec.k;
  TESSERA_ASSIGN_OR_RETURN(out.kind, DeviceLinearKindFor(spec));
  if (!bias.empty()) {
    if (static_cast<int64_t>(bias.size()) != spec.n) {
      return absl::InvalidArgumentError(
          absl::StrCat(spec.module, ": bias has ", bias.size(), " values, expected ", spec.n));
    }
    TESSERA_ASSIGN_OR_RETURN(out.bias, UploadVector<float>(bias, region, spec.module));
  }
  if (out.kind == DeviceLinearKind::kBf16) {
    TESSERA_ASSIGN_OR_RETURN(std::vector<uint16_t> w,
                             Bf16Weights(spec, weight_name, store, quant_config));
    TESSERA_ASSIGN_OR_RETURN(out.bf16, UploadVector<uint16_t>(w, region, spec.module));
    return out;
  }
  TESSERA_ASSIGN_OR_RETURN(quant::PackedWeights packed, LoadPacked(spec, weight_name, store));
  if (packed.q == nullptr) return absl::InternalError(absl::StrCat(spec.module, ": no codes"));
  if (out.kind == DeviceLinearKind::kW4A16) {
    TESSERA_RETURN_IF_ERROR(UploadW4A16(spec, packed, region, &out));
  } else if (out.kind == DeviceLinearKind::kNvfp4W4A4) {
    TESSERA_RETURN_IF_ERROR(UploadNvfp4W4A4(spec, packed, region, &out));
  } else {
    TESSERA_RETURN_IF_ERROR(UploadFp8(spec, packed, region, &out));
  }
  return out;
}

}  // namespace tessera::backend::cuda
