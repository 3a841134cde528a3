// Sliding-window layers, the Gemma and OLMo 2 / 3 families' config fields and YaRN, from
// config.json (transformers' defaults and rules) and from GGUF metadata (llama.cpp's keys and
// defaults): which layers slide, soft caps, attention scales, the (1 + w) norm offset, GeGLU
// activations, Gemma 3's local RoPE base, YaRN's parameters, and errors that name the field.
#include <cmath>
#include <string>
#include <vector>

#include "engine/io/gguf_metadata.h"
#include "engine/model/model_config.h"
#include "gtest/gtest.h"

namespace tessera::model {
namespace {

const std::string kBase = R"({"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
    "num_key_value_heads": 2, "intermediate_size": 128, "vocab_size": 320,
    "max_position_embeddings": 256, )";

std::vector<bool> Sliding(const ModelConfig& c) {
  std::vector<bool> out;
  for (int64_t i = 0; i < c.num_layers; ++i) out.push_back(c.IsSlidingLayer(i));
  return out;
}

TEST(SlidingWindowConfigTest, WindowsPerArchitectureAndLayerTypes) {
  auto mistral = ModelConfigFromHfJson(kBase + R"("model_type": "mistral", "sliding_window": 64})");
  ASSERT_TRUE(mistral.ok()) << mistral.status();
  EXPECT_EQ(mistral->sliding_window, 64);
  EXPECT_EQ(Sliding(*mistral), (std::vector<bool>{true, true}));
  EXPECT_EQ(mistral->max_context, 256);  // windowed attention runs past the window
  auto unwindowed =
      ModelConfigFromHfJson(kBase + R"("model_type": "mistral", "sliding_window": null})");
  ASSERT_TRUE(unwindowed.ok());
  EXPECT_FALSE(unwindowed->HasSlidingLayers());
  auto qwen_off = ModelConfigFromHfJson(
      kBase + R"("model_type": "qwen2", "sliding_window": 64, "use_sliding_window": false})");
  ASSERT_TRUE(qwen_off.ok());
  EXPECT_FALSE(qwen_off->HasSlidingLayers());
  // Qwen2Config: layers from max_window_layers (default 28) on.
  auto qwen_default = ModelConfigFromHfJson(
      kBase + R"("model_type": "qwen2", "sliding_window": 64, "use_sliding_window": true})");
  ASSERT_TRUE(qwen_default.ok());
  EXPECT_FALSE(qwen_default->HasSlidingLayers());
  auto qwen_on = ModelConfigFromHfJson(kBase + R"("model_type": "qwen2", "sliding_window": 64,
      "use_sliding_window": true, "max_window_layers": 1})");
  ASSERT_TRUE(qwen_on.ok());
  EXPECT_EQ(Sliding(*qwen_on), (std::vector<bool>{false, true}));
  const std::string qwen_on_base =
      kBase + R"("model_type": "qwen2", "sliding_window": 64, "use_sliding_window": true, )";
  auto typed = ModelConfigFromHfJson(qwen_on_base +
                                     R"("layer_types": ["full_attention", "sliding_attention"]})");
  ASSERT_TRUE(typed.ok()) << typed.status();
  EXPECT_EQ(Sliding(*typed), (std::vector<bool>{false, true}));
  // transformers' Mistral reads no layer_types (it warns): every layer slides.
  auto mistral_typed = ModelConfigFromHfJson(kBase + R"("model_type": "mistral",
      "sliding_window": 64, "layer_types": ["full_attention", "sliding_attention"]})");
  ASSERT_TRUE(mistral_typed.ok());
  EXPECT_EQ(Sliding(*mistral_typed), (std::vector<bool>{true, true}));
  // Class defaults where the key is absent: MistralConfig 4096, MixtralConfig none.
  auto mistral_default = ModelConfigFromHfJson(kBase + R"("model_type": "mistral"})");
  ASSERT_TRUE(mistral_default.ok());
  EXPECT_EQ(mistral_default->sliding_window, 4096);
  auto mixtral_default = ModelConfigFromHfJson(kBase + R"("model_type": "mixtral",
      "num_local_experts": 4, "num_experts_per_tok": 2})");
  ASSERT_TRUE(mixtral_default.ok()) << mixtral_default.status();
  EXPECT_FALSE(mixtral_default->HasSlidingLayers());
  // qwen3_moe has no max_window_layers: every layer.
  auto moe = ModelConfigFromHfJson(kBase + R"("model_type": "qwen3_moe", "sliding_window": 64,
      "use_sliding_window": true, "num_experts": 4, "num_experts_per_tok": 2,
      "moe_intermediate_size": 32})");
  ASSERT_TRUE(moe.ok()) << moe.status();
  EXPECT_EQ(Sliding(*moe), (std::vector<bool>{true, true}));
  auto text_window =
      ModelConfigFromHfJson(kBase + R"("model_type": "mistral", "sliding_window": "64"})");
  ASSERT_FALSE(text_window.ok());
  EXPECT_NE(text_window.status().message().find("sliding_window"), std::string::npos);
  auto short_types = ModelConfigFromHfJson(qwen_on_base + R"("layer_types": ["full_attention"]})");
  ASSERT_FALSE(short_types.ok());
  EXPECT_NE(short_types.status().message().find("layer_types"), std::string::npos);
  auto bad_type = ModelConfigFromHfJson(
      qwen_on_base + R"("layer_types": ["full_attention", "chunked_attention"]})");
  ASSERT_FALSE(bad_type.ok());
  EXPECT_NE(bad_type.status().message().find("layer_types[1]"), std::string::npos);
  auto negative =
      ModelConfigFromHfJson(kBase + R"("model_type": "mistral", "sliding_window": -3})");
  ASSERT_FALSE(negative.ok());
  EXPECT_NE(negative.status().message().find("sliding_window"), std::string::npos);
}

