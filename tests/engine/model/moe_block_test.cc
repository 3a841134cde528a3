// The mixture-of-experts pieces below the transformers goldens (hf_golden_test.cc runs the whole
// models): routing (softmax, top-k with ties to the lower index, renormalization or not, NaN-safe),
// MoeBlock's grouping (a row's output does not depend on the other rows, also across its chunked
// passes; experts no row picked are never run), ForwardMany against separate calls, the config
// fields and their errors, GgufFile::AddOuterSlices on the mixtral fixture's stacked experts, a
// missing expert tensor named at load, and GGUF rope factors (rope_freqs applied, bad or longrope
// ones refused).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "engine/backend/cpu/column_split.h"
#include "engine/backend/cpu/dense_linear.h"
#include "engine/io/gguf_file.h"
#include "engine/io/gguf_writer.h"
#include "engine/model/decoder_model.h"
#include "engine/model/model_config.h"
#include "engine/model/model_source.h"
#include "engine/model/moe_block.h"
#include "gtest/gtest.h"

namespace tessera::model {
namespace {

const std::string kModels = std::string(TESSERA_SOURCE_DIR) + "/tests/data/models/";

// RouteTopK with its scratch.
void Route(const float* logits, int64_t n, int64_t k, bool normalize, int32_t* experts,
           float* weights) {
  std::vector<float> prob(n);
  std::vector<int32_t> order(n);
  RouteTopK(logits, n, k, normalize, experts, weights, prob.data(), order.data());
}

TEST(RouteTopKTest, SoftmaxTopKAndRenormalization) {
  const float logits[] = {0.5f, 2.0f, -1.0f, 1.0f};
  double z = 0;
  for (float l : logits) z += std::exp(double(l));
  int32_t experts[2];
  float weights[2];
  Route(logits, 4, 2, /*normalize=*/false, experts, weights);
  EXPECT_EQ(experts[0], 1);
  EXPECT_EQ(experts[1], 3);
  EXPECT_NEAR(weights[0], std::exp(2.0) / z, 1e-6);
  EXPECT_NEAR(weights[1], std::exp(1.0) / z, 1e-6);
  Route(logits, 4, 2, /*normalize=*/true, experts, weights);
  EXPECT_NEAR(weights[0], std::exp(2.0) / (std::exp(2.0) + std::exp(1.0)), 1e-6);
  EXPECT_NEAR(weights[0] + weights[1], 1.0, 1e-6);
}

TEST(RouteTopKTest, TiesGoToTheLowerExpertAndNanLogitsStayWellDefined) {
  const float tie[] = {1.0f, 3.0f, 3.0f, 3.0f};
  int32_t experts[2];
  float weights[2];
  Route(tie, 4, 2, true, experts, weights);
  EXPECT_EQ(experts[0], 1);
  EXPECT_EQ(experts[1], 2);
  EXPECT_FLOAT_EQ(weights[0], 0.5f);
  // One NaN logit poisons the softmax sum; the ordering must stay well defined (no crash, k
  // distinct experts), whatever the weights become.
  const float nan_logits[] = {1.0f, std::numeric_limits<float>::quiet_NaN(), 2.0f, 0.0f};
  Route(nan_logits, 4, 2, true, experts, weights);
  EXPECT_NE(experts[0], experts[1]);
}

// y = x · diag(scale) padded to n columns, counting calls: a Linear whose output is easy to
// predict.
class ScaleLinear : public backend::Linear {
 public:
  ScaleLinear(int64_t n, int64_t k, float scale, int* calls)
      : n_(n), k_(k), scale_(scale), calls_(calls) {}
  int64_t out_features() const override { return n_; }
  int64_t in_features() const override { return k_; }
  void Forward(const float* x, int64_t rows, float* y) const override {
    ++*calls_;
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t j = 0; j < n_; ++j) y[r * n_ + j] = scale_ * x[r * k_ + (j % k_)];
    }
  }
  std::string Describe() const override { return "scale"; }
  int64_t weight_bytes() const override { return 0; }

