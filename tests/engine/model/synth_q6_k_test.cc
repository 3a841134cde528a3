// tessera synth's Q6_K path (engine/model/synth_model.h): the port of ggml's quantize_row_q6_K_ref
// (6-bit symmetric codes per 16 values with searched scales: it must land well inside Q4_K's error
// on the same rows, map each super-block's largest scale onto the int8 code −128 as ggml does, and
// decode all-zero sub-blocks and rows to zeros), and the Q4_K_M mix of llama.cpp's
// llama_tensor_get_type (output.weight, and attn_v / ffn_down of the layers use_more_bits picks, in
// Q6_K; everything else Q4_K; file_type MOSTLY_Q4_K_M).
#include <cmath>
#include <cstring>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "engine/io/gguf_file.h"
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

TEST(SynthQ6KTest, Q4KMPutsLlamaCppsTensorsInQ6K) {
  SynthShape s;
  s.name = "q4km-mix-test";
  s.arch = "llama";
  s.hidden = 256, s.layers = 8, s.heads = 4, s.kv_heads = 2, s.head_dim = 64, s.ffn = 512;
  s.vocab = 320, s.context = 128;
  SynthOptions o;
  o.type = "Q4_K_M";
  const std::string path = ::testing::TempDir() + "/synth_q4km_mix.gguf";
  ASSERT_TRUE(WriteSynthGguf(s, o, path).ok());
  auto file = io::GgufFile::Open(path);
  ASSERT_TRUE(file.ok()) << file.status();
  auto file_type = (*file)->metadata().GetUint("general.file_type");
  ASSERT_TRUE(file_type.ok());
  EXPECT_EQ(*file_type, 15u);  // MOSTLY_Q4_K_M
  // use_more_bits(i, 8): i < 1, i >= 7, or (i − 1) % 3 == 2.
  const std::set<std::string> q6 = {"output.weight",         "blk.0.attn_v.weight",
                                    "blk.3.attn_v.weight",   "blk.6.attn_v.weight",
                                    "blk.7.attn_v.weight",   "blk.0.ffn_down.weight",
                                    "blk.3.ffn_down.weight", "blk.6.ffn_down.weight",
                                    "blk.7.ffn_down.weight"};
  int q6_seen = 0;
  for (const io::GgufTensorInfo& info : (*file)->tensor_infos()) {
    if (info.dims.size() == 1) continue;  // norms stay F32
    const bool want_q6 = q6.count(info.name) != 0;
    EXPECT_EQ(info.ggml_type, want_q6 ? 14u : 12u) << info.name;  // GGML_TYPE_Q6_K / Q4_K
    q6_seen += want_q6;
    if (want_q6) {
      auto view = (*file)->Get(info.name);
      ASSERT_TRUE(view.ok()) << info.name;
      EXPECT_EQ(static_cast<int64_t>(view->bytes.size()), info.dims[1] * info.dims[0] / 256 * 210);
    }
  }
  EXPECT_EQ(q6_seen, 9);
}

}  // namespace
}  // namespace tessera::model
