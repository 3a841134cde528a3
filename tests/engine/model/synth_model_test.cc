// tessera synth (engine/model/synth_model.h), the Q4_K path: ggml's quantize_row_q4_K_ref port
// and the per-tensor fallback for rows that 256-value super-blocks do not tile. Q4_K is checked
// against the float source (a synth F32 file of the same shape and seed holds it exactly, since
// each row's values depend only on the seed, the tensor name and the row), against Q4_0 on the
// same rows (Q4_K spends 4.5 bits per weight on an affine code with searched scales, Q4_0 4.5 on
// an abs-max symmetric one, so Q4_K must come out closer), and by running the model.
#include "engine/model/ggml_quantize.h"
#include "engine/model/synth_model.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "engine/io/gguf_file.h"
#include "engine/model/decoder_model.h"
#include "engine/model/model_source.h"
#include "engine/tokenizer/tokenizer.h"
#include "gtest/gtest.h"
#include "kernels/cpu/ggml_dequant.h"
#include "kernels/numeric/half.h"
#include "tests/engine/model/kv_cache_format_test_util.h"

namespace tessera::model {
namespace {

using kernels::cpu::DequantizeGgmlBlocks;
using kernels::cpu::GgmlBlockType;

constexpr uint32_t kGgmlF32 = 0, kGgmlQ8_0 = 8, kGgmlQ4_K = 12;

// A tiny llama: every matrix row is 256 values except ffn_down's (ffn = 384 = 12 * 32), which
// exercises the Q4_K -> Q8_0 fallback.
SynthShape TinyShape() {
  SynthShape s;
  s.name = "tiny-test";
  s.arch = "llama";
  s.hidden = 256, s.layers = 2, s.heads = 4, s.kv_heads = 2, s.head_dim = 64, s.ffn = 384;
  s.vocab = 320, s.context = 128;
  return s;
}

float Half(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return numeric::HalfToFloat(h);
}

double Rms(const float* a, const float* b, int64_t n) {
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
  return std::sqrt(sum / n);
}

// RMS error of ggml's Q4_0 on the same row, the baseline Q4_K must beat.
double Q4_0Rms(const std::vector<float>& row) {
  const int64_t blocks = static_cast<int64_t>(row.size()) / 32;
  std::vector<uint8_t> q(blocks * 18);
  std::vector<float> back(row.size());
  QuantizeQ4_0(row.data(), row.size(), q.data());
  DequantizeGgmlBlocks(GgmlBlockType::kQ4_0, q.data(), blocks, back.data());
  return Rms(row.data(), back.data(), row.size());
}

// Checks the fields of every super-block of a Q4_K row: finite non-negative f16 scales, and the
// largest sub-block scale mapped onto the top 6-bit code 63, as quantize_row_q4_K_ref does.
void ExpectQ4KFieldsInRange(const uint8_t* row, int64_t blocks) {
  for (int64_t b = 0; b < blocks; ++b, row += 144) {
    const float d = Half(row), dmin = Half(row + 2);
    ASSERT_TRUE(std::isfinite(d) && d >= 0) << "block " << b << " d " << d;
    ASSERT_TRUE(std::isfinite(dmin) && dmin >= 0) << "block " << b << " dmin " << dmin;
    const uint8_t* q = row + 4;
    int max_sc = 0;
    for (int j = 0; j < 8; ++j) {
      const int sc = j < 4 ? (q[j] & 63) : ((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
      max_sc = std::max(max_sc, sc);
    }
    if (d > 0) {
      EXPECT_EQ(max_sc, 63) << "block " << b;
    }
  }
}

TEST(SynthModelTest, Q4KQuantizerBeatsQ4_0AndHandlesEdgeBlocks) {
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  constexpr int64_t kCols = 1024;
  std::vector<float> row(kCols), back(kCols);
  std::vector<uint8_t> q(kCols / 256 * 144);
  for (float scale : {0.02f, 1.0f, 30.0f}) {
    for (int r = 0; r < 16; ++r) {
      for (float& v : row) v = scale * normal(rng);
      // Edge cases in the last super-block: an all-zero sub-block and an all-positive one
      // (make_qkx2_quants clamps the min to 0 there).
      for (int i = 768; i < 800; ++i) row[i] = 0.0f;
      for (int i = 800; i < 832; ++i) row[i] = std::fabs(row[i]) + scale;
      QuantizeQ4_K(row.data(), kCols, q.data());
      ASSERT_NO_FATAL_FAILURE(ExpectQ4KFieldsInRange(q.data(), kCols / 256));
      DequantizeGgmlBlocks(GgmlBlockType::kQ4_K, q.data(), kCols / 256, back.data());
      for (int i = 768; i < 800; ++i) ASSERT_EQ(back[i], 0.0f) << i;
      EXPECT_LT(Rms(row.data(), back.data(), kCols), Q4_0Rms(row)) << "scale " << scale;
    }
  }
  // An all-zero row gives all-zero blocks.
  std::fill(row.begin(), row.end(), 0.0f);
  QuantizeQ4_K(row.data(), kCols, q.data());
  for (uint8_t byte : q) ASSERT_EQ(byte, 0);
}

TEST(SynthModelTest, NamedShapesTileQ4KEverywhere) {
  // Every matrix row of the named shapes is hidden, heads * head_dim or ffn values long. Gemma 3
  // 1B's hidden 1152 is 36 Q4_0 / Q8_0 blocks but 4.5 Q4_K blocks: its Q4_K files store those
  // rows as Q8_0 (llama.cpp's own Q4_K files of it fall back too).
  for (const std::string& name : SynthShapeNames()) {
    auto s = FindSynthShape(name);
    ASSERT_TRUE(s.ok()) << s.status();
    // gpt-oss-20b's 2880 is 90 blocks of 32 (MXFP4, Q8_0, Q4_0) and falls back under Q4_K too.
    const int64_t tile = name == "gemma-3-1b" || name == "gpt-oss-20b" ? 32 : 256;
    EXPECT_EQ(s->hidden % tile, 0) << name;
    EXPECT_EQ(s->heads * s->head_dim % 256, 0) << name;
    EXPECT_EQ(s->ffn % tile, 0) << name;
  }
}

using kv_test::Loaded;

// An f32-cache model (kv_test::Load's other formats are not what these tests compare).
void Load(const std::string& path, kernels::cpu::ThreadPool* pool, Loaded& out) {
  kv_test::Load(path, runtime::KvCacheFormat::kF32, pool, out);
}

// Cosine similarity of two logit vectors of one size, every value finite (test failures named).
double LogitCosine(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  double dot = 0, na = 0, nb = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    EXPECT_TRUE(std::isfinite(a[i]) && std::isfinite(b[i])) << i;
    dot += double(a[i]) * b[i];
    na += double(a[i]) * a[i];
    nb += double(b[i]) * b[i];
  }
  return dot / std::sqrt(na * nb);
}

// Logits of the last position after prefilling `ids`, then `extra` greedy decode steps
// (their argmaxes appended to `generated`).
std::vector<float> PrefillAndDecode(DecoderModel& model, const std::vector<int32_t>& ids,
                                    int extra, std::vector<int32_t>* generated) {
  const auto& c = model.config();
  runtime::KvCache cache(c.num_layers, c.num_kv_heads, c.head_dim, 16, 8, true,
                         model.kv_cache_format());
  runtime::SequenceKv seq;
  std::vector<float> logits, first;
  std::vector<int32_t> next = ids;
  for (int step = 0; step <= extra; ++step) {
    SequenceChunk chunk{&seq, next, false, true};
    auto s = model.Forward({&chunk, 1}, cache, &logits);
    EXPECT_TRUE(s.ok()) << s;
    if (!s.ok()) break;
    if (step == 0) first = logits;
    const int32_t best =
        static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
    generated->push_back(best);
    next = {best};
  }
  return first;
}

TEST(SynthModelTest, Q4KFileLoadsMatchesSourceAndRuns) {
  const SynthShape shape = TinyShape();
  const std::string dir = testing::TempDir();
  const std::string f32_path = dir + "/synth_tiny_f32.gguf";
  const std::string q4k_path = dir + "/synth_tiny_q4k.gguf";
  SynthOptions o;
  o.type = "F32";
  ASSERT_TRUE(WriteSynthGguf(shape, o, f32_path).ok());
  o.type = "Q4_K";
  ASSERT_TRUE(WriteSynthGguf(shape, o, q4k_path).ok());

  auto f32 = io::GgufFile::Open(f32_path);
  auto q4k = io::GgufFile::Open(q4k_path);
  ASSERT_TRUE(f32.ok()) << f32.status();
  ASSERT_TRUE(q4k.ok()) << q4k.status();
  auto file_type = (*q4k)->metadata().GetUint("general.file_type");
  ASSERT_TRUE(file_type.ok()) << file_type.status();
  EXPECT_EQ(*file_type, 15u);  // MOSTLY_Q4_K_M, as llama-quantize --pure writes it
  int q4k_tensors = 0, q8_tensors = 0;
  double worst_ratio = 0;
  for (const io::GgufTensorInfo& info : (*q4k)->tensor_infos()) {
    const io::GgufTensorInfo* src_info = (*f32)->FindInfo(info.name);
    ASSERT_NE(src_info, nullptr) << info.name;
    const bool is_norm = info.dims.size() == 1;
    const bool is_down = info.name.find("ffn_down") != std::string::npos;
    const uint32_t want = is_norm ? kGgmlF32 : is_down ? kGgmlQ8_0 : kGgmlQ4_K;
    ASSERT_EQ(info.ggml_type, want) << info.name;
    if (is_norm) continue;
    auto view = (*q4k)->Get(info.name);
    auto src_view = (*f32)->Get(info.name);
    ASSERT_TRUE(view.ok() && src_view.ok()) << info.name;
    const int64_t cols = info.dims[0], rows = info.dims[1];
    const GgmlBlockType type = is_down ? GgmlBlockType::kQ8_0 : GgmlBlockType::kQ4_K;
    const auto block = kernels::cpu::GetGgmlBlockInfo(type);
    const int64_t row_bytes = cols / block.elements * block.bytes;
    ASSERT_EQ(static_cast<int64_t>(view->bytes.size()), rows * row_bytes) << info.name;
    std::vector<float> src(cols), back(cols);
    for (int64_t r = 0; r < rows; ++r) {
      std::memcpy(src.data(), src_view->bytes.data() + r * cols * 4, cols * 4);
      const uint8_t* qrow = view->bytes.data() + r * row_bytes;
      DequantizeGgmlBlocks(type, qrow, cols / block.elements, back.data());
      const double rms = Rms(src.data(), back.data(), cols);
      if (is_down) {
        ASSERT_LT(rms, 0.02 * 0.01) << info.name << " row " << r;  // Q8_0: well under 1% of σ
        continue;
      }
      ASSERT_NO_FATAL_FAILURE(ExpectQ4KFieldsInRange(qrow, cols / 256));
      const double q40 = Q4_0Rms(src);
      ASSERT_LT(rms, q40) << info.name << " row " << r;
      worst_ratio = std::max(worst_ratio, rms / q40);
    }
    (is_down ? q8_tensors : q4k_tensors) += 1;
  }
  EXPECT_EQ(q4k_tensors, 2 + 6 * shape.layers);  // token_embd, output, q k v o gate up
  EXPECT_EQ(q8_tensors, shape.layers);
  RecordProperty("worst_q4k_over_q4_0_rms", std::to_string(worst_ratio));

  // Both files run; the Q4_K model's logits follow the F32 model's.
  kernels::cpu::ThreadPool pool(2);
  Loaded a, b;
  ASSERT_NO_FATAL_FAILURE(Load(f32_path, &pool, a));
  ASSERT_NO_FATAL_FAILURE(Load(q4k_path, &pool, b));
  const std::vector<int32_t> prompt = {1, 300, 17, 42, 99, 250};
  std::vector<int32_t> gen_a, gen_b;
  const std::vector<float> la = PrefillAndDecode(*a.model, prompt, 8, &gen_a);
  const std::vector<float> lb = PrefillAndDecode(*b.model, prompt, 8, &gen_b);
  ASSERT_EQ(la.size(), static_cast<size_t>(shape.vocab));
  ASSERT_EQ(lb.size(), la.size());
  ASSERT_EQ(gen_b.size(), 9u);
  for (int32_t t : gen_b) EXPECT_TRUE(t >= 0 && t < shape.vocab) << t;
  const double cosine = LogitCosine(la, lb);
  EXPECT_GT(cosine, 0.9);
  RecordProperty("q4k_vs_f32_logit_cosine", std::to_string(cosine));
}

// A tiny gpt-oss shape as synth writes gpt-oss-20b: attention sinks, q/k/v/o, router and expert
// biases, the MLP norm named post_attention_norm, windows on the even layers, YaRN. Its MXFP4 file
// (experts MXFP4, the rest Q8_0, as gpt-oss GGUFs ship) loads the experts as MXFP4 layers and
// follows the F32 file.
TEST(SynthModelTest, GptOssShapeLoadsMxfp4ExpertsAndRuns) {
  SynthShape s;
  s.name = "tiny-gpt-oss";
  s.arch = "gpt-oss";
  s.hidden = 64, s.layers = 2, s.heads = 4, s.kv_heads = 2, s.head_dim = 16, s.ffn = 64;
  s.experts = 4, s.experts_used = 2, s.expert_ffn = 64, s.vocab = 320, s.context = 128;
  s.rope_theta = 150000.0, s.sliding_window = 4, s.yarn_factor = 4.0, s.yarn_original_context = 32;
  const std::string dir = testing::TempDir();
  SynthOptions o;
  o.type = "F32";
  ASSERT_TRUE(WriteSynthGguf(s, o, dir + "/synth_gpt_oss_f32.gguf").ok());
  o.type = "MXFP4";
  ASSERT_TRUE(WriteSynthGguf(s, o, dir + "/synth_gpt_oss_mxfp4.gguf").ok());
  auto file = io::GgufFile::Open(dir + "/synth_gpt_oss_mxfp4.gguf");
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_EQ((*file)->FindInfo("blk.1.ffn_up_exps.weight")->ggml_type, 39u);  // MXFP4
  EXPECT_EQ((*file)->FindInfo("blk.1.attn_q.weight")->ggml_type, 8u);        // Q8_0
  EXPECT_EQ((*file)->FindInfo("blk.0.ffn_down_exps.bias")->dims, (std::vector<int64_t>{64, 4}));
  kernels::cpu::ThreadPool pool(2);
  Loaded a, b;
  ASSERT_NO_FATAL_FAILURE(Load(dir + "/synth_gpt_oss_f32.gguf", &pool, a));
  ASSERT_NO_FATAL_FAILURE(Load(dir + "/synth_gpt_oss_mxfp4.gguf", &pool, b));
  const ModelConfig& c = b.source.config;
  EXPECT_EQ(c.ArchitectureName(), "gpt_oss");
  EXPECT_TRUE(c.attention_sinks && c.moe_biases && c.o_proj_bias);
  EXPECT_TRUE(c.IsSlidingLayer(0));
  EXPECT_FALSE(c.IsSlidingLayer(1));
  EXPECT_EQ(c.rope_scaling.type, RopeScaling::Type::kYarn);
  EXPECT_FALSE(b.model->layers()[0].sinks.empty());
  const std::vector<int32_t> prompt = {1, 300, 17, 42, 99, 250, 7, 8, 9};
  std::vector<int32_t> gen_a, gen_b;
  const std::vector<float> la = PrefillAndDecode(*a.model, prompt, 4, &gen_a);
  const std::vector<float> lb = PrefillAndDecode(*b.model, prompt, 4, &gen_b);
  EXPECT_GT(LogitCosine(la, lb), 0.99);
}

}  // namespace
}  // namespace tessera::model

namespace tessera::model {
namespace {

// --format hf: the directory loads through the HF path, its matrices are the GGUF F32 file's
// values rounded to bf16 in the same [out, in] order, it runs, and its byte-level tokenizer
// round-trips text (multi-byte UTF-8 included).
TEST(SynthModelTest, HfDirectoryLoadsMatchesGgufAndTokenizes) {
  const SynthShape shape = TinyShape();
  const std::string dir = testing::TempDir() + "/synth_tiny_hf";
  const std::string f32_path = testing::TempDir() + "/synth_tiny_f32_for_hf.gguf";
  SynthOptions o;
  o.seed = 7;
  o.type = "F32";
  ASSERT_TRUE(WriteSynthGguf(shape, o, f32_path).ok());
  absl::Status st = WriteSynthHfDir(shape, o, dir);
  ASSERT_TRUE(st.ok()) << st;

  auto hf = ModelSource::Open(dir);
  ASSERT_TRUE(hf.ok()) << hf.status();
  EXPECT_EQ(hf->config.hidden_size, shape.hidden);
  EXPECT_EQ(hf->config.num_layers, shape.layers);
  EXPECT_EQ(hf->config.num_kv_heads, shape.kv_heads);
  EXPECT_EQ(hf->config.vocab_size, shape.vocab);
  auto gguf = io::GgufFile::Open(f32_path);
  ASSERT_TRUE(gguf.ok()) << gguf.status();
  for (auto [hf_name, gguf_name] :
       {std::pair{"model.layers.1.mlp.gate_proj.weight", "blk.1.ffn_gate.weight"},
        std::pair{"model.layers.0.self_attn.v_proj.weight", "blk.0.attn_v.weight"},
        std::pair{"lm_head.weight", "output.weight"}}) {
    auto a = hf->store->Get(hf_name);
    auto b = (*gguf)->Get(gguf_name);
    ASSERT_TRUE(a.ok() && b.ok()) << hf_name;
    ASSERT_EQ(a->dtype, io::DType::kBF16) << hf_name;
    ASSERT_EQ(a->bytes.size() * 2, b->bytes.size()) << hf_name;
    for (size_t i = 0; i < a->bytes.size() / 2; ++i) {
      uint16_t got;
      float want;
      std::memcpy(&got, a->bytes.data() + 2 * i, 2);
      std::memcpy(&want, b->bytes.data() + 4 * i, 4);
      ASSERT_EQ(got, numeric::FloatToBf16(want)) << hf_name << " element " << i;
    }
  }

  kernels::cpu::ThreadPool pool(2);
  Loaded m;
  ASSERT_NO_FATAL_FAILURE(Load(dir, &pool, m));
  std::vector<int32_t> generated;
  const std::vector<float> logits = PrefillAndDecode(*m.model, {1, 300, 17, 42}, 4, &generated);
  ASSERT_EQ(logits.size(), static_cast<size_t>(shape.vocab));
  for (float v : logits) ASSERT_TRUE(std::isfinite(v));

  auto tok = tokenizer::LoadHfTokenizer(dir);
  ASSERT_TRUE(tok.ok()) << tok.status();
  const std::string text = "Hello, wörld! 42";
  auto ids = (*tok)->Encode(text, false);
  ASSERT_TRUE(ids.ok()) << ids.status();
  EXPECT_EQ(ids->size(), text.size());  // no merges: one token per byte
  auto back = (*tok)->Decode(*ids, false);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, text);
}

}  // namespace
}  // namespace tessera::model