TEST(GemmaConfigTest, Gemma2DefaultsFromTransformers) {
  auto c = ModelConfigFromHfJson(kBase + R"("model_type": "gemma2", "head_dim": 32})");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->ArchitectureName(), "gemma2");
  EXPECT_TRUE(c->tie_word_embeddings);
  EXPECT_EQ(c->norm_weight_offset, 1.0f);
  EXPECT_TRUE(c->sandwich_norms);
  EXPECT_EQ(c->mlp_activation, MlpActivation::kGeluTanh);
  EXPECT_DOUBLE_EQ(c->embedding_multiplier, 8.0);    // sqrt(64)
  EXPECT_DOUBLE_EQ(c->attention_scale, 1.0 / 16.0);  // query_pre_attn_scalar 256
  EXPECT_EQ(c->attn_logit_softcap, 50.0);
  EXPECT_EQ(c->final_logit_softcap, 30.0);
  EXPECT_EQ(c->sliding_window, 4096);
  EXPECT_EQ(Sliding(*c), (std::vector<bool>{true, false}));  // every other layer from the first
  EXPECT_NE(c->ExtendedFeatures().find("soft-capped logits"), std::string::npos);
  // An explicit null turns a soft cap off; query_pre_attn_scalar sets the scale.
  auto uncapped = ModelConfigFromHfJson(kBase + R"("model_type": "gemma2", "head_dim": 32,
      "attn_logit_softcapping": null, "final_logit_softcapping": null,
      "query_pre_attn_scalar": 144})");
  ASSERT_TRUE(uncapped.ok());
  EXPECT_EQ(uncapped->attn_logit_softcap, 0.0);
  EXPECT_EQ(uncapped->final_logit_softcap, 0.0);
  EXPECT_DOUBLE_EQ(uncapped->attention_scale, 1.0 / 12.0);
}

