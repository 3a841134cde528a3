#include "engine/quant/linear_spec.h"

#include "absl/strings/str_cat.h"

namespace tessera::quant {

absl::string_view WeightFormatName(WeightFormat f) {
  switch (f) {
    case WeightFormat::kF32: return "f32";
    case WeightFormat::kBF16: return "bf16";
    case WeightFormat::kF16: return "f16";
    case WeightFormat::kFp8E4m3: return "fp8_e4m3";
    case WeightFormat::kInt8: return "int8";
    case WeightFormat::kInt4: return "int4";
    case WeightFormat::kInt3: return "int3";
    case WeightFormat::kInt2: return "int2";
    case WeightFormat::kInt4Awq: return "int4_awq";
    case WeightFormat::kNvfp4: return "nvfp4";
    case WeightFormat::kMxfp4: return "mxfp4";
    case WeightFormat::kBnb4bit: return "bnb4";
    case WeightFormat::kGgufQ8_0: return "gguf_q8_0";
    case WeightFormat::kGgufQ4_0: return "gguf_q4_0";
    case WeightFormat::kGgufQ4_1: return "gguf_q4_1";
    case WeightFormat::kGgufQ5_0: return "gguf_q5_0";
    case WeightFormat::kGgufQ5_1: return "gguf_q5_1";
    case WeightFormat::kGgufQ4_K: return "gguf_q4_k";
    case WeightFormat::kGgufQ5_K: return "gguf_q5_k";
    case WeightFormat::kGgufQ6_K: return "gguf_q6_k";
    case WeightFormat::kGgufQ2_K: return "gguf_q2_k";
    case WeightFormat::kGgufQ3_K: return "gguf_q3_k";
    case WeightFormat::kGgufIq4Nl: return "gguf_iq4_nl";
    case WeightFormat::kGgufIq4Xs: return "gguf_iq4_xs";
    case WeightFormat::kGgufIq2Xxs: return "gguf_iq2_xxs";
    case WeightFormat::kGgufIq2Xs: return "gguf_iq2_xs";
    case WeightFormat::kGgufIq2S: return "gguf_iq2_s";
    case WeightFormat::kGgufIq3Xxs: return "gguf_iq3_xxs";
    case WeightFormat::kGgufIq3S: return "gguf_iq3_s";
    case WeightFormat::kGgufIq1S: return "gguf_iq1_s";
    case WeightFormat::kGgufIq1M: return "gguf_iq1_m";
    case WeightFormat::kGgufTq1_0: return "gguf_tq1_0";
    case WeightFormat::kGgufTq2_0: return "gguf_tq2_0";
  }
  return "?";
}

absl::string_view ScaleGranularityName(ScaleGranularity g) {
  switch (g) {
    case ScaleGranularity::kNone: return "none";
    case ScaleGranularity::kTensor: return "tensor";
    case ScaleGranularity::kRowwise: return "rowwise";
    case ScaleGranularity::kColwise: return "colwise";
    case ScaleGranularity::kBlock: return "block";
    case ScaleGranularity::kGroup: return "group";
  }
  return "?";
}

absl::string_view ActivationFormatName(ActivationFormat a) {
  switch (a) {
    case ActivationFormat::kFloat: return "f32";
    case ActivationFormat::kFp8: return "fp8";
    case ActivationFormat::kInt8: return "int8";
    case ActivationFormat::kNvfp4: return "nvfp4";
    case ActivationFormat::kInt8Block32: return "q8_0 act";
    case ActivationFormat::kBf16: return "bf16";
    case ActivationFormat::kInt16Group:
      return "int16 act";
  }
  return "?";
}

bool IsHighPrecision(WeightFormat f) {
  return f == WeightFormat::kF32 || f == WeightFormat::kBF16 || f == WeightFormat::kF16;
}

int WeightBits(WeightFormat f) {
  switch (f) {
    case WeightFormat::kF32: return 32;
    case WeightFormat::kBF16: case WeightFormat::kF16: return 16;
    case WeightFormat::kFp8E4m3: case WeightFormat::kInt8: case WeightFormat::kGgufQ8_0: return 8;
    case WeightFormat::kInt3: case WeightFormat::kGgufQ3_K: return 3;
    case WeightFormat::kInt2: case WeightFormat::kGgufQ2_K: return 2;
    case WeightFormat::kGgufQ5_0: case WeightFormat::kGgufQ5_1: case WeightFormat::kGgufQ5_K: return 5;
    case WeightFormat::kGgufQ6_K: return 6;
    default: return 4;
  }
}

std::string LinearSpec::SchemeName() const {
  switch (weight_format) {
    case WeightFormat::kFp8E4m3:
      if (activation == ActivationFormat::kFloat || activation == ActivationFormat::kBf16) {
        return "fp8_wo";
      }
      if (weight_scale == ScaleGranularity::kRowwise && activation_scale == ScaleGranularity::kColwise &&
          activation_origin == ScaleOrigin::kDynamic) {
        return "ptpc_fp8";
      }
      return "fp8";
    case WeightFormat::kInt8:
      return activation == ActivationFormat::kInt8 ? "int8" : "int8_wo";
    case WeightFormat::kInt4:
    case WeightFormat::kInt4Awq:
    case WeightFormat::kInt3:
    case WeightFormat::kInt2: {
      const std::string bits = absl::StrCat("int", WeightBits(weight_format), "_wo");
      if (weight_scale == ScaleGranularity::kRowwise || group_size < 0) return bits + "_per_channel";
      return absl::StrCat(bits, "_", group_size);
    }
    case WeightFormat::kNvfp4:
      return activation == ActivationFormat::kNvfp4 ? "nvfp4" : "nvfp4_w4a16";
    case WeightFormat::kBnb4bit:  // "bitsandbytes nf4" / "bitsandbytes fp4"
      return source.rfind("bitsandbytes fp4", 0) == 0 ? "bnb_fp4" : "bnb_nf4";
    default:
      return std::string(WeightFormatName(weight_format));
  }
}

std::string LinearSpec::Describe() const {
  std::string w(weight_format == WeightFormat::kBnb4bit ? SchemeName()
                                                        : std::string(WeightFormatName(weight_format)));
  if (weight_scale != ScaleGranularity::kNone) {
    absl::StrAppend(&w, " ", ScaleGranularityName(weight_scale));
    if (weight_scale == ScaleGranularity::kGroup) absl::StrAppend(&w, "-", group_size);
    if (weight_scale == ScaleGranularity::kBlock) absl::StrAppend(&w, "-", block_n, "x", block_k);
    if (!weight_scale_dtype.empty()) absl::StrAppend(&w, " ", weight_scale_dtype, " scale");
  }
  if (zero_point != ZeroPointKind::kNone) absl::StrAppend(&w, " +zp");
  if (act_order) absl::StrAppend(&w, " act-order");
  std::string a(ActivationFormatName(activation));
  if (activation == ActivationFormat::kInt16Group) absl::StrAppend(&a, " group-", activation_group);
  if (activation != ActivationFormat::kFloat && activation != ActivationFormat::kInt8Block32 &&
      activation != ActivationFormat::kBf16 && activation != ActivationFormat::kInt16Group) {
    absl::StrAppend(&a, " ", activation_origin == ScaleOrigin::kStatic ? "static" : "dynamic", " ",
                    activation_scale == ScaleGranularity::kColwise ? "per-token"
                                                                   : ScaleGranularityName(activation_scale));
    if (activation_scale == ScaleGranularity::kGroup) absl::StrAppend(&a, "-", activation_group);
    if (activation_scale_ub) absl::StrAppend(&a, " ub=", *activation_scale_ub);
    if (activation_asymmetric) absl::StrAppend(&a, " asym");
  }
  return absl::StrCat("w: ", w, "; a: ", a);
}

}  // namespace tessera::quant
