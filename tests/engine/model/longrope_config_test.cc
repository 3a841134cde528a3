// LongRoPE configs (Phi-3-mini-128k, Phi-3.5-mini, Phi-4-mini) read as transformers'
// _compute_longrope_parameters does, the per-sequence choice of factors, and errors that name
// the field. Logits against transformers and llama.cpp: hf_golden_test.cc (phi3_longrope,
// phi3_longrope_short) and tests/engine/runtime/moe_engine_test.cc (its GGUF twin).
#include <cmath>
#include <string>
#include <vector>

#include "engine/model/model_config.h"
#include "gtest/gtest.h"

namespace tessera::model {
namespace {

// Phi-3.5-mini-instruct's shape and rope fields (48 factors: head_dim 96); `type` and the factor
// lists substituted per case.
std::string Phi35(const std::string& type, int short_count = 48, int long_count = 48,
                  const std::string& extra = "") {
  auto list = [](int n, double base, double step) {
    std::string s = "[";
    for (int i = 0; i < n; ++i) s += (i ? ", " : "") + std::to_string(base + step * i);
    return s + "]";
  };
  return R"({"model_type": "phi3", "hidden_size": 3072, "num_hidden_layers": 32,
      "num_attention_heads": 32, "num_key_value_heads": 32, "intermediate_size": 8192,
      "vocab_size": 32064, "max_position_embeddings": 131072,
      "original_max_position_embeddings": 4096, "rope_theta": 10000.0, "sliding_window": 262144,
      )" +
         extra + R"("rope_scaling": {"type": ")" + type + R"(", "short_factor": )" +
         list(short_count, 1.0, 0.002) + R"(, "long_factor": )" + list(long_count, 1.0, 1.3) + "}}";
}

TEST(LongRopeConfigTest, Phi35ReadsAsTransformersDoes) {
  auto c = ModelConfigFromHfJson(Phi35("longrope"));
  ASSERT_TRUE(c.ok()) << c.status();
  const RopeScaling& r = c->rope_scaling;
  EXPECT_EQ(r.type, RopeScaling::Type::kLongRope);
  EXPECT_EQ(r.original_max_position, 4096);
  EXPECT_DOUBLE_EQ(r.factor, 32.0);  // max_position_embeddings / original
  EXPECT_NEAR(r.attention_factor, std::sqrt(1 + std::log(32.0) / std::log(4096.0)), 1e-15);
  ASSERT_EQ(r.short_factor.size(), 48u);
  EXPECT_FLOAT_EQ(r.long_factor[47], static_cast<float>(1.0 + 1.3 * 47));
  EXPECT_NE(c->ExtendedFeatures().find("LongRoPE"), std::string::npos);
  // One choice per sequence, from its budget (0: the model's context).
  EXPECT_FALSE(c->UsesLongRopeFactors(4096));
  EXPECT_TRUE(c->UsesLongRopeFactors(4097));
  EXPECT_TRUE(c->UsesLongRopeFactors(0));
  // Frequencies: 1 / (factor * base^(2i/d)).
  const auto short_inv = RopeInverseFrequencies(*c, false, false);
  const auto long_inv = RopeInverseFrequencies(*c, false, true);
  ASSERT_EQ(short_inv.size(), 48u);
  EXPECT_FLOAT_EQ(long_inv[1], 1.0f / (2.3f * std::pow(10000.0f, 2.0f / 96.0f)));
  EXPECT_FLOAT_EQ(short_inv[0], 1.0f);
}

TEST(LongRopeConfigTest, Phi3SuAndYarnTypesAreLongRope) {
  // Phi3Config's _rope_scaling_adjustment: early Phi-3-mini-128k configs said "su" (and "yarn").
  for (const char* type : {"su", "yarn"}) {
    auto c = ModelConfigFromHfJson(Phi35(type));
    ASSERT_TRUE(c.ok()) << type << " " << c.status();
    EXPECT_EQ(c->rope_scaling.type, RopeScaling::Type::kLongRope) << type;
  }
  // An explicit attention_factor wins over the formula; no top-level original in a phi3 config
  // means Phi3Config's 4096.
  std::string explicit_factor = Phi35("longrope");
  explicit_factor.insert(explicit_factor.find("\"short_factor\""), "\"attention_factor\": 1.5, ");
  auto c = ModelConfigFromHfJson(explicit_factor);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->rope_scaling.attention_factor, 1.5);
}

TEST(LongRopeConfigTest, ErrorsNameTheField) {
  auto short_list = ModelConfigFromHfJson(Phi35("longrope", 47));
  ASSERT_FALSE(short_list.ok());
  EXPECT_NE(short_list.status().message().find("rope_scaling.short_factor"), std::string::npos)
      << short_list.status();
  std::string bad = Phi35("longrope");
  bad.replace(bad.find("\"long_factor\": [") + 16, 8, "\"x\"");
  auto not_number = ModelConfigFromHfJson(bad);
  ASSERT_FALSE(not_number.ok());
  EXPECT_NE(not_number.status().message().find("rope_scaling.long_factor"), std::string::npos)
      << not_number.status();
  std::string negative = Phi35("longrope");
  negative.replace(negative.find("\"short_factor\": [") + 17, 8, "-1.0");
  auto neg = ModelConfigFromHfJson(negative);
  ASSERT_FALSE(neg.ok());
  EXPECT_NE(neg.status().message().find("short_factor"), std::string::npos) << neg.status();
}

}  // namespace
}  // namespace tessera::model
