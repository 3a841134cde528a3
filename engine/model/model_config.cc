#include "engine/model/model_config.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "engine/common/status_macros.h"

namespace tessera::model {

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
    case Architecture::kGemma:
      return "gemma";
    case Architecture::kGemma2:
      return "gemma2";
    case Architecture::kGemma3:
      return "gemma3";
    case Architecture::kOlmo2:
      return "olmo2";
    case Architecture::kOlmo3:
      return "olmo3";
    case Architecture::kSmolLM3:
      return "smollm3";
    case Architecture::kGraniteMoe:
      return "granitemoe";
    case Architecture::kGptOss:
      return "gpt_oss";
  }
  return "?";
}

std::string ModelConfig::ExtendedFeatures() const {
  std::vector<std::string> out;
  if (num_experts > 0) out.push_back(absl::StrCat("mixture of experts (", num_experts, ")"));
  if (HasMultipliers()) out.push_back("embedding / attention / residual / logit multipliers");
  if (qk_norm_whole) out.push_back("whole-projection q/k norms");
  if (clip_qkv > 0) out.push_back("clip_qkv");
  if (fused_qkv || fused_gate_up) out.push_back("fused qkv / gate_up projections");
  if (mlp_activation == MlpActivation::kGeluTanh || mlp_activation == MlpActivation::kGeluErf) {
    out.push_back("GeGLU MLP");
  }
  if (mlp_activation == MlpActivation::kSwiGluClamped) out.push_back("clamped SwiGLU");
  if (attention_sinks) out.push_back("attention sinks");
  if (o_proj_bias || moe_biases) out.push_back("output / router / expert biases");
  if (norm_weight_offset != 0.0f || sandwich_norms) out.push_back("Gemma / OLMo 2 norms");
  if (attn_logit_softcap > 0 || final_logit_softcap > 0) out.push_back("soft-capped logits");
  if (sliding_rope_theta > 0) out.push_back("per-layer RoPE bases");
  if (rope_scaling.type == RopeScaling::Type::kYarn) out.push_back("YaRN RoPE");
  if (rope_scaling.type == RopeScaling::Type::kLongRope) out.push_back("LongRoPE");
  if (std::find(rope_layers.begin(), rope_layers.end(), false) != rope_layers.end()) {
    out.push_back("NoPE layers");
  }
  return absl::StrJoin(out, ", ");
}

bool ModelConfig::HasSlidingLayers() const {
  return sliding_window > 0 &&
         std::find(sliding_layers.begin(), sliding_layers.end(), true) != sliding_layers.end();
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
  if (rope_scaling.type == RopeScaling::Type::kLongRope) {
    for (const auto* f : {&rope_scaling.short_factor, &rope_scaling.long_factor}) {
      const char* name = f == &rope_scaling.short_factor ? "short_factor" : "long_factor";
      if (static_cast<int64_t>(f->size()) != rope_dim / 2) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "model config: rope_scaling.%s has %d values, expected %d (rotated dims / 2)", name,
            f->size(), rope_dim / 2));
      }
      for (float v : *f) {
        if (!(v > 0) || !std::isfinite(v)) {
          return absl::InvalidArgumentError(absl::StrFormat(
              "model config: rope_scaling.%s holds %g, not a positive finite number", name, v));
        }
      }
    }
    if (rope_scaling.original_max_position <= 0 || !(rope_scaling.attention_factor > 0)) {
      return absl::InvalidArgumentError(
          "model config: longrope needs original_max_position_embeddings and an attention "
          "factor > 0");
    }
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

std::vector<float> RopeInverseFrequencies(const ModelConfig& c, bool sliding, bool long_factors) {
  const int64_t pairs = c.rope_dim / 2;
  std::vector<float> inv(pairs);
  const bool local = sliding && c.sliding_rope_theta > 0;
  const float base = static_cast<float>(local ? c.sliding_rope_theta : c.rope_theta);
  for (int64_t i = 0; i < pairs; ++i) {
    // transformers: 1.0 / (base ** (arange(0, dim, 2).float() / dim)), all in float32.
    const float exponent = static_cast<float>(2 * i) / static_cast<float>(c.rope_dim);
    inv[i] = 1.0f / std::pow(base, exponent);
  }
  if (local) return inv;  // Gemma 3's local RoPE: default, unscaled
  const RopeScaling& s = c.rope_scaling;
  if (s.type == RopeScaling::Type::kLongRope) {
    // transformers: 1.0 / (ext_factors * base ** (arange(0, dim, 2).float() / dim)), in f32.
    const std::vector<float>& ext = long_factors ? s.long_factor : s.short_factor;
    for (int64_t i = 0; i < pairs && i < static_cast<int64_t>(ext.size()); ++i) {
      const float exponent = static_cast<float>(2 * i) / static_cast<float>(c.rope_dim);
      inv[i] = 1.0f / (ext[i] * std::pow(base, exponent));
    }
  } else if (s.type == RopeScaling::Type::kLinear) {
    for (float& f : inv) f = f / static_cast<float>(s.factor);
  } else if (s.type == RopeScaling::Type::kYarn) {
    // transformers' order and types: pos_freqs = base^(2i/dim) in f32, the correction range in
    // double, the ramp and the blend in f32.
    const double dim = static_cast<double>(c.rope_dim);
    auto correction_dim = [&](double rotations) {
      return dim * std::log(static_cast<double>(s.original_max_position) / (rotations * 2 * M_PI)) /
             (2 * std::log(c.rope_theta));
    };
    double low = correction_dim(s.beta_fast), high = correction_dim(s.beta_slow);
    if (s.truncate) {
      low = std::floor(low);
      high = std::ceil(high);
    }
    low = std::max(low, 0.0);
    high = std::min(high, dim - 1);
    if (low == high) high += 0.001;  // transformers' guard against a zero-width ramp
    const float flow = static_cast<float>(low), span = static_cast<float>(high - low);
    for (int64_t i = 0; i < pairs; ++i) {
      const float pos = std::pow(base, static_cast<float>(2 * i) / static_cast<float>(c.rope_dim));
      const float extrapolation = 1.0f / pos;
      const float interpolation = 1.0f / (static_cast<float>(s.factor) * pos);
      const float ramp = std::clamp((static_cast<float>(i) - flow) / span, 0.0f, 1.0f);
      const float keep = 1.0f - ramp;  // inv_freq_extrapolation_factor
      inv[i] = interpolation * (1.0f - keep) + extrapolation * keep;
    }
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
