// GGUF MXFP4 tensors (ggml type 39, gpt-oss GGUFs' experts) resolve as MXFP4 layers and convert
// to the layer's layout value for value: every code of every block, including the exponent bytes
// 0 and 1 (ggml's subnormal scales 2^-128 and 2^-127) and 254, dequantizes as ggml's
// dequantize_row_mxfp4 port does (kernels/cpu/ggml_dequant.h, itself equal to gguf-py's); the
// exponent byte 0xFF, 2^127 to ggml but NaN to OCP's E8M0, is refused naming the tensor.
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "engine/io/gguf_file.h"
#include "engine/io/gguf_writer.h"
#include "engine/quant/packed_weights.h"
#include "engine/quant/quant_config.h"
#include "gtest/gtest.h"
#include "kernels/cpu/ggml_dequant.h"

namespace tessera::quant {
namespace {

constexpr int64_t kRows = 6, kCols = 96;  // 3 blocks per row

std::vector<uint8_t> RandomBlocks(uint8_t first_exponent) {
  std::mt19937 rng(5);
  std::vector<uint8_t> b(kRows * kCols / 32 * 17);
  for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<uint8_t>(rng());
  const uint8_t exps[] = {first_exponent, 1, 254, 127, 100, 130};
  for (size_t blk = 0; blk < b.size() / 17; ++blk) b[blk * 17] = exps[blk % 6];
  return b;
}

std::string WriteGguf(const std::vector<uint8_t>& blocks, const std::string& file) {
  io::GgufWriter w;
  w.AddString("general.architecture", "llama");
  w.AddTensor("blk.0.ffn_up.weight", {kCols, kRows}, 39, blocks.size(),
              [blocks](std::vector<uint8_t>* out) {
                *out = blocks;
                return absl::OkStatus();
              });
  const std::string path = (std::filesystem::temp_directory_path() / file).string();
  EXPECT_TRUE(w.Write(path).ok());
  return path;
}

TEST(GgufMxfp4Test, ConvertsToMxfp4LayersValueForValue) {
  const std::vector<uint8_t> blocks = RandomBlocks(0);
  auto file = io::GgufFile::Open(WriteGguf(blocks, "gguf_mxfp4_test.gguf"));
  ASSERT_TRUE(file.ok()) << file.status();
  auto config = ParseQuantConfig("", "", **file);
  ASSERT_TRUE(config.ok()) << config.status();
  auto spec =
      (*config)->Resolve("model.layers.0.mlp.up_proj", "blk.0.ffn_up", kRows, kCols, **file);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->weight_format, WeightFormat::kMxfp4);
  EXPECT_EQ(spec->group_size, 32);
  EXPECT_EQ(spec->source, "gguf mxfp4");
  auto packed = LoadPackedWeights(*spec, "blk.0.ffn_up", **file);
  ASSERT_TRUE(packed.ok()) << packed.status();
  std::vector<float> want(kRows * kCols), row(kCols);
  kernels::cpu::DequantizeGgmlBlocks(kernels::cpu::GgmlBlockType::kMxfp4, blocks.data(),
                                     kRows * kCols / 32, want.data());
  for (int64_t r = 0; r < kRows; ++r) {
    packed->DequantizeRow(r, row.data());
    for (int64_t i = 0; i < kCols; ++i) {
      ASSERT_EQ(row[i], want[r * kCols + i]) << "row " << r << " col " << i;
    }
  }
}

TEST(GgufMxfp4Test, ExponentByteFFIsRefusedByName) {
  auto file = io::GgufFile::Open(WriteGguf(RandomBlocks(0xFF), "gguf_mxfp4_ff_test.gguf"));
  ASSERT_TRUE(file.ok()) << file.status();
  auto config = ParseQuantConfig("", "", **file);
  ASSERT_TRUE(config.ok());
  auto spec =
      (*config)->Resolve("model.layers.0.mlp.up_proj", "blk.0.ffn_up", kRows, kCols, **file);
  ASSERT_TRUE(spec.ok());
  auto packed = LoadPackedWeights(*spec, "blk.0.ffn_up", **file);
  ASSERT_FALSE(packed.ok());
  EXPECT_NE(packed.status().message().find("blk.0.ffn_up.weight"), std::string::npos);
  EXPECT_NE(packed.status().message().find("0xFF"), std::string::npos);
}

}  // namespace
}  // namespace tessera::quant