 private:
  int64_t n_, k_;
  float scale_;
  int* calls_;
};

// A router whose logit for expert e is x[e]: each row picks the experts of its largest inputs.
std::unique_ptr<MoeBlock> MakeBlock(int num_experts, int top_k, std::vector<int>* calls) {
  const int hidden = num_experts;
  calls->assign(num_experts + 1, 0);
  std::vector<ExpertMlp> experts(num_experts);
  for (int e = 0; e < num_experts; ++e) {
    int* c = &(*calls)[e];
    experts[e].gate = std::make_unique<ScaleLinear>(6, hidden, 0.5f + e, c);
    experts[e].up = std::make_unique<ScaleLinear>(6, hidden, 1.0f, c);
    experts[e].down = std::make_unique<ScaleLinear>(hidden, 6, 1.0f / (1 + e), c);
  }
  auto router = std::make_unique<ScaleLinear>(num_experts, hidden, 1.0f, &calls->back());
  return std::make_unique<MoeBlock>(std::move(router), std::move(experts), top_k, true);
}

TEST(MoeBlockTest, RowsAreIndependentAndUnpickedExpertsNeverRun) {
  std::vector<int> calls;
  auto block = MakeBlock(6, 2, &calls);
  // Row 0 prefers experts 0 and 1, row 1 experts 1 and 2, row 2 experts 0 and 2: experts 3-5
  // are never picked.
  const std::vector<float> x = {3, 2, 0, -1, -2, -3,  //
                                0, 3, 2, -1, -2, -3,  //
                                2, 0, 3, -1, -2, -3};
  std::vector<float> batched(18), alone(6);
  block->Forward(x.data(), 3, batched.data(), nullptr);
  for (int e = 3; e < 6; ++e) EXPECT_EQ(calls[e], 0) << e;
  EXPECT_GT(calls[0], 0);
  for (int r = 0; r < 3; ++r) {
    block->Forward(x.data() + r * 6, 1, alone.data(), nullptr);
    EXPECT_EQ(std::memcmp(alone.data(), batched.data() + r * 6, sizeof(float) * 6), 0) << r;
  }
  // Row 0 by hand: experts 0 and 1 with softmax weights renormalized over the pair.
  const double w0 = std::exp(3.0) / (std::exp(3.0) + std::exp(2.0)), w1 = 1 - w0;
  for (int c = 0; c < 6; ++c) {
    // expert e: down(silu(gate) * up) with gate = (0.5 + e) x, up = x, down = x / (1 + e).
    auto expert = [&](int e) {
      const double g = (0.5 + e) * x[c], u = x[c];
      return g / (1 + std::exp(-g)) * u / (1 + e);
    };
    EXPECT_NEAR(batched[c], w0 * expert(0) + w1 * expert(1), 1e-4) << c;
  }
}

// Real f32 DenseLinears over weights this test owns (the views must outlive the layers).
class DenseLayers {
 public:
  explicit DenseLayers(kernels::cpu::ThreadPool* pool) : pool_(pool) {}
  std::unique_ptr<backend::Linear> Make(int64_t n, int64_t k, uint32_t seed,
                                        std::vector<float> bias = {}) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> dist(0.0f, 0.3f);
    auto w = std::make_unique<std::vector<float>>(n * k);
    for (float& v : *w) v = dist(rng);
    io::TensorView view;
    view.name = absl::StrCat("w", seed);
    view.dtype = io::DType::kF32;
    view.shape = {n, k};
    view.bytes = {reinterpret_cast<const uint8_t*>(w->data()), w->size() * 4};
    auto l = backend::cpu::DenseLinear::Create(view, std::move(bias), pool_);
    EXPECT_TRUE(l.ok()) << l.status();
    weights_.push_back(std::move(w));
    return l.ok() ? std::move(*l) : nullptr;
  }

 private:
  kernels::cpu::ThreadPool* pool_;
  std::vector<std::unique_ptr<std::vector<float>>> weights_;
};