TEST(GemmaConfigTest, Gemma3WindowsAndLocalRope) {
  auto c = ModelConfigFromHfJson(R"({"model_type": "gemma3_text", "hidden_size": 64,
      "num_hidden_layers": 12, "num_attention_heads": 4, "num_key_value_heads": 1, "head_dim": 32,
      "intermediate_size": 128, "vocab_size": 320, "sliding_window": 512,
      "rope_theta": 1000000.0, "rope_scaling": {"rope_type": "linear", "factor": 8.0}})");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_TRUE(c->qk_norm);
  EXPECT_EQ(c->final_logit_softcap, 0.0);
  EXPECT_EQ(c->attn_logit_softcap, 0.0);
  EXPECT_EQ(c->sliding_window, 512);
  std::vector<bool> want(12, true);
  want[5] = want[11] = false;  // sliding_window_pattern 6
  EXPECT_EQ(Sliding(*c), want);
  EXPECT_EQ(c->sliding_rope_theta, 10000.0);
  const auto global = RopeInverseFrequencies(*c), local = RopeInverseFrequencies(*c, true);
  ASSERT_EQ(global.size(), 16u);
  ASSERT_EQ(local.size(), 16u);
  EXPECT_FLOAT_EQ(global[0], 1.0f / 8.0f);  // base^0 scaled by the linear factor
  EXPECT_FLOAT_EQ(local[0], 1.0f);          // unscaled
  EXPECT_NEAR(local[1], 1.0f / std::pow(10000.0f, 2.0f / 32.0f), 1e-7f);
  EXPECT_NEAR(global[1], 1.0f / std::pow(1e6f, 2.0f / 32.0f) / 8.0f, 1e-9f);
}

TEST(GemmaConfigTest, ActivationsAndRefusals) {
  auto erf = ModelConfigFromHfJson(kBase + R"("model_type": "gemma", "hidden_act": "gelu"})");
  ASSERT_TRUE(erf.ok()) << erf.status();
  EXPECT_EQ(erf->mlp_activation, MlpActivation::kGeluErf);
  EXPECT_FALSE(erf->sandwich_norms);
  EXPECT_FALSE(erf->HasSlidingLayers());
  // Google's Gemma 1 configs: hidden_act "gelu" beside hidden_activation "gelu_pytorch_tanh" (the
  // latter wins here; transformers 4.57 reads hidden_act: see GemmaActivation).
  auto tanh = ModelConfigFromHfJson(
      kBase +
      R"("model_type": "gemma", "hidden_act": "gelu", "hidden_activation": "gelu_pytorch_tanh"})");
  ASSERT_TRUE(tanh.ok());
  EXPECT_EQ(tanh->mlp_activation, MlpActivation::kGeluTanh);
  // Gemma 2 reads hidden_activation alone (default tanh), whatever hidden_act says.
  auto g2 = ModelConfigFromHfJson(kBase + R"("model_type": "gemma2", "hidden_act": "silu"})");
  ASSERT_TRUE(g2.ok()) << g2.status();
  EXPECT_EQ(g2->mlp_activation, MlpActivation::kGeluTanh);
  auto text_cap =
      ModelConfigFromHfJson(kBase + R"("model_type": "gemma2", "final_logit_softcapping": "30"})");
  ASSERT_FALSE(text_cap.ok());
  EXPECT_NE(text_cap.status().message().find("final_logit_softcapping"), std::string::npos);
  auto relu =
      ModelConfigFromHfJson(kBase + R"("model_type": "gemma", "hidden_activation": "relu"})");
  ASSERT_FALSE(relu.ok());
  EXPECT_NE(relu.status().message().find("hidden_activation"), std::string::npos);
  auto no_text = ModelConfigFromHfJson(kBase + R"("model_type": "gemma3"})");
  ASSERT_FALSE(no_text.ok());
  EXPECT_NE(no_text.status().message().find("text_config"), std::string::npos);
  auto embedding = ModelConfigFromHfJson(
      kBase + R"("model_type": "gemma3_text", "use_bidirectional_attention": true})");
  ASSERT_FALSE(embedding.ok());
  EXPECT_NE(embedding.status().message().find("use_bidirectional_attention"), std::string::npos);
}

