// ModelConfig: the architecture of a Llama-family decoder (llama incl. Llama 3 rope scaling,
// mistral, qwen2, qwen3, granite, phi3, gemma, gemma2, gemma3, and the mixture-of-experts
// qwen2_moe, qwen3_moe, mixtral, olmoe, gpt-oss),
// read from an HF config.json or from GGUF metadata. Everything the decoder loop needs to know
// about a model lives here, so architectures differ in data, not in code paths.
#ifndef TESSERA_ENGINE_MODEL_MODEL_CONFIG_H_
#define TESSERA_ENGINE_MODEL_MODEL_CONFIG_H_

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/io/gguf_metadata.h"
#include "engine/model/weight_names.h"

namespace tessera::model {

enum class Architecture {
  kLlama,
  kMistral,
  kQwen2,
  kQwen3,
  kQwen2Moe,
  kQwen3Moe,
  kMixtral,
  kOlmoe,
  kGranite,
  kPhi3,
  kGemma,
  kGemma2,
  kGemma3,
  kOlmo2,
  kOlmo3,
  kSmolLM3,
  kGraniteMoe,
  kGptOss
};

// The MLP's gated activation: SwiGLU (silu(gate) · up), Gemma's GeGLU with PyTorch's tanh
// approximation ("gelu_pytorch_tanh") or exact erf GELU ("gelu"), or gpt-oss's clamped SwiGLU
// ((clamp(up) + 1) · g · sigmoid(1.702 g), g = min(gate, swiglu_limit)).
enum class MlpActivation { kSilu, kGeluTanh, kGeluErf, kSwiGluClamped };

// How RoPE pairs the dimensions of a head. HF checkpoints rotate (i, i + d/2) ("rotate half",
// NeoX); GGUF llama files were permuted by the converter for pairs (2i, 2i + 1).
enum class RopeStyle { kRotateHalf, kInterleaved };

struct RopeScaling {
  enum class Type { kNone, kLinear, kLlama3, kYarn, kLongRope };
  Type type = Type::kNone;
  double factor = 1.0;
  double low_freq_factor = 1.0;
  double high_freq_factor = 4.0;
  int64_t original_max_position = 8192;
  // YaRN (transformers' _compute_yarn_parameters): pairs rotating fewer than beta_slow times
  // over original_max_position are interpolated (divided by factor), those rotating more than
  // beta_fast times kept, a linear ramp between (its bounds floored / ceiled where truncate);
  // cos and sin are multiplied by attention_factor.
  double beta_fast = 32.0;
  double beta_slow = 1.0;
  bool truncate = true;
  std::vector<float> short_factor, long_factor;
  double attention_factor = 1.0;
  // LongRoPE (Phi-3 128k, Phi-3.5, Phi-4-mini): pair i's frequency divided by short_factor[i] or
  // long_factor[i] (rope_dim / 2 each), the long ones for a sequence that may grow past
  // original_max_position (ModelConfig::UsesLongRopeFactors); cos and sin times
  // attention_factor either way.
  // YaRN's attention scaling for this factor: 0.1 · mscale · ln(factor) + 1 (1 at factor <= 1);
  // transformers' get_mscale, llama.cpp's too.
  double YarnMscale(double mscale) const {
    return factor <= 1 ? 1.0 : 0.1 * mscale * std::log(factor) + 1.0;
  }
};

struct ModelConfig {
  // Far above any released model (DeepSeek-V3: 61 layers); a corrupt count must not size the
  // loader's per-layer loops and tables.
  static constexpr int64_t kMaxLayers = 4096;
  Architecture architecture = Architecture::kLlama;
  std::string architecture_name;  // as written in the source ("LlamaForCausalLM", "llama")
  int64_t hidden_size = 0;
  int64_t num_layers = 0;
  int64_t num_heads = 0;
  int64_t num_kv_heads = 0;
  int64_t head_dim = 0;
  int64_t intermediate_size = 0;
  int64_t vocab_size = 0;
  int64_t max_context = 0;
  // Sliding-window attention: a query at position p of a sliding layer attends to positions
  // (p - sliding_window, p] (transformers' and llama.cpp's masks). sliding_layers[i] says
  // whether layer i is one (empty: none is). Mistral / Mixtral / Phi-3 configs window every
  // layer, qwen* with use_sliding_window those from max_window_layers on, Gemma 2 every other
  // layer, Gemma 3 five of six; layer_types in config.json says it per layer where present.
  int64_t sliding_window = 0;
  std::vector<bool> sliding_layers;
  bool IsSlidingLayer(int64_t layer) const {
    return sliding_window > 0 && layer < static_cast<int64_t>(sliding_layers.size()) &&
           sliding_layers[layer];
  }
  bool HasSlidingLayers() const;
  // Gemma 3: sliding layers rotate with this base and without rope_scaling (transformers'
  // rotary_emb_local, llama.cpp's freq_base_swa); 0: as the full layers.
  double sliding_rope_theta = 0.0;
  double rope_theta = 10000.0;
  int64_t rope_dim = 0;  // rotated dims per head (== head_dim unless partial rotary)
  RopeScaling rope_scaling;
  // SmolLM3: layers whose rope_layers entry is false rotate nothing (NoPE); empty: every layer
  // rotates.
  std::vector<bool> rope_layers;
  bool UsesRope(int64_t layer) const {
    return layer >= static_cast<int64_t>(rope_layers.size()) || rope_layers[layer];
  }
  // GGUF `rope_freqs.weight` (llama.cpp's converter writes Llama 3.1+ rope scaling this way):
  // pair i's frequency divided by rope_freq_factors[i], as ggml's rope does. Empty: none.
  std::vector<float> rope_freq_factors;
  RopeStyle rope_style = RopeStyle::kRotateHalf;
  double rms_norm_eps = 1e-6;
  bool tie_word_embeddings = false;
  bool attention_bias = false;  // q/k/v projections carry biases (qwen2)
  bool o_proj_bias = false;     // and the output projection too (gpt-oss)
  // gpt-oss: a learned logit per query head joins every attention softmax (HF self_attn.sinks,
  // GGUF attn_sinks.weight) and takes its share of the probability, which no value receives.
  bool attention_sinks = false;
  bool qk_norm = false;         // per-head RMSNorm on q and k before RoPE (qwen3, gemma3)
  bool qk_norm_whole = false;   // olmoe: RMSNorm over the whole q and k projections instead
  // phi3: one qkv_proj matrix ([q; k; v] rows) and one gate_up_proj ([gate; up] rows).
  bool fused_qkv = false;
  bool fused_gate_up = false;
  double clip_qkv = 0;          // olmoe: q, k (normed) and v clamped to ±clip_qkv; 0: none
  // granite (1 and 0 elsewhere): embeddings times embedding_multiplier, attention
  // scores times attention_scale (0: 1/sqrt(head_dim)), each block's output times
  // residual_multiplier before the residual add, logits divided by logits_scaling.
  double embedding_multiplier = 1.0;
  double attention_scale = 0.0;
  double residual_multiplier = 1.0;
  double logits_scaling = 1.0;
  // gemma: embedding_multiplier sqrt(hidden_size); gemma2 / gemma3: attention_scale
  // query_pre_attn_scalar^-0.5.
  bool HasMultipliers() const {
    return embedding_multiplier != 1.0 || attention_scale != 0.0 || residual_multiplier != 1.0 ||
           logits_scaling != 1.0;
  }
  // Gemma3ForConditionalGeneration / Mistral3ForConditionalGeneration: the decoder's weights are
  // under language_model.model. (or model.language_model.), beside a vision tower; ModelSource
  // shows them as model.*.
  bool language_model_of_multimodal = false;
  // Gemma. HF Gemma norms scale by (1 + w): norm_weight_offset 1 is added to every RMSNorm
  // weight at load (llama.cpp's converter adds it to GGUF files already, so 0 there).
  MlpActivation mlp_activation = MlpActivation::kSilu;
  double swiglu_alpha = 1.702;  // kSwiGluClamped
  double swiglu_limit = 7.0;
  float norm_weight_offset = 0.0f;
  // gemma2 / gemma3: the attention output and the MLP output are each RMS-normed before their
  // residual add (post_attention_layernorm / post_feedforward_layernorm; GGUF post_attention_norm
  // / post_ffw_norm) and the MLP input by pre_feedforward_layernorm (GGUF ffn_norm).
  bool sandwich_norms = false;
  // olmo2 / olmo3: no norm before attention or the MLP; they read the residual stream as is and
  // only their outputs are normed (post_attention_layernorm / post_feedforward_layernorm).
  bool pre_norms = true;
  // Scores (after attention_scale) and final logits become cap · tanh(x / cap); 0: none (Gemma 2:
  // 50 and 30).
  double attn_logit_softcap = 0.0;
  double final_logit_softcap = 0.0;
  // The features beyond the plain llama / qwen decoder this model needs ("mixture of experts,
  // fused qkv / gate_up"), or empty: what a backend that has only that decoder (CUDA) must
  // refuse.
  std::string ExtendedFeatures() const;
  // Sparse mixture-of-experts MLP (qwen2_moe, qwen3_moe, mixtral); num_experts 0 is a dense MLP
  // everywhere.
  // Each token's router softmax picks its num_experts_per_tok largest experts, whose SwiGLU MLPs
  // (moe_intermediate_size wide) it sums weighted by those probabilities, renormalized to sum to
  // one where norm_topk_prob (mixtral always; qwen3_moe as its config says).
  int64_t num_experts = 0;
  int64_t num_experts_per_tok = 0;
  int64_t moe_intermediate_size = 0;
  // qwen2_moe: a shared expert (a SwiGLU MLP this wide) every token runs, its output scaled by
  // sigmoid(shared_expert_gate · x) and added to the routed experts'; 0: none.
  int64_t shared_expert_intermediate_size = 0;
  bool norm_topk_prob = true;
  // gpt-oss: the router (HF mlp.router.bias, GGUF ffn_gate_inp.bias) and every expert projection
  // (GGUF ffn_{gate,up,down}_exps.bias; HF gate_up_proj_bias, down_proj_bias) add biases.
  bool moe_biases = false;
  int64_t decoder_sparse_step = 1;       // qwen*_moe: layer i is sparse when (i + 1) % step == 0
  std::vector<int64_t> mlp_only_layers;  // qwen*_moe: layers that keep a dense MLP
  MoeNaming moe_naming = MoeNaming::kQwen;
  std::optional<int32_t> bos_token_id;
  std::vector<int32_t> eos_token_ids;

