// gpt-oss's config readers (config.json as transformers' GptOssConfig reads it, GGUF as llama.cpp's
// openai-moe loader does) and ExpertStackStore, which shows a checkpoint's stacked experts one
// at a time: slabs read in place, input-major weights transposed, stacks hidden, bad stacks
// refused by name. The forward pass is checked against transformers and llama.cpp in
// hf_golden_test.cc and tests/engine/runtime/moe_engine_test.cc.
#include <cmath>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "engine/io/safetensors_writer.h"
#include "engine/model/expert_stack_store.h"
#include "engine/model/model_config.h"
#include "gtest/gtest.h"

namespace tessera::model {
namespace {

std::vector<bool> Sliding(const ModelConfig& c) {
  std::vector<bool> out;
  for (int64_t i = 0; i < c.num_layers; ++i) out.push_back(c.IsSlidingLayer(i));
  return out;
}

// A Hub-style config: what gpt-oss-20b's config.json spells out, minus the quantization.
const std::string kGptOss20b = R"({"architectures": ["GptOssForCausalLM"], "model_type": "gpt_oss",
    "hidden_size": 2880, "intermediate_size": 2880, "num_hidden_layers": 4,
    "num_attention_heads": 64, "num_key_value_heads": 8, "head_dim": 64, "num_local_experts": 32,
    "num_experts_per_tok": 4, "experts_per_token": 4, "vocab_size": 201088, "sliding_window": 128,
    "rope_theta": 150000, "rms_norm_eps": 1e-05, "swiglu_limit": 7.0, "attention_bias": true,
    "max_position_embeddings": 131072, "tie_word_embeddings": false,
    "layer_types": ["sliding_attention", "full_attention", "sliding_attention", "full_attention"],
    "rope_scaling": {"beta_fast": 32.0, "beta_slow": 1.0, "factor": 32.0,
                     "original_max_position_embeddings": 4096, "rope_type": "yarn",
                     "truncate": false}})";

TEST(GptOssConfigTest, HubConfigReadsAsTransformersDoes) {
  auto c = ModelConfigFromHfJson(kGptOss20b);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->architecture, Architecture::kGptOss);
  EXPECT_EQ(c->num_experts, 32);
  EXPECT_EQ(c->num_experts_per_tok, 4);
  EXPECT_EQ(c->moe_intermediate_size, 2880);
  EXPECT_TRUE(c->norm_topk_prob);
  EXPECT_EQ(c->moe_naming, MoeNaming::kGptOss);
  EXPECT_TRUE(c->attention_bias && c->o_proj_bias && c->attention_sinks && c->moe_biases);
  EXPECT_EQ(c->mlp_activation, MlpActivation::kSwiGluClamped);
  EXPECT_EQ(c->sliding_window, 128);
  EXPECT_EQ(Sliding(*c), (std::vector<bool>{true, false, true, false}));
  EXPECT_EQ(c->rope_scaling.type, RopeScaling::Type::kYarn);
  EXPECT_FALSE(c->rope_scaling.truncate);
  EXPECT_EQ(c->rope_scaling.original_max_position, 4096);
  EXPECT_NEAR(c->rope_scaling.attention_factor, 0.1 * std::log(32.0) + 1.0, 1e-12);
  EXPECT_EQ(c->rope_style, RopeStyle::kRotateHalf);
  EXPECT_NE(c->ExtendedFeatures().find("attention sinks"), std::string::npos);
  EXPECT_NE(c->ExtendedFeatures().find("clamped SwiGLU"), std::string::npos);
}

TEST(GptOssConfigTest, ClassDefaultsWhereKeysAreAbsent) {
  // GptOssConfig(): gpt-oss-120b's shape, windows on the even layers, YaRN x32 untruncated.
  auto c = ModelConfigFromHfJson(R"({"model_type": "gpt_oss"})");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->num_layers, 36);
  EXPECT_EQ(c->num_experts, 128);
  EXPECT_EQ(c->head_dim, 64);
  EXPECT_EQ(c->rope_theta, 150000.0);
  EXPECT_EQ(c->sliding_window, 128);
  EXPECT_TRUE(c->IsSlidingLayer(0));
  EXPECT_FALSE(c->IsSlidingLayer(35));
  EXPECT_EQ(c->rope_scaling.type, RopeScaling::Type::kYarn);
  EXPECT_EQ(c->rope_scaling.factor, 32.0);
  EXPECT_FALSE(c->rope_scaling.truncate);
  // An explicit null rope_scaling is none, a null window no window.
  auto plain = ModelConfigFromHfJson(
      R"({"model_type": "gpt_oss", "rope_scaling": null, "sliding_window": null})");
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_EQ(plain->rope_scaling.type, RopeScaling::Type::kNone);
  EXPECT_FALSE(plain->HasSlidingLayers());
}

