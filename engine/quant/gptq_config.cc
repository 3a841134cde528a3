// GPTQ (quant-formats.md §7.1): qweight packed along K, qzeros packed along N, scales [G, N],
// optional g_idx; v1 zeros are stored minus one.
#include "engine/quant/gptq_config.h"

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "engine/common/status_macros.h"
#include "engine/quant/config_parsers.h"
#include "engine/quant/name_match.h"

namespace tessera::quant {
namespace {

absl::StatusOr<GptqConfig> FromJson(const OrderedJson& qc) {
  GptqConfig c;
  c.bits = static_cast<int>(parse::IntOr(qc, "bits", 4));
  c.group_size = static_cast<int>(parse::IntOr(qc, "group_size", 128));
  c.desc_act = parse::BoolOr(qc, "desc_act", false);
  c.sym = parse::BoolOr(qc, "sym", true);
  c.lm_head = parse::BoolOr(qc, "lm_head", false);
  c.checkpoint_format = absl::AsciiStrToLower(
      parse::StringOr(qc, "checkpoint_format", parse::StringOr(qc, "format", "gptq")));
  if (c.bits != 2 && c.bits != 3 && c.bits != 4 && c.bits != 8) {
    return absl::InvalidArgumentError(absl::StrFormat("gptq config: bits %d is not 2, 3, 4 or 8", c.bits));
  }
  if (c.group_size == 0 || c.group_size < -1) {
    return absl::InvalidArgumentError(absl::StrFormat("gptq config: group_size %d is invalid", c.group_size));
  }
  if (c.checkpoint_format != "gptq" && c.checkpoint_format != "gptq_v2") {
    return absl::InvalidArgumentError(absl::StrCat("gptq config: checkpoint_format '", c.checkpoint_format,
                                                   "' is not supported (gptq, gptq_v2)"));
  }
  if (auto d = qc.find("dynamic"); d != qc.end() && d->is_object()) {
    for (auto it = d->begin(); it != d->end(); ++it) {
      GptqConfig::DynamicRule r;
      std::string key = it.key();
      if (absl::StartsWith(key, "-:")) {
        r.quantize = false;
        key = key.substr(2);
      } else if (absl::StartsWith(key, "+:")) {
        key = key.substr(2);
      }
      r.pattern = key;
      if (it.value().is_object()) {
        r.bits = static_cast<int>(parse::IntOr(it.value(), "bits", 0));
        r.group_size = static_cast<int>(parse::IntOr(it.value(), "group_size", 0));
        if (it.value().contains("desc_act")) r.desc_act = parse::BoolOr(it.value(), "desc_act", false);
        if (it.value().contains("sym")) r.sym = parse::BoolOr(it.value(), "sym", true);
      }
      c.dynamic.push_back(r);
    }
  }
  return c;
}

class GptqMethod : public QuantConfig {
 public:
  explicit GptqMethod(GptqConfig c) : c_(std::move(c)) {}
  std::string method() const override { return "gptq"; }
  std::string Summary() const override {
    return absl::StrFormat("gptq %s %d-bit group %d%s%s", c_.checkpoint_format, c_.bits, c_.group_size,
                           c_.desc_act ? " desc_act" : "", c_.sym ? " sym" : " asym");
  }

  absl::StatusOr<LinearSpec> Resolve(const std::string& module, const std::string& prefix, int64_t n,
                                     int64_t k, const io::TensorStore& store) const override {
    const GptqConfig::Resolved r = c_.For(module);
    const bool skip = !r.quantized || (module == "lm_head" && !c_.lm_head);
    if (skip || !store.Contains(prefix + ".qweight")) {
      TESSERA_ASSIGN_OR_RETURN(LinearSpec s, DenseSpec(module, prefix, n, k, store));
      s.reason = !r.quantized ? "checkpoint: gptq dynamic '-:' rule"
                              : (skip ? "checkpoint: gptq lm_head not quantized"
                                      : "checkpoint: gptq stores this layer unquantized");
      return s;
    }
    const int64_t g = r.group_size == -1 ? k : r.group_size;
    if (k % g != 0) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "layer %s: group size %d does not divide K = %d", module, r.group_size, k));
    }
    if ((k * r.bits) % 32 != 0 || (n * r.bits) % 32 != 0) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "layer %s: %d-bit packing needs K*bits and N*bits to be multiples of 32 (K=%d, N=%d)",
          module, r.bits, k, n));
    }
    const int64_t groups = k / g;
    TESSERA_RETURN_IF_ERROR(parse::RequireTensor(store, module, prefix + ".qweight", {io::DType::kI32}, {k * r.bits / 32, n}).status());
    TESSERA_RETURN_IF_ERROR(parse::RequireTensor(store, module, prefix + ".qzeros", {io::DType::kI32}, {groups, n * r.bits / 32}).status());
    TESSERA_ASSIGN_OR_RETURN(io::TensorView sc, parse::RequireTensor(store, module, prefix + ".scales", {}, {groups, n}));
    LinearSpec s;
    s.module = module;
    s.n = n;
    s.k = k;
    s.weight_format = r.bits == 8 ? WeightFormat::kInt8
                      : r.bits == 4 ? WeightFormat::kInt4
                      : r.bits == 3 ? WeightFormat::kInt3
                                    : WeightFormat::kInt2;
    s.weight_scale = r.group_size == -1 ? ScaleGranularity::kRowwise : ScaleGranularity::kGroup;
    s.group_size = r.group_size;
    s.weight_scale_dtype = std::string(io::DTypeName(sc.dtype));
    s.zero_point = r.sym ? ZeroPointKind::kNone : ZeroPointKind::kInt;
    if (store.Contains(prefix + ".g_idx")) {
      TESSERA_RETURN_IF_ERROR(parse::RequireTensor(store, module, prefix + ".g_idx", {io::DType::kI32, io::DType::kI64}, {k}).status());
      s.act_order = r.desc_act;
    }
    s.source = c_.checkpoint_format == "gptq_v2" ? "gptq v2" : "gptq v1";
    s.reason = absl::StrFormat("checkpoint: %s %d-bit group %d%s", s.source, r.bits, r.group_size,
                               r.desc_act ? " desc_act" : "");
    return s;
  }

 private:
  GptqConfig c_;
};

}  // namespace

GptqConfig::Resolved GptqConfig::For(const std::string& module) const {
  Resolved r{true, bits, group_size, desc_act, sym};
  for (const DynamicRule& rule : dynamic) {
    if (!RegexMatchFromStart(rule.pattern, module)) continue;
    if (!rule.quantize) {
      r.quantized = false;
      return r;
    }
    if (rule.bits) r.bits = rule.bits;
    if (rule.group_size) r.group_size = rule.group_size;
    if (rule.desc_act >= 0) r.desc_act = rule.desc_act;
    if (rule.sym >= 0) r.sym = rule.sym;
    return r;
  }
  return r;
}

absl::StatusOr<GptqConfig> ParseGptqConfig(const std::string& quantization_config_json) {
  OrderedJson qc = OrderedJson::parse(quantization_config_json, nullptr, false);
  if (qc.is_discarded() || !qc.is_object()) return absl::InvalidArgumentError("gptq config is not a JSON object");
  return FromJson(qc);
}

absl::StatusOr<std::unique_ptr<QuantConfig>> ParseGptq(const OrderedJson& qc,
                                                       const io::TensorStore& /*store*/) {
  TESSERA_ASSIGN_OR_RETURN(GptqConfig c, FromJson(qc));
  return std::unique_ptr<QuantConfig>(std::make_unique<GptqMethod>(std::move(c)));
}

}  // namespace tessera::quant
