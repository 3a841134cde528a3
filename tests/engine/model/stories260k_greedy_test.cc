// The real model in ../shared: greedy continuations equal llama.cpp's token for token for every
// prompt of ../shared/reference/stories260K-greedy.json (BOS prepended, 64 new tokens).
#include <fstream>
#include <sstream>
#include <string>

#include "engine/model/decoder_model.h"
#include "engine/model/model_source.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace tessera::model {
namespace {

const std::string kShared = TESSERA_SHARED_DIR;

nlohmann::json LoadReference() {
  std::ifstream in(kShared + "/reference/stories260K-greedy.json");
  std::stringstream ss;
  ss << in.rdbuf();
  return nlohmann::json::parse(ss.str());
}

int32_t Argmax(const float* v, int64_t n) {
  int32_t best = 0;
  for (int64_t i = 1; i < n; ++i) {
    if (v[i] > v[best]) best = static_cast<int32_t>(i);
  }
  return best;
}

std::vector<int32_t> Greedy(DecoderModel& model, const std::vector<int32_t>& prompt, int n_new,
                            runtime::KvCache& cache) {
  runtime::SequenceKv seq;
  std::vector<float> logits;
  std::vector<int32_t> out;
  SequenceChunk chunk{&seq, prompt, false, true};
  EXPECT_TRUE(model.Forward({&chunk, 1}, cache, &logits).ok());
  for (int i = 0; i < n_new; ++i) {
    const int32_t next = Argmax(logits.data(), model.config().vocab_size);
    out.push_back(next);
    if (i + 1 == n_new) break;
    std::vector<int32_t> one = {next};
    SequenceChunk step{&seq, one, false, true};
    auto s = model.Forward({&step, 1}, cache, &logits);
    EXPECT_TRUE(s.ok()) << s;
  }
  cache.Release(seq);
  return out;
}

class Stories260kGreedyTest : public ::testing::TestWithParam<int> {};

TEST_P(Stories260kGreedyTest, MatchesLlamaCpp) {
  auto src = ModelSource::Open(kShared + "/models/stories260K/stories260K.gguf");
  ASSERT_TRUE(src.ok()) << src.status();
  EXPECT_EQ(src->config.rope_style, RopeStyle::kInterleaved);
  kernels::cpu::ThreadPool pool(GetParam());
  auto factory = MakeDenseLinearFactory(&pool);
  auto model = DecoderModel::Load(src->config, *src->store, src->naming, *factory, &pool);
  ASSERT_TRUE(model.ok()) << model.status();
  const auto& c = src->config;
  runtime::KvCache cache(c.num_layers, c.num_kv_heads, c.head_dim, 16, 64);
  const nlohmann::json ref = LoadReference();
  for (const auto& r : ref["results"]) {
    SCOPED_TRACE(r["prompt"].get<std::string>());
    const auto prompt = r["prompt_ids_with_bos"].get<std::vector<int32_t>>();
    const auto expected = r["generated_ids"].get<std::vector<int32_t>>();
    EXPECT_EQ(Greedy(**model, prompt, static_cast<int>(expected.size()), cache), expected);
    EXPECT_EQ(cache.used_blocks(), 0);
  }
}

INSTANTIATE_TEST_SUITE_P(Threads, Stories260kGreedyTest, ::testing::Values(1, 2));

}  // namespace
}  // namespace tessera::model
