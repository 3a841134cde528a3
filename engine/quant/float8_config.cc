#include "engine/quant/float8_config.h"

#include <map>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "engine/common/status_macros.h"
#include "engine/quant/config_parsers.h"
#include "engine/quant/name_match.h"

namespace tessera::quant {
namespace {

using parse::CeilDiv;
constexpr float kFbgemmDefaultUb = 1200.0f;

// HF `fp8` (FineGrainedFP8 block or per-tensor) and `fbgemm_fp8` checkpoints.
class Float8Method : public QuantConfig {
 public:
  Float8Method(std::string method, OrderedJson qc) : method_(std::move(method)), qc_(std::move(qc)) {
    ignored_ = parse::StringList(qc_, "modules_to_not_convert");
    for (auto& s : parse::StringList(qc_, "ignored_layers")) ignored_.push_back(s);
    if (auto b = qc_.find("weight_block_size"); b != qc_.end() && b->is_array() && b->size() == 2) {
      block_n_ = (*b)[0].get<int64_t>();
      block_k_ = (*b)[1].get<int64_t>();
    }
    activation_scheme_ = absl::AsciiStrToLower(parse::StringOr(qc_, "activation_scheme", "dynamic"));
    if (auto ub = qc_.find("activation_scale_ub"); ub != qc_.end() && ub->is_number()) {
      ub_ = ub->get<float>();
    }
  }

  std::string method() const override { return method_; }
  std::string Summary() const override {
    if (method_ == "fbgemm_fp8") return absl::StrFormat("fbgemm_fp8 (activation_scale_ub %g)", ub_);
    if (block_n_ > 0) return absl::StrFormat("fp8 block %dx%d", block_n_, block_k_);
    return absl::StrCat("fp8 per-tensor, ", activation_scheme_, " activations");
  }

  absl::StatusOr<LinearSpec> Resolve(const std::string& module, const std::string& prefix, int64_t n,
                                     int64_t k, const io::TensorStore& store) const override {
    // transformers always keeps lm_head unquantized for these methods.
    if (module == "lm_head" || ModulesToNotConvertMatch(ignored_, module)) {
      TESSERA_ASSIGN_OR_RETURN(LinearSpec s, DenseSpec(module, prefix, n, k, store));
      s.reason = absl::StrCat("checkpoint: ", method_, " modules_to_not_convert");
      return s;
    }
    if (IsStoredDense(prefix, store)) {
      TESSERA_ASSIGN_OR_RETURN(LinearSpec s, DenseSpec(module, prefix, n, k, store));
      s.reason = absl::StrCat("checkpoint: ", method_, " stores this layer unquantized");
      return s;
    }
    TESSERA_RETURN_IF_ERROR(parse::RequireTensor(store, module, prefix + ".weight",
                                                 {io::DType::kF8E4M3}, {n, k})
                                .status());
    LinearSpec s;
    s.module = module;
    s.n = n;
    s.k = k;
    s.weight_format = WeightFormat::kFp8E4m3;
    s.activation = ActivationFormat::kFp8;
    s.activation_origin = ScaleOrigin::kDynamic;
    s.weight_scale_dtype = "F32";
    if (method_ == "fbgemm_fp8") {
      TESSERA_ASSIGN_OR_RETURN(io::TensorView ws, parse::RequireTensor(store, module, prefix + ".weight_scale", {}));
      if (ws.numel() != n) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "layer %s: weight_scale has shape %s, expected [%d, 1]", module, ws.ShapeString(), n));
      }
      s.weight_scale_dtype = std::string(io::DTypeName(ws.dtype));
      s.weight_scale = ScaleGranularity::kRowwise;
      s.activation_scale = ScaleGranularity::kColwise;
      s.activation_scale_ub = ub_;
      s.source = "fbgemm_fp8";
      s.reason = "checkpoint: fbgemm_fp8 rowwise weights, dynamic per-token activations";
      return s;
    }
    if (block_n_ > 0) {
      TESSERA_RETURN_IF_ERROR(parse::RequireTensor(store, module, prefix + ".weight_scale_inv", {},
                                                   {CeilDiv(n, block_n_), CeilDiv(k, block_k_)})
                                  .status());
      s.weight_scale = ScaleGranularity::kBlock;
      s.block_n = block_n_;
      s.block_k = block_k_;
      s.activation_scale = ScaleGranularity::kGroup;
      s.activation_group = block_k_;
      s.source = "fp8 block (weight_scale_inv)";
      s.reason = absl::StrFormat("checkpoint: fp8 block %dx%d, per-token-group-%d activations",
                                 block_n_, block_k_, block_k_);
      return s;
    }
    TESSERA_RETURN_IF_ERROR(parse::RequireScalar(store, module, prefix + ".weight_scale"));
    s.weight_scale = ScaleGranularity::kTensor;
    s.source = "fp8 per-tensor";
    if (activation_scheme_ == "static") {
      TESSERA_RETURN_IF_ERROR(parse::RequireScalar(store, module, prefix + ".input_scale"));
      s.activation_scale = ScaleGranularity::kTensor;
      s.activation_origin = ScaleOrigin::kStatic;
      s.reason = "checkpoint: fp8 per-tensor, static input_scale";
    } else {
      // vLLM upgrades dynamic per-tensor to per-token, which is numerically better.
      s.activation_scale = ScaleGranularity::kColwise;
      s.reason = "checkpoint: fp8 per-tensor, dynamic activations (per-token)";
    }
    return s;
  }

 private:
  std::string method_;
  OrderedJson qc_;
  std::vector<std::string> ignored_;
  int64_t block_n_ = 0, block_k_ = 0;
  std::string activation_scheme_;
  float ub_ = kFbgemmDefaultUb;
};

}  // namespace