TEST(GptOssConfigTest, ErrorsNameTheField) {
  std::string limit = kGptOss20b;
  limit.replace(limit.find("\"swiglu_limit\": 7.0"), 19, "\"swiglu_limit\": 9.0");
  auto c = ModelConfigFromHfJson(limit);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("swiglu_limit"), std::string::npos);
  std::string types = kGptOss20b;
  types.replace(types.find("\"full_attention\", \"sliding_attention\", \"full_attention\""), 55,
                "\"full_attention\", \"local\", \"full_attention\"");
  c = ModelConfigFromHfJson(types);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("layer_types[2]"), std::string::npos) << c.status();
}

io::GgufMetadata GptOssGguf() {
  io::GgufMetadata m;
  auto u = [](uint64_t v) { return io::GgufValue{io::GgufValueType::kU32, {}, v}; };
  const std::string a = "gpt-oss";
  m.Add("general.architecture", io::GgufValue{io::GgufValueType::kString, {}, a});
  m.Add(a + ".embedding_length", u(2880));
  m.Add(a + ".block_count", u(4));
  m.Add(a + ".attention.head_count", u(64));
  m.Add(a + ".attention.head_count_kv", u(8));
  m.Add(a + ".attention.key_length", u(64));
  m.Add(a + ".feed_forward_length", u(2880));
  m.Add(a + ".expert_feed_forward_length", u(2880));
  m.Add(a + ".expert_count", u(32));
  m.Add(a + ".expert_used_count", u(4));
  m.Add(a + ".vocab_size", u(201088));
  m.Add(a + ".rope.freq_base", io::GgufValue{io::GgufValueType::kF32, {}, 150000.0});
  m.Add(a + ".rope.scaling.type",
        io::GgufValue{io::GgufValueType::kString, {}, std::string("yarn")});
  m.Add(a + ".rope.scaling.factor", io::GgufValue{io::GgufValueType::kF32, {}, 32.0});
  m.Add(a + ".rope.scaling.original_context_length", u(4096));
  return m;
}

TEST(GptOssConfigTest, GgufAsLlamaCppReadsIt) {
  io::GgufMetadata m = GptOssGguf();
  // llama.cpp requires the window (get_key without a default).
  auto missing = ModelConfigFromGguf(m);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("gpt-oss.attention.sliding_window"), std::string::npos);
  m.Add("gpt-oss.attention.sliding_window",
        io::GgufValue{io::GgufValueType::kU32, {}, uint64_t{128}});
  auto c = ModelConfigFromGguf(m);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->architecture, Architecture::kGptOss);
  EXPECT_EQ(c->moe_intermediate_size, 2880);
  EXPECT_EQ(c->moe_naming, MoeNaming::kQwen);  // gate and up are separate stacks in GGUF
  EXPECT_TRUE(c->attention_sinks && c->o_proj_bias && c->moe_biases && c->norm_topk_prob);
  EXPECT_EQ(Sliding(*c), (std::vector<bool>{true, false, true, false}));  // period 2
  EXPECT_TRUE(c->rope_scaling.truncate);  // ggml's rope_yarn_corr_dims always floors / ceils
  EXPECT_EQ(c->rope_style, RopeStyle::kRotateHalf);
  // A windowed base of its own (llama.cpp keeps YaRN on it) is refused by name, not ignored.
  m.Add("gpt-oss.rope.freq_base_swa", io::GgufValue{io::GgufValueType::kF32, {}, 10000.0});
  auto swa = ModelConfigFromGguf(m);
  ASSERT_FALSE(swa.ok());
  EXPECT_NE(swa.status().message().find("gpt-oss.rope.freq_base_swa"), std::string::npos);
}

std::string WriteStacked(const std::string& file) {
  io::SafetensorsWriter w;
  auto add = [&](const std::string& name, const char* dtype, std::vector<int64_t> shape,
                 std::vector<uint8_t> bytes) {
    const int64_t size = static_cast<int64_t>(bytes.size());
    w.AddTensor(name, dtype, std::move(shape), size, [bytes](std::vector<uint8_t>* out) {
      *out = bytes;
      return absl::OkStatus();
    });
  };
  auto floats = [](int64_t n, float base) {
    std::vector<uint8_t> b(n * 4);
    for (int64_t i = 0; i < n; ++i) {
      const float v = base + static_cast<float>(i);
      std::memcpy(b.data() + i * 4, &v, 4);
    }
    return b;
  };
  const std::string p = "model.layers.0.mlp.experts.";
  add(p + "gate_up_proj", "F32", {2, 3, 4}, floats(24, 0.0f));  // [E, H, 2F]
  add(p + "gate_up_proj_bias", "F32", {2, 4}, floats(8, 100.0f));
  add(p + "down_proj_blocks", "U8", {2, 3, 1, 16}, std::vector<uint8_t>(96, 7));
  add(p + "down_proj_scales", "U8", {2, 3, 1}, {120, 121, 122, 123, 124, 125});
  add("model.layers.0.mlp.router.weight", "F32", {2, 3}, floats(6, 50.0f));
  const std::string path = (std::filesystem::temp_directory_path() / file).string();
  EXPECT_TRUE(w.Write(path).ok());
  return path;
}