// google/gemma-3-4b-it's config.json: the decoder in a sparse text_config, everything else
// transformers' Gemma3TextConfig defaults; a text_config error says where it is.
TEST(GemmaConfigTest, MultimodalGemma3TakesTheTextConfigWithDefaults) {
  auto c = ModelConfigFromHfJson(R"({"architectures": ["Gemma3ForConditionalGeneration"],
      "model_type": "gemma3", "eos_token_id": [1, 106], "mm_tokens_per_image": 256,
      "text_config": {"hidden_size": 2560, "intermediate_size": 10240,
        "model_type": "gemma3_text", "num_hidden_layers": 34, "sliding_window": 1024,
        "rope_scaling": {"factor": 8.0, "rope_type": "linear"}},
      "vision_config": {"model_type": "siglip_vision_model", "hidden_size": 1152}})");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_TRUE(c->language_model_of_multimodal);
  EXPECT_EQ(c->architecture_name, "Gemma3ForConditionalGeneration");
  EXPECT_EQ(c->ArchitectureName(), "gemma3");
  EXPECT_EQ(c->hidden_size, 2560);
  EXPECT_EQ(c->num_heads, 8);
  EXPECT_EQ(c->num_kv_heads, 4);
  EXPECT_EQ(c->head_dim, 256);
  EXPECT_EQ(c->vocab_size, 262208);
  EXPECT_EQ(c->max_context, 131072);
  EXPECT_EQ(c->rope_theta, 1e6);
  EXPECT_EQ(c->eos_token_ids, (std::vector<int32_t>{1, 106}));
  EXPECT_EQ(c->sliding_window, 1024);
  EXPECT_TRUE(c->IsSlidingLayer(0));
  EXPECT_FALSE(c->IsSlidingLayer(5));
  EXPECT_TRUE(c->tie_word_embeddings);
  auto bad = ModelConfigFromHfJson(R"({"model_type": "gemma3",
      "text_config": {"hidden_size": "wide"}})");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("hidden_size"), std::string::npos);
  EXPECT_NE(bad.status().message().find("text_config"), std::string::npos);
}

// GGUF metadata for a gemma2 / gemma3 file of `layers` layers.
io::GgufMetadata GemmaGguf(const std::string& arch, uint64_t layers) {
  io::GgufMetadata m;
  auto u = [](uint64_t v) { return io::GgufValue{io::GgufValueType::kU32, {}, v}; };
  m.Add("general.architecture", io::GgufValue{io::GgufValueType::kString, {}, arch});
  m.Add(arch + ".embedding_length", u(4608));
  m.Add(arch + ".block_count", u(layers));
  m.Add(arch + ".attention.head_count", u(32));
  m.Add(arch + ".attention.head_count_kv", u(16));
  m.Add(arch + ".attention.key_length", u(128));
  m.Add(arch + ".feed_forward_length", u(256));
  m.Add(arch + ".vocab_size", u(320));
  return m;
}

TEST(GemmaConfigTest, GgufKeysAndLlamaCppDefaults) {
  auto g2 = ModelConfigFromGguf(GemmaGguf("gemma2", 4));
  ASSERT_TRUE(g2.ok()) << g2.status();
  EXPECT_EQ(g2->norm_weight_offset, 0.0f);  // the converter stored 1 + w
  EXPECT_EQ(g2->rope_style, RopeStyle::kRotateHalf);
  EXPECT_EQ(g2->attn_logit_softcap, 50.0);
  EXPECT_EQ(g2->final_logit_softcap, 30.0);
  EXPECT_EQ(g2->sliding_window, 4096);
  EXPECT_EQ(Sliding(*g2), (std::vector<bool>{true, false, true, false}));
  EXPECT_EQ(g2->attention_scale, 0.0);  // head_dim^-0.5
  // The 27B shape (46 layers): (n_embd / n_head)^-0.5, as llama.cpp derives it.
  auto g2_27b = ModelConfigFromGguf(GemmaGguf("gemma2", 46));
  ASSERT_TRUE(g2_27b.ok());
  EXPECT_DOUBLE_EQ(g2_27b->attention_scale, 1.0 / 12.0);

  // Gemma 3 slides only with a window key; pattern 6 unless the file names one.
  auto plain = ModelConfigFromGguf(GemmaGguf("gemma3", 6));
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_FALSE(plain->HasSlidingLayers());
  EXPECT_TRUE(plain->qk_norm);
  auto windowed = GemmaGguf("gemma3", 7);
  windowed.Add("gemma3.attention.sliding_window",
               io::GgufValue{io::GgufValueType::kU32, {}, uint64_t{512}});
  windowed.Add("gemma3.rope.freq_base_swa", io::GgufValue{io::GgufValueType::kF32, {}, 20000.0});
  auto w6 = ModelConfigFromGguf(windowed);
  ASSERT_TRUE(w6.ok()) << w6.status();
  EXPECT_EQ(Sliding(*w6), (std::vector<bool>{true, true, true, true, true, false, true}));
  EXPECT_EQ(w6->sliding_rope_theta, 20000.0);
  auto period = windowed;
  period.Add("gemma3.attention.sliding_window_pattern",
             io::GgufValue{io::GgufValueType::kU32, {}, uint64_t{3}});
  auto w3 = ModelConfigFromGguf(period);
  ASSERT_TRUE(w3.ok());
  EXPECT_EQ(Sliding(*w3), (std::vector<bool>{true, true, false, true, true, false, true}));
  auto bools = windowed;
  std::vector<io::GgufValue> flags;
  for (bool b : {false, true, false, true, false, true, false}) {
    flags.push_back(io::GgufValue{io::GgufValueType::kBool, {}, b});
  }
  bools.Add("gemma3.attention.sliding_window_pattern",
            io::GgufValue{io::GgufValueType::kArray, io::GgufValueType::kBool, flags});
  auto wb = ModelConfigFromGguf(bools);
  ASSERT_TRUE(wb.ok()) << wb.status();
  EXPECT_EQ(Sliding(*wb), (std::vector<bool>{false, true, false, true, false, true, false}));
  auto short_bools = windowed;
  flags.pop_back();
  short_bools.Add("gemma3.attention.sliding_window_pattern",
                  io::GgufValue{io::GgufValueType::kArray, io::GgufValueType::kBool, flags});
  auto bad = ModelConfigFromGguf(short_bools);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("sliding_window_pattern"), std::string::npos);
}

