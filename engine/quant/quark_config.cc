// AMD Quark (quant-formats.md §4.1, §5.5, §6.2, §7.3, §9.4): exclude (names, globs, re:), then
// layer_quant_config (fnmatch keys, first match), layer_type_quant_config (by class), then
// global_quant_config. Specs: fp8_e4m3, int8, int4/uint4 per-group (AWQ layout under Quark
// names; int4 nibbles are two's complement), fp4 (MXFP4 with E8M0 scales).
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "engine/common/status_macros.h"
#include "engine/quant/config_parsers.h"
#include "engine/quant/name_match.h"

namespace tessera::quant {
namespace {

class QuarkConfig : public QuantConfig {
 public:
  std::string method() const override { return "quark"; }

  absl::StatusOr<LinearSpec> Resolve(const std::string& module, const std::string& prefix, int64_t n,
                                     int64_t k, const io::TensorStore& store) const override {
    for (const std::string& e : exclude_) {
      const bool hit = absl::StartsWith(e, "re:") ? RegexMatchFromStart(e.substr(3), module)
                                                  : (e == module || GlobMatch(e, module));
      if (hit) {
        TESSERA_ASSIGN_OR_RETURN(LinearSpec s, DenseSpec(module, prefix, n, k, store));
        s.reason = absl::StrCat("checkpoint: quark exclude '", e, "'");
        return s;
      }
    }
    const OrderedJson* cfg = nullptr;
    std::string which = "global_quant_config";
    for (auto it = layer_.begin(); it != layer_.end() && !cfg; ++it) {
      const bool hit = it.key().find('*') != std::string::npos ? GlobMatch(it.key(), module) : it.key() == module;
      if (hit) {
        cfg = &it.value();
        which = absl::StrCat("layer_quant_config '", it.key(), "'");
      }
    }
    if (!cfg && layer_type_.contains("Linear")) {
      cfg = &layer_type_["Linear"];
      which = "layer_type_quant_config Linear";
    }
    if (!cfg) cfg = &global_;
    auto w = cfg->find("weight");
    if (w == cfg->end() || !w->is_object() || IsStoredDense(prefix, store)) {
      TESSERA_ASSIGN_OR_RETURN(LinearSpec s, DenseSpec(module, prefix, n, k, store));
      s.reason = "checkpoint: quark leaves this layer unquantized";
      return s;
    }
    const std::string dtype = absl::AsciiStrToLower(parse::StringOr(*w, "dtype", ""));
    const std::string qscheme = parse::StringOr(*w, "qscheme", "per_tensor");
    LinearSpec s;
    s.module = module;
    s.n = n;
    s.k = k;
    s.source = absl::StrCat("quark ", dtype);
    s.reason = absl::StrCat("checkpoint: quark ", which, " ", dtype, " ", qscheme);
    const OrderedJson* in = nullptr;
    if (auto it = cfg->find("input_tensors"); it != cfg->end() && it->is_object()) in = &*it;
    if (dtype == "fp8_e4m3" || dtype == "int8") {
      const bool fp8 = dtype == "fp8_e4m3";
      TESSERA_RETURN_IF_ERROR(parse::RequireTensor(store, module, prefix + ".weight", {fp8 ? io::DType::kF8E4M3 : io::DType::kI8}, {n, k}).status());
      s.weight_format = fp8 ? WeightFormat::kFp8E4m3 : WeightFormat::kInt8;
      TESSERA_ASSIGN_OR_RETURN(io::TensorView ws, parse::RequireTensor(store, module, prefix + ".weight_scale", {}));
      s.weight_scale_dtype = std::string(io::DTypeName(ws.dtype));
      if (ws.numel() == 1) s.weight_scale = ScaleGranularity::kTensor;
      else if (ws.numel() == n) s.weight_scale = ScaleGranularity::kRowwise;
      else return absl::InvalidArgumentError(absl::StrFormat("layer %s: weight_scale has shape %s, expected [] or [%d]", module, ws.ShapeString(), n));
      if (in != nullptr) {
        s.activation = fp8 ? ActivationFormat::kFp8 : ActivationFormat::kInt8;
        const bool dynamic = parse::BoolOr(*in, "is_dynamic", false);
        const std::string iq = parse::StringOr(*in, "qscheme", "per_tensor");
        s.activation_origin = dynamic ? ScaleOrigin::kDynamic : ScaleOrigin::kStatic;
        s.activation_scale = (iq == "per_channel" && dynamic) ? ScaleGranularity::kColwise : ScaleGranularity::kTensor;
        s.activation_asymmetric = !parse::BoolOr(*in, "symmetric", true);
        if (!dynamic) TESSERA_RETURN_IF_ERROR(parse::RequireScalar(store, module, prefix + ".input_scale"));
      }
      return s;
    }
    if (dtype == "int4" || dtype == "uint4") {
      const int64_t g = parse::IntOr(*w, "group_size", 128);
      if (g <= 0 || k % g != 0) {
        return absl::InvalidArgumentError(absl::StrFormat("layer %s: group size %d does not divide K = %d", module, g, k));
      }
      TESSERA_RETURN_IF_ERROR(parse::RequireTensor(store, module, prefix + ".weight", {io::DType::kI32}, {k, n / 8}).status());
      TESSERA_ASSIGN_OR_RETURN(io::TensorView sc, parse::RequireTensor(store, module, prefix + ".weight_scale", {}, {k / g, n}));
      s.weight_format = WeightFormat::kInt4Awq;
      s.weight_scale = ScaleGranularity::kGroup;
      s.group_size = g;
      s.weight_scale_dtype = std::string(io::DTypeName(sc.dtype));
      if (store.Contains(prefix + ".weight_zero_point")) s.zero_point = ZeroPointKind::kInt;
      // amd-quark's Pack_4_bits stores int4 as two's-complement nibbles (value & 0xF) and uint4
      // as plain codes; the unpacker needs to know which (it sign-extends int4).
      s.source = dtype == "int4" ? "quark int4 (awq-gemm layout)" : "quark uint4 (awq-gemm layout)";
      return s;
    }
    if (dtype == "fp4") {
      if (k % 32 != 0) return absl::InvalidArgumentError(absl::StrFormat("layer %s: MXFP4 K = %d is not a multiple of 32", module, k));
      TESSERA_RETURN_IF_ERROR(parse::RequireTensor(store, module, prefix + ".weight", {io::DType::kU8}, {n, k / 2}).status());
      TESSERA_RETURN_IF_ERROR(parse::RequireTensor(store, module, prefix + ".weight_scale", {io::DType::kU8, io::DType::kF8E8M0}, {n, k / 32}).status());
      s.weight_format = WeightFormat::kMxfp4;
      s.weight_scale = ScaleGranularity::kGroup;
      s.group_size = 32;
      s.weight_scale_dtype = "E8M0";
      return s;
    }
    return absl::InvalidArgumentError(absl::StrFormat("layer %s: quark weight dtype '%s' is not supported", module, dtype));
  }

  OrderedJson global_, layer_, layer_type_;
  std::vector<std::string> exclude_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<QuantConfig>> ParseQuark(const OrderedJson& qc, const io::TensorStore& /*store*/) {
  auto c = std::make_unique<QuarkConfig>();
  // Not OrderedJson::value(): it throws when a key holds another type.
  auto object_or_empty = [&](const char* key) {
    auto it = qc.find(key);
    return (it == qc.end() || it->is_null()) ? OrderedJson::object() : *it;
  };
  c->global_ = object_or_empty("global_quant_config");
  c->layer_ = object_or_empty("layer_quant_config");
  c->layer_type_ = object_or_empty("layer_type_quant_config");
  c->exclude_ = parse::StringList(qc, "exclude");
  if (!c->global_.is_object() || !c->layer_.is_object() || !c->layer_type_.is_object()) {
    return absl::InvalidArgumentError("quark config: global/layer/layer_type quant configs must be objects");
  }
  return std::unique_ptr<QuantConfig>(std::move(c));
}

}  // namespace tessera::quant
