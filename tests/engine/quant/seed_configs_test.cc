// The two seed-API types: Float8Config (per-layer float8 sets derived from the tensors present,
// scale specs) and GptqConfig (bits, group size, desc_act, sym, GPTQModel dynamic overrides).
#include <fstream>
#include <sstream>
#include <string>

#include "engine/io/hf_checkpoint.h"
#include "engine/quant/float8_config.h"
#include "engine/quant/gptq_config.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace tessera::quant {
namespace {

const std::string kQuant = std::string(TESSERA_SOURCE_DIR) + "/tests/data/quant/";

std::string QuantizationConfig(const std::string& fixture) {
  std::ifstream in(kQuant + fixture + "/config.json");
  std::stringstream ss;
  ss << in.rdbuf();
  return nlohmann::json::parse(ss.str())["quantization_config"].dump();
}

TEST(Float8ConfigTest, DynamicCheckpointHasEveryLayerInFloat8) {
  auto store = io::HfCheckpoint::Open(kQuant + "ct_fp8_dynamic");
  ASSERT_TRUE(store.ok());
  auto c = ParseFloat8Config(QuantizationConfig("ct_fp8_dynamic"), **store);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->quant_method, "compressed-tensors");
  EXPECT_EQ(c->mlp_in_float8, (std::set<int>{0, 1}));
  EXPECT_EQ(c->attn_qkv_in_float8, (std::set<int>{0, 1}));
  EXPECT_EQ(c->weight_scale.granularity, ScaleGranularity::kRowwise);
  ASSERT_TRUE(c->input_scale.has_value());
  EXPECT_EQ(c->input_scale->granularity, ScaleGranularity::kColwise);
  EXPECT_EQ(c->input_scale->origin, ScaleOrigin::kDynamic);
  EXPECT_EQ(c->embedding_output_dtype, "BF16");
}

TEST(Float8ConfigTest, MixedCheckpointHasOnlyAttentionInFloat8) {
  auto store = io::HfCheckpoint::Open(kQuant + "ct_mixed");
  ASSERT_TRUE(store.ok());
  auto c = ParseFloat8Config(QuantizationConfig("ct_mixed"), **store);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_TRUE(c->mlp_in_float8.empty());
  EXPECT_EQ(c->attn_qkv_in_float8, (std::set<int>{0, 1}));
}

TEST(Float8ConfigTest, BlockAndStaticSpecs) {
  auto store = io::HfCheckpoint::Open(kQuant + "hf_fp8_block");
  ASSERT_TRUE(store.ok());
  auto c = ParseFloat8Config(QuantizationConfig("hf_fp8_block"), **store);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->quant_method, "fp8");
  EXPECT_EQ(c->weight_scale.granularity, ScaleGranularity::kBlock);
  EXPECT_EQ(c->weight_scale.block_n, 16);
  EXPECT_EQ(c->weight_scale.block_k, 32);
  EXPECT_EQ(c->input_scale->granularity, ScaleGranularity::kGroup);
  auto st = io::HfCheckpoint::Open(kQuant + "ct_fp8");
  auto s = ParseFloat8Config(QuantizationConfig("ct_fp8"), **st);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->input_scale->origin, ScaleOrigin::kStatic);
  EXPECT_EQ(s->weight_scale.granularity, ScaleGranularity::kTensor);
}

TEST(GptqConfigTest, ParsesFieldsAndDynamicOverrides) {
  auto c = ParseGptqConfig(R"({"quant_method": "gptq", "bits": 4, "group_size": 128, "desc_act": true,
      "sym": false, "checkpoint_format": "gptq_v2",
      "dynamic": {"-:.*lm_head": {}, ".*\\.mlp\\.down_proj": {"bits": 8, "group_size": -1},
                  "+:.*layers\\.0\\..*": {"desc_act": false}}})");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->bits, 4);
  EXPECT_EQ(c->group_size, 128);
  EXPECT_TRUE(c->desc_act);
  EXPECT_FALSE(c->sym);
  EXPECT_EQ(c->checkpoint_format, "gptq_v2");
  EXPECT_FALSE(c->For("lm_head").quantized);
  const auto down = c->For("model.layers.3.mlp.down_proj");
  EXPECT_EQ(down.bits, 8);
  EXPECT_EQ(down.group_size, -1);
  // First match wins in file order: layer 0's down_proj takes the down_proj rule.
  EXPECT_EQ(c->For("model.layers.0.mlp.down_proj").bits, 8);
  EXPECT_FALSE(c->For("model.layers.0.self_attn.q_proj").desc_act);
  EXPECT_TRUE(c->For("model.layers.1.self_attn.q_proj").desc_act);
  EXPECT_THAT(std::string(ParseGptqConfig(R"({"bits": 5})").status().message()),
              ::testing::HasSubstr("bits 5"));
  EXPECT_THAT(std::string(ParseGptqConfig(R"({"bits": 4, "checkpoint_format": "marlin"})").status().message()),
              ::testing::HasSubstr("marlin"));
}

}  // namespace
}  // namespace tessera::quant
