// `bitsandbytes` (transformers' BitsAndBytesConfig, quant_method "bitsandbytes"): 4-bit layers
// (load_in_4bit: NF4 or bnb's FP4, with or without double quant; bnb_4bit.h reads their state),
// resolved from the tensors each layer stores, as bitsandbytes' own loader does: a weight with a
// quant state is 4-bit, one without it (llm_int8_skip_modules, lm_head) unquantized. 8-bit
// LLM.int8 checkpoints (load_in_8bit: int8 weights with an SCB row scale) are refused naming the
// layer.
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
    if (store.Contains(prefix + ".SCB")) {
      return absl::UnimplementedError(absl::StrFormat(
          "layer %s: bitsandbytes 8-bit (LLM.int8, tensor '%s.SCB') is not supported; "
          "load the unquantized model or a 4-bit one",
          module, prefix));
    }
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
