// Hugging Face transformers as the oracle: for seeded random-weight llama (plain, llama3 rope
// scaling, linear rope scaling), mistral, qwen2 (q/k/v bias), qwen3 (q/k norm, head_dim*heads
// != hidden) and mixture-of-experts models (qwen3_moe: top-3 of 8 experts renormalized;
// qwen3_moe_mixed: a dense layer among sparse ones, weights not renormalized; mixtral: top-2 of
// 4; qwen2_moe: top-2 of 8 plus a sigmoid-gated shared expert, q/k/v biases; olmoe: q/k
// RMSNorm over the whole projections, olmoe_clip with clip_qkv), granite (embedding,
// attention, residual and logits multipliers) and phi3 (fused qkv / gate_up, half the head
// rotated), sliding windows of 8 positions (mistral_swa every layer, qwen2_swa from
// max_window_layers on) and the Gemma family (gemma: (1 + w) norms, scaled embeddings, GeGLU;
// gemma2: sandwich norms, attention and final logit soft caps, alternating windows; gemma3: q/k
// norms, windows with their own RoPE base beside linearly scaled global layers, each with a GGUF
// twin as llama.cpp's converter writes it; gemma3_mm: the same decoder inside
// Gemma3ForConditionalGeneration, weights under language_model.model.* beside a vision tower;
// mistral3_mm: a mistral decoder inside Mistral3ForConditionalGeneration, untied
// language_model.lm_head), olmo2 (no norms before attention or the MLP, output norms only,
// whole-projection q/k norms) and olmo3 (the same with a window; GGUF twins as llama.cpp's
// olmo2 converter writes them), and YaRN RoPE scaling (qwen3_yarn: the ramp inside the pairs, the
// inferred attention factor; olmo3_yarn: on the full layer only, an explicit attention factor)
// and smollm3 (every fourth layer without RoPE; GGUF twin as llama.cpp's smollm3 converter);
// granitemoe from its HF directory (experts fused in input_linear / output_linear, read one by
// one) and from its GGUF twin (experts split from input_linear as llama.cpp's converter does).
// llama3_rope's GGUF twin carries its rope scaling as llama.cpp's converter writes it, per-pair
// frequency divisors in rope_freqs.weight, tessera's logits at every position match transformers',
// and greedy continuations of 32 tokens are identical (tools/reference/make_hf_goldens.py made the
// goldens). The MoE models' GGUF twins (model.gguf: the same f32 weights as llama.cpp's converter
// lays them out, experts stacked into one tensor per role, Mixtral's q/k permuted) must give the
// same logits.
//
// Tolerance: both sides compute in f32. The script measured the oracle's own error against a
// float64 run of the same model (f32_vs_f64_max_abs_diff, 9e-6..2.5e-5 for logits up to ~17), so
// two independent f32 implementations differ by at most about twice that; we allow 4x the measured
// oracle error plus 1e-6 absolute, and require the relative max error to stay below 1e-4 of
// max|logit|.
#include <cmath>
#include <fstream>
#include <sstream>
#include <string>

#include "engine/io/safetensors_file.h"
#include "engine/model/decoder_model.h"
#include "engine/model/model_source.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace tessera::model {
namespace {

const std::string kModels = std::string(TESSERA_SOURCE_DIR) + "/tests/data/models/";

nlohmann::json LoadJson(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return nlohmann::json::parse(ss.str());
}

class HfGoldenTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    // "name" is the HF directory; "name/model.gguf" its GGUF twin (the goldens are the same).
    const std::string param = GetParam();
    dir_ = kModels + param.substr(0, param.find('/'));
    golden_ = LoadJson(dir_ + "/golden.json");
    auto src = ModelSource::Open(kModels + param);
    ASSERT_TRUE(src.ok()) << src.status();
    source_ = std::move(*src);
    factory_ = MakeDenseLinearFactory(&pool_);
    auto model = DecoderModel::Load(source_.config, *source_.store, source_.naming, *factory_, &pool_);
    ASSERT_TRUE(model.ok()) << model.status();
    model_ = std::move(*model);
    const auto& c = source_.config;
    cache_ = std::make_unique<runtime::KvCache>(c.num_layers, c.num_kv_heads, c.head_dim, 8, 16);
  }

  std::string dir_;
  nlohmann::json golden_;
  ModelSource source_;
  kernels::cpu::ThreadPool pool_{2};
  std::unique_ptr<LinearFactory> factory_;
  std::unique_ptr<DecoderModel> model_;
  std::unique_ptr<runtime::KvCache> cache_;
};

