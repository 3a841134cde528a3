// Helpers of the KV cache format tests (fp8_kv_cache_test.cc, half_kv_cache_test.cc; Load also
// serves synth_model_test.cc): load a model for one cache format, all logits of a prompt, and a
// greedy continuation run as the scheduler runs a sequence (the prompt in one Forward, then one
// token per step), each in a fresh cache of the model's format.
#ifndef TESSERA_TESTS_ENGINE_MODEL_KV_CACHE_FORMAT_TEST_UTIL_H_
#define TESSERA_TESTS_ENGINE_MODEL_KV_CACHE_FORMAT_TEST_UTIL_H_

#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "engine/model/decoder_model.h"
#include "engine/model/model_source.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace tessera::model::kv_test {

inline nlohmann::json LoadJson(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return nlohmann::json::parse(ss.str());
}

struct Loaded {
  ModelSource source;
  std::unique_ptr<LinearFactory> factory;
  std::unique_ptr<DecoderModel> model;
};

inline void Load(const std::string& path, runtime::KvCacheFormat format,
                 kernels::cpu::ThreadPool* pool, Loaded& out) {
  auto src = ModelSource::Open(path);
  ASSERT_TRUE(src.ok()) << src.status();
  out.source = std::move(*src);
  out.factory = MakeDenseLinearFactory(pool);
  auto model = DecoderModel::Load(out.source.config, *out.source.store, out.source.naming,
                                  *out.factory, pool, format);
  ASSERT_TRUE(model.ok()) << model.status();
  out.model = std::move(*model);
}

inline std::vector<float> AllLogits(DecoderModel& model, const std::vector<int32_t>& ids) {
  const auto& c = model.config();
  runtime::KvCache cache(c.num_layers, c.num_kv_heads, c.head_dim, 8, 16, true,
                         model.kv_cache_format());
  runtime::SequenceKv seq;
  SequenceChunk chunk{&seq, ids, true, false};
  std::vector<float> logits;
  auto s = model.Forward({&chunk, 1}, cache, &logits);
  EXPECT_TRUE(s.ok()) << s;
  return logits;
}

inline int32_t Argmax(const std::vector<float>& v) {
  int32_t best = 0;
  for (size_t i = 1; i < v.size(); ++i) {
    if (v[i] > v[best]) best = static_cast<int32_t>(i);
  }
  return best;
}

inline std::vector<int32_t> Greedy(DecoderModel& model, const std::vector<int32_t>& prompt,
                                   int n_new) {
  const auto& c = model.config();
  runtime::KvCache cache(c.num_layers, c.num_kv_heads, c.head_dim, 16, 64, true,
                         model.kv_cache_format());
  runtime::SequenceKv seq;
  std::vector<float> logits;
  std::vector<int32_t> out;
  std::vector<int32_t> next = prompt;
  for (int i = 0; i < n_new; ++i) {
    SequenceChunk chunk{&seq, next, false, true};
    auto s = model.Forward({&chunk, 1}, cache, &logits);
    EXPECT_TRUE(s.ok()) << s;
    if (!s.ok()) break;
    out.push_back(Argmax(logits));
    next = {out.back()};
  }
  return out;
}

}  // namespace tessera::model::kv_test

#endif  // TESSERA_TESTS_ENGINE_MODEL_KV_CACHE_FORMAT_TEST_UTIL_H_