// Mistral Small 3.1's config.json: a mistral decoder in text_config (the default when its
// model_type is absent); other decoders are refused naming the field.
TEST(GemmaConfigTest, Mistral3TakesItsMistralTextConfig) {
  auto c = ModelConfigFromHfJson(R"({"architectures": ["Mistral3ForConditionalGeneration"],
      "model_type": "mistral3", "text_config": {"head_dim": 128, "hidden_size": 5120,
        "intermediate_size": 32768, "max_position_embeddings": 131072,
        "num_attention_heads": 32, "num_hidden_layers": 40, "num_key_value_heads": 8,
        "rms_norm_eps": 1e-05, "rope_theta": 1000000000.0, "sliding_window": null,
        "vocab_size": 131072}})");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->ArchitectureName(), "mistral");
  EXPECT_EQ(c->architecture_name, "Mistral3ForConditionalGeneration");
  EXPECT_TRUE(c->language_model_of_multimodal);
  EXPECT_EQ(c->head_dim, 128);
  EXPECT_FALSE(c->HasSlidingLayers());
  auto other = ModelConfigFromHfJson(R"({"model_type": "mistral3",
      "text_config": {"model_type": "qwen2"}})");
  ASSERT_FALSE(other.ok());
  EXPECT_NE(other.status().message().find("text_config.model_type"), std::string::npos);
}

