// The real model in ../shared: greedy continuations equal llama.cpp's token for token for every
// prompt of ../shared/reference/stories260K-greedy.json (BOS prepended, 64 new tokens).
#include <fstream>
#include <sstream>
#include <string>

#include "engine/model/decoder_model.h"
#include "engine/model/model_source.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/engine/model/int8_activation_factory.h"

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

using testing::Int8ActivationFactory;  // Q4_0 / Q8_0 layers with int8 activations

// Int8 activations change the logits by the activation rounding (≤ 1/254 of each block's amax),
// so exact agreement with llama.cpp's f32 run is not expected; the text must stay sensible: on
// the Q4_0 file the continuation of every prompt agrees with the f32-activation run of the same
// file for its first 16 tokens (measured: all 64 agree on "Once upon a time") and the run is the
// same with 1 and 2 threads (the column split does not change results).
TEST(Stories260kInt8ActivationsTest, Q4_0GreedyStaysOnTrack) {
  auto src = ModelSource::Open(kShared + "/models/stories260K/stories260K-Q4_0.gguf");
  ASSERT_TRUE(src.ok()) << src.status();
  const auto& c = src->config;
  runtime::KvCache cache(c.num_layers, c.num_kv_heads, c.head_dim, 16, 64);
  kernels::cpu::ThreadPool pool1(1), pool2(2);
  auto f32_factory = MakeDenseLinearFactory(&pool2);
  Int8ActivationFactory int8_factory1(&pool1), int8_factory2(&pool2);
  auto f32 = DecoderModel::Load(c, *src->store, src->naming, *f32_factory, &pool2);
  auto int8_1 = DecoderModel::Load(c, *src->store, src->naming, int8_factory1, &pool1);
  auto int8_2 = DecoderModel::Load(c, *src->store, src->naming, int8_factory2, &pool2);
  ASSERT_TRUE(f32.ok() && int8_1.ok() && int8_2.ok());
  const nlohmann::json ref = LoadReference();
  for (const auto& r : ref["results"]) {
    SCOPED_TRACE(r["prompt"].get<std::string>());
    const auto prompt = r["prompt_ids_with_bos"].get<std::vector<int32_t>>();
    const auto a = Greedy(**f32, prompt, 64, cache);
    const auto b = Greedy(**int8_1, prompt, 64, cache);
    EXPECT_EQ(Greedy(**int8_2, prompt, 64, cache), b);
    EXPECT_EQ(std::vector<int32_t>(a.begin(), a.begin() + 16),
              std::vector<int32_t>(b.begin(), b.begin() + 16));
    int same = 0;
    while (same < 64 && a[same] == b[same]) ++same;
    std::printf("prompt '%s': int8 activations agree with f32 for %d of 64 tokens\n",
                r["prompt"].get<std::string>().c_str(), same);
  }
}

}  // namespace
}  // namespace tessera::model
