#include "engine/model/model_config.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "engine/common/status_macros.h"
#include "nlohmann/json.hpp"

namespace tessera::model {
namespace {

using Json = nlohmann::json;

absl::Status FieldError(const std::string& field, const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat("config.json: ", field, " ", what));
}

absl::StatusOr<int64_t> RequireInt(const Json& j, const std::string& field) {
  auto it = j.find(field);
  if (it == j.end() || it->is_null()) return FieldError(field, "is missing");
  if (!it->is_number_integer()) return FieldError(field, "is not an integer");
  return it->get<int64_t>();
}

int64_t IntOr(const Json& j, const std::string& field, int64_t def) {
  auto it = j.find(field);
  return (it != j.end() && it->is_number_integer()) ? it->get<int64_t>() : def;
}

double NumberOr(const Json& j, const std::string& field, double def) {
  auto it = j.find(field);
  return (it != j.end() && it->is_number()) ? it->get<double>() : def;
}

bool BoolOr(const Json& j, const std::string& field, bool def) {
  auto it = j.find(field);
  return (it != j.end() && it->is_boolean()) ? it->get<bool>() : def;
}

void ReadTokenIds(const Json& j, const std::string& field, std::vector<int32_t>* out) {
  auto it = j.find(field);
  if (it == j.end()) return;
  if (it->is_number_integer()) out->push_back(it->get<int32_t>());
  if (it->is_array()) {
    for (const Json& v : *it) {
      if (v.is_number_integer()) out->push_back(v.get<int32_t>());
    }
  }
}

}  // namespace

std::string ModelConfig::ArchitectureName() const {
  switch (architecture) {
    case Architecture::kLlama: return "llama";
    case Architecture::kMistral: return "mistral";
    case Architecture::kQwen2: return "qwen2";
    case Architecture::kQwen3: return "qwen3";
    case Architecture::kQwen2Moe: return "qwen2_moe";
    case Architecture::kQwen3Moe: return "qwen3_moe";
    case Architecture::kMixtral: return "mixtral";
    case Architecture::kOlmoe: return "olmoe";
    case Architecture::kGranite: return "granite";
    case Architecture::kPhi3: return "phi3";
  }
  return "?";
}

std::string ModelConfig::ExtendedFeatures() const {
  std::vector<std::string> out;
  if (num_experts > 0) out.push_back(absl::StrCat("mixture of experts (", num_experts, ")"));
  if (HasGraniteMultipliers()) out.push_back("granite multipliers");
  if (qk_norm_whole) out.push_back("whole-projection q/k norms");
  if (clip_qkv > 0) out.push_back("clip_qkv");
  if (fused_qkv || fused_gate_up) out.push_back("fused qkv / gate_up projections");
  return absl::StrJoin(out, ", ");
}

bool ModelConfig::IsMoeLayer(int64_t layer) const {
  if (num_experts == 0) return false;
  for (int64_t l : mlp_only_layers) {
    if (l == layer) return false;
  }
  return (layer + 1) % decoder_sparse_step == 0;
}

