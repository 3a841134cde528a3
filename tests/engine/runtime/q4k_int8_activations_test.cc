// --cpu_int8_activations on a GGUF Q4_K_M model (synthesized, tinyllama-like but tiny; llama.cpp's
// mix: Q4_K, with output.weight and the last layer's attn_v / ffn_down in Q6_K): the plan names the
// VNNI kernel for every Q4_K and Q6_K layer, the logits stay close to the exact f32-activation
// default, and a sequence's logits are bit-identical alone and batched with another sequence's
// prefill. (Loading at all needs the plan to accept q/k/v of different GGUF types.)
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "engine/model/synth_model.h"
#include "engine/runtime/engine_loader.h"
#include "engine/runtime/kv_cache.h"

namespace tessera::runtime {
namespace {

std::string SynthQ4K() {
  static const std::string path = [] {
    model::SynthShape s;
    s.name = "q4km-int8-test";
    s.arch = "llama";
    s.hidden = 256, s.layers = 2, s.heads = 4, s.kv_heads = 2, s.head_dim = 64, s.ffn = 512;
    s.vocab = 320, s.context = 128;
    model::SynthOptions o;
    o.seed = 3;
    o.type = "Q4_K_M";
    const std::string p = ::testing::TempDir() + "/synth_q4km_int8.gguf";
    const absl::Status st = model::WriteSynthGguf(s, o, p);
    EXPECT_TRUE(st.ok()) << st;
    return p;
  }();
  return path;
}

std::unique_ptr<LoadedEngine> Load(bool int8) {
  EngineOptions options;
  options.threads = 2;
  options.cpu_int8_activations =
      int8 ? backend::cpu::Int8Activations::kAll : backend::cpu::Int8Activations::kNone;
  auto e = LoadEngine(SynthQ4K(), options);
  EXPECT_TRUE(e.ok()) << e.status();
  return e.ok() ? std::move(*e) : nullptr;
}

TEST(Q4KInt8ActivationsTest, PlanCloseToExactAndBatchInvariant) {
  auto exact = Load(false);
  auto int8 = Load(true);
  ASSERT_TRUE(exact && int8);
  int q4k_layers = 0, q6k_layers = 0;
  for (const quant::LinearSpec& s : int8->plan->layers()) {
    if (s.weight_format == quant::WeightFormat::kGgufQ4_K) {
      ++q4k_layers;
      EXPECT_EQ(s.kernel, "cpu/gguf-q4_k-" + backend::cpu::Int8TileSuffix()) << s.module;
    } else if (s.weight_format == quant::WeightFormat::kGgufQ6_K) {
      ++q6k_layers;
      EXPECT_EQ(s.kernel, "cpu/gguf-q6_k-" + backend::cpu::Int8TileSuffix()) << s.module;
    } else {
      ADD_FAILURE() << s.module << " is neither Q4_K nor Q6_K";
      continue;
    }
    EXPECT_EQ(s.activation, quant::ActivationFormat::kInt8Block32) << s.module;
  }
  EXPECT_EQ(q4k_layers, 12);  // 7 projections per layer, less layer 1's attn_v and ffn_down
  EXPECT_EQ(q6k_layers, 3);   // those two and the lm_head

  const auto& c = int8->model->config();
  std::vector<int32_t> a, b;
  for (int i = 0; i < 9; ++i) a.push_back((31 * i + 2) % 320);
  for (int i = 0; i < 15; ++i) b.push_back((17 * i + 9) % 320);
  auto prefill = [&](LoadedEngine& e) {
    KvCache cache(c.num_layers, c.num_kv_heads, c.head_dim, 16, 16, true,
                  e.model->kv_cache_format());
    SequenceKv seq;
    std::vector<float> logits;
    EXPECT_TRUE(e.model->Forward({{&seq, a, true, false}}, cache, &logits).ok());
    return logits;
  };
  const std::vector<float> la = prefill(*exact), lb = prefill(*int8);
  ASSERT_EQ(la.size(), lb.size());
  double diff = 0, scale = 1;
  for (size_t i = 0; i < la.size(); ++i) {
    diff = std::max(diff, std::abs(double(la[i]) - lb[i]));
    scale = std::max(scale, std::abs(double(la[i])));
  }
  EXPECT_GT(diff, 0.0);
  EXPECT_LE(diff / scale, 5e-2);

  KvCache alone_cache(c.num_layers, c.num_kv_heads, c.head_dim, 16, 16, true,
                      int8->model->kv_cache_format());
  KvCache batch_cache(c.num_layers, c.num_kv_heads, c.head_dim, 16, 16, true,
                      int8->model->kv_cache_format());
  SequenceKv sa, ta, tb;
  std::vector<float> alone, batched;
  ASSERT_TRUE(int8->model->Forward({{&sa, a, false, true}}, alone_cache, &alone).ok());
  ASSERT_TRUE(
      int8->model->Forward({{&ta, a, false, true}, {&tb, b, false, true}}, batch_cache, &batched)
          .ok());
  ASSERT_EQ(batched.size(), 2 * alone.size());
  EXPECT_EQ(std::memcmp(alone.data(), batched.data(), alone.size() * 4), 0);
}

}  // namespace
}  // namespace tessera::runtime
