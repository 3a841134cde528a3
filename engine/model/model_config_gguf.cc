// ModelConfigFromGguf: llama.cpp's GGUF metadata keys for each architecture, with llama.cpp's
// defaults where a key is optional (its src/models/*.cpp load_arch_hparams).
#include <algorithm>
#include <cmath>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "engine/common/status_macros.h"
#include "engine/model/model_config.h"

namespace tessera::model {
namespace {

// `arch.key` as a number (any float or int type), or `def` where the file has no such key.
double FloatOr(const io::GgufMetadata& m, const std::string& arch, const char* key, double def) {
  auto v = m.GetFloat(absl::StrCat(arch, ".", key));
  return v.ok() ? *v : def;
}

// attention.sliding_window (default_window where absent; 0: no windows) and
// attention.sliding_window_pattern: one bool per layer, or a period n (layer i slides when
// i % n < n - 1; default_period where absent), as llama.cpp's load_swa_pattern reads them.
absl::Status ReadSlidingWindowGguf(const io::GgufMetadata& m, const std::string& arch,
                                   int64_t default_window, int64_t default_period, ModelConfig& c) {
  auto window = m.GetUint(absl::StrCat(arch, ".attention.sliding_window"));
  c.sliding_window = window.ok() ? static_cast<int64_t>(*window) : default_window;
  if (c.sliding_window == 0) return absl::OkStatus();
  if (c.num_layers > ModelConfig::kMaxLayers) return absl::OkStatus();  // Validate reports it
  c.sliding_layers.assign(c.num_layers, false);
  const std::string pattern_key = absl::StrCat(arch, ".attention.sliding_window_pattern");
  if (auto arr = m.GetArray(pattern_key); arr.ok()) {
    const std::vector<io::GgufValue>& a = **arr;
    if (static_cast<int64_t>(a.size()) != c.num_layers) {
      return absl::InvalidArgumentError(absl::StrCat("GGUF ", pattern_key, " has ", a.size(),
                                                     " entries for ", c.num_layers, " layers"));
    }
    for (int64_t i = 0; i < c.num_layers; ++i) {
      const bool* b = std::get_if<bool>(&a[i].value);
      if (b == nullptr) {
        return absl::InvalidArgumentError(
            absl::StrCat("GGUF ", pattern_key, " is not an array of bools"));
      }
      c.sliding_layers[i] = *b;
    }
  } else {
    auto n = m.GetUint(pattern_key);
    const int64_t period = n.ok() ? static_cast<int64_t>(*n) : default_period;
    for (int64_t i = 0; i < c.num_layers; ++i) {
      c.sliding_layers[i] = period == 0 || i % period < period - 1;
    }
  }
  return absl::OkStatus();
}

// YaRN as llama.cpp runs it (llama_context's cparams, ggml's rope_yarn): the ramp between
// yarn_beta_slow and yarn_beta_fast rotations over original_context_length (floored / ceiled),
// interpolation by 1 / factor below it, cos and sin times mscale(factor) = 1 + 0.1 ln(factor)
// (DeepSeek's yarn_log_multiplier: the ratio of two mscales) and rope.scaling.attn_factor. The
// same YaRN as transformers', so RopeScaling holds it alike.
absl::Status ReadYarnGguf(const io::GgufMetadata& m, const std::string& arch, ModelConfig& c) {
  auto key = [&](const char* k) { return absl::StrCat(arch, ".", k); };
  auto number = [&](const char* k, double def) { return FloatOr(m, arch, k, def); };
  RopeScaling& y = c.rope_scaling;
  y.type = RopeScaling::Type::kYarn;
  y.factor = number("rope.scaling.factor", 0.0);
  if (!(y.factor > 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("GGUF ", key("rope.scaling.factor"), " must be > 0 for yarn"));
  }
  auto original = m.GetUint(key("rope.scaling.original_context_length"));
  y.original_max_position = original.ok() ? static_cast<int64_t>(*original) : c.max_context;
  y.beta_fast = number("rope.scaling.yarn_beta_fast", 32.0);
  y.beta_slow = number("rope.scaling.yarn_beta_slow", 1.0);
  y.truncate = true;
  const double log_mul = number("rope.scaling.yarn_log_multiplier", 0.0);
  y.attention_factor =
      (log_mul != 0 ? y.YarnMscale(1.0) / y.YarnMscale(log_mul) : y.YarnMscale(1.0)) *
      number("rope.scaling.attn_factor", 1.0);
  if (!(y.beta_fast > 0) || !(y.beta_slow > 0) || y.original_max_position <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("GGUF ", arch, " yarn needs beta_fast, beta_slow and a context > 0"));
  }
  return absl::OkStatus();
}

// llama.cpp's gemma / gemma2 / gemma3 load_arch_hparams (llama.cpp 0c1e570).
absl::Status ReadGemmaGguf(const io::GgufMetadata& m, const std::string& arch, ModelConfig& c) {
  auto number = [&](const char* k, double def) { return FloatOr(m, arch, k, def); };
  c.embedding_multiplier = std::sqrt(static_cast<double>(c.hidden_size));
  if (c.architecture == Architecture::kGemma) return absl::OkStatus();
  // The 27B models scale queries by (n_embd / n_head)^-0.5 (query_pre_attn_scalar 144 / 168,
  // not stored in the file; llama.cpp knows them by their layer count), the others head_dim^-0.5.
  const bool is_27b = c.num_layers == (c.architecture == Architecture::kGemma2 ? 46 : 62);
  if (is_27b) {
    c.attention_scale = 1.0 / std::sqrt(static_cast<double>(c.hidden_size / c.num_heads));
  }
  const bool g2 = c.architecture == Architecture::kGemma2;
  c.attn_logit_softcap = g2 ? number("attn_logit_softcapping", 50.0) : 0.0;
  c.final_logit_softcap = number("final_logit_softcapping", g2 ? 30.0 : 0.0);
  if (c.attn_logit_softcap < 0 || c.final_logit_softcap < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "GGUF ", arch, ".attn_logit_softcapping / final_logit_softcapping must be >= 0"));
  }
  // Windows: Gemma 2 always (4096 by default), Gemma 3 where the key is present.
  TESSERA_RETURN_IF_ERROR(ReadSlidingWindowGguf(m, arch, g2 ? 4096 : 0, g2 ? 2 : 6, c));
  if (c.sliding_window == 0) return absl::OkStatus();
  if (c.architecture == Architecture::kGemma3) {
    c.sliding_rope_theta = number("rope.freq_base_swa", 10000.0);
    if (!(c.sliding_rope_theta > 0)) {
      return absl::InvalidArgumentError(
          absl::StrCat("GGUF ", arch, ".rope.freq_base_swa must be > 0"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

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
  } else if (arch == "granite" || arch == "granitemoe") {
    // llama.cpp's granite graph: llama's permuted q/k, and the four multipliers (logit_scale
    // required, the others default to none; attention.scale 0 means 1/sqrt(head_dim)).
    // granitemoe: Granite 3.x MoE, Mixtral-style experts (stacked, feed_forward_length wide,
    // softmax over the top-k logits: renormalized).
    c.architecture = arch == "granite" ? Architecture::kGranite : Architecture::kGraniteMoe;
    c.rope_style = RopeStyle::kInterleaved;
    TESSERA_ASSIGN_OR_RETURN(c.logits_scaling, m.GetFloat(absl::StrCat(arch, ".logit_scale")));
    auto scale = [&](const char* k, double def) { return FloatOr(m, arch, k, def); };
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
  } else if (arch == "smollm3") {
    // llama.cpp's smollm3 graph: llama's permuted q/k, every fourth layer without RoPE (its step
    // is fixed at 4; the file has no key for it).
    c.architecture = Architecture::kSmolLM3;
    c.rope_style = RopeStyle::kInterleaved;
  } else if (arch == "olmo2") {
    // OLMo 2 and OLMo 3 (llama.cpp's olmo2 graph): whole-projection q/k norms, output norms
    // only, NeoX RoPE; OLMo 3's windows (pattern from the file, period 4 by default) rotate with
    // freq_base_swa (default: freq_base) and without rope scaling.
    c.architecture = Architecture::kOlmo2;
    c.qk_norm_whole = true;
    c.sandwich_norms = true;
    c.pre_norms = false;
  } else if (arch == "gemma" || arch == "gemma2" || arch == "gemma3") {
    // NeoX RoPE (not permuted), norm weights already 1 + w, GELU (tanh) GeGLU, embeddings
    // scaled by sqrt(n_embd); the rest per version below.
    c.architecture = arch == "gemma"    ? Architecture::kGemma
                     : arch == "gemma2" ? Architecture::kGemma2
                                        : Architecture::kGemma3;
    c.mlp_activation = MlpActivation::kGeluTanh;
    c.qk_norm = c.architecture == Architecture::kGemma3;
    c.sandwich_norms = c.architecture != Architecture::kGemma;
  } else if (arch == "gpt-oss") {
    // llama.cpp's openai-moe graph: NeoX RoPE, q/k/v/o, router and expert biases, attention
    // sinks, swiglu_oai (alpha 1.702, limit 7), softmax over the top-k router logits; windows
    // (attention.sliding_window, required) on the layers its pattern (period 2) marks.
    c.architecture = Architecture::kGptOss;
    c.attention_bias = c.o_proj_bias = c.attention_sinks = c.moe_biases = true;
    c.mlp_activation = MlpActivation::kSwiGluClamped;
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("GGUF general.architecture '", arch,
                     "' is not supported (llama, qwen2, qwen3, qwen2moe, qwen3moe, olmoe, granite, "
                     "phi3, gemma, gemma2, gemma3, olmo2, smollm3, granitemoe, gpt-oss)"));
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
    // Granite MoE's HF block is block_sparse_moe too: its plan names follow Mixtral's.
    if (c.architecture == Architecture::kGraniteMoe) c.moe_naming = MoeNaming::kMixtral;
  } else if (qwen_moe || c.architecture == Architecture::kOlmoe ||
             c.architecture == Architecture::kGraniteMoe ||
             c.architecture == Architecture::kGptOss) {
    return absl::InvalidArgumentError(absl::StrCat("GGUF ", arch, ".expert_count is missing or 0"));
  }
  if (qwen_moe) {
    // llama.cpp's fallbacks for files without the expert widths (early Qwen1.5-MoE GGUFs):
    // experts feed_forward_length / expert_used_count wide, the shared expert
    // feed_forward_length. A per-layer array of expert widths is not supported.
    auto ffn = m.GetUint(key("feed_forward_length"));
    auto expert_ffn = m.GetUint(key("expert_feed_forward_length"));
    if (!expert_ffn.ok() && !ffn.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("GGUF ", arch, ".expert_feed_forward_length and ", arch,
                       ".feed_forward_length are both missing or not scalars"));
    }
    c.intermediate_size = ffn.ok() ? static_cast<int64_t>(*ffn) : 0;
    c.moe_intermediate_size =
        expert_ffn.ok() && *expert_ffn > 0
            ? static_cast<int64_t>(*expert_ffn)
            : c.intermediate_size / std::max<int64_t>(c.num_experts_per_tok, 1);
    if (c.intermediate_size == 0) c.intermediate_size = c.moe_intermediate_size;
    if (c.architecture == Architecture::kQwen2Moe) {
      auto shared = m.GetUint(key("expert_shared_feed_forward_length"));
      c.shared_expert_intermediate_size =
          shared.ok() && *shared > 0 ? static_cast<int64_t>(*shared) : c.intermediate_size;
    }
  } else if (c.architecture == Architecture::kGptOss) {
    TESSERA_ASSIGN_OR_RETURN(uint64_t ffn, m.GetUint(key("expert_feed_forward_length")));
    c.intermediate_size = c.moe_intermediate_size = static_cast<int64_t>(ffn);
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
    } else if (*type == "yarn") {
      TESSERA_RETURN_IF_ERROR(ReadYarnGguf(m, arch, c));
    } else if (*type != "none") {
      return absl::UnimplementedError(
          absl::StrCat("GGUF rope scaling '", *type, "' is not supported (linear, yarn)"));
    }
  }
  if (c.architecture == Architecture::kGemma || c.architecture == Architecture::kGemma2 ||
      c.architecture == Architecture::kGemma3) {
    TESSERA_RETURN_IF_ERROR(ReadGemmaGguf(m, arch, c));
  }
  if (c.architecture == Architecture::kSmolLM3 && c.num_layers <= ModelConfig::kMaxLayers) {
    c.rope_layers.assign(c.num_layers, true);
    for (int64_t i = 0; i < c.num_layers; ++i) c.rope_layers[i] = (i + 1) % 4 != 0;
  }
  if (c.architecture == Architecture::kGptOss) {
    if (!m.GetUint(key("attention.sliding_window")).ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("GGUF ", key("attention.sliding_window"), " is missing"));
    }
    TESSERA_RETURN_IF_ERROR(ReadSlidingWindowGguf(m, arch, 0, 2, c));
    // llama.cpp rotates the windowed layers with rope.freq_base_swa and the full layers' YaRN;
    // the decoder's own sliding base drops the scaling, so another base is refused, not ignored.
    if (FloatOr(m, arch, "rope.freq_base_swa", c.rope_theta) != c.rope_theta) {
      return absl::UnimplementedError(absl::StrCat("GGUF ", key("rope.freq_base_swa"),
                                                   " differs from rope.freq_base (not supported)"));
    }
  }
  if (c.architecture == Architecture::kOlmo2) {
    TESSERA_RETURN_IF_ERROR(ReadSlidingWindowGguf(m, arch, 0, 4, c));
    if (c.sliding_window > 0) {
      c.architecture = Architecture::kOlmo3;  // the OLMo with windows
      c.sliding_rope_theta = FloatOr(m, arch, "rope.freq_base_swa", c.rope_theta);
    }
  }
  auto tokens = m.GetArray("tokenizer.ggml.tokens");
  if (auto vocab = m.GetUint(key("vocab_size")); vocab.ok()) {
    c.vocab_size = static_cast<int64_t>(*vocab);
  } else if (tokens.ok()) {
    c.vocab_size = static_cast<int64_t>((*tokens)->size());
  }
  if (auto bos = m.GetUint("tokenizer.ggml.bos_token_id"); bos.ok())
    c.bos_token_id = static_cast<int32_t>(*bos);
  if (auto eos = m.GetUint("tokenizer.ggml.eos_token_id"); eos.ok())
    c.eos_token_ids.push_back(static_cast<int32_t>(*eos));
  TESSERA_RETURN_IF_ERROR(c.Validate());
  return c;
}

}  // namespace tessera::model