absl::Status ModelConfig::Validate() const {
  auto positive = [](int64_t v, const char* name) -> absl::Status {
    if (v <= 0) return absl::InvalidArgumentError(absl::StrFormat("model config: %s must be > 0, got %d", name, v));
    return absl::OkStatus();
  };
  TESSERA_RETURN_IF_ERROR(positive(hidden_size, "hidden_size"));
  TESSERA_RETURN_IF_ERROR(positive(num_layers, "num_hidden_layers"));
  TESSERA_RETURN_IF_ERROR(positive(num_heads, "num_attention_heads"));
  TESSERA_RETURN_IF_ERROR(positive(num_kv_heads, "num_key_value_heads"));
  TESSERA_RETURN_IF_ERROR(positive(head_dim, "head_dim"));
  TESSERA_RETURN_IF_ERROR(positive(intermediate_size, "intermediate_size"));
  TESSERA_RETURN_IF_ERROR(positive(vocab_size, "vocab_size"));
  TESSERA_RETURN_IF_ERROR(positive(max_context, "max_position_embeddings"));
  // Far above any released model (DeepSeek-V3: 61 layers); a corrupt count must not size the
  // loader's per-layer loops and tables.
  constexpr int64_t kMaxLayers = 4096;
  if (num_layers > kMaxLayers) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "model config: num_hidden_layers %d is more than %d", num_layers, kMaxLayers));
  }
  if (num_heads % num_kv_heads != 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "model config: num_attention_heads %d is not a multiple of num_key_value_heads %d",
        num_heads, num_kv_heads));
  }
  if (rope_dim <= 0 || rope_dim > head_dim || rope_dim % 2 != 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("model config: rope dimension %d must be even and at most head_dim %d",
                        rope_dim, head_dim));
  }
  if (!(rms_norm_eps > 0) || !(rope_theta > 0)) {
    return absl::InvalidArgumentError("model config: rms_norm_eps and rope_theta must be > 0");
  }
  if (num_experts != 0) {
    // A bound far above any released model (DeepSeek-V3: 256, Qwen3-Next: 512) that keeps a
    // corrupt count from sizing the loader's tables.
    constexpr int64_t kMaxExperts = 4096;
    if (num_experts < 0 || num_experts > kMaxExperts) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "model config: num_experts %d is outside [1, %d]", num_experts, kMaxExperts));
    }
    if (num_experts_per_tok < 1 || num_experts_per_tok > num_experts) {
      return absl::InvalidArgumentError(
          absl::StrFormat("model config: num_experts_per_tok %d is outside [1, num_experts %d]",
                          num_experts_per_tok, num_experts));
    }
    TESSERA_RETURN_IF_ERROR(positive(moe_intermediate_size, "moe_intermediate_size"));
    TESSERA_RETURN_IF_ERROR(positive(decoder_sparse_step, "decoder_sparse_step"));
    if (shared_expert_intermediate_size < 0) {
      return absl::InvalidArgumentError("model config: shared_expert_intermediate_size must be >= 0");
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<ModelConfig> ModelConfigFromHfJson(const std::string& json_text) {
  Json j = Json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return absl::InvalidArgumentError("config.json is not a JSON object");
  }
  ModelConfig c;
  std::string model_type;
  if (auto it = j.find("model_type"); it != j.end() && it->is_string()) model_type = it->get<std::string>();
  if (auto it = j.find("architectures"); it != j.end() && it->is_array() && !it->empty() &&
                                         (*it)[0].is_string()) {
    c.architecture_name = (*it)[0].get<std::string>();
  }
  if (model_type == "llama") {
    c.architecture = Architecture::kLlama;
  } else if (model_type == "mistral") {
    c.architecture = Architecture::kMistral;
  } else if (model_type == "qwen2") {
    c.architecture = Architecture::kQwen2;
  } else if (model_type == "qwen3") {
    c.architecture = Architecture::kQwen3;
  } else if (model_type == "qwen2_moe") {
    c.architecture = Architecture::kQwen2Moe;
  } else if (model_type == "qwen3_moe") {
    c.architecture = Architecture::kQwen3Moe;
  } else if (model_type == "mixtral") {
    c.architecture = Architecture::kMixtral;
  } else if (model_type == "olmoe") {
    c.architecture = Architecture::kOlmoe;
  } else if (model_type == "granite") {
    c.architecture = Architecture::kGranite;
  } else if (model_type == "phi3") {
    c.architecture = Architecture::kPhi3;
    c.fused_qkv = c.fused_gate_up = true;
  } else {
    return FieldError("model_type",
                      absl::StrCat("'", model_type,
                                   "' is not supported (llama, mistral, qwen2, qwen3, qwen2_moe, "
                                   "qwen3_moe, mixtral, olmoe, granite, phi3)"));
  }
  if (c.architecture_name.empty()) c.architecture_name = model_type;
  TESSERA_ASSIGN_OR_RETURN(c.hidden_size, RequireInt(j, "hidden_size"));
  TESSERA_ASSIGN_OR_RETURN(c.num_layers, RequireInt(j, "num_hidden_layers"));
  TESSERA_ASSIGN_OR_RETURN(c.num_heads, RequireInt(j, "num_attention_heads"));
  c.num_kv_heads = IntOr(j, "num_key_value_heads", c.num_heads);
  c.head_dim = IntOr(j, "head_dim", c.num_heads > 0 ? c.hidden_size / c.num_heads : 0);
  TESSERA_ASSIGN_OR_RETURN(c.intermediate_size, RequireInt(j, "intermediate_size"));
  TESSERA_ASSIGN_OR_RETURN(c.vocab_size, RequireInt(j, "vocab_size"));
  c.max_context = IntOr(j, "max_position_embeddings", 2048);
  c.rope_theta = NumberOr(j, "rope_theta", 10000.0);
  c.rms_norm_eps = NumberOr(j, "rms_norm_eps", 1e-6);
  c.tie_word_embeddings = BoolOr(j, "tie_word_embeddings", false);
  // qwen2 and qwen2_moe (qkv_bias, default true) carry q/k/v biases.
  c.attention_bias = c.architecture == Architecture::kQwen2 ||
                     (c.architecture == Architecture::kQwen2Moe && BoolOr(j, "qkv_bias", true)) ||
                     BoolOr(j, "attention_bias", false);
  c.qk_norm = c.architecture == Architecture::kQwen3 || c.architecture == Architecture::kQwen3Moe;
  if (c.architecture == Architecture::kQwen2Moe || c.architecture == Architecture::kQwen3Moe) {
    // transformers' Qwen2MoeConfig / Qwen3MoeConfig defaults: norm_topk_prob false,
    // decoder_sparse_step 1; qwen2_moe adds a shared expert.
    TESSERA_ASSIGN_OR_RETURN(c.num_experts, RequireInt(j, "num_experts"));
    TESSERA_ASSIGN_OR_RETURN(c.num_experts_per_tok, RequireInt(j, "num_experts_per_tok"));
    TESSERA_ASSIGN_OR_RETURN(c.moe_intermediate_size, RequireInt(j, "moe_intermediate_size"));
    c.norm_topk_prob = BoolOr(j, "norm_topk_prob", false);
    if (c.architecture == Architecture::kQwen2Moe) {
      TESSERA_ASSIGN_OR_RETURN(c.shared_expert_intermediate_size,
                               RequireInt(j, "shared_expert_intermediate_size"));
    }
    c.decoder_sparse_step = IntOr(j, "decoder_sparse_step", 1);
    if (auto it = j.find("mlp_only_layers"); it != j.end() && !it->is_null()) {
      if (!it->is_array()) return FieldError("mlp_only_layers", "is not an array");
      for (const Json& v : *it) {
        if (!v.is_number_integer()) return FieldError("mlp_only_layers", "holds a non-integer");
        c.mlp_only_layers.push_back(v.get<int64_t>());
      }
    }
    c.moe_naming = MoeNaming::kQwen;
  } else if (c.architecture == Architecture::kOlmoe) {
    // OLMoE: experts intermediate_size wide, every layer sparse, weights not renormalized by
    // default; RMSNorm over the whole q / k projections; optional clip_qkv.
    TESSERA_ASSIGN_OR_RETURN(c.num_experts, RequireInt(j, "num_experts"));
    TESSERA_ASSIGN_OR_RETURN(c.num_experts_per_tok, RequireInt(j, "num_experts_per_tok"));
    c.moe_intermediate_size = c.intermediate_size;
    c.norm_topk_prob = BoolOr(j, "norm_topk_prob", false);
    c.qk_norm_whole = true;
    c.clip_qkv = NumberOr(j, "clip_qkv", 0.0);
    if (c.clip_qkv < 0) return FieldError("clip_qkv", "must be positive");
    c.moe_naming = MoeNaming::kQwen;
  } else if (c.architecture == Architecture::kGranite) {
    // transformers' GraniteConfig defaults are all 1.0 (attention too: its scores are scaled by
    // attention_multiplier alone, never 1/sqrt(head_dim)).
    c.embedding_multiplier = NumberOr(j, "embedding_multiplier", 1.0);
    c.attention_scale = NumberOr(j, "attention_multiplier", 1.0);
    c.residual_multiplier = NumberOr(j, "residual_multiplier", 1.0);
    c.logits_scaling = NumberOr(j, "logits_scaling", 1.0);
    if (!(c.attention_scale > 0) || !(c.logits_scaling > 0)) {
      return FieldError("attention_multiplier / logits_scaling", "must be > 0");
    }
  } else if (c.architecture == Architecture::kMixtral) {
    // Mixtral's experts are intermediate_size wide; its router always renormalizes (a softmax
    // over the top-k logits).
    TESSERA_ASSIGN_OR_RETURN(c.num_experts, RequireInt(j, "num_local_experts"));
    TESSERA_ASSIGN_OR_RETURN(c.num_experts_per_tok, RequireInt(j, "num_experts_per_tok"));
    c.moe_intermediate_size = c.intermediate_size;
    c.norm_topk_prob = true;
    c.moe_naming = MoeNaming::kMixtral;
  }
  const double partial = NumberOr(j, "partial_rotary_factor", 1.0);
  c.rope_dim = static_cast<int64_t>(c.head_dim * partial);
  c.rope_style = RopeStyle::kRotateHalf;
  if (auto rs = j.find("rope_scaling"); rs != j.end() && rs->is_object()) {
    std::string type;
    if (auto t = rs->find("rope_type"); t != rs->end() && t->is_string()) type = t->get<std::string>();
    if (auto t = rs->find("type"); type.empty() && t != rs->end() && t->is_string()) type = t->get<std::string>();
    if (type == "llama3") {
      c.rope_scaling.type = RopeScaling::Type::kLlama3;
      c.rope_scaling.factor = NumberOr(*rs, "factor", 8.0);
      c.rope_scaling.low_freq_factor = NumberOr(*rs, "low_freq_factor", 1.0);
      c.rope_scaling.high_freq_factor = NumberOr(*rs, "high_freq_factor", 4.0);
      c.rope_scaling.original_max_position = IntOr(*rs, "original_max_position_embeddings", 8192);
    } else if (type == "linear") {
      c.rope_scaling.type = RopeScaling::Type::kLinear;
      c.rope_scaling.factor = NumberOr(*rs, "factor", 1.0);
    } else if (type != "default" && !type.empty()) {
      return FieldError("rope_scaling.rope_type", absl::StrCat("'", type, "' is not supported (llama3, linear)"));
    }
  }
  const bool windowed = c.architecture == Architecture::kMistral ||
                        c.architecture == Architecture::kMixtral ||
                        c.architecture == Architecture::kPhi3 ||
                        BoolOr(j, "use_sliding_window", false);
  if (windowed && IntOr(j, "sliding_window", 0) > 0) {
    c.sliding_window = IntOr(j, "sliding_window", 0);
    c.max_context = std::min(c.max_context, c.sliding_window);
  }
  if (auto it = j.find("bos_token_id"); it != j.end() && it->is_number_integer()) {
    c.bos_token_id = it->get<int32_t>();
  }
  ReadTokenIds(j, "eos_token_id", &c.eos_token_ids);
  TESSERA_RETURN_IF_ERROR(c.Validate());
  return c;
}

