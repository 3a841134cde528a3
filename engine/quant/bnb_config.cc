// `bitsandbytes` (transformers' BitsAndBytesConfig, quant_method "bitsandbytes"): 4-bit layers
// (load_in_4bit: NF4 or bnb's FP4, with or without double quant; bnb_4bit.h reads their state),
// resolved from the tensors each layer stores, as bitsandbytes' own loader does: a weight with a
// quant state is 4-bit, one with an SCB row scale 8-bit (load_in_8bit, LLM.int8), one with
// neither (llm_int8_skip_modules, lm_head) unquantized.
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "engine/common/status_macros.h"
#include "engine/quant/bnb_4bit.h"
#include "engine/quant/config_parsers.h"

namespace tessera::quant {
namespace {

class BitsandbytesConfig : public QuantConfig {
 public:
  std::string method() const override { return "bitsandbytes"; }
  std::string Summary() const override {
    return absl::StrCat("bitsandbytes (", quant_type_, double_quant_ ? ", double quant)" : ")");
  }
  absl::StatusOr<LinearSpec> Resolve(const std::string& module, const std::string& prefix,
                                     int64_t n, int64_t k,
                                     const io::TensorStore& store) const override {
    if (store.Contains(prefix + ".SCB")) return ResolveInt8(module, prefix, n, k, store);
    TESSERA_ASSIGN_OR_RETURN(std::optional<Bnb4bitState> state,
                             ReadBnb4bitState(store, module, prefix, n, k));
    if (!state.has_value()) {
      TESSERA_ASSIGN_OR_RETURN(LinearSpec s, DenseSpec(module, prefix, n, k, store));
      s.reason = "checkpoint: bitsandbytes left it unquantized (no quant state)";
      return s;
    }
    LinearSpec s;
    s.module = module;
    s.n = n;
    s.k = k;
    s.weight_format = WeightFormat::kBnb4bit;
    s.weight_scale = ScaleGranularity::kGroup;
    s.group_size = state->group;
    s.weight_scale_dtype = state->nested ? "U8 double-quant absmax" : "F32 absmax";
    s.source = absl::StrCat("bitsandbytes ", state->quant_type);
    s.reason = absl::StrFormat("checkpoint: bitsandbytes %s, block %d%s (products in f32; bnb "
                               "casts them to %s)",
                               state->quant_type, state->blocksize,
                               state->nested ? ", double quant" : "", state->dtype);
    return s;
  }

  std::string quant_type_;
  bool double_quant_ = false;

 private:
  // LLM.int8 (Linear8bitLt's state dict): `.weight` I8 [n, k], `.SCB` F32 [n] (each row's absmax,
  // w = q · SCB / 127) and `.weight_format` U8 0 ("row", the only layout bitsandbytes >= 0.45
  // writes). Runs as INT8 weight-only per channel, exact activations by default: the product
  // LLM.int8's int8 matmul and its fp16 outlier columns (llm_int8_threshold) approximate.
  static absl::StatusOr<LinearSpec> ResolveInt8(const std::string& module,
                                                const std::string& prefix, int64_t n, int64_t k,
                                                const io::TensorStore& store) {
    TESSERA_RETURN_IF_ERROR(
        parse::RequireTensor(store, module, prefix + ".weight", {io::DType::kI8}, {n, k}).status());
    TESSERA_RETURN_IF_ERROR(
        parse::RequireTensor(store, module, prefix + ".SCB", {io::DType::kF32}, {n}).status());
    if (store.Contains(prefix + ".weight_format")) {
      TESSERA_ASSIGN_OR_RETURN(io::TensorView format,
                               parse::RequireTensor(store, module, prefix + ".weight_format",
                                                    {io::DType::kU8}, {}, /*scalar=*/true));
      if (format.bytes[0] != 0) {
        return absl::UnimplementedError(absl::StrFormat(
            "layer %s: tensor '%s.weight_format' is %d; only 0 (row-major int8) is read", module,
            prefix, format.bytes[0]));
      }
    }
    LinearSpec s;
    s.module = module;
    s.n = n;
    s.k = k;
    s.weight_format = WeightFormat::kInt8;
    s.weight_scale = ScaleGranularity::kRowwise;
    s.group_size = -1;
    s.weight_scale_dtype = "F32 SCB/127";
    s.source = "bitsandbytes int8";
    s.reason = "checkpoint: bitsandbytes LLM.int8 (w = q * SCB / 127; bnb's fp16 outlier "
               "columns are an activation-side approximation tessera does not make)";
    return s;
  }
};

}  // namespace

absl::StatusOr<std::unique_ptr<QuantConfig>> ParseBitsandbytes(const OrderedJson& qc,
                                                               const io::TensorStore& /*store*/) {
  const bool four = parse::BoolOr(qc, "load_in_4bit", parse::BoolOr(qc, "_load_in_4bit", false));
  const bool eight = parse::BoolOr(qc, "load_in_8bit", parse::BoolOr(qc, "_load_in_8bit", false));
  if (!four && !eight) {
    return absl::InvalidArgumentError(
        "quantization_config: bitsandbytes with neither load_in_4bit nor load_in_8bit set");
  }
  auto c = std::make_unique<BitsandbytesConfig>();
  c->quant_type_ = four ? parse::StringOr(qc, "bnb_4bit_quant_type", "fp4") : "int8";
  c->double_quant_ = four && parse::BoolOr(qc, "bnb_4bit_use_double_quant", false);
  return std::unique_ptr<QuantConfig>(std::move(c));
}

}  // namespace tessera::quant
