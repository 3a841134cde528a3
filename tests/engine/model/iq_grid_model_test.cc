// GGUF's grid types (IQ1_S, IQ1_M, IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S) and ternary types
// (TQ1_0, TQ2_0) through the whole model: a tiny llama from `tessera synth` whose every 256-wide
// matrix (the token embedding and the output included) is replaced by random blocks of one of the
// nine types, in turn, beside a
// twin GGUF that holds the same tensors as F32 values from the reference dequantizer
// (kernels/cpu/ggml_iq_dequant.h, equal to gguf-py bit for bit: tests/engine/io). With exact
// activations the grid-type model's logits equal the twin's (plain F32 matrices, no quantized
// kernel) within f32 summation order; with int8 activations (the GGUF default: the kIqGrid tiles)
// they follow them as int8 activation blocks allow. This is the loading, the plan, the
// embedding lookup and every tile and panel form of the grid types in one forward pass.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "engine/io/gguf_file.h"
#include "engine/io/gguf_writer.h"
#include "engine/model/decoder_model.h"
#include "engine/model/model_source.h"
#include "engine/model/synth_model.h"
#include "gtest/gtest.h"
#include "kernels/cpu/ggml_dequant.h"
#include "kernels/numeric/half.h"
#include "tests/engine/model/int8_activation_factory.h"
#include "tests/engine/model/kv_cache_format_test_util.h"
#include "tests/kernels/cpu/iq_grid_test_util.h"