  // LongRoPE: whether a sequence that may grow to `max_length` positions (0: unknown, the model's
  // max_context) rotates with the long factors. One choice per sequence, so its cached keys all
  // share one rotation: transformers switches when a sequence crosses original_max_position and
  // then recomputes the whole cache (Phi3's prepare_inputs_for_generation), llama.cpp picks by its
  // context size; deciding from the sequence's budget agrees with transformers for every sequence
  // that stays within original_max_position and with llama.cpp's perplexity windows.
  bool UsesLongRopeFactors(int64_t max_length) const {
    return rope_scaling.type == RopeScaling::Type::kLongRope &&
           (max_length > 0 ? max_length : max_context) > rope_scaling.original_max_position;
  }

  int64_t q_dim() const { return num_heads * head_dim; }
  int64_t kv_dim() const { return num_kv_heads * head_dim; }
  bool IsMoeLayer(int64_t layer) const;
  std::string ArchitectureName() const;
  absl::Status Validate() const;
};

// Parses config.json text. Errors name the missing or invalid field.
absl::StatusOr<ModelConfig> ModelConfigFromHfJson(const std::string& json_text);
absl::StatusOr<ModelConfig> ModelConfigFromGguf(const io::GgufMetadata& metadata);

// Per-pair inverse frequencies (rope_dim / 2 of them) after rope scaling, computed in float32
// the way transformers does, so angles match the reference to the last bit where possible.
// `sliding`: those of the sliding layers (sliding_rope_theta, unscaled, where set); `long_factors`:
// LongRoPE's long factors instead of its short ones.
std::vector<float> RopeInverseFrequencies(const ModelConfig& config, bool sliding = false,
                                          bool long_factors = false);

}  // namespace tessera::model

#endif  // TESSERA_ENGINE_MODEL_MODEL_CONFIG_H_