namespace tessera::model {
namespace {

// A tiny qwen3moe shape as synth writes the qwen3-30b-a3b one: experts stacked in
// blk.N.ffn_{gate,up,down}_exps (slab e holds the rows of the per-expert tensor name, so seeds
// do not depend on the stacking), an F32 router, expert metadata; the file loads as a qwen3_moe
// model and runs, Q8_0 following F32; --layers keeps the first layers and refuses more than the
// shape has.
TEST(SynthModelTest, MoeShapeStacksExpertsAndRuns) {
  SynthShape s;
  s.name = "tiny-moe";
  s.arch = "qwen3moe";
  s.hidden = 64, s.layers = 2, s.heads = 4, s.kv_heads = 2, s.head_dim = 32, s.ffn = 96;
  s.experts = 4, s.experts_used = 2, s.expert_ffn = 32, s.vocab = 320, s.context = 128;
  const std::string dir = testing::TempDir();
  SynthOptions o;
  o.type = "F32";
  ASSERT_TRUE(WriteSynthGguf(s, o, dir + "/synth_moe_f32.gguf").ok());
  o.type = "Q8_0";
  ASSERT_TRUE(WriteSynthGguf(s, o, dir + "/synth_moe_q8.gguf").ok());
  auto f32 = io::GgufFile::Open(dir + "/synth_moe_f32.gguf");
  ASSERT_TRUE(f32.ok()) << f32.status();
  const io::GgufTensorInfo* down = (*f32)->FindInfo("blk.1.ffn_down_exps.weight");
  ASSERT_NE(down, nullptr);
  EXPECT_EQ(down->dims, (std::vector<int64_t>{32, 64, 4}));
  const io::GgufTensorInfo* router = (*f32)->FindInfo("blk.0.ffn_gate_inp.weight");
  ASSERT_NE(router, nullptr);
  EXPECT_EQ(router->dims, (std::vector<int64_t>{64, 4}));
  EXPECT_EQ(router->ggml_type, kGgmlF32);
  auto view = (*f32)->Get("blk.1.ffn_down_exps.weight");
  ASSERT_TRUE(view.ok());
  std::vector<float> want(32), got(32);
  SynthMatrixRow(0, "blk.1.ffn_down.3.weight", 5, 32, want.data());
  std::memcpy(got.data(), view->bytes.data() + ((3 * 64) + 5) * 32 * 4, 32 * 4);
  EXPECT_EQ(got, want);

  kernels::cpu::ThreadPool pool(2);
  Loaded a, b;
  ASSERT_NO_FATAL_FAILURE(Load(dir + "/synth_moe_f32.gguf", &pool, a));
  ASSERT_NO_FATAL_FAILURE(Load(dir + "/synth_moe_q8.gguf", &pool, b));
  EXPECT_EQ(a.source.config.ArchitectureName(), "qwen3_moe");
  EXPECT_EQ(a.source.config.num_experts, 4);
  const std::vector<int32_t> prompt = {1, 300, 17, 42, 99, 250};
  std::vector<int32_t> gen_a, gen_b;
  const std::vector<float> la = PrefillAndDecode(*a.model, prompt, 4, &gen_a);
  const std::vector<float> lb = PrefillAndDecode(*b.model, prompt, 4, &gen_b);
  EXPECT_GT(LogitCosine(la, lb), 0.99);

  o.type = "F32";
  o.layers = 1;
  ASSERT_TRUE(WriteSynthGguf(s, o, dir + "/synth_moe_1l.gguf").ok());
  auto one = io::GgufFile::Open(dir + "/synth_moe_1l.gguf");
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(*(*one)->metadata().GetUint("qwen3moe.block_count"), 1u);
  o.layers = 3;
  EXPECT_FALSE(WriteSynthGguf(s, o, dir + "/synth_moe_3l.gguf").ok());
  EXPECT_EQ(WriteSynthHfDir(s, SynthOptions{}, dir + "/synth_moe_hf").code(),
            absl::StatusCode::kUnimplemented);
}

// A tiny gemma3 shape as synth writes gemma-3-1b: q/k norms, sandwich norms, a window on five of
// six layers; it loads as gemma3 with those layers sliding and runs past the window, Q8_0
// following F32. HF output is refused (GGUF only).
TEST(SynthModelTest, Gemma3ShapeSlidesAndRuns) {
  SynthShape s;
  s.name = "tiny-gemma3";
  s.arch = "gemma3";
  s.hidden = 64, s.layers = 7, s.heads = 4, s.kv_heads = 1, s.head_dim = 32, s.ffn = 96;
  s.vocab = 320, s.context = 128, s.rope_theta = 1e6, s.rms_eps = 1e-6, s.tied_embeddings = true;
  s.sliding_window = 4;
  const std::string dir = testing::TempDir();
  SynthOptions o;
  o.type = "F32";
  ASSERT_TRUE(WriteSynthGguf(s, o, dir + "/synth_gemma3_f32.gguf").ok());
  o.type = "Q8_0";
  ASSERT_TRUE(WriteSynthGguf(s, o, dir + "/synth_gemma3_q8.gguf").ok());
  kernels::cpu::ThreadPool pool(2);
  Loaded a, b;
  ASSERT_NO_FATAL_FAILURE(Load(dir + "/synth_gemma3_f32.gguf", &pool, a));
  ASSERT_NO_FATAL_FAILURE(Load(dir + "/synth_gemma3_q8.gguf", &pool, b));
  const ModelConfig& c = a.source.config;
  EXPECT_EQ(c.ArchitectureName(), "gemma3");
  EXPECT_EQ(c.sliding_window, 4);
  for (int64_t i = 0; i < 7; ++i) EXPECT_EQ(c.IsSlidingLayer(i), i != 5) << i;
  EXPECT_EQ(c.sliding_rope_theta, 10000.0);
  EXPECT_FALSE(a.model->layers()[0].attn_post_norm.empty());
  const std::vector<int32_t> prompt = {1, 300, 17, 42, 99, 250, 7, 8, 9};
  std::vector<int32_t> gen_a, gen_b;
  const std::vector<float> la = PrefillAndDecode(*a.model, prompt, 4, &gen_a);
  const std::vector<float> lb = PrefillAndDecode(*b.model, prompt, 4, &gen_b);
  EXPECT_GT(LogitCosine(la, lb), 0.99);
  EXPECT_EQ(WriteSynthHfDir(s, SynthOptions{}, dir + "/synth_gemma3_hf").code(),
            absl::StatusCode::kUnimplemented);
}

}  // namespace
}  // namespace tessera::model