TEST_P(HfGoldenTest, ConfigIsParsed) {
  const ModelConfig& c = source_.config;
  // transformers' model_type; tessera names Gemma 3's text model gemma3, as llama.cpp does, and
  // an image-text model by its decoder (mistral3's is mistral).
  const std::string arch = golden_["architecture"].get<std::string>();
  EXPECT_EQ(c.ArchitectureName(), arch == "gemma3_text" ? "gemma3"
                                  : arch == "mistral3"  ? "mistral"
                                                        : arch);
  // The rotary embedding's frequencies after the golden's runs: LongRoPE's long ones where the
  // sequence outgrew original_max_position (all of it, in these fixtures).
  const auto& inv = golden_["rope"]["inv_freq"];
  const int64_t run = golden_["input_ids"].size() + golden_["greedy"]["tokens"].size();
  const auto ours = RopeInverseFrequencies(c, false, c.UsesLongRopeFactors(run));
  if (c.rope_scaling.type == RopeScaling::Type::kLongRope) {
    EXPECT_NEAR(c.rope_scaling.attention_factor, golden_["rope"]["attention_scaling"].get<double>(),
                1e-7);  // GGUF keeps f32
  }
  ASSERT_EQ(ours.size(), inv.size());
  for (size_t i = 0; i < ours.size(); ++i) {
    EXPECT_NEAR(ours[i], inv[i].get<double>(), 1e-6 * std::abs(inv[i].get<double>())) << i;
  }
}

TEST_P(HfGoldenTest, LogitsAtEveryPositionMatchTransformers) {
  const auto ids = golden_["input_ids"].get<std::vector<int32_t>>();
  runtime::SequenceKv seq;
  seq.max_length = static_cast<int64_t>(ids.size());  // transformers' one forward of ids
  SequenceChunk chunk{&seq, ids, /*all_logits=*/true, false};
  std::vector<float> logits;
  ASSERT_TRUE(model_->Forward({&chunk, 1}, *cache_, &logits).ok());
  auto want_file = io::SafetensorsFile::Open(dir_ + "/golden_logits.safetensors");
  ASSERT_TRUE(want_file.ok());
  auto want = (*want_file)->Get("logits")->CopyAs<float>();
  ASSERT_TRUE(want.ok());
  ASSERT_EQ(logits.size(), want->size());
  const double max_abs = golden_["logits"]["max_abs_logit"].get<double>();
  const double oracle_err = golden_["logits"]["f32_vs_f64_max_abs_diff"].get<double>();
  const double tol = 4 * oracle_err + 1e-6;
  double worst = 0;
  for (size_t i = 0; i < logits.size(); ++i) {
    worst = std::max(worst, std::abs(static_cast<double>(logits[i]) - (*want)[i]));
  }
  EXPECT_LE(worst, tol) << "max abs error " << worst;
  EXPECT_LE(worst / std::max(1.0, max_abs), 1e-4);
  RecordProperty("max_abs_error", std::to_string(worst));
  cache_->Release(seq);
}

TEST_P(HfGoldenTest, GreedyContinuationMatchesTransformers) {
  const auto ids = golden_["input_ids"].get<std::vector<int32_t>>();
  const auto expected = golden_["greedy"]["tokens"].get<std::vector<int32_t>>();
  const auto gaps = golden_["greedy"]["top2_gap"].get<std::vector<double>>();
  runtime::SequenceKv seq;
  seq.max_length = static_cast<int64_t>(ids.size() + expected.size());
  std::vector<float> logits;
  SequenceChunk prefill{&seq, ids, false, true};
  ASSERT_TRUE(model_->Forward({&prefill, 1}, *cache_, &logits).ok());
  const int64_t vocab = source_.config.vocab_size;
  for (size_t step = 0; step < expected.size(); ++step) {
    int32_t best = 0;
    for (int64_t i = 1; i < vocab; ++i) {
      if (logits[i] > logits[best]) best = static_cast<int32_t>(i);
    }
    if (gaps[step] < 1e-3) break;  // a near-tie: either answer is right from here on
    ASSERT_EQ(best, expected[step]) << "step " << step;
    std::vector<int32_t> one = {best};
    SequenceChunk next{&seq, one, false, true};
    ASSERT_TRUE(model_->Forward({&next, 1}, *cache_, &logits).ok());
  }
  cache_->Release(seq);
}

INSTANTIATE_TEST_SUITE_P(
    Architectures, HfGoldenTest,
    ::testing::Values("llama", "llama3_rope", "llama_linear_rope", "mistral", "qwen2", "qwen3",
                      "qwen3_moe", "qwen3_moe_mixed", "mixtral", "qwen2_moe", "olmoe", "olmoe_clip",
                      "qwen3_moe/model.gguf", "mixtral/model.gguf", "qwen2_moe/model.gguf",
                      "olmoe/model.gguf", "granite", "granite/model.gguf", "phi3",
                      "phi3/model.gguf", "llama3_rope/model.gguf", "mistral_swa", "qwen2_swa",
                      "gemma", "gemma/model.gguf", "gemma2", "gemma2/model.gguf", "gemma3",
                      "gemma3/model.gguf", "gemma3_mm", "mistral3_mm", "olmo2", "olmo2/model.gguf",
                      "olmo3", "olmo3/model.gguf", "qwen3_yarn", "qwen3_yarn/model.gguf",
                      "olmo3_yarn", "smollm3", "smollm3/model.gguf", "granitemoe/model.gguf",
                      "gpt_oss", "phi3_longrope", "phi3_longrope/model.gguf", "phi3_longrope_short",
                      "granitemoe"),
    [](const ::testing::TestParamInfo<std::string>& info) {
      std::string name = info.param;
      for (char& ch : name) {
        if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
      }
      return name;
    });

}  // namespace
}  // namespace tessera::model