// OLMo 2 / 3: output norms only; OLMo 3's default pattern (three of four layers slide, 4096)
// from config.json and from llama.cpp's olmo2 GGUF keys (period 4, freq_base_swa).
TEST(GemmaConfigTest, OlmoNormsAndWindows) {
  auto olmo2 = ModelConfigFromHfJson(kBase + R"("model_type": "olmo2"})");
  ASSERT_TRUE(olmo2.ok()) << olmo2.status();
  EXPECT_FALSE(olmo2->pre_norms);
  EXPECT_TRUE(olmo2->sandwich_norms);
  EXPECT_TRUE(olmo2->qk_norm_whole);
  EXPECT_FALSE(olmo2->HasSlidingLayers());
  auto olmo3 = ModelConfigFromHfJson(R"({"model_type": "olmo3", "hidden_size": 64,
      "num_hidden_layers": 8, "num_attention_heads": 4, "intermediate_size": 128,
      "vocab_size": 320, "rope_theta": 500000.0})");
  ASSERT_TRUE(olmo3.ok()) << olmo3.status();
  EXPECT_EQ(olmo3->sliding_window, 4096);
  EXPECT_EQ(Sliding(*olmo3), (std::vector<bool>{true, true, true, false, true, true, true, false}));
  EXPECT_EQ(olmo3->sliding_rope_theta, 500000.0);
  auto gguf = GemmaGguf("olmo2", 8);
  auto plain = ModelConfigFromGguf(gguf);
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_EQ(plain->ArchitectureName(), "olmo2");
  EXPECT_FALSE(plain->HasSlidingLayers());
  gguf.Add("olmo2.attention.sliding_window",
           io::GgufValue{io::GgufValueType::kU32, {}, uint64_t{4096}});
  gguf.Add("olmo2.rope.freq_base", io::GgufValue{io::GgufValueType::kF32, {}, 500000.0});
  auto windowed = ModelConfigFromGguf(gguf);
  ASSERT_TRUE(windowed.ok()) << windowed.status();
  EXPECT_EQ(windowed->ArchitectureName(), "olmo3");
  EXPECT_EQ(Sliding(*windowed),
            (std::vector<bool>{true, true, true, false, true, true, true, false}));
  EXPECT_EQ(windowed->sliding_rope_theta, 500000.0);
}

// YaRN's attention factor: given, inferred from the factor (1 + 0.1 ln f), or from DeepSeek's
// mscale / mscale_all_dim ratio; `x or default` for the betas; a missing factor named.
TEST(GemmaConfigTest, YarnParameters) {
  auto yarn = [](const std::string& rs) {
    return ModelConfigFromHfJson(kBase + R"("model_type": "qwen3", "rope_scaling": )" + rs + "}");
  };
  auto inferred = yarn(R"({"rope_type": "yarn", "factor": 4.0})");
  ASSERT_TRUE(inferred.ok()) << inferred.status();
  EXPECT_EQ(inferred->rope_scaling.type, RopeScaling::Type::kYarn);
  EXPECT_DOUBLE_EQ(inferred->rope_scaling.attention_factor, 0.1 * std::log(4.0) + 1.0);
  EXPECT_EQ(inferred->rope_scaling.original_max_position, 256);  // max_position_embeddings
  EXPECT_EQ(inferred->rope_scaling.beta_fast, 32.0);
  EXPECT_EQ(inferred->rope_scaling.beta_slow, 1.0);
  auto deepseek = yarn(R"({"type": "yarn", "factor": 40, "mscale": 1.0, "mscale_all_dim": 0.707,
      "beta_fast": 0, "original_max_position_embeddings": 4096})");
  ASSERT_TRUE(deepseek.ok()) << deepseek.status();
  EXPECT_DOUBLE_EQ(deepseek->rope_scaling.attention_factor,
                   (0.1 * std::log(40.0) + 1.0) / (0.1 * 0.707 * std::log(40.0) + 1.0));
  EXPECT_EQ(deepseek->rope_scaling.beta_fast, 32.0);  // 0 is falsy in transformers
  EXPECT_EQ(deepseek->rope_scaling.original_max_position, 4096);
  auto given = yarn(R"({"rope_type": "yarn", "factor": 8, "attention_factor": 1.2})");
  ASSERT_TRUE(given.ok());
  EXPECT_EQ(given->rope_scaling.attention_factor, 1.2);
  EXPECT_NE(given->ExtendedFeatures().find("YaRN"), std::string::npos);
  auto no_factor = yarn(R"({"rope_type": "yarn"})");
  ASSERT_FALSE(no_factor.ok());
  EXPECT_NE(no_factor.status().message().find("rope_scaling.factor"), std::string::npos);

  // GGUF: llama.cpp's keys (original_context_length, yarn_log_multiplier, attn_factor).
  auto gguf = GemmaGguf("qwen3", 2);
  auto str = [](const char* v) {
    return io::GgufValue{io::GgufValueType::kString, {}, std::string(v)};
  };
  auto f32 = [](double v) { return io::GgufValue{io::GgufValueType::kF32, {}, v}; };
  gguf.Add("qwen3.rope.scaling.type", str("yarn"));
  auto missing = ModelConfigFromGguf(gguf);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("rope.scaling.factor"), std::string::npos);
  gguf.Add("qwen3.rope.scaling.factor", f32(4.0));
  gguf.Add("qwen3.rope.scaling.original_context_length",
           io::GgufValue{io::GgufValueType::kU32, {}, uint64_t{32768}});
  auto plain = ModelConfigFromGguf(gguf);
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_EQ(plain->rope_scaling.type, RopeScaling::Type::kYarn);
  EXPECT_EQ(plain->rope_scaling.original_max_position, 32768);
  EXPECT_DOUBLE_EQ(plain->rope_scaling.attention_factor, 0.1 * std::log(4.0) + 1.0);
  gguf.Add("qwen3.rope.scaling.yarn_log_multiplier", f32(0.5));
  gguf.Add("qwen3.rope.scaling.attn_factor", f32(2.0));
  auto scaled = ModelConfigFromGguf(gguf);
  ASSERT_TRUE(scaled.ok());
  EXPECT_NEAR(scaled->rope_scaling.attention_factor,
              2.0 * (0.1 * std::log(4.0) + 1.0) / (0.05 * std::log(4.0) + 1.0), 1e-6);
}