absl::StatusOr<ModelConfig> ModelConfigFromGguf(const io::GgufMetadata& m) {
  ModelConfig c;
  TESSERA_ASSIGN_OR_RETURN(std::string arch, m.GetString("general.architecture"));
  c.architecture_name = arch;
  if (arch == "llama") {
    c.architecture = Architecture::kLlama;
    c.rope_style = RopeStyle::kInterleaved;  // the converter permuted Q/K (quant-formats.md §11.4)
  } else if (arch == "qwen2") {
    c.architecture = Architecture::kQwen2;
    c.attention_bias = true;
  } else if (arch == "qwen2moe") {
    c.architecture = Architecture::kQwen2Moe;
    c.attention_bias = true;
  } else if (arch == "olmoe") {
    c.architecture = Architecture::kOlmoe;
    c.qk_norm_whole = true;
  } else if (arch == "phi3") {
    // llama.cpp's phi3 graph: NeoX RoPE (no q/k permutation), gate and up in one ffn_up; q/k/v
    // in one attn_qkv (ModelSource checks the file, newer converters may split them).
    c.architecture = Architecture::kPhi3;
    c.fused_qkv = c.fused_gate_up = true;
  } else if (arch == "granite") {
    // llama.cpp's granite graph: llama's permuted q/k, and the four multipliers (logit_scale
    // required, the others default to none; attention.scale 0 means 1/sqrt(head_dim)).
    c.architecture = Architecture::kGranite;
    c.rope_style = RopeStyle::kInterleaved;
    TESSERA_ASSIGN_OR_RETURN(c.logits_scaling, m.GetFloat(absl::StrCat(arch, ".logit_scale")));
    auto scale = [&](const char* k, double def) {
      auto v = m.GetFloat(absl::StrCat(arch, ".", k));
      return v.ok() ? *v : def;
    };
    c.residual_multiplier = scale("residual_scale", 1.0);
    c.embedding_multiplier = scale("embedding_scale", 1.0);
    c.attention_scale = scale("attention.scale", 0.0);
    if (!(c.logits_scaling > 0) || c.attention_scale < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("GGUF ", arch, ".logit_scale must be > 0 and attention.scale >= 0"));
    }
  } else if (arch == "qwen3" || arch == "qwen3moe") {
    c.architecture = arch == "qwen3" ? Architecture::kQwen3 : Architecture::kQwen3Moe;
    c.qk_norm = true;
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("GGUF general.architecture '", arch,
                     "' is not supported (llama, qwen2, qwen3, qwen2moe, qwen3moe, olmoe, granite, "
                     "phi3)"));
  }
  auto key = [&](const char* k) { return absl::StrCat(arch, ".", k); };
  TESSERA_ASSIGN_OR_RETURN(uint64_t hidden, m.GetUint(key("embedding_length")));
  TESSERA_ASSIGN_OR_RETURN(uint64_t layers, m.GetUint(key("block_count")));
  TESSERA_ASSIGN_OR_RETURN(uint64_t heads, m.GetUint(key("attention.head_count")));
  c.hidden_size = static_cast<int64_t>(hidden);
  c.num_layers = static_cast<int64_t>(layers);
  c.num_heads = static_cast<int64_t>(heads);
  // llama.cpp's MoE layouts: qwen2moe / qwen3moe (experts expert_feed_forward_length wide;
  // qwen2moe's shared expert expert_shared_feed_forward_length) and llama with expert_count
  // (Mixtral, experts feed_forward_length wide). Every layer is sparse; the top-k weights are
  // renormalized as llama.cpp's graphs fix it per architecture (norm_w: qwen3moe and llama yes,
  // qwen2moe no), whatever an expert_weights_norm key says.
  const bool qwen_moe =
      c.architecture == Architecture::kQwen2Moe || c.architecture == Architecture::kQwen3Moe;
  if (auto experts = m.GetUint(key("expert_count")); experts.ok() && *experts > 0) {
    c.num_experts = static_cast<int64_t>(*experts);
    TESSERA_ASSIGN_OR_RETURN(uint64_t used, m.GetUint(key("expert_used_count")));
    c.num_experts_per_tok = static_cast<int64_t>(used);
    c.norm_topk_prob =
        c.architecture != Architecture::kQwen2Moe && c.architecture != Architecture::kOlmoe;
    if (c.architecture == Architecture::kLlama) {
      c.architecture = Architecture::kMixtral;
      c.moe_naming = MoeNaming::kMixtral;
    }
  } else if (qwen_moe || c.architecture == Architecture::kOlmoe) {
    return absl::InvalidArgumentError(absl::StrCat("GGUF ", arch, ".expert_count is missing or 0"));
  }
  if (qwen_moe) {
    // llama.cpp's fallbacks for files without the expert widths (early Qwen1.5-MoE GGUFs):
    // experts feed_forward_length / expert_used_count wide, the shared expert
    // feed_forward_length. A per-layer array of expert widths is not supported.
    auto ffn = m.GetUint(key("feed_forward_length"));
    auto expert_ffn = m.GetUint(key("expert_feed_forward_length"));
    if (!expert_ffn.ok() && !ffn.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "GGUF ", arch, ".expert_feed_forward_length and ", arch,
          ".feed_forward_length are both missing or not scalars"));
    }
    c.intermediate_size = ffn.ok() ? static_cast<int64_t>(*ffn) : 0;
    c.moe_intermediate_size = expert_ffn.ok() && *expert_ffn > 0
                                  ? static_cast<int64_t>(*expert_ffn)
                                  : c.intermediate_size / std::max<int64_t>(c.num_experts_per_tok, 1);
    if (c.intermediate_size == 0) c.intermediate_size = c.moe_intermediate_size;
    if (c.architecture == Architecture::kQwen2Moe) {
      auto shared = m.GetUint(key("expert_shared_feed_forward_length"));
      c.shared_expert_intermediate_size =
          shared.ok() && *shared > 0 ? static_cast<int64_t>(*shared) : c.intermediate_size;
    }
  } else {
    TESSERA_ASSIGN_OR_RETURN(uint64_t ffn, m.GetUint(key("feed_forward_length")));
    c.intermediate_size = static_cast<int64_t>(ffn);
    if (c.num_experts > 0) c.moe_intermediate_size = c.intermediate_size;
  }
  auto kv = m.GetUint(key("attention.head_count_kv"));
  c.num_kv_heads = kv.ok() ? static_cast<int64_t>(*kv) : c.num_heads;
  auto head_dim = m.GetUint(key("attention.key_length"));
  c.head_dim = head_dim.ok() ? static_cast<int64_t>(*head_dim) : c.hidden_size / c.num_heads;
  auto ctx = m.GetUint(key("context_length"));
  c.max_context = ctx.ok() ? static_cast<int64_t>(*ctx) : 2048;
  auto theta = m.GetFloat(key("rope.freq_base"));
  c.rope_theta = theta.ok() ? *theta : 10000.0;
  auto eps = m.GetFloat(key("attention.layer_norm_rms_epsilon"));
  c.rms_norm_eps = eps.ok() ? *eps : 1e-5;
  auto rope_dim = m.GetUint(key("rope.dimension_count"));
  c.rope_dim = rope_dim.ok() ? static_cast<int64_t>(*rope_dim) : c.head_dim;
  if (auto type = m.GetString(key("rope.scaling.type")); type.ok()) {
    if (*type == "linear") {
      c.rope_scaling.type = RopeScaling::Type::kLinear;
      auto f = m.GetFloat(key("rope.scaling.factor"));
      c.rope_scaling.factor = f.ok() ? *f : 1.0;
    } else if (*type != "none") {
      return absl::UnimplementedError(absl::StrCat("GGUF rope scaling '", *type, "' is not supported"));
    }
  }
  auto tokens = m.GetArray("tokenizer.ggml.tokens");
  if (auto vocab = m.GetUint(key("vocab_size")); vocab.ok()) {
    c.vocab_size = static_cast<int64_t>(*vocab);
  } else if (tokens.ok()) {
    c.vocab_size = static_cast<int64_t>((*tokens)->size());
  }
  if (auto bos = m.GetUint("tokenizer.ggml.bos_token_id"); bos.ok()) c.bos_token_id = static_cast<int32_t>(*bos);
  if (auto eos = m.GetUint("tokenizer.ggml.eos_token_id"); eos.ok()) c.eos_token_ids.push_back(static_cast<int32_t>(*eos));
  TESSERA_RETURN_IF_ERROR(c.Validate());
  return c;
}

