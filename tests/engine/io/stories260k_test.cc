// The real model from ../shared opens, and every tensor's name, type and shape is what the
// model's README lists (GGUF dims fastest-first), for the F32, Q8_0 and Q4_0 files.
#include <string>

#include "engine/io/gguf_file.h"
#include "gtest/gtest.h"

namespace tessera::io {
namespace {

const std::string kDir = std::string(TESSERA_SHARED_DIR) + "/models/stories260K/";

struct Expected {
  std::string name;
  std::vector<int64_t> gguf_dims;
};

std::vector<Expected> ExpectedTensors() {
  std::vector<Expected> out = {
      {"token_embd.weight", {64, 512}}, {"output_norm.weight", {64}}, {"output.weight", {64, 512}}};
  for (int i = 0; i < 5; ++i) {
    const std::string p = "blk." + std::to_string(i) + ".";
    out.push_back({p + "attn_q.weight", {64, 64}});
    out.push_back({p + "attn_k.weight", {64, 32}});
    out.push_back({p + "attn_v.weight", {64, 32}});
    out.push_back({p + "attn_output.weight", {64, 64}});
    out.push_back({p + "attn_norm.weight", {64}});
    out.push_back({p + "ffn_gate.weight", {64, 172}});
    out.push_back({p + "ffn_up.weight", {64, 172}});
    out.push_back({p + "ffn_down.weight", {172, 64}});
    out.push_back({p + "ffn_norm.weight", {64}});
  }
  return out;
}

// The README's per-file type rules.
DType ExpectedType(const std::string& file, const std::string& name) {
  const bool norm = name.find("norm") != std::string::npos;
  if (file == "stories260K.gguf" || norm) return DType::kF32;
  if (name.find("ffn_down") != std::string::npos) return DType::kF16;
  if (file == "stories260K-Q8_0.gguf") return DType::kQ8_0;
  return name == "output.weight" ? DType::kQ8_0 : DType::kQ4_0;
}

class Stories260kTest : public ::testing::TestWithParam<std::string> {};

TEST_P(Stories260kTest, TensorsMatchReadme) {
  auto g = GgufFile::Open(kDir + GetParam());
  ASSERT_TRUE(g.ok()) << g.status();
  const auto expected = ExpectedTensors();
  EXPECT_EQ((*g)->tensor_infos().size(), expected.size());
  for (const Expected& e : expected) {
    const GgufTensorInfo* info = (*g)->FindInfo(e.name);
    ASSERT_NE(info, nullptr) << e.name;
    EXPECT_EQ(info->dims, e.gguf_dims) << e.name;
    EXPECT_EQ(info->dtype, ExpectedType(GetParam(), e.name)) << e.name;
    auto view = (*g)->Get(e.name);
    ASSERT_TRUE(view.ok());
    auto values = ToFloat32(*view);
    ASSERT_TRUE(values.ok()) << values.status();
    EXPECT_EQ(static_cast<int64_t>(values->size()), view->numel());
  }
}

TEST_P(Stories260kTest, HyperparametersMatchReadme) {
  auto g = GgufFile::Open(kDir + GetParam());
  ASSERT_TRUE(g.ok()) << g.status();
  const GgufMetadata& m = (*g)->metadata();
  EXPECT_EQ(*m.GetString("general.architecture"), "llama");
  EXPECT_EQ(*m.GetUint("llama.embedding_length"), 64u);
  EXPECT_EQ(*m.GetUint("llama.block_count"), 5u);
  EXPECT_EQ(*m.GetUint("llama.attention.head_count"), 8u);
  EXPECT_EQ(*m.GetUint("llama.attention.head_count_kv"), 4u);
  EXPECT_EQ(*m.GetUint("llama.feed_forward_length"), 172u);
  EXPECT_EQ(*m.GetUint("llama.context_length"), 2048u);
  EXPECT_EQ(*m.GetUint("llama.rope.dimension_count"), 8u);
  EXPECT_FLOAT_EQ(static_cast<float>(*m.GetFloat("llama.attention.layer_norm_rms_epsilon")), 1e-5f);
  EXPECT_FALSE(m.Contains("llama.rope.freq_base"));
  EXPECT_EQ(*m.GetString("tokenizer.ggml.model"), "llama");
  EXPECT_EQ((*m.GetStringArray("tokenizer.ggml.tokens")).size(), 512u);
  EXPECT_EQ(*m.GetUint("tokenizer.ggml.bos_token_id"), 1u);
  EXPECT_EQ(*m.GetUint("tokenizer.ggml.eos_token_id"), 2u);
  EXPECT_EQ(*m.GetUint("tokenizer.ggml.unknown_token_id"), 0u);
}

INSTANTIATE_TEST_SUITE_P(AllFiles, Stories260kTest,
                         ::testing::Values("stories260K.gguf", "stories260K-Q8_0.gguf",
                                           "stories260K-Q4_0.gguf"));

}  // namespace
}  // namespace tessera::io