// SmolLM3's NoPE layers: no_rope_layers (1 = rotates), else every no_rope_layer_interval-th
// layer without RoPE; GGUF's fixed step of 4; bad lists named.
TEST(GemmaConfigTest, SmolLM3NoRopeLayers) {
  auto listed =
      ModelConfigFromHfJson(kBase + R"("model_type": "smollm3", "no_rope_layers": [0, 1]})");
  ASSERT_TRUE(listed.ok()) << listed.status();
  EXPECT_FALSE(listed->UsesRope(0));
  EXPECT_TRUE(listed->UsesRope(1));
  EXPECT_NE(listed->ExtendedFeatures().find("NoPE"), std::string::npos);
  auto interval =
      ModelConfigFromHfJson(kBase + R"("model_type": "smollm3", "no_rope_layer_interval": 2})");
  ASSERT_TRUE(interval.ok());
  EXPECT_TRUE(interval->UsesRope(0));
  EXPECT_FALSE(interval->UsesRope(1));
  auto bad =
      ModelConfigFromHfJson(kBase + R"("model_type": "smollm3", "no_rope_layers": [1, "yes"]})");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("no_rope_layers[1]"), std::string::npos);
  auto gguf = ModelConfigFromGguf(GemmaGguf("smollm3", 8));
  ASSERT_TRUE(gguf.ok()) << gguf.status();
  EXPECT_EQ(gguf->rope_style, RopeStyle::kInterleaved);
  for (int64_t i = 0; i < 8; ++i) EXPECT_EQ(gguf->UsesRope(i), (i + 1) % 4 != 0) << i;
}

// Granite MoE from config.json: granite's multipliers, experts fused per layer (read one by one
// through ExpertStackStore); a granitemoeshared config with a shared expert is refused by name.
TEST(GemmaConfigTest, GraniteMoeHfConfigAndSharedExpertRefusal) {
  auto c = ModelConfigFromHfJson(kBase + R"("model_type": "granitemoe", "num_local_experts": 4,
      "num_experts_per_tok": 2, "embedding_multiplier": 12.0, "attention_multiplier": 0.015625,
      "residual_multiplier": 0.22, "logits_scaling": 6.0})");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->architecture, Architecture::kGraniteMoe);
  EXPECT_EQ(c->moe_naming, MoeNaming::kGraniteMoe);
  EXPECT_EQ(c->num_experts, 4);
  EXPECT_EQ(c->moe_intermediate_size, 128);
  EXPECT_TRUE(c->norm_topk_prob);
  EXPECT_EQ(c->embedding_multiplier, 12.0);
  EXPECT_EQ(c->logits_scaling, 6.0);
  auto shared = ModelConfigFromHfJson(kBase + R"("model_type": "granitemoeshared",
      "num_local_experts": 4, "num_experts_per_tok": 2, "shared_intermediate_size": 64})");
  ASSERT_FALSE(shared.ok());
  EXPECT_NE(shared.status().message().find("shared_intermediate_size"), std::string::npos);
}

}  // namespace
}  // namespace tessera::model
