// Mixture-of-experts models through the engine loader: llama.cpp's own llama-perplexity on the
// GGUF twins of the qwen3_moe and mixtral fixtures (tools/reference/llama_cpp_moe_perplexity.py)
// is matched window by window, with this engine's tokenizer and default f16 KV cache, as llama.cpp
// runs them; the precision plan lists every expert under its HF module name (the same for both
// containers) and a plan rule re-quantizes experts alone; and sequences stay bit-identical
// alone and batched with another (tokens of both rows go to different expert groups).
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "engine/model/perplexity.h"
#include "engine/runtime/engine_loader.h"
#include "nlohmann/json.hpp"
#include "tests/engine/runtime/small_model_test_util.h"

namespace tessera::runtime {
namespace {

const std::string kData = std::string(TESSERA_SOURCE_DIR) + "/tests/data/";

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::unique_ptr<LoadedEngine> Load(const std::string& path, const std::string& plan = "") {
  EngineOptions options;
  options.threads = 2;
  options.precision_plan_path = plan;
  auto e = LoadEngine(path, options);
  EXPECT_TRUE(e.ok()) << e.status();
  return e.ok() ? std::move(*e) : nullptr;
}

class MoeGgufTwinTest : public ::testing::TestWithParam<std::string> {};

TEST_P(MoeGgufTwinTest, PerplexityMatchesLlamaCpp) {
  const auto golden = nlohmann::json::parse(ReadFile(kData + "perplexity/moe_twins_llama_cpp.json"));
  const auto& want = golden["models"][GetParam()];
  auto e = Load(kData + "models/" + GetParam() + "/model.gguf");
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->model->kv_cache_format(), KvCacheFormat::kF16);
  auto tokens = e->tokenizer->Encode(ReadFile(kData + "perplexity/story.txt"), true);
  ASSERT_TRUE(tokens.ok()) << tokens.status();
  const int64_t n_ctx = golden["n_ctx"].get<int64_t>();
  auto result = model::ComputePerplexity(*e->model, *tokens, n_ctx, *e->tokenizer->bos_id());
  ASSERT_TRUE(result.ok()) << result.status();
  // llama.cpp prints the running perplexity after each window (4 decimals); every window scores
  // the same number of tokens, so the running value is the geometric mean of the windows'.
  const auto running = want["running_ppl"].get<std::vector<double>>();
  ASSERT_EQ(result->window_perplexity.size(), running.size());
  double log_sum = 0;
  for (size_t w = 0; w < running.size(); ++w) {
    log_sum += std::log(result->window_perplexity[w]);
    EXPECT_NEAR(std::exp(log_sum / (w + 1)), running[w], 1e-4 * running[w]) << "window " << w;
  }
  EXPECT_NEAR(result->perplexity, want["ppl"].get<double>(), 1e-4 * want["ppl"].get<double>());
}

INSTANTIATE_TEST_SUITE_P(Twins, MoeGgufTwinTest, ::testing::Values("qwen3_moe", "mixtral"));

TEST(MoeEngineTest, PlanNamesEveryExpertAndRequantizesThemAlone) {
  ProcessTempDir dir("moe-plan");
  std::filesystem::create_directories(dir.path());
  const std::string plan = dir.path() + "/plan.json";
  std::ofstream(plan) << R"({"rules": [{"match": "*.experts.*", "scheme": "int8"}]})";
  auto exact = Load(kData + "models/qwen3_moe");
  auto hf = Load(kData + "models/qwen3_moe", plan);
  auto gguf = Load(kData + "models/qwen3_moe/model.gguf", plan);
  ASSERT_TRUE(exact && hf && gguf);
  // 2 layers x (4 attention + 8 experts x 3) + lm_head, in the same order for both containers.
  ASSERT_EQ(hf->plan->layers().size(), 2u * (4 + 24) + 1);
  ASSERT_EQ(gguf->plan->layers().size(), hf->plan->layers().size());
  int experts = 0;
  for (size_t i = 0; i < hf->plan->layers().size(); ++i) {
    const quant::LinearSpec& s = hf->plan->layers()[i];
    EXPECT_EQ(s.module, gguf->plan->layers()[i].module);
    const bool expert = absl::StrContains(s.module, ".mlp.experts.");
    experts += expert;
    EXPECT_EQ(s.SchemeName() == "int8", expert) << s.module << " " << s.SchemeName();
  }
  EXPECT_EQ(experts, 48);
  EXPECT_EQ(hf->plan->layers()[4].module, "model.layers.0.mlp.experts.0.gate_proj");
  // INT8 W8A8 experts move the logits by their rounding, not more.
  const auto tokens = SmallTokens(24, 7);
  const auto want = PrefillLogits(*exact, tokens), got = PrefillLogits(*hf, tokens);
  const double diff = MaxRelativeDiff(want, got);
  EXPECT_GT(diff, 0.0);
  EXPECT_LT(diff, 0.05) << diff;  // 0.015 measured
  ExpectAloneEqualsBatched(*hf);
}

TEST(MoeEngineTest, AloneEqualsBatched) {
  for (const char* name : {"qwen3_moe", "qwen3_moe_mixed", "mixtral"}) {
    SCOPED_TRACE(name);
    auto e = Load(kData + "models/" + name);
    ASSERT_NE(e, nullptr);
    ExpectAloneEqualsBatched(*e);
  }
}

}  // namespace
}  // namespace tessera::runtime
