// tessera synth's K-quant paths (engine/model/ggml_quantize.h, synth_model.h): the port of ggml's
// quantize_row_q6_K_ref (6-bit symmetric codes per 16 values with searched scales: it must land
// well inside Q4_K's error on the same rows, map each super-block's largest scale onto the int8
// code −128 as ggml does, and decode all-zero sub-blocks and rows to zeros), quantize_row_q5_K_ref
// (Q4_K's search with 5-bit codes: between Q4_K and Q6_K in error, an all-zero sub-block decoded
// to zeros), and the Q4_K_M / Q5_K_M mixes of llama.cpp's llama_tensor_get_type (output.weight,
// and attn_v / ffn_down of the layers use_more_bits picks, in Q6_K; everything else Q4_K / Q5_K);
// and quantize_row_mxfp4_ref (gpt-oss GGUFs' experts: each block's exponent from its largest
// magnitude, each value the nearest point of its block's grid).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "engine/io/gguf_file.h"
#include "engine/model/ggml_quantize.h"
#include "engine/model/synth_model.h"
#include "gtest/gtest.h"
#include "kernels/cpu/ggml_dequant.h"

namespace tessera::model {
namespace {

using kernels::cpu::DequantizeGgmlBlocks;
using kernels::cpu::GgmlBlockType;

double Rms(const float* a, const float* b, int64_t n) {
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
  return std::sqrt(sum / n);
}

TEST(SynthQ6KTest, QuantizerIsFarCloserThanQ4KAndHandlesEdgeBlocks) {
  std::mt19937 rng(11);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  constexpr int64_t kCols = 1024;
  std::vector<float> row(kCols), back(kCols), back4(kCols);
  std::vector<uint8_t> q(kCols / 256 * 210), q4(kCols / 256 * 144);
  for (float scale : {0.02f, 1.0f, 30.0f}) {
    for (int r = 0; r < 16; ++r) {
      for (float& v : row) v = scale * normal(rng);
      for (int i = 512; i < 528; ++i) row[i] = 0.0f;  // an all-zero sub-block
      QuantizeQ6_K(row.data(), kCols, q.data());
      DequantizeGgmlBlocks(GgmlBlockType::kQ6_K, q.data(), kCols / 256, back.data());
      for (int i = 512; i < 528; ++i) ASSERT_EQ(back[i], 0.0f) << i;
      for (int64_t b = 0; b < kCols / 256; ++b) {
        const auto* sc = reinterpret_cast<const int8_t*>(q.data() + b * 210 + 192);
        bool has_min_code = false;
        for (int j = 0; j < 16; ++j) has_min_code |= sc[j] == -128;
        EXPECT_TRUE(has_min_code) << "super-block " << b;
      }
      QuantizeQ4_K(row.data(), kCols, q4.data());
      DequantizeGgmlBlocks(GgmlBlockType::kQ4_K, q4.data(), kCols / 256, back4.data());
      EXPECT_LT(Rms(row.data(), back.data(), kCols), 0.35 * Rms(row.data(), back4.data(), kCols))
          << "scale " << scale;
    }
  }
  std::fill(row.begin(), row.end(), 0.0f);
  QuantizeQ6_K(row.data(), kCols, q.data());
  for (uint8_t byte : q) ASSERT_EQ(byte, 0);
}

TEST(SynthQ6KTest, Q5KQuantizerSitsBetweenQ4KAndQ6K) {
  std::mt19937 rng(13);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  constexpr int64_t kCols = 1024;
  std::vector<float> row(kCols), back(kCols);
  std::vector<uint8_t> q4(kCols / 256 * 144), q5(kCols / 256 * 176), q6(kCols / 256 * 210);
  for (float scale : {0.02f, 1.0f, 30.0f}) {
    for (int r = 0; r < 16; ++r) {
      for (float& v : row) v = scale * normal(rng);
      for (int i = 256; i < 288; ++i) row[i] = 0.0f;  // an all-zero sub-block
      QuantizeQ4_K(row.data(), kCols, q4.data());
      QuantizeQ5_K(row.data(), kCols, q5.data());
      QuantizeQ6_K(row.data(), kCols, q6.data());
      DequantizeGgmlBlocks(GgmlBlockType::kQ5_K, q5.data(), kCols / 256, back.data());
      for (int i = 256; i < 288; ++i) ASSERT_EQ(back[i], 0.0f) << i;
      const double e5 = Rms(row.data(), back.data(), kCols);
      DequantizeGgmlBlocks(GgmlBlockType::kQ4_K, q4.data(), kCols / 256, back.data());
      const double e4 = Rms(row.data(), back.data(), kCols);
      DequantizeGgmlBlocks(GgmlBlockType::kQ6_K, q6.data(), kCols / 256, back.data());
      const double e6 = Rms(row.data(), back.data(), kCols);
      EXPECT_LT(e5, 0.7 * e4) << "scale " << scale;  // one more bit: about half the error
      EXPECT_GT(e5, e6) << "scale " << scale;
    }
  }
}

// The tensors of an 8-layer model that llama.cpp's Q4_K_M / Q5_K_M put in Q6_K.
const std::set<std::string>& MixQ6KTensors() {
  // use_more_bits(i, 8): i < 1, i >= 7, or (i − 1) % 3 == 2.
  static const std::set<std::string> names = {
      "output.weight",         "blk.0.attn_v.weight",   "blk.3.attn_v.weight",
      "blk.6.attn_v.weight",   "blk.7.attn_v.weight",   "blk.0.ffn_down.weight",
      "blk.3.ffn_down.weight", "blk.6.ffn_down.weight", "blk.7.ffn_down.weight"};
  return names;
}

class SynthKMixTest : public ::testing::TestWithParam<std::pair<const char*, uint32_t>> {};

TEST_P(SynthKMixTest, PutsLlamaCppsTensorsInQ6K) {
  const auto [type, base_ggml_type] = GetParam();
  SynthShape s;
  s.name = "kmix-test";
  s.arch = "llama";
  s.hidden = 256, s.layers = 8, s.heads = 4, s.kv_heads = 2, s.head_dim = 64, s.ffn = 512;
  s.vocab = 320, s.context = 128;
  SynthOptions o;
  o.type = type;
  const std::string path = ::testing::TempDir() + "/synth_" + type + "_mix.gguf";
  ASSERT_TRUE(WriteSynthGguf(s, o, path).ok());
  auto file = io::GgufFile::Open(path);
  ASSERT_TRUE(file.ok()) << file.status();
  auto file_type = (*file)->metadata().GetUint("general.file_type");
  ASSERT_TRUE(file_type.ok());
  EXPECT_EQ(*file_type, base_ggml_type == 12u ? 15u : 17u);  // MOSTLY_Q4_K_M / MOSTLY_Q5_K_M
  int q6_seen = 0;
  for (const io::GgufTensorInfo& info : (*file)->tensor_infos()) {
    if (info.dims.size() == 1) continue;  // norms stay F32
    const bool want_q6 = MixQ6KTensors().count(info.name) != 0;
    EXPECT_EQ(info.ggml_type, want_q6 ? 14u : base_ggml_type) << info.name;  // 14: GGML_TYPE_Q6_K
    q6_seen += want_q6;
    const int64_t block_bytes = want_q6 ? 210 : base_ggml_type == 12u ? 144 : 176;
    auto view = (*file)->Get(info.name);
    ASSERT_TRUE(view.ok()) << info.name;
    EXPECT_EQ(static_cast<int64_t>(view->bytes.size()),
              info.dims[1] * info.dims[0] / 256 * block_bytes);
  }
  EXPECT_EQ(q6_seen, 9);
}

TEST(SynthMxfp4Test, QuantizerPicksTheExponentAndTheNearestCodes) {
  std::mt19937 rng(11);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  constexpr int64_t kCols = 256;
  std::vector<float> row(kCols), back(kCols);
  std::vector<uint8_t> q(kCols / 32 * 17);
  static constexpr float kGrid[8] = {0, 1, 2, 3, 4, 6, 8, 12};  // kvalues_mxfp4's magnitudes
  for (float scale : {1e-3f, 0.02f, 1.0f, 300.0f}) {
    for (float& v : row) v = scale * normal(rng);
    for (int i = 32; i < 64; ++i) row[i] = 0.0f;  // an all-zero block: exponent byte 0
    row[70] = 4.0f;  // a power of two as the block's largest: floor(log2) exact (d = 0.5)
    row[71] = 0.25f, row[72] = 1.25f, row[73] = -2.5f;  // half-way between codes at d = 0.5
    for (int i = 64; i < 96; ++i) row[i] = std::clamp(row[i], -3.9f, 3.9f);
    QuantizeMxfp4(row.data(), kCols, q.data());
    DequantizeGgmlBlocks(GgmlBlockType::kMxfp4, q.data(), kCols / 32, back.data());
    for (int64_t b = 0; b < kCols / 32; ++b) {
      float amax = 0;
      for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(row[b * 32 + j]));
      const int e = amax > 0 ? static_cast<int>(std::floor(std::log2(amax))) - 2 + 127 : 0;
      ASSERT_EQ(q[b * 17], e) << "block " << b << " scale " << scale;
      const float d = std::ldexp(1.0f, e - 128);
      for (int j = 0; j < 32; ++j) {
        const float x = row[b * 32 + j];
        float best = INFINITY;
        for (float g : kGrid) best = std::min({best, std::fabs(g * d - x), std::fabs(-g * d - x)});
        ASSERT_EQ(std::fabs(back[b * 32 + j] - x), best) << "value " << b * 32 + j;
        // best_index_mxfp4 keeps the first code of equal error: +0 (code 0) for zeros, the
        // smaller magnitude of a tie between two positive codes.
        const int code = (q[b * 17 + 1 + j % 16] >> (j < 16 ? 0 : 4)) & 0xF;
        int first = 0;
        for (int c = 0; c < 16; ++c) {
          const float g = c < 8 ? kGrid[c] : -kGrid[c - 8];
          if (std::fabs(g * d - x) == best) {
            first = c;
            break;
          }
        }
        ASSERT_EQ(code, first) << "value " << b * 32 + j << " x " << x;
      }
    }
  }
}

// A tied model has no output.weight: llama.cpp then gives token_embd.weight (the output matrix)
// Q6_K.
TEST(SynthQ6KTest, TiedEmbeddingIsTheQ6KOutput) {
  SynthShape s;
  s.name = "kmix-tied-test";
  s.arch = "llama";
  s.hidden = 256, s.layers = 2, s.heads = 4, s.kv_heads = 2, s.head_dim = 64, s.ffn = 512;
  s.vocab = 320, s.context = 128;
  s.tied_embeddings = true;
  SynthOptions o;
  o.type = "Q4_K_M";
  const std::string path = ::testing::TempDir() + "/synth_tied_mix.gguf";
  ASSERT_TRUE(WriteSynthGguf(s, o, path).ok());
  auto file = io::GgufFile::Open(path);
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_EQ((*file)->FindInfo("output.weight"), nullptr);
  const io::GgufTensorInfo* embd = (*file)->FindInfo("token_embd.weight");
  ASSERT_NE(embd, nullptr);
  EXPECT_EQ(embd->ggml_type, 14u);  // GGML_TYPE_Q6_K
}

INSTANTIATE_TEST_SUITE_P(Mixes, SynthKMixTest,
                         ::testing::Values(std::pair<const char*, uint32_t>{"Q4_K_M", 12u},
                                           std::pair<const char*, uint32_t>{"Q5_K_M", 13u}));

}  // namespace
}  // namespace tessera::model
