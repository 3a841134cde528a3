// ModelConfigFromHfJson: a Hugging Face config.json read as transformers' configuration classes
// read it (their defaults where a field is absent), for every architecture ModelConfig knows.
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

// A number whose JSON null means "none" (0) and whose absence means the class default; any other
// JSON type is an error naming the field.
absl::StatusOr<double> NullableNumber(const Json& j, const std::string& field, double def) {
  auto it = j.find(field);
  if (it == j.end()) return def;
  if (it->is_null()) return 0.0;
  if (!it->is_number()) return FieldError(field, "is not a number or null");
  return it->get<double>();
}

// Which layers slide: config.json's layer_types where the architecture's transformers class reads
// it (qwen2 / qwen3, gemma2 / gemma3, olmo3: `use_layer_types`), else the rule `sliding(i)`.
template <typename Rule>
absl::Status ReadSlidingLayers(const Json& j, ModelConfig& c, bool use_layer_types, Rule sliding) {
  if (c.num_layers < 0 || c.num_layers > ModelConfig::kMaxLayers) return absl::OkStatus();
  c.sliding_layers.assign(c.num_layers, false);  // (Validate reports a bad layer count)
  if (auto it = j.find("layer_types"); use_layer_types && it != j.end() && !it->is_null()) {
    if (!it->is_array() || static_cast<int64_t>(it->size()) != c.num_layers) {
      return FieldError("layer_types", "is not an array of num_hidden_layers strings");
    }
    for (int64_t i = 0; i < c.num_layers; ++i) {
      const Json& t = (*it)[i];
      if (!t.is_string() || (t != "sliding_attention" && t != "full_attention")) {
        return FieldError(absl::StrCat("layer_types[", i, "]"),
                          "is not 'sliding_attention' or 'full_attention'");
      }
      c.sliding_layers[i] = t == "sliding_attention";
    }
    return absl::OkStatus();
  }
  for (int64_t i = 0; i < c.num_layers; ++i) c.sliding_layers[i] = sliding(i);
  return absl::OkStatus();
}

// Gemma's MLP activation. Gemma 2 / 3: hidden_activation (transformers reads nothing else;
// default tanh GELU). Gemma 1: hidden_activation where set, else hidden_act. transformers 4.57's
// GemmaMLP reads hidden_act alone, which Google's configs set to "gelu" (erf) beside
// hidden_activation "gelu_pytorch_tanh"; the tanh form is what Gemma was trained with and what
// llama.cpp computes, so it wins here (a deliberate departure, by < 1e-3 per activation).
absl::StatusOr<MlpActivation> GemmaActivation(const Json& j, bool gemma1) {
  std::string act = "gelu_pytorch_tanh", field = "hidden_activation";
  if (auto it = j.find("hidden_activation"); it != j.end() && it->is_string()) {
    act = it->get<std::string>();
  } else if (auto h = j.find("hidden_act"); gemma1 && h != j.end() && h->is_string()) {
    act = h->get<std::string>();
    field = "hidden_act";
  }
  if (act == "gelu_pytorch_tanh" || act == "gelu_new") return MlpActivation::kGeluTanh;
  if (act == "gelu") return MlpActivation::kGeluErf;
  return FieldError(field, absl::StrCat("'", act, "' is not supported (gelu_pytorch_tanh, gelu)"));
}

// transformers' _compute_yarn_parameters: `x or default` for beta_fast / beta_slow, the context
// the model was trained at falling back to max_position_embeddings, and attention_factor from
// factor (and mscale / mscale_all_dim, DeepSeek's) where the config does not give it.
absl::Status ReadYarn(const Json& rs, ModelConfig& c) {
  RopeScaling& y = c.rope_scaling;
  y.type = RopeScaling::Type::kYarn;
  auto f = rs.find("factor");
  if (f == rs.end() || !f->is_number() || !(f->get<double>() > 0)) {
    return FieldError("rope_scaling.factor", "must be a number > 0 for yarn");
  }
  y.factor = f->get<double>();
  const int64_t original = IntOr(rs, "original_max_position_embeddings", 0);
  y.original_max_position = original > 0 ? original : c.max_context;
  y.beta_fast = NumberOr(rs, "beta_fast", 0.0);
  if (y.beta_fast == 0) y.beta_fast = 32.0;
  y.beta_slow = NumberOr(rs, "beta_slow", 0.0);
  if (y.beta_slow == 0) y.beta_slow = 1.0;
  y.truncate = BoolOr(rs, "truncate", true);
  if (auto a = rs.find("attention_factor"); a != rs.end() && a->is_number()) {
    y.attention_factor = a->get<double>();
  } else {
    const double mscale = NumberOr(rs, "mscale", 0.0), all = NumberOr(rs, "mscale_all_dim", 0.0);
    y.attention_factor =
        mscale != 0 && all != 0 ? y.YarnMscale(mscale) / y.YarnMscale(all) : y.YarnMscale(1.0);
  }
  if (!(y.beta_fast > 0) || !(y.beta_slow > 0) || y.original_max_position <= 0) {
    return FieldError("rope_scaling", "yarn needs beta_fast, beta_slow and a context > 0");
  }
  return absl::OkStatus();
}

