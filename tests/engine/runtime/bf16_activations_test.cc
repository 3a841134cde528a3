// EngineOptions::cpu_bf16_activations end to end on a synthesized Hugging Face bf16 checkpoint:
// the plan says so (a: bf16, cpu/dense-bf16-act) for every bf16 layer and nothing else, the
// logits stay close to the exact default (hi + lo split) without being equal to them, and a
// sequence's logits are bit-identical whether its steps run alone or batched with another
// sequence's prefill (the server's concurrent-equals-sequential property at the decoder level).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "engine/quant/linear_spec.h"
#include "engine/runtime/engine_loader.h"
#include "engine/runtime/kv_cache.h"
#include "tests/engine/runtime/small_synth_hf_dir.h"

namespace tessera::runtime {
namespace {

std::string SynthDir() { return SmallSynthHfDir("bf16-act-test", 11); }

std::unique_ptr<LoadedEngine> Load(bool bf16_activations) {
  EngineOptions options;
  options.threads = 2;
  options.cpu_bf16_activations = bf16_activations;
  auto e = LoadEngine(SynthDir(), options);
  EXPECT_TRUE(e.ok()) << e.status();
  return e.ok() ? std::move(*e) : nullptr;
}

std::vector<int32_t> Tokens(int n, int salt) {
  std::vector<int32_t> t;
  for (int i = 0; i < n; ++i) t.push_back((37 * i + salt) % 320);
  return t;
}

TEST(Bf16ActivationsTest, PlanNamesTheChoice) {
  auto exact = Load(false);
  auto bf16 = Load(true);
  ASSERT_TRUE(exact && bf16);
  ASSERT_EQ(exact->plan->layers().size(), bf16->plan->layers().size());
  for (size_t i = 0; i < bf16->plan->layers().size(); ++i) {
    const quant::LinearSpec& a = exact->plan->layers()[i];
    const quant::LinearSpec& b = bf16->plan->layers()[i];
    ASSERT_EQ(b.weight_format, quant::WeightFormat::kBF16) << b.module;
    EXPECT_EQ(a.activation, quant::ActivationFormat::kFloat) << a.module;
    EXPECT_EQ(a.kernel, "cpu/dense-fast") << a.module;
    EXPECT_EQ(b.activation, quant::ActivationFormat::kBf16) << b.module;
    EXPECT_EQ(b.kernel, "cpu/dense-bf16-act") << b.module;
    EXPECT_NE(b.Describe().find("a: bf16"), std::string::npos) << b.Describe();
  }
}

TEST(Bf16ActivationsTest, CloseToExactAndBatchInvariant) {
  auto exact = Load(false);
  auto bf16 = Load(true);
  ASSERT_TRUE(exact && bf16);
  const auto& c = bf16->model->config();
  auto prefill = [&](LoadedEngine& e, const std::vector<int32_t>& t) {
    KvCache cache(c.num_layers, c.num_kv_heads, c.head_dim, 16, 16);
    SequenceKv seq;
    std::vector<float> logits;
    EXPECT_TRUE(e.model->Forward({{&seq, t, true, false}}, cache, &logits).ok());
    return logits;
  };
  const std::vector<int32_t> a = Tokens(11, 3), b = Tokens(17, 5);
  const std::vector<float> la = prefill(*exact, a), lb = prefill(*bf16, a);
  ASSERT_EQ(la.size(), lb.size());
  double diff = 0, scale = 1;
  for (size_t i = 0; i < la.size(); ++i) {
    diff = std::max(diff, std::abs(double(la[i]) - lb[i]));
    scale = std::max(scale, std::abs(double(la[i])));
  }
  EXPECT_GT(diff, 0.0) << "bf16 activations changed nothing: were they rounded at all?";
  EXPECT_LE(diff / scale, 2e-2);

  // Sequence a alone (its 11-token prefill, then one decode step) against the same steps batched
  // with b's 17-token prefill: a's logits bit for bit.
  KvCache alone_cache(c.num_layers, c.num_kv_heads, c.head_dim, 16, 16);
  KvCache batch_cache(c.num_layers, c.num_kv_heads, c.head_dim, 16, 16);
  SequenceKv sa, ta, tb;
  std::vector<float> alone, batched;
  const std::vector<int32_t> next = {42};
  ASSERT_TRUE(bf16->model->Forward({{&sa, a, false, true}}, alone_cache, &alone).ok());
  ASSERT_TRUE(
      bf16->model->Forward({{&ta, a, false, true}, {&tb, b, false, true}}, batch_cache, &batched)
          .ok());
  ASSERT_EQ(batched.size(), 2 * alone.size());
  EXPECT_EQ(std::memcmp(alone.data(), batched.data(), alone.size() * 4), 0) << "prefill";
  SequenceKv tc;
  ASSERT_TRUE(bf16->model->Forward({{&sa, next, false, true}}, alone_cache, &alone).ok());
  ASSERT_TRUE(bf16->model->Forward({{&ta, next, false, true}, {&tc, b, false, true}}, batch_cache,
                                   &batched)
                  .ok());
  EXPECT_EQ(std::memcmp(alone.data(), batched.data(), alone.size() * 4), 0) << "decode";
}

}  // namespace
}  // namespace tessera::runtime
