// Perplexity on the real stories260K F32 model equals the exp of the mean negative log-likelihood
// that transformers computes for the same llama.cpp-style windows (ctx 128), within 1e-4 relative
// (tools/reference/make_hf_goldens.py; the token ids are the file's, BOS first).
#include <cmath>
#include <fstream>
#include <sstream>
#include <string>

#include "engine/model/model_source.h"
#include "engine/model/decoder_model.h"
#include "engine/model/perplexity.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace tessera::model {
namespace {

TEST(PerplexityTest, Stories260kMatchesTransformers) {
  std::ifstream in(std::string(TESSERA_SOURCE_DIR) + "/tests/data/perplexity/stories260K_ctx128.json");
  std::stringstream ss;
  ss << in.rdbuf();
  const auto golden = nlohmann::json::parse(ss.str());
  auto src = ModelSource::Open(std::string(TESSERA_SHARED_DIR) + "/models/stories260K/stories260K.gguf");
  ASSERT_TRUE(src.ok()) << src.status();
  kernels::cpu::ThreadPool pool(2);
  auto factory = MakeDenseLinearFactory(&pool);
  auto model = DecoderModel::Load(src->config, *src->store, src->naming, *factory, &pool);
  ASSERT_TRUE(model.ok()) << model.status();
  const auto tokens = golden["tokens"].get<std::vector<int32_t>>();
  auto result = ComputePerplexity(**model, tokens, golden["n_ctx"].get<int64_t>(),
                                  golden["bos_token_id"].get<int32_t>());
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->scored_tokens, golden["n_scored"].get<int64_t>());
  const double want = golden["ppl"].get<double>();
  EXPECT_NEAR(result->perplexity, want, 1e-4 * want);
  EXPECT_NEAR(result->perplexity_stderr, golden["ppl_stderr"].get<double>(),
              1e-3 * golden["ppl_stderr"].get<double>());
  const auto windows = golden["per_window_ppl"].get<std::vector<double>>();
  ASSERT_EQ(result->window_perplexity.size(), windows.size());
  for (size_t i = 0; i < windows.size(); ++i) {
    EXPECT_NEAR(result->window_perplexity[i], windows[i], 1e-4 * windows[i]) << i;
  }
}

TEST(PerplexityTest, RejectsTooFewTokensAndBadContext) {
  auto src = ModelSource::Open(std::string(TESSERA_SHARED_DIR) + "/models/stories260K/stories260K.gguf");
  ASSERT_TRUE(src.ok());
  auto factory = MakeDenseLinearFactory(nullptr);
  auto model = DecoderModel::Load(src->config, *src->store, src->naming, *factory, nullptr);
  ASSERT_TRUE(model.ok());
  std::vector<int32_t> few(10, 5);
  EXPECT_EQ(ComputePerplexity(**model, few, 128, 1).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ComputePerplexity(**model, few, 1 << 20, 1).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace tessera::model
