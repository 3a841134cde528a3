// GGUF's grid and ternary types (kernels/cpu/ggml_iq_dequant.h): the reference dequantizer itself
// is held to gguf-py by tests/engine/io (iq_grid_blocks and ternary_blocks fixtures); here, on random blocks and on all-zero /
// all-one bytes under a sane d, the table-code view IqGridCodes gives every value bit for bit
// (so the tiles and panels built from it start from the file's numbers), its codes stay within
// the table's used entries, and the codebooks hold the values ggml-common.h documents.
#include "kernels/cpu/ggml_iq_dequant.h"

#include <cstdint>
#include <cstring>
#include <random>
#include <set>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/cpu/ggml_iq_grids.h"
#include "kernels/numeric/half.h"
#include "tests/kernels/cpu/iq_grid_test_util.h"

namespace tessera::kernels::cpu {
namespace {

using testing::IqGridName;
using testing::kIqGridTypes;

TEST(IqGridDequantTest, TableCodesGiveTheReferenceValuesBitForBit) {
  std::mt19937 rng(29);
  for (const GgmlBlockType type : testing::kTableCodeTypes) {
    SCOPED_TRACE(IqGridName(type));
    const bool ternary = type == GgmlBlockType::kTq1_0 || type == GgmlBlockType::kTq2_0;
    ASSERT_EQ(IsIqGridType(type), !ternary);
    ASSERT_TRUE(IsTableCodeType(type));
    const int64_t bytes = GetGgmlBlockInfo(type).bytes;
    std::vector<uint8_t> blocks = testing::RandomIqGridBlocks(type, 1, 256 * 64, rng);
    for (const uint8_t fill : {0x00, 0xFF}) {  // every index, sign and scale bit 0, then 1
      std::vector<uint8_t> b(bytes, fill);
      testing::SetIqGridHalf(type, b.data(), numeric::FloatToHalf(-0.0078125f));
      blocks.insert(blocks.end(), b.begin(), b.end());
    }
    const int8_t* table = IqGridTable(type);
    std::set<int> used;
    for (size_t at = 0; at < blocks.size(); at += bytes) {
      float want[256], d;
      uint8_t mults[16], codes[256];
      DequantizeIqGridBlock(type, &blocks[at], want);
      IqGridCodes(type, &blocks[at], &d, mults, codes);
      for (int e = 0; e < 256; ++e) {
        ASSERT_LT(codes[e], ternary ? 4 : 16);
        // Zero is a ternary value; in the grid types' tables it marks an unused code.
        if (!ternary) {
          ASSERT_NE(table[codes[e]], 0) << "code " << int(codes[e]) << " names no value";
        }
        ASSERT_EQ(mults[e / 16] % 2, 1);
        ASSERT_LE(mults[e / 16], ternary ? 1 : 31);
        used.insert(codes[e]);
        const float got =
            (d * static_cast<float>(mults[e / 16])) * static_cast<float>(table[codes[e]]);
        ASSERT_EQ(std::memcmp(&got, &want[e], 4), 0)
            << "block " << at / bytes << " value " << e << ": " << got << " vs " << want[e];
      }
    }
    // Random blocks reach every value of the type (IQ2: ±8, ±25, ±43; IQ1: 8g ± 1; TQ1_0 −1, 0,
    // 1; TQ2_0 also 2).
    int values = 0;
    for (int c = 0; c < 16; ++c) values += table[c] != 0;
    if (ternary) values = type == GgmlBlockType::kTq1_0 ? 3 : 4;
    EXPECT_EQ(static_cast<int>(used.size()), values);
  }
}

// The codebooks' values (ggml-common.h's comments on each grid): IQ2 bytes 8 / 25 / 43, IQ3_XXS 4 +
// 8i or 62, IQ3_S odd 1..15, IQ1 int8 −1 / 0 / 1; entries distinct; the sign table's eighth bit
// makes the count of minus signs even.
TEST(IqGridDequantTest, CodebooksHoldGgmlsValues) {
  auto bytes_in = [](uint64_t entry, int n, const std::set<int>& allowed) {
    for (int j = 0; j < n; ++j) {
      if (!allowed.count(static_cast<int>((entry >> (8 * j)) & 0xFF))) return false;
    }
    return true;
  };
  const std::set<int> iq2 = {8, 25, 43}, iq3xxs = {4, 12, 20, 28, 36, 44, 52, 62};
  const std::set<int> iq3s = {1, 3, 5, 7, 9, 11, 13, 15}, iq1 = {0xFF, 0, 1};
  auto check = [&](const auto* grid, int size, int n, const std::set<int>& allowed) {
    std::set<uint64_t> seen;
    for (int i = 0; i < size; ++i) {
      ASSERT_TRUE(bytes_in(grid[i], n, allowed)) << "entry " << i;
      seen.insert(grid[i]);
    }
    EXPECT_EQ(static_cast<int>(seen.size()), size);
  };
  check(kIq2XxsGrid, 256, 8, iq2);
  check(kIq2XsGrid, 512, 8, iq2);
  check(kIq2SGrid, 1024, 8, iq2);
  check(kIq3XxsGrid, 256, 4, iq3xxs);
  check(kIq3SGrid, 512, 4, iq3s);
  check(kIq1SGrid, 2048, 8, iq1);
  EXPECT_EQ(kIq2XxsGrid[0], 0x0808080808080808u);
  EXPECT_EQ(kIq1SGrid[0], 0xFFFFFFFFFFFFFFFFu);
  for (int i = 0; i < 128; ++i) {
    EXPECT_EQ(kIq2Signs[i] & 0x7F, i);
    EXPECT_EQ(__builtin_popcount(kIq2Signs[i]) % 2, 0) << i;
  }
}

// FNV-1a (64-bit) of a table's little-endian bytes.
template <class T, size_t N>
uint64_t Fnv1a(const T (&table)[N]) {
  uint64_t h = 0xcbf29ce484222325u;
  for (const T v : table) {
    for (size_t i = 0; i < sizeof(T); ++i) {
      h ^= (static_cast<uint64_t>(v) >> (8 * i)) & 0xFF;
      h *= 0x100000001b3u;
    }
  }
  return h;
}

// The tables, generated from gguf-py, equal llama.cpp's own ggml-common.h entry for entry: the
// hashes below were computed from the C arrays of the llama.cpp tree llama-cpp-python 0.3.36
// vendors (ggml/src/ggml-common.h: ksigns_iq2xs, iq2xxs_grid, iq2xs_grid, iq2s_grid, iq3xxs_grid,
// iq3s_grid, iq1s_grid; FNV-1a over each entry's little-endian bytes), a second origin besides
// the gguf-py fixtures, so an entry wrong in both Python sources would still fail here.
TEST(IqGridDequantTest, CodebooksEqualGgmlCommonH) {
  EXPECT_EQ(Fnv1a(kIq2Signs), 0xf19ba8f8c3292ba5u);
  EXPECT_EQ(Fnv1a(kIq2XxsGrid), 0xbb4ee025b5ac6e8eu);
  EXPECT_EQ(Fnv1a(kIq2XsGrid), 0xc9b1ee61e79909bdu);
  EXPECT_EQ(Fnv1a(kIq2SGrid), 0x123edd38a3b62b90u);
  EXPECT_EQ(Fnv1a(kIq3XxsGrid), 0xdfa5dc83d6a155d5u);
  EXPECT_EQ(Fnv1a(kIq3SGrid), 0xfa37020c25b44829u);
  EXPECT_EQ(Fnv1a(kIq1SGrid), 0x6703ed863501ae2eu);
}

}  // namespace
}  // namespace tessera::kernels::cpu