namespace tessera::model {
namespace {

using kernels::cpu::GgmlBlockType;

constexpr uint32_t kGgmlF32 = 0;

SynthShape TinyShape() {
  SynthShape s;
  s.name = "tiny-iq-test";
  s.arch = "llama";
  s.hidden = 256, s.layers = 2, s.heads = 4, s.kv_heads = 2, s.head_dim = 64, s.ffn = 512;
  s.vocab = 320, s.context = 128;
  return s;
}

uint32_t GgmlId(GgmlBlockType t) {
  switch (t) {
    case GgmlBlockType::kIq2Xxs: return 16;
    case GgmlBlockType::kIq2Xs: return 17;
    case GgmlBlockType::kIq3Xxs: return 18;
    case GgmlBlockType::kIq1S: return 19;
    case GgmlBlockType::kIq3S: return 21;
    case GgmlBlockType::kIq2S: return 22;
    case GgmlBlockType::kTq1_0: return 34;
    case GgmlBlockType::kTq2_0: return 35;
    default: return 29;  // IQ1_M
  }
}

// Writes `grid_path` (the F32 file's 256-wide matrices as random grid-type blocks, types in turn)
// and `twin_path` (the same with those matrices as the reference's F32 values). Returns the types
// used.
std::set<GgmlBlockType> WriteGridAndTwin(const std::string& f32_path, const std::string& grid_path,
                                         const std::string& twin_path) {
  auto f = io::GgufFile::Open(f32_path);
  EXPECT_TRUE(f.ok()) << f.status();
  if (!f.ok()) return {};
  io::GgufWriter grid, twin;
  for (const io::GgufKeyValue& kv : (*f)->metadata().entries()) {
    grid.AddMetadata(kv.key, kv.value);
    twin.AddMetadata(kv.key, kv.value);
  }
  std::mt19937 rng(26);
  std::set<GgmlBlockType> used;
  int next = 0;
  for (const io::GgufTensorInfo& info : (*f)->tensor_infos()) {
    auto view = (*f)->Get(info.name);
    EXPECT_TRUE(view.ok());
    const std::vector<uint8_t> f32(view->bytes.begin(), view->bytes.end());
    if (info.dims.size() != 2 || info.dims[0] % 256 != 0) {
      for (io::GgufWriter* w : {&grid, &twin}) {
        w->AddTensor(info.name, info.dims, info.ggml_type, f32.size(),
                     [f32](std::vector<uint8_t>* out) {
                       *out = f32;
                       return absl::OkStatus();
                     });
      }
      continue;
    }
    const GgmlBlockType type =
        kernels::cpu::testing::kTableCodeTypes[next++ % std::size(kernels::cpu::testing::kTableCodeTypes)];
    used.insert(type);
    // Weights of about the synth's spread: |d·mult·v| up to ~0.1.
    const bool ternary = type == GgmlBlockType::kTq1_0 || type == GgmlBlockType::kTq2_0;
    const float d_max = ternary ? 5e-2f : type == GgmlBlockType::kIq3S ? 2e-4f : 1e-3f;
    const std::vector<uint8_t> blocks =
        kernels::cpu::testing::RandomIqGridBlocks(type, info.dims[1], info.dims[0], rng, d_max);
    std::vector<uint8_t> values(info.dims[0] * info.dims[1] * 4);
    kernels::cpu::DequantizeGgmlBlocks(type, blocks.data(), info.dims[0] * info.dims[1] / 256,
                                       reinterpret_cast<float*>(values.data()));
    grid.AddTensor(info.name, info.dims, GgmlId(type), blocks.size(),
                   [blocks](std::vector<uint8_t>* out) {
                     *out = blocks;
                     return absl::OkStatus();
                   });
    twin.AddTensor(info.name, info.dims, kGgmlF32, values.size(),
                   [values](std::vector<uint8_t>* out) {
                     *out = values;
                     return absl::OkStatus();
                   });
  }
  EXPECT_TRUE(grid.Write(grid_path).ok());
  EXPECT_TRUE(twin.Write(twin_path).ok());
  return used;
}

TEST(IqGridModelTest, LogitsEqualTheDequantizedTwin) {
  const std::string dir = ::testing::TempDir();
  const std::string f32_path = dir + "/iq_tiny_f32.gguf", grid_path = dir + "/iq_tiny_grid.gguf",
                    twin_path = dir + "/iq_tiny_twin.gguf";
  SynthOptions o;
  o.type = "F32";
  ASSERT_TRUE(WriteSynthGguf(TinyShape(), o, f32_path).ok());
  const std::set<GgmlBlockType> used = WriteGridAndTwin(f32_path, grid_path, twin_path);
  ASSERT_FALSE(HasFailure());
  EXPECT_EQ(used.size(), std::size(kernels::cpu::testing::kTableCodeTypes));

  kernels::cpu::ThreadPool pool(2);
  kv_test::Loaded grid, twin;
  ASSERT_NO_FATAL_FAILURE(kv_test::Load(grid_path, runtime::KvCacheFormat::kF32, &pool, grid));
  ASSERT_NO_FATAL_FAILURE(kv_test::Load(twin_path, runtime::KvCacheFormat::kF32, &pool, twin));
  const std::vector<int32_t> prompt = {1, 300, 17, 42, 99, 250, 7, 128};
  const std::vector<float> want = kv_test::AllLogits(*twin.model, prompt);
  const std::vector<float> got = kv_test::AllLogits(*grid.model, prompt);
  ASSERT_EQ(got.size(), want.size());
  ASSERT_EQ(want.size(), prompt.size() * TinyShape().vocab);
  double top = 0;
  for (const float v : want) top = std::max(top, std::abs(double(v)));
  ASSERT_GT(top, 0.0);
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_NEAR(got[i], want[i], 1e-4 * top) << "logit " << i;
  }

  // Int8 activations: the tiles, within the activations' rounding.
  kv_test::Loaded int8;
  auto src = ModelSource::Open(grid_path);
  ASSERT_TRUE(src.ok()) << src.status();
  int8.source = std::move(*src);
  int8.factory = std::make_unique<testing::Int8ActivationFactory>(&pool);
  auto model = DecoderModel::Load(int8.source.config, *int8.source.store, int8.source.naming,
                                  *int8.factory, &pool);
  ASSERT_TRUE(model.ok()) << model.status();
  const std::vector<float> q = kv_test::AllLogits(**model, prompt);
  double dot = 0, nq = 0, nw = 0, worst = 0;
  for (size_t i = 0; i < q.size(); ++i) {
    ASSERT_TRUE(std::isfinite(q[i])) << i;
    dot += double(q[i]) * want[i];
    nq += double(q[i]) * q[i];
    nw += double(want[i]) * want[i];
    worst = std::max(worst, std::abs(double(q[i]) - want[i]));
  }
  EXPECT_GT(worst, 0.0);  // the activations really were quantized
  EXPECT_GT(dot / std::sqrt(nq * nw), 0.999);
  RecordProperty("int8_worst_logit_error_over_max", std::to_string(worst / top));
}

}  // namespace
}  // namespace tessera::model