// 40 experts, top-8 of 300 rows, expert 5 picked by every row (a router bias): the chunking
// (16 experts / 256 routed rows, one expert over 256 alone, x read in place for it) gives every
// row the bits it gets alone, and the sum a plain double-precision reference gives.
TEST(MoeBlockTest, ChunkedPassesEqualRowsAloneAndTheReference) {
  kernels::cpu::ThreadPool pool(2);
  DenseLayers layers(&pool);
  constexpr int64_t kExperts = 40, kTopK = 8, kHidden = 64, kWidth = 32, kRows = 300;
  std::vector<float> router_bias(kExperts, 0.0f);
  router_bias[5] = 100.0f;
  std::vector<ExpertMlp> experts(kExperts);
  for (int e = 0; e < kExperts; ++e) {
    experts[e].gate = layers.Make(kWidth, kHidden, 10 + 3 * e);
    experts[e].up = layers.Make(kWidth, kHidden, 11 + 3 * e);
    experts[e].down = layers.Make(kHidden, kWidth, 12 + 3 * e);
  }
  auto router = layers.Make(kExperts, kHidden, 7, router_bias);
  const backend::Linear* router_ptr = router.get();
  std::vector<const ExpertMlp*> expert_ptrs;
  for (const ExpertMlp& e : experts) expert_ptrs.push_back(&e);
  MoeBlock block(std::move(router), std::move(experts), kTopK, /*normalize=*/true);
  std::mt19937 rng(3);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> x(kRows * kHidden);
  for (float& v : x) v = dist(rng);
  std::vector<float> batched(kRows * kHidden), alone(kHidden);
  block.Forward(x.data(), kRows, batched.data(), &pool);
  std::vector<float> logits(kExperts), g(kWidth), u(kWidth), y(kHidden);
  for (int64_t r = 0; r < kRows; ++r) {
    block.Forward(x.data() + r * kHidden, 1, alone.data(), &pool);
    ASSERT_EQ(std::memcmp(alone.data(), batched.data() + r * kHidden, kHidden * 4), 0) << r;
    // The reference: route with the block's own router, then each expert in double.
    router_ptr->Forward(x.data() + r * kHidden, 1, logits.data());
    int32_t picked[kTopK];
    float w[kTopK];
    Route(logits.data(), kExperts, kTopK, true, picked, w);
    ASSERT_TRUE(std::find(picked, picked + kTopK, 5) != picked + kTopK);
    std::vector<double> want(kHidden, 0.0);
    for (int j = 0; j < kTopK; ++j) {
      const ExpertMlp& e = *expert_ptrs[picked[j]];
      e.gate->Forward(x.data() + r * kHidden, 1, g.data());
      e.up->Forward(x.data() + r * kHidden, 1, u.data());
      for (int64_t c = 0; c < kWidth; ++c) g[c] = g[c] / (1 + std::exp(-g[c])) * u[c];
      e.down->Forward(g.data(), 1, y.data());
      for (int64_t c = 0; c < kHidden; ++c) want[c] += double(w[j]) * y[c];
    }
    for (int64_t c = 0; c < kHidden; ++c) {
      ASSERT_NEAR(batched[r * kHidden + c], want[c], 1e-4 * (1 + std::abs(want[c])))
          << r << " " << c;
    }
  }
}

// ForwardMany over more calls than one pass takes (40, split into passes of 32), with 1, 7 and
// 300 rows and inputs of their own: the same bits as separate Forward calls.
TEST(ForwardManyTest, EqualsSeparateForwardCalls) {
  kernels::cpu::ThreadPool pool(2);
  DenseLayers layers(&pool);
  std::mt19937 rng(5);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<std::unique_ptr<backend::Linear>> owned;
  std::vector<std::vector<float>> xs, ys;
  std::vector<backend::cpu::LinearCall> calls;
  const int64_t row_counts[] = {1, 7, 300};
  for (int i = 0; i < 40; ++i) {
    const int64_t n = 16 + 16 * (i % 5), k = 32 + 32 * (i % 3), rows = row_counts[i % 3];
    owned.push_back(layers.Make(n, k, 100 + i));
    xs.emplace_back(rows * k);
    for (float& v : xs.back()) v = dist(rng);
    ys.emplace_back(rows * n);
  }
  for (int i = 0; i < 40; ++i) {
    calls.push_back({owned[i].get(), xs[i].data(), row_counts[i % 3], ys[i].data()});
  }
  backend::cpu::ForwardMany(calls, &pool);
  for (int i = 0; i < 40; ++i) {
    std::vector<float> want(ys[i].size());
    owned[i]->Forward(xs[i].data(), row_counts[i % 3], want.data());
    EXPECT_EQ(std::memcmp(want.data(), ys[i].data(), want.size() * 4), 0) << i;
  }
}