// transformers' _compute_longrope_parameters. Phi3Config keeps original_max_position_embeddings
// at the top level (default 4096) and the factor is then max_position_embeddings over it; other
// classes have none (the context is max_position_embeddings, the factor rope_scaling.factor).
// The attention factor defaults to sqrt(1 + ln(factor) / ln(original)).
absl::Status ReadLongRope(const Json& j, const Json& rs, ModelConfig& c) {
  RopeScaling& r = c.rope_scaling;
  r.type = RopeScaling::Type::kLongRope;
  for (const auto& [key, out] :
       {std::pair{"short_factor", &r.short_factor}, std::pair{"long_factor", &r.long_factor}}) {
    auto it = rs.find(key);
    if (it == rs.end() || !it->is_array()) {
      return FieldError(absl::StrCat("rope_scaling.", key), "is missing or not an array");
    }
    for (const Json& v : *it) {
      if (!v.is_number()) {
        return FieldError(absl::StrCat("rope_scaling.", key), "holds a value that is not a number");
      }
      out->push_back(v.get<float>());
    }
  }
  const bool phi3 = c.architecture == Architecture::kPhi3;
  int64_t original = IntOr(j, "original_max_position_embeddings", phi3 ? 4096 : 0);
  double factor = NumberOr(rs, "factor", 1.0);
  if (original > 0) {
    factor = static_cast<double>(c.max_context) / static_cast<double>(original);
  } else {
    original = c.max_context;
  }
  r.original_max_position = original;
  r.factor = factor;
  if (auto a = rs.find("attention_factor"); a != rs.end() && a->is_number()) {
    r.attention_factor = a->get<double>();
  } else {
    r.attention_factor =
        factor <= 1.0 ? 1.0
                      : std::sqrt(1 + std::log(factor) / std::log(static_cast<double>(original)));
  }
  return absl::OkStatus();
}

