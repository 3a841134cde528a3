// NVIDIA ModelOpt (quant-formats.md §5.4, §8.2): quant_algo FP8, FP8_PER_CHANNEL_PER_TOKEN, NVFP4,
// W4A16_NVFP4, or MIXED_PRECISION with per-module quantized_layers; exclude_modules / ignore are
// fnmatch wildcards (also substrings). Scales are multipliers (weight_scale_2, input_scale).
#include <map>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "engine/common/status_macros.h"
#include "engine/quant/config_parsers.h"
#include "engine/quant/name_match.h"

namespace tessera::quant {
namespace {

class ModelOptConfig : public QuantConfig {
 public:
  std::string method() const override { return "modelopt"; }
  std::string Summary() const override { return absl::StrCat("modelopt ", algo_); }

  absl::StatusOr<LinearSpec> Resolve(const std::string& module, const std::string& prefix, int64_t n,
                                     int64_t k, const io::TensorStore& store) const override {
    std::string algo = algo_;
    std::string why = absl::StrCat("checkpoint: modelopt ", algo_);
    if (algo_ == "MIXED_PRECISION") {
      auto it = layers_.find(module);
      algo = it == layers_.end() ? "" : it->second;
      why = absl::StrCat("checkpoint: modelopt mixed precision ", algo.empty() ? "(not listed)" : algo);
    }
    for (const std::string& e : exclude_) {
      if (ModelOptExcludeMatch(e, module)) {
        algo.clear();
        why = absl::StrCat("checkpoint: modelopt exclude '", e, "'");
        break;
      }
    }
    if (algo.empty() || IsStoredDense(prefix, store)) {
      TESSERA_ASSIGN_OR_RETURN(LinearSpec s, DenseSpec(module, prefix, n, k, store));
      s.reason = algo.empty() ? why : "checkpoint: modelopt stores this layer unquantized";
      return s;
    }
    LinearSpec s;
    s.module = module;
    s.n = n;
    s.k = k;
    s.source = absl::StrCat("modelopt ", algo);
    s.reason = why;
    if (algo == "FP8" || algo == "FP8_PER_CHANNEL_PER_TOKEN") {
      TESSERA_RETURN_IF_ERROR(parse::RequireTensor(store, module, prefix + ".weight", {io::DType::kF8E4M3}, {n, k}).status());
      s.weight_format = WeightFormat::kFp8E4m3;
      s.activation = ActivationFormat::kFp8;
      s.weight_scale_dtype = "F32";
      if (algo == "FP8") {
        TESSERA_RETURN_IF_ERROR(parse::RequireScalar(store, module, prefix + ".weight_scale"));
        TESSERA_RETURN_IF_ERROR(parse::RequireScalar(store, module, prefix + ".input_scale"));
        s.weight_scale = ScaleGranularity::kTensor;
        s.activation_scale = ScaleGranularity::kTensor;
        s.activation_origin = ScaleOrigin::kStatic;
      } else {
        TESSERA_RETURN_IF_ERROR(parse::RequireTensor(store, module, prefix + ".weight_scale", {}, {n}).status());
        s.weight_scale = ScaleGranularity::kRowwise;
        s.activation_scale = ScaleGranularity::kColwise;
        s.activation_origin = ScaleOrigin::kDynamic;
      }
      return s;
    }
    if (algo == "NVFP4" || algo == "W4A16_NVFP4") {
      if (k % 16 != 0) {
        return absl::InvalidArgumentError(absl::StrFormat("layer %s: NVFP4 K = %d is not a multiple of 16", module, k));
      }
      TESSERA_RETURN_IF_ERROR(parse::RequireTensor(store, module, prefix + ".weight", {io::DType::kU8}, {n, k / 2}).status());
      TESSERA_ASSIGN_OR_RETURN(io::TensorView block_scales, parse::RequireTensor(store, module, prefix + ".weight_scale", {io::DType::kF8E4M3}, {n, k / 16}));
      TESSERA_RETURN_IF_ERROR(parse::RequireScalar(store, module, prefix + ".weight_scale_2"));
      s.weight_format = WeightFormat::kNvfp4;
      s.weight_scale = ScaleGranularity::kGroup;
      s.group_size = 16;
      s.weight_scale_dtype = "F8_E4M3";
      s.global_scale = GlobalScaleConvention::kMultiplier;
      s.nvfp4_scales_signed_or_nan = parse::HasSignedOrNanUe4m3(block_scales);
      if (algo == "NVFP4") {
        TESSERA_RETURN_IF_ERROR(parse::RequireScalar(store, module, prefix + ".input_scale"));
        s.activation = ActivationFormat::kNvfp4;
        s.activation_scale = ScaleGranularity::kGroup;
        s.activation_group = 16;
        s.activation_origin = ScaleOrigin::kStatic;
      }
      return s;
    }
    return absl::InvalidArgumentError(
        absl::StrFormat("layer %s: modelopt quant_algo '%s' is not supported", module, algo));
  }

  std::string algo_;
  std::vector<std::string> exclude_;
  std::map<std::string, std::string> layers_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<QuantConfig>> ParseModelOpt(const OrderedJson& qc,
                                                           const io::TensorStore& /*store*/) {
  auto c = std::make_unique<ModelOptConfig>();
  c->algo_ = absl::AsciiStrToUpper(parse::StringOr(qc, "quant_algo", ""));
  if (c->algo_.empty()) return absl::InvalidArgumentError("modelopt config: quant_algo is missing");
  c->exclude_ = parse::StringList(qc, "exclude_modules");
  for (auto& s : parse::StringList(qc, "ignore")) c->exclude_.push_back(s);
  if (auto ql = qc.find("quantized_layers"); ql != qc.end() && ql->is_object()) {
    for (auto it = ql->begin(); it != ql->end(); ++it) {
      c->layers_[it.key()] = absl::AsciiStrToUpper(parse::StringOr(it.value(), "quant_algo", ""));
    }
  }
  static const char* kKnown[] = {"FP8", "FP8_PER_CHANNEL_PER_TOKEN", "NVFP4", "W4A16_NVFP4", "MIXED_PRECISION"};
  bool known = false;
  for (const char* a : kKnown) known |= c->algo_ == a;
  if (!known) {
    return absl::InvalidArgumentError(absl::StrCat("modelopt config: quant_algo '", c->algo_,
                                                   "' is not supported (FP8, FP8_PER_CHANNEL_PER_TOKEN, "
                                                   "NVFP4, W4A16_NVFP4, MIXED_PRECISION)"));
  }
  return std::unique_ptr<QuantConfig>(std::move(c));
}

}  // namespace tessera::quant