absl::StatusOr<std::unique_ptr<QuantConfig>> ParseFloat8Method(const std::string& method,
                                                               const OrderedJson& qc,
                                                               const io::TensorStore& /*store*/) {
  if (method == "fp8") {
    if (auto b = qc.find("weight_block_size"); b != qc.end() && !b->is_null()) {
      if (!b->is_array() || b->size() != 2 || !(*b)[0].is_number_integer() ||
          !(*b)[1].is_number_integer() || (*b)[0].get<int64_t>() <= 0 || (*b)[1].get<int64_t>() <= 0) {
        return absl::InvalidArgumentError("quantization_config.weight_block_size must be [n, k] > 0");
      }
      const std::string scheme = absl::AsciiStrToLower(parse::StringOr(qc, "activation_scheme", "dynamic"));
      if (scheme != "dynamic") {
        return absl::InvalidArgumentError(
            "quantization_config.activation_scheme must be 'dynamic' with weight_block_size");
      }
    }
  }
  return std::make_unique<Float8Method>(method, qc);
}

absl::StatusOr<Float8Config> ParseFloat8Config(const std::string& quantization_config_json,
                                               const io::TensorStore& store) {
  OrderedJson qc = OrderedJson::parse(quantization_config_json, nullptr, false);
  if (qc.is_discarded() || !qc.is_object()) {
    return absl::InvalidArgumentError("quantization_config is not a JSON object");
  }
  // Resolve every projection through the method's parser, then summarise.
  auto full = OrderedJson::object();
  full["quantization_config"] = qc;
  TESSERA_ASSIGN_OR_RETURN(auto config, ParseQuantConfig(full.dump(), "", store));
  Float8Config out;
  out.quant_method = config->method();
  std::map<int, std::map<std::string, bool>> layers;  // layer -> projection -> is float8
  bool first = true;
  for (const std::string& name : store.names()) {
    // model.layers.<i>.<self_attn|mlp>.<proj>.weight
    std::vector<std::string> parts = absl::StrSplit(name, '.');
    int layer;
    if (parts.size() != 6 || parts[0] != "model" || parts[1] != "layers" || parts[5] != "weight" ||
        !absl::SimpleAtoi(parts[2], &layer)) {
      continue;
    }
    if (parts[3] != "self_attn" && parts[3] != "mlp") continue;
    const std::string module = name.substr(0, name.size() - 7);
    auto view = store.Get(name);
    if (!view.ok() || view->rank() != 2) continue;
    auto spec = config->Resolve(module, module, view->shape[0], view->shape[1], store);
    if (!spec.ok()) return spec.status();
    const bool fp8 = spec->weight_format == WeightFormat::kFp8E4m3;
    layers[layer][parts[3] + "." + parts[4]] = fp8;
    if (fp8 && first) {
      first = false;
      out.weight_scale.granularity = spec->weight_scale;
      out.weight_scale.dtype = spec->weight_scale_dtype;
      out.weight_scale.block_n = spec->block_n;
      out.weight_scale.block_k = spec->block_k;
      if (spec->activation == ActivationFormat::kFp8) {
        Float8ScaleSpec in;
        in.granularity = spec->activation_scale;
        in.origin = spec->activation_origin;
        in.block_k = spec->activation_group;
        in.activation_upper_bound = spec->activation_scale_ub;
        out.input_scale = in;
      }
    }
  }
  for (const auto& [layer, projs] : layers) {
    for (const char* group : {"self_attn", "mlp"}) {
      int fp8 = 0, total = 0;
      std::string detail;
      for (const auto& [proj, is_fp8] : projs) {
        if (proj.rfind(group, 0) != 0) continue;
        ++total;
        fp8 += is_fp8;
        absl::StrAppend(&detail, detail.empty() ? "" : ", ", proj, is_fp8 ? " float8" : " high-precision");
      }
      if (fp8 != 0 && fp8 != total) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "layer %d: %s projections mix float8 and high precision (%s); float8 is all-or-nothing "
            "per layer",
            layer, group, detail));
      }
      if (fp8 > 0) (std::string(group) == "mlp" ? out.mlp_in_float8 : out.attn_qkv_in_float8).insert(layer);
    }
  }
  for (const char* name : {"model.embed_tokens.weight", "lm_head.weight"}) {
    if (auto v = store.Get(name); v.ok()) {
      out.embedding_output_dtype = std::string(io::DTypeName(v->dtype));
      break;
    }
  }
  return out;
}

}  // namespace tessera::quant
