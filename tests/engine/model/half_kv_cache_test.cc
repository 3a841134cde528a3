// f16 and bf16 KV caches (runtime::KvCacheFormat::kF16 / kBf16): every K and V element is rounded
// once to 11 (f16) or 8 (bf16) significant bits when stored, attention is the f32 arithmetic on
// the rounded values. Checked against the f32 cache on the same models:
//  * tests/data/models/llama (random weights, all logits of golden.json's input_ids): the logits
//    move by at most 4 · 2^-11 (f16) or 4 · 2^-8 (bf16) times max|logit|, the bound
//    fp8_kv_cache_test.cc uses for E4M3's 2^-4 (this model amplifies relative errors about 1.6x
//    per layer); the measured differences are test properties;
//  * stories260K: llama.cpp's reference greedy continuations (../shared/reference, produced with
//    llama.cpp's default f16 KV cache) come out token for token with the f16 cache, as they do
//    with f32; with bf16 the agreeing prefix is reported, not asserted (one flipped argmax
//    changes everything after it).
#include <cmath>
#include <iostream>
#include <string>

#include "gtest/gtest.h"
#include "tests/engine/model/kv_cache_format_test_util.h"

namespace tessera::model {
namespace {

using runtime::KvCacheFormat;
using kv_test::AllLogits;
using kv_test::Greedy;
using kv_test::Load;
using kv_test::LoadJson;
using kv_test::Loaded;

class HalfKvCacheTest : public ::testing::TestWithParam<KvCacheFormat> {};

TEST_P(HalfKvCacheTest, LlamaLogitsWithinRounding) {
  const std::string dir = std::string(TESSERA_SOURCE_DIR) + "/tests/data/models/llama";
  const auto ids = LoadJson(dir + "/golden.json")["input_ids"].get<std::vector<int32_t>>();
  kernels::cpu::ThreadPool pool(2);
  Loaded f32, half;
  ASSERT_NO_FATAL_FAILURE(Load(dir, KvCacheFormat::kF32, &pool, f32));
  ASSERT_NO_FATAL_FAILURE(Load(dir, GetParam(), &pool, half));
  const std::vector<float> want = AllLogits(*f32.model, ids);
  const std::vector<float> got = AllLogits(*half.model, ids);
  ASSERT_EQ(got.size(), want.size());
  double worst = 0, max_abs = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    worst = std::max(worst, std::abs(double(got[i]) - want[i]));
    max_abs = std::max(max_abs, std::abs(double(want[i])));
  }
  const int bits = GetParam() == KvCacheFormat::kF16 ? 11 : 8;
  EXPECT_GT(worst, 0.0);  // the 16-bit path really ran
  EXPECT_LE(worst, 4 * std::ldexp(max_abs, -bits)) << "max |logit| " << max_abs;
  RecordProperty("max_abs_logit_diff", std::to_string(worst));
  RecordProperty("max_abs_logit", std::to_string(max_abs));
}

TEST_P(HalfKvCacheTest, MismatchedCacheFormatIsRejected) {
  const std::string dir = std::string(TESSERA_SOURCE_DIR) + "/tests/data/models/llama";
  kernels::cpu::ThreadPool pool(1);
  Loaded half;
  ASSERT_NO_FATAL_FAILURE(Load(dir, GetParam(), &pool, half));
  const auto& c = half.model->config();
  runtime::KvCache cache(c.num_layers, c.num_kv_heads, c.head_dim, 8, 4);  // F32
  runtime::SequenceKv seq;
  std::vector<int32_t> ids = {1, 2};
  SequenceChunk chunk{&seq, ids, false, true};
  std::vector<float> logits;
  EXPECT_EQ(half.model->Forward({&chunk, 1}, cache, &logits).code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(cache.used_blocks(), 0);
}

TEST_P(HalfKvCacheTest, Stories260kGreedyAgainstLlamaCpp) {
  const std::string shared = TESSERA_SHARED_DIR;
  const nlohmann::json ref = LoadJson(shared + "/reference/stories260K-greedy.json");
  kernels::cpu::ThreadPool pool(2);
  Loaded half;
  ASSERT_NO_FATAL_FAILURE(
      Load(shared + "/models/stories260K/stories260K.gguf", GetParam(), &pool, half));
  int matching = 0, prompts = 0;
  for (const auto& r : ref["results"]) {
    const auto prompt = r["prompt_ids_with_bos"].get<std::vector<int32_t>>();
    const auto expected = r["generated_ids"].get<std::vector<int32_t>>();
    const int n = static_cast<int>(expected.size());
    const std::vector<int32_t> got = Greedy(*half.model, prompt, n);
    if (GetParam() == KvCacheFormat::kF16) {
      EXPECT_EQ(got, expected) << r["prompt"].get<std::string>();
    }
    int same_prefix = 0;
    while (same_prefix < n && got[same_prefix] == expected[same_prefix]) ++same_prefix;
    std::cout << "stories260K " << (GetParam() == KvCacheFormat::kF16 ? "f16" : "bf16")
              << " KV, prompt '" << r["prompt"].get<std::string>() << "': first " << same_prefix
              << "/" << n << " tokens equal llama.cpp's\n";
    matching += same_prefix == n;
    ++prompts;
  }
  RecordProperty("greedy_matches_llama_cpp",
                 std::to_string(matching) + "/" + std::to_string(prompts));
}

INSTANTIATE_TEST_SUITE_P(Formats, HalfKvCacheTest,
                         ::testing::Values(KvCacheFormat::kF16, KvCacheFormat::kBf16),
                         [](const auto& info) {
                           return info.param == KvCacheFormat::kF16 ? "F16" : "Bf16";
                         });

}  // namespace
}  // namespace tessera::model