TEST(MoeConfigTest, HfFieldsAndErrors) {
  const std::string base = R"({"model_type": "qwen3_moe", "hidden_size": 64, "num_hidden_layers": 4,
      "num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": 128,
      "vocab_size": 320, "head_dim": 16)";
  auto c = ModelConfigFromHfJson(base + R"(, "num_experts": 8, "num_experts_per_tok": 2,
      "moe_intermediate_size": 32, "decoder_sparse_step": 2, "mlp_only_layers": [3]})");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->ArchitectureName(), "qwen3_moe");
  EXPECT_FALSE(c->norm_topk_prob);  // transformers' Qwen3MoeConfig default
  EXPECT_FALSE(c->IsMoeLayer(0));
  EXPECT_TRUE(c->IsMoeLayer(1));
  EXPECT_FALSE(c->IsMoeLayer(2));
  EXPECT_FALSE(c->IsMoeLayer(3));  // sparse by step, dense by mlp_only_layers
  auto missing =
      ModelConfigFromHfJson(base + R"(, "num_experts_per_tok": 2, "moe_intermediate_size": 32})");
  ASSERT_FALSE(missing.ok());
  EXPECT_TRUE(absl::StrContains(missing.status().message(), "num_experts")) << missing.status();
  auto too_many = ModelConfigFromHfJson(base + R"(, "num_experts": 4, "num_experts_per_tok": 5,
      "moe_intermediate_size": 32})");
  ASSERT_FALSE(too_many.ok());
  EXPECT_TRUE(absl::StrContains(too_many.status().message(), "num_experts_per_tok"));
  auto absurd =
      ModelConfigFromHfJson(base + R"(, "num_experts": 100000000, "num_experts_per_tok": 2,
      "moe_intermediate_size": 32})");
  EXPECT_FALSE(absurd.ok());
  auto bad_list = ModelConfigFromHfJson(base + R"(, "num_experts": 4, "num_experts_per_tok": 2,
      "moe_intermediate_size": 32, "mlp_only_layers": "all"})");
  ASSERT_FALSE(bad_list.ok());
  EXPECT_TRUE(absl::StrContains(bad_list.status().message(), "mlp_only_layers"));
}

TEST(MoeConfigTest, Qwen2MoeNeedsItsSharedExpertWidth) {
  const std::string base = R"({"model_type": "qwen2_moe", "hidden_size": 64, "num_hidden_layers": 2,
      "num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": 128,
      "vocab_size": 320, "num_experts": 8, "num_experts_per_tok": 2, "moe_intermediate_size": 32)";
  auto c = ModelConfigFromHfJson(base + R"(, "shared_expert_intermediate_size": 48})");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->shared_expert_intermediate_size, 48);
  EXPECT_TRUE(c->attention_bias);  // qkv_bias defaults to true
  EXPECT_FALSE(c->norm_topk_prob);
  auto no_bias = ModelConfigFromHfJson(
      base + R"(, "shared_expert_intermediate_size": 48, "qkv_bias": false})");
  ASSERT_TRUE(no_bias.ok());
  EXPECT_FALSE(no_bias->attention_bias);
  auto missing = ModelConfigFromHfJson(base + "}");
  ASSERT_FALSE(missing.ok());
  EXPECT_TRUE(absl::StrContains(missing.status().message(), "shared_expert_intermediate_size"));
  auto gguf = ModelSource::Open(kModels + "qwen2_moe/model.gguf");
  ASSERT_TRUE(gguf.ok()) << gguf.status();
  EXPECT_EQ(gguf->config.ArchitectureName(), "qwen2_moe");
  EXPECT_EQ(gguf->config.shared_expert_intermediate_size, 48);
  EXPECT_FALSE(gguf->config.norm_topk_prob);  // llama.cpp's qwen2moe graph: norm_w false
}