std::vector<float> RopeInverseFrequencies(const ModelConfig& c) {
  const int64_t pairs = c.rope_dim / 2;
  std::vector<float> inv(pairs);
  const float base = static_cast<float>(c.rope_theta);
  for (int64_t i = 0; i < pairs; ++i) {
    // transformers: 1.0 / (base ** (arange(0, dim, 2).float() / dim)), all in float32.
    const float exponent = static_cast<float>(2 * i) / static_cast<float>(c.rope_dim);
    inv[i] = 1.0f / std::pow(base, exponent);
  }
  const RopeScaling& s = c.rope_scaling;
  if (s.type == RopeScaling::Type::kLinear) {
    for (float& f : inv) f = f / static_cast<float>(s.factor);
  } else if (s.type == RopeScaling::Type::kLlama3) {
    const double low_wavelen = s.original_max_position / s.low_freq_factor;
    const double high_wavelen = s.original_max_position / s.high_freq_factor;
    for (float& f : inv) {
      const double wavelen = 2 * M_PI / f;
      if (wavelen < high_wavelen) continue;  // high frequencies stay
      if (wavelen > low_wavelen) {
        f = static_cast<float>(f / s.factor);
        continue;
      }
      const double smooth = (s.original_max_position / wavelen - s.low_freq_factor) /
                            (s.high_freq_factor - s.low_freq_factor);
      f = static_cast<float>((1 - smooth) * f / s.factor + smooth * f);
    }
  }
  if (static_cast<int64_t>(c.rope_freq_factors.size()) == pairs) {
    for (int64_t i = 0; i < pairs; ++i) inv[i] /= c.rope_freq_factors[i];
  }
  return inv;
}

}  // namespace tessera::model
