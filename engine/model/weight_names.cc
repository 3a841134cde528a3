#include "engine/model/weight_names.h"

#include "absl/strings/str_cat.h"

namespace tessera::model {
namespace {

const char* HfSuffix(LayerTensor t) {
  switch (t) {
    case LayerTensor::kAttnNorm: return "input_layernorm.weight";
    case LayerTensor::kQ: return "self_attn.q_proj.weight";
    case LayerTensor::kK: return "self_attn.k_proj.weight";
    case LayerTensor::kV: return "self_attn.v_proj.weight";
    case LayerTensor::kO: return "self_attn.o_proj.weight";
    case LayerTensor::kQBias: return "self_attn.q_proj.bias";
    case LayerTensor::kKBias: return "self_attn.k_proj.bias";
    case LayerTensor::kVBias: return "self_attn.v_proj.bias";
    case LayerTensor::kQNorm: return "self_attn.q_norm.weight";
    case LayerTensor::kKNorm: return "self_attn.k_norm.weight";
    case LayerTensor::kFfnNorm: return "post_attention_layernorm.weight";
    case LayerTensor::kGate: return "mlp.gate_proj.weight";
    case LayerTensor::kUp: return "mlp.up_proj.weight";
    case LayerTensor::kDown: return "mlp.down_proj.weight";
    case LayerTensor::kQkv: return "self_attn.qkv_proj.weight";
    case LayerTensor::kGateUp: return "mlp.gate_up_proj.weight";
    case LayerTensor::kPreFfnNorm:
      return "pre_feedforward_layernorm.weight";
    case LayerTensor::kAttnPostNorm:
      return "post_attention_layernorm.weight";
    case LayerTensor::kFfnPostNorm:
      return "post_feedforward_layernorm.weight";
    case LayerTensor::kOBias:
      return "self_attn.o_proj.bias";
    case LayerTensor::kSinks:
      return "self_attn.sinks";
  }
  return "";
}

const char* GgufSuffix(LayerTensor t) {
  switch (t) {
    case LayerTensor::kAttnNorm: return "attn_norm.weight";
    case LayerTensor::kQ: return "attn_q.weight";
    case LayerTensor::kK: return "attn_k.weight";
    case LayerTensor::kV: return "attn_v.weight";
    case LayerTensor::kO: return "attn_output.weight";
    case LayerTensor::kQBias: return "attn_q.bias";
    case LayerTensor::kKBias: return "attn_k.bias";
    case LayerTensor::kVBias: return "attn_v.bias";
    case LayerTensor::kQNorm: return "attn_q_norm.weight";
    case LayerTensor::kKNorm: return "attn_k_norm.weight";
    case LayerTensor::kFfnNorm: return "ffn_norm.weight";
    case LayerTensor::kGate: return "ffn_gate.weight";
    case LayerTensor::kUp: return "ffn_up.weight";
    case LayerTensor::kDown: return "ffn_down.weight";
    case LayerTensor::kQkv: return "attn_qkv.weight";
    case LayerTensor::kGateUp: return "ffn_up.weight";
    case LayerTensor::kPreFfnNorm:
      return "ffn_norm.weight";
    case LayerTensor::kAttnPostNorm:
      return "post_attention_norm.weight";
    case LayerTensor::kFfnPostNorm:
      return "post_ffw_norm.weight";
    case LayerTensor::kOBias:
      return "attn_output.bias";
    case LayerTensor::kSinks:
      return "attn_sinks.weight";
  }
  return "";
}

}  // namespace

std::string WeightNames::Embedding() const {
  return scheme_ == NamingScheme::kHf ? "model.embed_tokens.weight" : "token_embd.weight";
}
std::string WeightNames::FinalNorm() const {
  return scheme_ == NamingScheme::kHf ? "model.norm.weight" : "output_norm.weight";
}
std::string WeightNames::LmHead() const {
  return scheme_ == NamingScheme::kHf ? "lm_head.weight" : "output.weight";
}
std::string WeightNames::Layer(int layer, LayerTensor t) const {
  if (scheme_ == NamingScheme::kHf) return absl::StrCat("model.layers.", layer, ".", HfSuffix(t));
  return absl::StrCat("blk.", layer, ".", GgufSuffix(t));
}

std::string WeightNames::ModuleName(int layer, LayerTensor t) {
  std::string s = HfSuffix(t);
  s = s.substr(0, s.rfind('.'));  // drop ".weight"
  return absl::StrCat("model.layers.", layer, ".", s);
}

namespace {

// Mixtral's w1 / w3 / w2 are gate / up / down; gpt-oss's gate and up are one gate_up_proj,
// Granite MoE's one input_linear (its down: output_linear).
std::string ExpertSuffix(LayerTensor t, MoeNaming moe) {
  const bool mixtral = moe == MoeNaming::kMixtral;
  if (moe == MoeNaming::kGraniteMoe) {
    return t == LayerTensor::kGateUp ? "input_linear" : "output_linear";
  }
  switch (t) {
    case LayerTensor::kGateUp:
      return "gate_up_proj";
    case LayerTensor::kGate: return mixtral ? "w1" : "gate_proj";
    case LayerTensor::kUp: return mixtral ? "w3" : "up_proj";
    default: return mixtral ? "w2" : "down_proj";
  }
}

const char* GgufFfnName(LayerTensor t) {
  switch (t) {
    case LayerTensor::kGateUp:
      return "ffn_gate_up";
    case LayerTensor::kGate: return "ffn_gate";
    case LayerTensor::kUp: return "ffn_up";
    default: return "ffn_down";
  }
}

const char* HfMoeBlock(MoeNaming moe) {
  return moe == MoeNaming::kMixtral || moe == MoeNaming::kGraniteMoe ? "block_sparse_moe" : "mlp";
}

}  // namespace

std::string WeightNames::Router(int layer, MoeNaming moe) const {
  if (scheme_ == NamingScheme::kGguf) return absl::StrCat("blk.", layer, ".ffn_gate_inp.weight");
  if (moe == MoeNaming::kGptOss) return absl::StrCat("model.layers.", layer, ".mlp.router.weight");
  if (moe == MoeNaming::kGraniteMoe) {
    return absl::StrCat("model.layers.", layer, ".block_sparse_moe.router.layer.weight");
  }
  return absl::StrCat("model.layers.", layer, ".", HfMoeBlock(moe), ".gate.weight");
}

std::string WeightNames::RouterBias(int layer, MoeNaming moe) const {
  const std::string w = Router(layer, moe);
  return absl::StrCat(w.substr(0, w.size() - 6), "bias");  // "weight" -> "bias"
}

std::string WeightNames::ExpertBias(int layer, int expert, LayerTensor t, MoeNaming moe) const {
  const std::string w = Expert(layer, expert, t, moe);
  return absl::StrCat(w.substr(0, w.size() - 6), "bias");
}

std::string WeightNames::StackedExpertBiases(int layer, LayerTensor t) {
  return absl::StrCat("blk.", layer, ".", GgufFfnName(t), "_exps.bias");
}

std::string WeightNames::Expert(int layer, int expert, LayerTensor t, MoeNaming moe) const {
  if (scheme_ == NamingScheme::kGguf) {
    return absl::StrCat("blk.", layer, ".", GgufFfnName(t), ".", expert, ".weight");
  }
  return absl::StrCat(ExpertModuleName(layer, expert, t, moe), ".weight");
}

std::string WeightNames::StackedExperts(int layer, LayerTensor t) {
  return absl::StrCat("blk.", layer, ".", GgufFfnName(t), "_exps.weight");
}

std::string WeightNames::ExpertModuleName(int layer, int expert, LayerTensor t, MoeNaming moe) {
  return absl::StrCat("model.layers.", layer, ".", HfMoeBlock(moe), ".experts.", expert, ".",
                      ExpertSuffix(t, moe));
}

std::string WeightNames::SharedExpert(int layer, LayerTensor t) const {
  if (scheme_ == NamingScheme::kGguf) {
    return absl::StrCat("blk.", layer, ".", GgufFfnName(t), "_shexp.weight");
  }
  return absl::StrCat(SharedExpertModuleName(layer, t), ".weight");
}

std::string WeightNames::SharedExpertGate(int layer) const {
  if (scheme_ == NamingScheme::kGguf) return absl::StrCat("blk.", layer, ".ffn_gate_inp_shexp.weight");
  return absl::StrCat("model.layers.", layer, ".mlp.shared_expert_gate.weight");
}

std::string WeightNames::SharedExpertModuleName(int layer, LayerTensor t) {
  return absl::StrCat("model.layers.", layer, ".mlp.shared_expert.",
                      ExpertSuffix(t, MoeNaming::kQwen));
}

}  // namespace tessera::model