// What a backend with only the plain decoder (CUDA) must refuse, named.
TEST(MoeConfigTest, ExtendedFeaturesNameWhatThePlainDecoderLacks) {
  for (const auto& [dir, want] : std::vector<std::pair<std::string, std::string>>{
           {"llama", ""},
           {"qwen3", ""},
           {"qwen3_moe", "mixture of experts (8)"},
           {"granite", "embedding / attention / residual / logit multipliers"},
           {"olmoe_clip", "whole-projection q/k norms, clip_qkv"},
           {"phi3", "fused qkv / gate_up projections"},
           {"gemma", "GeGLU MLP, Gemma / OLMo 2 norms"},
           {"olmo2", "Gemma / OLMo 2 norms"},
           {"qwen3_yarn", "YaRN RoPE"},
           {"gemma2", "soft-capped logits"},
           {"gemma3", "per-layer RoPE bases"},
           {"gemma3/model.gguf", "per-layer RoPE bases"},
           // Windows alone: the CUDA loader caps the context at the window instead.
           {"mistral_swa", ""}}) {
    auto src = ModelSource::Open(kModels + dir);
    ASSERT_TRUE(src.ok()) << src.status();
    EXPECT_TRUE(absl::StrContains(src->config.ExtendedFeatures(), want)) << dir;
    EXPECT_EQ(src->config.ExtendedFeatures().empty(), want.empty()) << dir;
  }
}

TEST(MoeConfigTest, MixtralGgufIsLlamaWithExperts) {
  auto src = ModelSource::Open(kModels + "mixtral/model.gguf");
  ASSERT_TRUE(src.ok()) << src.status();
  EXPECT_EQ(src->config.architecture_name, "llama");
  EXPECT_EQ(src->config.ArchitectureName(), "mixtral");
  EXPECT_EQ(src->config.num_experts, 4);
  EXPECT_EQ(src->config.num_experts_per_tok, 2);
  EXPECT_EQ(src->config.moe_intermediate_size, 48);
  EXPECT_TRUE(src->config.norm_topk_prob);
  EXPECT_EQ(src->config.rope_style, RopeStyle::kInterleaved);
}

