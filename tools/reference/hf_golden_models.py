"""The random-weight models make_hf_goldens.py builds: each architecture's tiny config (shared
sizes in COMMON) and the GGUF twins written beside some of them. Seeds follow each model's place
in MODELS, so new models go at the end."""

from __future__ import annotations

from transformers import (Gemma2Config, Gemma3Config, Gemma3TextConfig, GemmaConfig, GraniteConfig,
                          LlamaConfig, Mistral3Config, MistralConfig, MixtralConfig, Olmo2Config,
                          Olmo3Config, OlmoeConfig, Phi3Config, Qwen2Config, Qwen2MoeConfig,
                          GptOssConfig, GraniteMoeConfig, Qwen3Config, Qwen3MoeConfig,
                          SmolLM3Config)

VOCAB_SIZE = 320

COMMON = dict(vocab_size=VOCAB_SIZE, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
              num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
              rms_norm_eps=1e-5, hidden_act="silu", initializer_range=0.2,
              bos_token_id=1, eos_token_id=2, pad_token_id=0)

MODELS = {
    "llama": (LlamaConfig, dict(COMMON, rope_theta=10000.0, tie_word_embeddings=False)),
    "llama3_rope": (LlamaConfig, dict(COMMON, rope_theta=500000.0, tie_word_embeddings=True,
                                      rope_scaling={"rope_type": "llama3", "factor": 8.0,
                                                    "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                                    "original_max_position_embeddings": 64})),
    "llama_linear_rope": (LlamaConfig, dict(COMMON, rope_theta=10000.0, tie_word_embeddings=True,
                                            rope_scaling={"rope_type": "linear", "factor": 2.0})),
    "mistral": (MistralConfig, dict(COMMON, rope_theta=10000.0, sliding_window=None,
                                    tie_word_embeddings=False)),
    "qwen2": (Qwen2Config, dict(COMMON, rope_theta=1000000.0, use_sliding_window=False,
                                tie_word_embeddings=False)),
    "qwen3": (Qwen3Config, dict(COMMON, rope_theta=1000000.0, head_dim=32, attention_bias=False,
                                use_sliding_window=False, tie_word_embeddings=True)),
    # Sparse mixture-of-experts MLPs. qwen3_moe: every layer sparse, top-3 of 8 renormalized (as
    # Qwen3-30B-A3B); qwen3_moe_mixed: layer 1 dense (mlp_only_layers), top-3 weights not
    # renormalized (transformers' default); mixtral: top-2 of 4 (always renormalized).
    "qwen3_moe": (Qwen3MoeConfig, dict(COMMON, rope_theta=1000000.0, head_dim=32,
                                       attention_bias=False, use_sliding_window=False,
                                       tie_word_embeddings=False, num_experts=8,
                                       num_experts_per_tok=3, moe_intermediate_size=32,
                                       norm_topk_prob=True, decoder_sparse_step=1,
                                       mlp_only_layers=[])),
    "qwen3_moe_mixed": (Qwen3MoeConfig, dict(COMMON, rope_theta=1000000.0, head_dim=32,
                                             attention_bias=False, use_sliding_window=False,
                                             tie_word_embeddings=True, num_experts=8,
                                             num_experts_per_tok=3, moe_intermediate_size=32,
                                             norm_topk_prob=False, decoder_sparse_step=1,
                                             mlp_only_layers=[1])),
    "mixtral": (MixtralConfig, dict(COMMON, rope_theta=1000000.0, sliding_window=None,
                                    tie_word_embeddings=False, num_local_experts=4,
                                    num_experts_per_tok=2, intermediate_size=48)),
    # qwen2_moe: top-2 of 8 not renormalized, plus a shared expert gated by sigmoid, q/k/v biases.
    "qwen2_moe": (Qwen2MoeConfig, dict(COMMON, rope_theta=1000000.0, use_sliding_window=False,
                                       tie_word_embeddings=False, num_experts=8,
                                       num_experts_per_tok=2, moe_intermediate_size=32,
                                       shared_expert_intermediate_size=48, norm_topk_prob=False,
                                       decoder_sparse_step=1, mlp_only_layers=[], qkv_bias=True)),
    # olmoe: RMSNorm over the whole q / k projections, top-2 of 8 not renormalized, 4 KV heads
    # (llama.cpp's olmoe graph sizes k_norm as n_embd); olmoe_clip adds clip_qkv (HF only:
    # llama.cpp's olmoe graph has no clamp).
    "olmoe": (OlmoeConfig, dict(COMMON, num_key_value_heads=4, rope_theta=10000.0,
                                tie_word_embeddings=False, num_experts=8, num_experts_per_tok=2,
                                intermediate_size=32, norm_topk_prob=False, clip_qkv=None)),
    "olmoe_clip": (OlmoeConfig, dict(COMMON, num_key_value_heads=2, rope_theta=10000.0,
                                     tie_word_embeddings=False, num_experts=8,
                                     num_experts_per_tok=2, intermediate_size=32,
                                     norm_topk_prob=True, clip_qkv=0.7)),
    # granite (dense): embedding, attention, residual and logits multipliers (Granite 3 style,
    # scaled to this size).
    "granite": (GraniteConfig, dict(COMMON, rope_theta=10000.0, tie_word_embeddings=True,
                                    embedding_multiplier=2.0, attention_multiplier=0.0625,
                                    residual_multiplier=0.5, logits_scaling=2.5)),
    # phi3: fused qkv_proj and gate_up_proj, half the head rotated (partial_rotary_factor 0.5).
    "phi3": (Phi3Config, dict(COMMON, rope_theta=10000.0, tie_word_embeddings=False,
                              partial_rotary_factor=0.5, sliding_window=None, rope_scaling=None,
                              original_max_position_embeddings=256, resid_pdrop=0.0,
                              embd_pdrop=0.0, attention_dropout=0.0)),
    # Sliding-window attention over 8 positions (the 32-token prompt plus 32 generated tokens go
    # well past it): mistral windows every layer; qwen2 (use_sliding_window) the layers from
    # max_window_layers on, here layer 1 only.
    "mistral_swa": (MistralConfig, dict(COMMON, rope_theta=10000.0, sliding_window=8,
                                        tie_word_embeddings=False)),
    "qwen2_swa": (Qwen2Config, dict(COMMON, rope_theta=1000000.0, use_sliding_window=True,
                                    sliding_window=8, max_window_layers=1,
                                    tie_word_embeddings=False)),
    # The Gemma family: (1 + w) norms, embeddings times sqrt(hidden), GeGLU (tanh GELU), tied
    # embeddings, head_dim 32 != hidden / heads. gemma2: sandwich norms, attention and final
    # logit soft caps (small, so they bite at this scale), layer 0 windowed (8), layer 1 full.
    # gemma3: per-head q/k norms, layers 0-1 windowed with their own RoPE base (10000) and
    # layer 2 full with 1e6 and linear scaling 8, as Gemma 3 4B+; sliding_window_pattern 3.
    # query_pre_attn_scalar = head_dim: GGUF files do not store it (llama.cpp derives it).
    "gemma": (GemmaConfig, dict(COMMON, head_dim=32, rope_theta=10000.0,
                                hidden_act="gelu_pytorch_tanh",
                                hidden_activation="gelu_pytorch_tanh", tie_word_embeddings=True)),
    "gemma2": (Gemma2Config, dict(COMMON, head_dim=32, rope_theta=10000.0,
                                  hidden_activation="gelu_pytorch_tanh",
                                  query_pre_attn_scalar=32, sliding_window=8,
                                  attn_logit_softcapping=4.0, final_logit_softcapping=10.0,
                                  tie_word_embeddings=True)),
    "gemma3": (Gemma3TextConfig, dict(COMMON, num_hidden_layers=3, head_dim=32,
                                      hidden_activation="gelu_pytorch_tanh",
                                      query_pre_attn_scalar=32, sliding_window=8,
                                      sliding_window_pattern=3, rope_theta=1000000.0,
                                      rope_local_base_freq=10000.0,
                                      rope_scaling={"rope_type": "linear", "factor": 8.0},
                                      tie_word_embeddings=True)),
    # Gemma 3 4B-27B's checkpoint layout: Gemma3ForConditionalGeneration with a (tiny) SigLIP
    # vision tower and projector beside the decoder, whose weights transformers saves under
    # language_model.model.*; its config.json keeps the decoder in text_config. Text-only input.
    "gemma3_mm": (Gemma3Config, dict(
        text_config=dict(COMMON, num_hidden_layers=3, head_dim=32,
                         hidden_activation="gelu_pytorch_tanh", query_pre_attn_scalar=32,
                         sliding_window=8, sliding_window_pattern=3, rope_theta=1000000.0,
                         rope_local_base_freq=10000.0,
                         rope_scaling={"rope_type": "linear", "factor": 8.0}),
        vision_config=dict(hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                           num_attention_heads=2, image_size=28, patch_size=14),
        mm_tokens_per_image=4, boi_token_index=3, eoi_token_index=4, image_token_index=5,
        bos_token_id=1, eos_token_id=2, pad_token_id=0, tie_word_embeddings=True)),
    # Mistral Small 3.1 / 3.2's layout: Mistral3ForConditionalGeneration, a (tiny) Pixtral vision
    # tower beside a mistral decoder under language_model.model.*, an untied
    # language_model.lm_head. Text-only input.
    "mistral3_mm": (Mistral3Config, dict(
        text_config=dict(COMMON, model_type="mistral", head_dim=32, rope_theta=1000000.0,
                         sliding_window=None, tie_word_embeddings=False),
        vision_config=dict(hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                           num_attention_heads=2, head_dim=16, image_size=28, patch_size=14),
        image_token_index=5, spatial_merge_size=2, bos_token_id=1, eos_token_id=2,
        pad_token_id=0, tie_word_embeddings=False)),
    # OLMo 2: no norm before attention or the MLP, RMSNorm over the whole q / k projections and
    # on each block's output. OLMo 3 adds windows (8 here; layer 0 sliding, layer 1 full).
    "olmo2": (Olmo2Config, dict(COMMON, rope_theta=500000.0, tie_word_embeddings=False)),
    "olmo3": (Olmo3Config, dict(COMMON, rope_theta=500000.0, tie_word_embeddings=False,
                                sliding_window=8,
                                layer_types=["sliding_attention", "full_attention"])),
    # YaRN: qwen3 with factor 4 over an original context of 64 (the ramp between beta_slow 1 and
    # beta_fast 32 rotations falls inside the 16 pairs), attention_factor inferred (1 + 0.1 ln 4);
    # olmo3 as OLMo 3 7B long-context: YaRN (factor 8, attention_factor 1.2) on the full layer
    # only, the sliding layer unscaled.
    "qwen3_yarn": (Qwen3Config, dict(COMMON, rope_theta=10000.0, head_dim=32, attention_bias=False,
                                     use_sliding_window=False, tie_word_embeddings=True,
                                     rope_scaling={"rope_type": "yarn", "factor": 4.0,
                                                   "original_max_position_embeddings": 64})),
    "olmo3_yarn": (Olmo3Config, dict(COMMON, rope_theta=10000.0, tie_word_embeddings=False,
                                     sliding_window=8,
                                     layer_types=["sliding_attention", "full_attention"],
                                     rope_scaling={"rope_type": "yarn", "factor": 8.0,
                                                   "original_max_position_embeddings": 32,
                                                   "attention_factor": 1.2, "beta_fast": 32,
                                                   "beta_slow": 1})),
    # SmolLM3: llama with every fourth layer rotating nothing (NoPE); 4 layers so layer 3 is one.
    "smollm3": (SmolLM3Config, dict(COMMON, num_hidden_layers=4, rope_theta=5000000.0,
                                    tie_word_embeddings=True, use_sliding_window=False)),
    # Granite 3.x MoE: granite's multipliers, top-2 of 4 experts (softmax over the top-k logits),
    # experts fused in block_sparse_moe.input_linear (tessera reads the GGUF twin only).
    "granitemoe": (GraniteMoeConfig, dict(COMMON, rope_theta=10000.0, tie_word_embeddings=True,
                                          num_local_experts=4, num_experts_per_tok=2,
                                          intermediate_size=48, embedding_multiplier=2.0,
                                          attention_multiplier=0.0625, residual_multiplier=0.5,
                                          logits_scaling=2.5)),
    # gpt-oss: attention sinks, q/k/v/o biases, 4 experts 64 wide (MXFP4's groups of 32 divide
    # both widths; top-2, softmax over their logits)
    # with biases and the clamped SwiGLU, gate / up interleaved in gate_up_proj; layer 0 windowed
    # (8), YaRN x4 over 32 positions without truncation, as gpt-oss's config (x32 over 4096).
    "gpt_oss": (GptOssConfig, dict(COMMON, max_position_embeddings=128, head_dim=16,
                                   num_local_experts=4,
                                   num_experts_per_tok=2, intermediate_size=64,
                                   sliding_window=8, rope_theta=150000.0,
                                   tie_word_embeddings=False,
                                   rope_scaling={"rope_type": "yarn", "factor": 4.0,
                                                 "beta_fast": 32.0, "beta_slow": 1.0,
                                                 "truncate": False,
                                                 "original_max_position_embeddings": 32})),
    # Phi-3 LongRoPE (Phi-3-mini-128k, Phi-3.5-mini, Phi-4-mini): per-pair short / long factors
    # and cos / sin times sqrt(1 + ln(max / original) / ln(original)). phi3_longrope: original 16
    # of 128, so the 32-token input and the 64-token greedy run take the long factors;
    # phi3_longrope_short: original 128 of 256, the short factors, and half of each head rotated
    # (Phi-4-mini rotates three quarters).
    "phi3_longrope": (Phi3Config, dict(COMMON, rope_theta=10000.0, tie_word_embeddings=False,
                                       max_position_embeddings=128,
                                       original_max_position_embeddings=16, sliding_window=None,
                                       resid_pdrop=0.0, embd_pdrop=0.0, attention_dropout=0.0,
                                       rope_scaling={"type": "longrope",
                                                     "short_factor": [1.0, 1.0, 1.02, 1.05, 1.1,
                                                                      1.2, 1.3, 1.4],
                                                     "long_factor": [1.0, 1.2, 1.8, 3.0, 5.0, 8.0,
                                                                     12.0, 16.0]})),
    "phi3_longrope_short": (Phi3Config, dict(COMMON, rope_theta=10000.0, tie_word_embeddings=False,
                                             max_position_embeddings=256,
                                             original_max_position_embeddings=128,
                                             partial_rotary_factor=0.5, sliding_window=None,
                                             resid_pdrop=0.0, embd_pdrop=0.0,
                                             attention_dropout=0.0,
                                             rope_scaling={"type": "longrope",
                                                           "short_factor": [1.0, 1.05, 1.2, 1.5],
                                                           "long_factor": [1.0, 2.0, 6.0, 12.0]})),
}

# Models that also get a GGUF twin (model.gguf, the same f32 weights as llama.cpp's
# convert_hf_to_gguf.py lays them out): general.architecture for each.
GGUF_TWINS = {"qwen3_moe": "qwen3moe", "mixtral": "llama", "qwen2_moe": "qwen2moe",
              "olmoe": "olmoe", "granite": "granite", "phi3": "phi3", "llama3_rope": "llama",
              "gemma": "gemma", "gemma2": "gemma2", "gemma3": "gemma3", "olmo2": "olmo2",
              "olmo3": "olmo2", "smollm3": "smollm3", "qwen3_yarn": "qwen3",
              "granitemoe": "granitemoe", "gpt_oss": "gpt-oss", "phi3_longrope": "phi3"}
