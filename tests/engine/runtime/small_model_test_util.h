// Helpers of the activation-mode tests (bf16, int16) on a small synthesized Hugging Face bf16
// checkpoint (2 llama layers, hidden 256, 4 / 2 heads of 64, ffn 384, vocab 320): the checkpoint,
// written once per test process into the process's own directory under the test temp dir and
// removed at exit (ctest runs every case of a suite as its own process, in parallel, so one shared
// path could be read by one case while another rewrites it), token sequences, prefill logits, and
// the check that a sequence's logits are the same bits alone and batched with another sequence.
#ifndef TESSERA_TESTS_ENGINE_RUNTIME_SMALL_MODEL_TEST_UTIL_H_
#define TESSERA_TESTS_ENGINE_RUNTIME_SMALL_MODEL_TEST_UTIL_H_

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

#include "engine/model/synth_model.h"
#include "engine/runtime/engine_loader.h"
#include "engine/runtime/kv_cache.h"
#include "gtest/gtest.h"

namespace tessera::runtime {

class ProcessTempDir {
 public:
  // TempDir()/name_<pid>, not created here.
  explicit ProcessTempDir(const std::string& name)
      : path_(::testing::TempDir() + "/" + name + "_" + std::to_string(::getpid())) {}
  ~ProcessTempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  ProcessTempDir(const ProcessTempDir&) = delete;
  ProcessTempDir& operator=(const ProcessTempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// The checkpoint `name` (its model name and directory) with weights from `seed`, written on the
// first call; one name per test binary.
inline std::string SmallSynthHfDir(const std::string& name, uint32_t seed) {
  static const ProcessTempDir dir(name);
  static const bool written = [&] {
    model::SynthShape s;
    s.name = name;
    s.arch = "llama";
    s.hidden = 256, s.layers = 2, s.heads = 4, s.kv_heads = 2, s.head_dim = 64, s.ffn = 384;
    s.vocab = 320, s.context = 128;
    model::SynthOptions o;
    o.seed = seed;
    const absl::Status st = model::WriteSynthHfDir(s, o, dir.path());
    EXPECT_TRUE(st.ok()) << st;
    return st.ok();
  }();
  EXPECT_TRUE(written);
  return dir.path();
}

// n tokens of the checkpoint's vocabulary, `salt` telling sequences apart.
inline std::vector<int32_t> SmallTokens(int n, int salt) {
  std::vector<int32_t> t;
  for (int i = 0; i < n; ++i) t.push_back((37 * i + salt) % 320);
  return t;
}

// The logits of a fresh sequence's prefill of `tokens` (every position).
inline std::vector<float> PrefillLogits(LoadedEngine& e, const std::vector<int32_t>& tokens) {
  const auto& c = e.model->config();
  KvCache cache(c.num_layers, c.num_kv_heads, c.head_dim, 16, 16);
  SequenceKv seq;
  std::vector<float> logits;
  EXPECT_TRUE(e.model->Forward({{&seq, tokens, true, false}}, cache, &logits).ok());
  return logits;
}

// max |a − b| over max(1, max |a|).
inline double MaxRelativeDiff(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  double diff = 0, scale = 1;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    diff = std::max(diff, std::abs(double(a[i]) - b[i]));
    scale = std::max(scale, std::abs(double(a[i])));
  }
  return diff / scale;
}

// A sequence alone (an 11-token prefill, then one decode step) against the same steps batched
// with another sequence's 17-token prefill: its logits bit for bit (the server's
// concurrent-equals-sequential property at the decoder level).
inline void ExpectAloneEqualsBatched(LoadedEngine& e) {
  const auto& c = e.model->config();
  const std::vector<int32_t> a = SmallTokens(11, 3), b = SmallTokens(17, 5), next = {42};
  KvCache alone_cache(c.num_layers, c.num_kv_heads, c.head_dim, 16, 16);
  KvCache batch_cache(c.num_layers, c.num_kv_heads, c.head_dim, 16, 16);
  SequenceKv sa, ta, tb, tc;
  std::vector<float> alone, batched;
  ASSERT_TRUE(e.model->Forward({{&sa, a, false, true}}, alone_cache, &alone).ok());
  ASSERT_TRUE(
      e.model->Forward({{&ta, a, false, true}, {&tb, b, false, true}}, batch_cache, &batched).ok());
  ASSERT_EQ(batched.size(), 2 * alone.size());
  EXPECT_EQ(std::memcmp(alone.data(), batched.data(), alone.size() * 4), 0) << "prefill";
  ASSERT_TRUE(e.model->Forward({{&sa, next, false, true}}, alone_cache, &alone).ok());
  ASSERT_TRUE(
      e.model->Forward({{&ta, next, false, true}, {&tc, b, false, true}}, batch_cache, &batched)
          .ok());
  EXPECT_EQ(std::memcmp(alone.data(), batched.data(), alone.size() * 4), 0) << "decode";
}

}  // namespace tessera::runtime

#endif  // TESSERA_TESTS_ENGINE_RUNTIME_SMALL_MODEL_TEST_UTIL_H_