float At(const io::TensorView& v, int64_t i) {
  float x;
  std::memcpy(&x, v.bytes.data() + i * 4, 4);
  return x;
}

TEST(ExpertStackStoreTest, ShowsEachExpertAsALinearLayer) {
  auto inner = io::OpenTensorStore(WriteStacked("gpt_oss_store_test.safetensors"));
  ASSERT_TRUE(inner.ok()) << inner.status();
  auto store = ExpertStackStore::Create(std::move(*inner), ExpertStackLayout::kGptOss, 2);
  ASSERT_TRUE(store.ok()) << store.status();
  const std::string p = "model.layers.0.mlp.experts.";
  // Expert 1's gate_up [H 3, 2F 4] (values 12..23, row-major) shown as [2F, H]: element (c, r)
  // is stacked (1, r, c).
  auto w = (*store)->Get(p + "1.gate_up_proj.weight");
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_EQ(w->shape, (std::vector<int64_t>{4, 3}));
  for (int64_t c = 0; c < 4; ++c) {
    for (int64_t r = 0; r < 3; ++r) EXPECT_EQ(At(*w, c * 3 + r), 12.0f + r * 4 + c) << c << r;
  }
  // The same bytes on a second Get (the copy is made once); Release frees the copy and a later
  // Get makes it again.
  EXPECT_EQ((*store)->Get(p + "1.gate_up_proj.weight")->bytes.data(), w->bytes.data());
  (*store)->Release(p + "1.gate_up_proj.weight");
  auto again = (*store)->Get(p + "1.gate_up_proj.weight");
  ASSERT_TRUE(again.ok());
  for (int64_t i = 0; i < 12; ++i) EXPECT_EQ(At(*again, i), 12.0f + (i % 3) * 4 + i / 3) << i;
  auto bias = (*store)->Get(p + "1.gate_up_proj.bias");
  ASSERT_TRUE(bias.ok());
  EXPECT_EQ(bias->shape, (std::vector<int64_t>{4}));
  EXPECT_EQ(At(*bias, 0), 104.0f);
  auto scales = (*store)->Get(p + "1.down_proj_scales");
  ASSERT_TRUE(scales.ok());
  EXPECT_EQ(scales->shape, (std::vector<int64_t>{3, 1}));
  EXPECT_EQ(scales->bytes[0], 123);
  EXPECT_EQ((*store)->Get(p + "0.down_proj_blocks")->shape, (std::vector<int64_t>{3, 1, 16}));
  // Stacks are hidden, everything else passes through.
  EXPECT_FALSE((*store)->Contains(p + "gate_up_proj"));
  EXPECT_FALSE((*store)->Get(p + "gate_up_proj").ok());
  EXPECT_TRUE((*store)->Contains("model.layers.0.mlp.router.weight"));
  EXPECT_FALSE((*store)->Contains(p + "2.gate_up_proj.weight"));
  EXPECT_EQ((*store)->names().size(), 1u + 2 * 4);
}

// Each malformed stack is refused naming it: the wrong rank, another expert count than the
// config's, an empty dimension (no slab to divide), a dtype the transposition does not handle.
TEST(ExpertStackStoreTest, RefusesBadStacksByName) {
  struct Bad {
    const char* dtype;
    std::vector<int64_t> shape;
    int64_t experts;
  };
  const Bad cases[] = {{"F32", {4, 4}, 4},      // rank 2 for a [E, F, H] weight
                       {"F32", {3, 2, 2}, 4},   // 3 experts, the config says 4
                       {"F32", {4, 0, 2}, 4},   // an empty dimension
                       {"F64", {4, 2, 2}, 4}};  // f64: not f32 / f16 / bf16
  int i = 0;
  for (const Bad& bad : cases) {
    SCOPED_TRACE(i);
    io::SafetensorsWriter w;
    int64_t bytes = std::string(bad.dtype) == "F64" ? 8 : 4;
    for (int64_t d : bad.shape) bytes *= d;
    w.AddTensor("model.layers.3.mlp.experts.down_proj", bad.dtype, bad.shape, bytes,
                [bytes](std::vector<uint8_t>* out) {
                  out->assign(bytes, 0);
                  return absl::OkStatus();
                });
    const std::string path = (std::filesystem::temp_directory_path() /
                              ("gpt_oss_store_bad" + std::to_string(i++) + ".safetensors"))
                                 .string();
    ASSERT_TRUE(w.Write(path).ok());
    auto inner = io::OpenTensorStore(path);
    ASSERT_TRUE(inner.ok()) << inner.status();
    auto store =
        ExpertStackStore::Create(std::move(*inner), ExpertStackLayout::kGptOss, bad.experts);
    ASSERT_FALSE(store.ok());
    EXPECT_NE(store.status().message().find("model.layers.3.mlp.experts.down_proj"),
              std::string::npos);
  }
}

}  // namespace
}  // namespace tessera::model