TEST(GgufOuterSlicesTest, SlabsAreViewsOfTheStackedTensor) {
  auto file = io::GgufFile::Open(kModels + "mixtral/model.gguf");
  ASSERT_TRUE(file.ok()) << file.status();
  io::GgufFile& g = **file;
  const size_t names_before = g.names().size();
  auto stacked = g.Get("blk.1.ffn_down_exps.weight");
  ASSERT_TRUE(stacked.ok());
  ASSERT_EQ(stacked->shape, (std::vector<int64_t>{4, 64, 48}));
  const std::vector<std::string> slices = {"e0", "e1", "e2", "e3"};
  ASSERT_TRUE(g.AddOuterSlices("blk.1.ffn_down_exps.weight", slices).ok());
  EXPECT_EQ(g.names().size(), names_before);  // listings see the file as written
  for (int e = 0; e < 4; ++e) {
    auto v = g.Get(slices[e]);
    ASSERT_TRUE(v.ok()) << v.status();
    EXPECT_EQ(v->shape, (std::vector<int64_t>{64, 48}));
    EXPECT_EQ(v->bytes.data(), stacked->bytes.data() + e * 64 * 48 * 4);
    EXPECT_EQ(v->bytes.size(), 64u * 48 * 4);
  }
  // A name taken, a count that is not the outer dim, a 1-D tensor, a missing tensor.
  EXPECT_EQ(g.AddOuterSlices("blk.1.ffn_up_exps.weight", {"e0", "x1", "x2", "x3"}).code(),
            absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(g.AddOuterSlices("blk.1.ffn_up_exps.weight", {"y0", "y1", "y2"}).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(g.AddOuterSlices("blk.1.ffn_norm.weight", {"z0"}).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(g.AddOuterSlices("blk.9.ffn_up_exps.weight", {"w0"}).code(),
            absl::StatusCode::kNotFound);
}

// A copy of a fixture GGUF with one more tensor (F32 values), through the engine's own writer.
absl::Status CopyGgufWithTensor(const std::string& from, const std::string& to,
                                const std::string& name, std::vector<float> values) {
  auto src = io::GgufFile::Open(from);
  if (!src.ok()) return src.status();
  io::GgufWriter w;
  for (const io::GgufKeyValue& kv : (*src)->metadata().entries()) w.AddMetadata(kv.key, kv.value);
  for (const io::GgufTensorInfo& info : (*src)->tensor_infos()) {
    auto view = (*src)->Get(info.name);
    if (!view.ok()) return view.status();
    const absl::Span<const uint8_t> bytes = view->bytes;
    w.AddTensor(info.name, info.dims, info.ggml_type, bytes.size(),
                [bytes](std::vector<uint8_t>* out) {
                  out->assign(bytes.begin(), bytes.end());
                  return absl::OkStatus();
                });
  }
  const int64_t n = static_cast<int64_t>(values.size());
  w.AddTensor(name, {n}, /*F32*/ 0, n * 4, [values](std::vector<uint8_t>* out) {
    out->resize(values.size() * 4);
    std::memcpy(out->data(), values.data(), out->size());
    return absl::OkStatus();
  });
  return w.Write(to);
}

// rope_freqs.weight of the wrong length or with a non-positive factor, and one of Phi-3's LongRoPE
// factor tensors without its twin, are refused naming the tensor (a mixtral twin: llama arch,
// rope_dim 16 -> 8 pairs).
TEST(RopeFactorsTest, BadRopeFreqsAndLongropeAreRefused) {
  const std::string dir = ::testing::TempDir();
  const std::string twin = kModels + "mixtral/model.gguf";
  struct Case {
    std::string tensor;
    std::vector<float> values;
    std::string message;
  } cases[] = {
      {"rope_freqs.weight", std::vector<float>(5, 1.0f), "rope_freqs.weight"},
      {"rope_freqs.weight", {1, 1, 1, 1, 1, 1, 1, -2}, "positive finite"},
      {"rope_factors_long.weight", std::vector<float>(8, 1.0f), "rope_factors_short.weight"},
  };
  int i = 0;
  for (const Case& c : cases) {
    const std::string path = absl::StrCat(dir, "/rope_case_", i++, ".gguf");
    ASSERT_TRUE(CopyGgufWithTensor(twin, path, c.tensor, c.values).ok());
    auto src = ModelSource::Open(path);
    ASSERT_FALSE(src.ok()) << c.tensor;
    EXPECT_TRUE(absl::StrContains(src.status().message(), c.message)) << src.status();
  }
  // Eight positive factors load and divide the frequencies.
  const std::string ok_path = dir + "/rope_ok.gguf";
  ASSERT_TRUE(CopyGgufWithTensor(twin, ok_path, "rope_freqs.weight",
                                 {1, 1, 2, 2, 4, 4, 8, 8}).ok());
  auto plain = ModelSource::Open(twin);
  auto scaled = ModelSource::Open(ok_path);
  ASSERT_TRUE(plain.ok() && scaled.ok()) << scaled.status();
  const auto a = RopeInverseFrequencies(plain->config), b = RopeInverseFrequencies(scaled->config);
  ASSERT_EQ(a.size(), 8u);
  EXPECT_EQ(b[7], a[7] / 8);
  EXPECT_EQ(b[0], a[0]);
}

// The store minus one tensor.
class HidingStore : public io::TensorStore {
 public:
  HidingStore(const io::TensorStore& base, std::string hidden)
      : base_(base), hidden_(std::move(hidden)) {}
  io::ContainerKind kind() const override { return base_.kind(); }
  const std::vector<std::string>& names() const override { return base_.names(); }
  bool Contains(absl::string_view name) const override {
    return name != hidden_ && base_.Contains(name);
  }
  absl::StatusOr<io::TensorView> Get(absl::string_view name) const override {
    if (name == hidden_) return absl::NotFoundError(std::string(name));
    return base_.Get(name);
  }
  std::vector<std::pair<std::string, std::string>> DescribeMetadata() const override {
    return base_.DescribeMetadata();
  }

 private:
  const io::TensorStore& base_;
  std::string hidden_;
};

TEST(MoeLoadTest, MissingExpertOrRouterIsNamed) {
  for (const std::string& path : {kModels + "mixtral", kModels + "mixtral/model.gguf"}) {
    auto src = ModelSource::Open(path);
    ASSERT_TRUE(src.ok()) << src.status();
    const WeightNames names(src->naming);
    auto factory = MakeDenseLinearFactory(nullptr);
    for (const std::string& hidden : {names.Expert(1, 3, LayerTensor::kUp, MoeNaming::kMixtral),
                                      names.Router(0, MoeNaming::kMixtral)}) {
      HidingStore store(*src->store, hidden);
      auto model = DecoderModel::Load(src->config, store, src->naming, *factory, nullptr);
      ASSERT_FALSE(model.ok()) << hidden;
      EXPECT_TRUE(absl::StrContains(model.status().message(), hidden)) << model.status();
    }
  }
  // gpt-oss (HF: experts read one by one from the stacks; GGUF: stacked biases sliced) and Granite
  // MoE from HF: a missing sink, bias, router bias or expert slab is named.
  const std::pair<std::string, std::vector<std::string>> more[] = {
      {kModels + "gpt_oss",
       {"model.layers.1.self_attn.sinks", "model.layers.0.self_attn.o_proj.bias",
        "model.layers.1.mlp.router.bias", "model.layers.0.mlp.experts.2.gate_up_proj.bias",
        "model.layers.1.mlp.experts.3.down_proj.weight"}},
      {kModels + "gpt_oss/model.gguf",
       {"blk.1.attn_sinks.weight", "blk.0.attn_output.bias", "blk.1.ffn_gate_inp.bias",
        "blk.0.ffn_up.2.bias", "blk.1.ffn_down.3.weight"}},
      {kModels + "granitemoe",
       {"model.layers.1.block_sparse_moe.experts.2.input_linear.weight",
        "model.layers.0.block_sparse_moe.router.layer.weight"}}};
  for (const auto& [path, hidden_names] : more) {
    auto src = ModelSource::Open(path);
    ASSERT_TRUE(src.ok()) << src.status();
    auto factory = MakeDenseLinearFactory(nullptr);
    for (const std::string& hidden : hidden_names) {
      HidingStore store(*src->store, hidden);
      auto model = DecoderModel::Load(src->config, store, src->naming, *factory, nullptr);
      ASSERT_FALSE(model.ok()) << hidden;
      EXPECT_TRUE(absl::StrContains(model.status().message(), hidden)) << model.status();
    }
  }
  EXPECT_EQ(WeightNames(NamingScheme::kHf).Expert(1, 3, LayerTensor::kUp, MoeNaming::kMixtral),
            "model.layers.1.block_sparse_moe.experts.3.w3.weight");
  EXPECT_EQ(WeightNames(NamingScheme::kGguf).Expert(1, 3, LayerTensor::kUp, MoeNaming::kMixtral),
            "blk.1.ffn_up.3.weight");
  EXPECT_EQ(WeightNames::ExpertModuleName(2, 7, LayerTensor::kDown, MoeNaming::kQwen),
            "model.layers.2.mlp.experts.7.down_proj");
}

}  // namespace
}  // namespace tessera::model