// Mixtral-style experts (Mixtral, gpt-oss): num_local_experts of intermediate_size, the top
// num_experts_per_tok weights renormalized (a softmax over their logits).
absl::Status ReadLocalExperts(const Json& j, MoeNaming naming, ModelConfig& c) {
  TESSERA_ASSIGN_OR_RETURN(c.num_experts, RequireInt(j, "num_local_experts"));
  TESSERA_ASSIGN_OR_RETURN(c.num_experts_per_tok, RequireInt(j, "num_experts_per_tok"));
  c.moe_intermediate_size = c.intermediate_size;
  c.norm_topk_prob = true;
  c.moe_naming = naming;
  return absl::OkStatus();
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

absl::StatusOr<ModelConfig> ModelConfigFromHfJson(const std::string& json_text) {
  Json j = Json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return absl::InvalidArgumentError("config.json is not a JSON object");
  }
  ModelConfig c;
  std::string model_type;
  if (auto it = j.find("model_type"); it != j.end() && it->is_string())
    model_type = it->get<std::string>();
  if (model_type == "gemma3" || model_type == "mistral3") {
    // Image-text models whose decoder is a causal LM tessera runs (Gemma3ForConditionalGeneration,
    // Gemma 3 4B-27B; Mistral3ForConditionalGeneration, Mistral Small 3.1 / 3.2): the decoder's
    // config is text_config, its weights sit under a prefix (ModelSource renames them), the
    // vision tower is not run.
    auto tc = j.find("text_config");
    if (tc == j.end() || !tc->is_object()) {
      return FieldError("text_config", absl::StrCat("is missing (model_type '", model_type,
                                                    "' keeps its decoder there)"));
    }
    Json text = *tc;
    for (const char* k : {"bos_token_id", "eos_token_id", "pad_token_id", "tie_word_embeddings"}) {
      if (!text.contains(k) && j.contains(k)) text[k] = j[k];
    }
    if (model_type == "gemma3") {
      text["model_type"] = "gemma3_text";
    } else if (!text.contains("model_type")) {
      text["model_type"] = "mistral";  // Mistral3Config's default text_config
    }
    const std::string inner_type =
        text["model_type"].is_string() ? text["model_type"].get<std::string>() : "";
    if (model_type == "mistral3" && inner_type != "mistral" && inner_type != "llama") {
      return FieldError(
          "text_config.model_type",
          absl::StrCat("'", inner_type, "' is not supported under mistral3 (mistral, llama)"));
    }
    auto inner = ModelConfigFromHfJson(text.dump());
    if (!inner.ok()) {
      return absl::Status(inner.status().code(),
                          absl::StrCat(inner.status().message(), " (in text_config)"));
    }
    inner->language_model_of_multimodal = true;
    if (auto a = j.find("architectures");
        a != j.end() && a->is_array() && !a->empty() && (*a)[0].is_string()) {
      inner->architecture_name = (*a)[0].get<std::string>();
    }
    return inner;
  }
  if (model_type == "gemma3_text") {
    // Hub configs (text_config of the multimodal models above) spell out only what differs from
    // transformers' Gemma3TextConfig defaults.
    const std::pair<const char*, Json> defaults[] = {
        {"vocab_size", 262208},      {"hidden_size", 2304},
        {"intermediate_size", 9216}, {"num_hidden_layers", 26},
        {"num_attention_heads", 8},  {"num_key_value_heads", 4},
        {"head_dim", 256},           {"max_position_embeddings", 131072},
        {"rms_norm_eps", 1e-6},      {"rope_theta", 1000000.0},
        {"bos_token_id", 2},         {"eos_token_id", 1}};
    for (const auto& [k, v] : defaults) {
      if (!j.contains(k) || j[k].is_null()) j[k] = v;
    }
    if (BoolOr(j, "use_bidirectional_attention", false)) {
      return FieldError("use_bidirectional_attention",
                        "is true (an embedding model, not a causal decoder)");
    }
  }
  if (model_type == "gpt_oss") {
    // transformers' GptOssConfig defaults (gpt-oss-120b's shape, YaRN x32 over 4096 positions).
    const std::pair<const char*, Json> defaults[] = {{"vocab_size", 201088},
                                                     {"hidden_size", 2880},
                                                     {"intermediate_size", 2880},
                                                     {"num_hidden_layers", 36},
                                                     {"num_attention_heads", 64},
                                                     {"num_key_value_heads", 8},
                                                     {"head_dim", 64},
                                                     {"num_local_experts", 128},
                                                     {"num_experts_per_tok", 4},
                                                     {"rope_theta", 150000.0},
                                                     {"rms_norm_eps", 1e-5},
                                                     {"sliding_window", 128},
                                                     {"max_position_embeddings", 131072}};
    for (const auto& [k, v] : defaults) {
      if (!j.contains(k)) j[k] = v;
    }
    if (!j.contains("rope_scaling")) {
      j["rope_scaling"] = {{"rope_type", "yarn"}, {"factor", 32.0},
                           {"beta_fast", 32.0},   {"beta_slow", 1.0},
                           {"truncate", false},   {"original_max_position_embeddings", 4096}};
    }
  }
  if (auto it = j.find("architectures");
      it != j.end() && it->is_array() && !it->empty() && (*it)[0].is_string()) {
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
  } else if (model_type == "granitemoe" || model_type == "granitemoeshared") {
    // granitemoeshared without a shared expert is granitemoe; with one it is not supported.
    if (IntOr(j, "shared_intermediate_size", 0) > 0) {
      return FieldError("shared_intermediate_size",
                        "is > 0: Granite MoE's shared expert is not supported");
    }
    c.architecture = Architecture::kGraniteMoe;
  } else if (model_type == "phi3") {
    c.architecture = Architecture::kPhi3;
    c.fused_qkv = c.fused_gate_up = true;
  } else if (model_type == "gemma") {
    c.architecture = Architecture::kGemma;
  } else if (model_type == "gemma2") {
    c.architecture = Architecture::kGemma2;
  } else if (model_type == "gemma3_text") {
    c.architecture = Architecture::kGemma3;
  } else if (model_type == "olmo2") {
    c.architecture = Architecture::kOlmo2;
  } else if (model_type == "olmo3") {
    c.architecture = Architecture::kOlmo3;
  } else if (model_type == "smollm3") {
    c.architecture = Architecture::kSmolLM3;
  } else if (model_type == "gpt_oss") {
    c.architecture = Architecture::kGptOss;
  } else {
    return FieldError(
        "model_type",
        absl::StrCat("'", model_type,
                     "' is not supported (llama, mistral, qwen2, qwen3, qwen2_moe, "
                     "qwen3_moe, mixtral, olmoe, granite, phi3, gemma, gemma2, "
                     "gemma3, gemma3_text, mistral3, olmo2, olmo3, smollm3, granitemoe, "
                     "gpt_oss)"));
  }
  const bool gemma = c.architecture == Architecture::kGemma ||
                     c.architecture == Architecture::kGemma2 ||
                     c.architecture == Architecture::kGemma3;
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
  c.tie_word_embeddings = BoolOr(j, "tie_word_embeddings", gemma);  // GemmaConfig: true
  // qwen2 and qwen2_moe (qkv_bias, default true) carry q/k/v biases.
  c.attention_bias = c.architecture == Architecture::kQwen2 ||
                     (c.architecture == Architecture::kQwen2Moe && BoolOr(j, "qkv_bias", true)) ||
                     BoolOr(j, "attention_bias", false);
  c.qk_norm = c.architecture == Architecture::kQwen3 || c.architecture == Architecture::kQwen3Moe ||
              c.architecture == Architecture::kGemma3;
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
  } else if (c.architecture == Architecture::kGranite ||
             c.architecture == Architecture::kGraniteMoe) {
    // transformers' GraniteConfig defaults are all 1.0 (attention too: its scores are scaled by
    // attention_multiplier alone, never 1/sqrt(head_dim)).
    c.embedding_multiplier = NumberOr(j, "embedding_multiplier", 1.0);
    c.attention_scale = NumberOr(j, "attention_multiplier", 1.0);
    c.residual_multiplier = NumberOr(j, "residual_multiplier", 1.0);
    c.logits_scaling = NumberOr(j, "logits_scaling", 1.0);
    if (!(c.attention_scale > 0) || !(c.logits_scaling > 0)) {
      return FieldError("attention_multiplier / logits_scaling", "must be > 0");
    }
    if (c.architecture == Architecture::kGraniteMoe) {
      // GraniteMoeConfig: experts intermediate_size wide, fused in block_sparse_moe.input_linear
      // ([gate; up]) and output_linear, softmax over the top-k router logits (renormalized).
      c.num_experts = IntOr(j, "num_local_experts", 8);
      c.num_experts_per_tok = IntOr(j, "num_experts_per_tok", 2);
      c.moe_intermediate_size = c.intermediate_size;
      c.norm_topk_prob = true;
      c.moe_naming = MoeNaming::kGraniteMoe;
    }
  } else if (gemma) {
    // transformers' Gemma*Config defaults. Embeddings are scaled by sqrt(hidden_size) in f32 (as
    // llama.cpp; transformers rounds it to the activations' dtype, bf16(sqrt(1152)) = 34 for a
    // bf16 run, f32 in the goldens), norms by (1 + w).
    TESSERA_ASSIGN_OR_RETURN(c.mlp_activation,
                             GemmaActivation(j, c.architecture == Architecture::kGemma));
    c.embedding_multiplier = std::sqrt(static_cast<double>(c.hidden_size));
    c.norm_weight_offset = 1.0f;
    if (c.architecture != Architecture::kGemma) {
      c.sandwich_norms = true;
      const double scalar = NumberOr(j, "query_pre_attn_scalar", 256.0);
      if (!(scalar > 0)) return FieldError("query_pre_attn_scalar", "must be > 0");
      c.attention_scale = std::pow(scalar, -0.5);
      const bool g2 = c.architecture == Architecture::kGemma2;
      TESSERA_ASSIGN_OR_RETURN(c.attn_logit_softcap,
                               NullableNumber(j, "attn_logit_softcapping", g2 ? 50.0 : 0.0));
      if (c.attn_logit_softcap < 0) return FieldError("attn_logit_softcapping", "must be >= 0");
      TESSERA_ASSIGN_OR_RETURN(c.final_logit_softcap,
                               NullableNumber(j, "final_logit_softcapping", g2 ? 30.0 : 0.0));
      if (c.final_logit_softcap < 0) return FieldError("final_logit_softcapping", "must be >= 0");
      TESSERA_ASSIGN_OR_RETURN(const double window, NullableNumber(j, "sliding_window", 4096.0));
      c.sliding_window = static_cast<int64_t>(window);
      // Gemma 2: every other layer from the first; Gemma 3: all but every
      // sliding_window_pattern-th.
      if (auto it = j.find("sliding_window_pattern");
          it != j.end() && !it->is_null() && !it->is_number_integer()) {
        return FieldError("sliding_window_pattern", "is not an integer");
      }
      const int64_t pattern = g2 ? 2 : IntOr(j, "sliding_window_pattern", 6);
      if (pattern < 1) return FieldError("sliding_window_pattern", "must be >= 1");
      TESSERA_RETURN_IF_ERROR(
          ReadSlidingLayers(j, c, true, [&](int64_t i) { return (i + 1) % pattern != 0; }));
      if (c.architecture == Architecture::kGemma3) {
        c.sliding_rope_theta = NumberOr(j, "rope_local_base_freq", 10000.0);
        if (!(c.sliding_rope_theta > 0)) return FieldError("rope_local_base_freq", "must be > 0");
      }
    }
  } else if (c.architecture == Architecture::kOlmo2 || c.architecture == Architecture::kOlmo3) {
    // OLMo 2 / 3: RMSNorm over the whole q / k projections, norms on the attention and MLP
    // outputs only. OLMo 3 windows three of four layers (4096 by default), which rotate without
    // the full layers' rope_scaling.
    c.qk_norm_whole = true;
    c.sandwich_norms = true;
    c.pre_norms = false;
    if (c.architecture == Architecture::kOlmo3) {
      TESSERA_ASSIGN_OR_RETURN(const double window, NullableNumber(j, "sliding_window", 4096.0));
      c.sliding_window = static_cast<int64_t>(window);
      TESSERA_RETURN_IF_ERROR(
          ReadSlidingLayers(j, c, true, [](int64_t i) { return (i + 1) % 4 != 0; }));
      c.sliding_rope_theta = c.rope_theta;
    }
  } else if (c.architecture == Architecture::kSmolLM3) {
    // SmolLM3: llama with NoPE layers. no_rope_layers[i] is 1 where layer i rotates (transformers'
    // name), else every no_rope_layer_interval-th layer (default 4) rotates nothing.
    if (c.num_layers >= 0 && c.num_layers <= ModelConfig::kMaxLayers) {
      c.rope_layers.assign(c.num_layers, true);
      if (auto it = j.find("no_rope_layers"); it != j.end() && !it->is_null()) {
        if (!it->is_array() || static_cast<int64_t>(it->size()) != c.num_layers) {
          return FieldError("no_rope_layers", "is not an array of num_hidden_layers 0 / 1 values");
        }
        for (int64_t i = 0; i < c.num_layers; ++i) {
          if (!(*it)[i].is_number_integer()) {
            return FieldError(absl::StrCat("no_rope_layers[", i, "]"), "is not 0 or 1");
          }
          c.rope_layers[i] = (*it)[i].get<int64_t>() != 0;
        }
      } else {
        const int64_t interval = IntOr(j, "no_rope_layer_interval", 4);
        if (interval < 1) return FieldError("no_rope_layer_interval", "must be >= 1");
        for (int64_t i = 0; i < c.num_layers; ++i) c.rope_layers[i] = (i + 1) % interval != 0;
      }
    }
  } else if (c.architecture == Architecture::kGptOss) {
    // gpt-oss: experts intermediate_size wide, softmax over the top-k router logits (the same as
    // renormalized probabilities), biases on q/k/v/o (GptOssConfig forces attention_bias), the
    // router and the experts, attention sinks, the clamped SwiGLU, and windows on the even
    // layers unless layer_types says otherwise. transformers, vLLM and llama.cpp all fix the
    // SwiGLU's limit at 7 whatever swiglu_limit says, so another value is refused, not ignored.
    TESSERA_RETURN_IF_ERROR(ReadLocalExperts(j, MoeNaming::kGptOss, c));
    c.attention_bias = c.o_proj_bias = c.attention_sinks = c.moe_biases = true;
    c.mlp_activation = MlpActivation::kSwiGluClamped;
    if (NumberOr(j, "swiglu_limit", 7.0) != 7.0) {
      return FieldError("swiglu_limit", "is not 7 (transformers, vLLM and llama.cpp fix it at 7)");
    }
    TESSERA_ASSIGN_OR_RETURN(const double window, NullableNumber(j, "sliding_window", 128.0));
    c.sliding_window = static_cast<int64_t>(window);
    TESSERA_RETURN_IF_ERROR(ReadSlidingLayers(j, c, true, [](int64_t i) { return i % 2 == 0; }));
  } else if (c.architecture == Architecture::kMixtral) {
    // Mixtral's experts are intermediate_size wide; its router always renormalizes (a softmax
    // over the top-k logits).
    TESSERA_RETURN_IF_ERROR(ReadLocalExperts(j, MoeNaming::kMixtral, c));
  }
  const double partial = NumberOr(j, "partial_rotary_factor", 1.0);
  c.rope_dim = static_cast<int64_t>(c.head_dim * partial);
  c.rope_style = RopeStyle::kRotateHalf;
  if (auto rs = j.find("rope_scaling"); rs != j.end() && rs->is_object()) {
    std::string type;
    if (auto t = rs->find("rope_type"); t != rs->end() && t->is_string())
      type = t->get<std::string>();
    if (auto t = rs->find("type"); type.empty() && t != rs->end() && t->is_string())
      type = t->get<std::string>();
    if (type == "llama3") {
      c.rope_scaling.type = RopeScaling::Type::kLlama3;
      c.rope_scaling.factor = NumberOr(*rs, "factor", 8.0);
      c.rope_scaling.low_freq_factor = NumberOr(*rs, "low_freq_factor", 1.0);
      c.rope_scaling.high_freq_factor = NumberOr(*rs, "high_freq_factor", 4.0);
      c.rope_scaling.original_max_position = IntOr(*rs, "original_max_position_embeddings", 8192);
    } else if (type == "linear") {
      c.rope_scaling.type = RopeScaling::Type::kLinear;
      c.rope_scaling.factor = NumberOr(*rs, "factor", 1.0);
    } else if (type == "longrope" || type == "su" ||
               (type == "yarn" && c.architecture == Architecture::kPhi3)) {
      // Phi3Config reads "su" and "yarn" as longrope (its _rope_scaling_adjustment).
      TESSERA_RETURN_IF_ERROR(ReadLongRope(j, *rs, c));
    } else if (type == "yarn") {
      TESSERA_RETURN_IF_ERROR(ReadYarn(*rs, c));
    } else if (type != "default" && !type.empty()) {
      return FieldError(
          "rope_scaling.rope_type",
          absl::StrCat("'", type, "' is not supported (llama3, linear, yarn, longrope)"));
    }
  }
  // transformers 4.57: Mistral, Mixtral, Phi-3 and the qwen MoE models window every layer (their
  // classes read no layer_types); dense qwen2 / qwen3 with use_sliding_window the layers from
  // max_window_layers on (default 28) or as layer_types says. An absent sliding_window is the
  // class default: 4096 for mistral and qwen*, none for mixtral and phi3.
  const bool qwen_dense =
      c.architecture == Architecture::kQwen2 || c.architecture == Architecture::kQwen3;
  const bool qwen = qwen_dense || c.architecture == Architecture::kQwen2Moe ||
                    c.architecture == Architecture::kQwen3Moe;
  const bool windowed =
      c.architecture == Architecture::kMistral || c.architecture == Architecture::kMixtral ||
      c.architecture == Architecture::kPhi3 || (qwen && BoolOr(j, "use_sliding_window", false));
  if (windowed) {
    const bool default_4096 = qwen || c.architecture == Architecture::kMistral;
    TESSERA_ASSIGN_OR_RETURN(const double window,
                             NullableNumber(j, "sliding_window", default_4096 ? 4096.0 : 0.0));
    c.sliding_window = static_cast<int64_t>(window);
    if (c.sliding_window > 0) {
      if (auto m = j.find("max_window_layers");
          qwen_dense && m != j.end() && !m->is_null() && !m->is_number_integer()) {
        return FieldError("max_window_layers", "is not an integer");
      }
      const int64_t first = qwen_dense ? IntOr(j, "max_window_layers", 28) : 0;
      TESSERA_RETURN_IF_ERROR(
          ReadSlidingLayers(j, c, qwen_dense, [&](int64_t i) { return i >= first; }));
    }
  }
  if (c.sliding_window < 0) return FieldError("sliding_window", "must be >= 0");
  if (auto it = j.find("bos_token_id"); it != j.end() && it->is_number_integer()) {
    c.bos_token_id = it->get<int32_t>();
  }
  ReadTokenIds(j, "eos_token_id", &c.eos_token_ids);
  TESSERA_RETURN_IF_ERROR(c.Validate());
  return c;
}

}  // namespace tessera::model
