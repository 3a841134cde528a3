// Q3KBlocksAsQ6K (kernels/cpu/ggml_kquants_as_q6k.h): the Q6_K rewrite of a Q3_K block dequantizes
// (DequantizeGgmlBlocks, llama.cpp's dequantize_row_q3_K and _q6_K) to the same floats bit for
// bit, over random blocks that cover every (6-bit scale, 3-bit code) pair and over the f16 d
// values with special products: ±0, the smallest subnormal, the largest finite, ±inf and NaN.
// Q2KBlocksAsQ6K: the Q6_K product terms plus the offsets dequantize to Q2_K's floats bit for bit
// (the same roundings), over random blocks with every scale, min and code and the same special d
// and dmin values. The dequantizers themselves are checked against gguf-py
// (tests/engine/io/reference_fixtures_test.cc).
#include "kernels/cpu/ggml_kquants_as_q6k.h"

#include <cmath>
#include <cstring>
#include <initializer_list>
#include <random>
#include <set>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/cpu/ggml_dequant.h"

namespace tessera::kernels::cpu {
namespace {

constexpr int64_t kBlocks = 400;

// kBlocks random blocks of `block_bytes`, the f16 scale fields at `scale_at` random normal halves
// except in the first 16 blocks, which cycle through ±0, the smallest subnormal, the largest
// finite value, ±inf, NaN and 1.
std::vector<uint8_t> RandomBlocks(int64_t block_bytes, std::initializer_list<int> scale_at,
                                  std::mt19937& rng) {
  const uint16_t specials[] = {0x0000, 0x8000, 0x0001, 0x7BFF, 0x7C00, 0xFC00, 0x7E00, 0x3C00};
  std::vector<uint8_t> blocks(kBlocks * block_bytes);
  for (auto& b : blocks) b = static_cast<uint8_t>(rng());
  for (int64_t i = 0; i < kBlocks; ++i) {
    for (const int at : scale_at) {
      const uint16_t h =
          i < 16 ? specials[(i + at) % 8] : static_cast<uint16_t>(0x1000 + rng() % 0x2000);
      std::memcpy(blocks.data() + i * block_bytes + at, &h, 2);
    }
  }
  return blocks;
}

// Bit for bit, except that any NaN equals any NaN (an inf or NaN d gives NaNs whose sign bit
// depends on which operand x86 propagates).
void ExpectSameBits(const std::vector<float>& got, const std::vector<float>& want) {
  ASSERT_EQ(got.size(), want.size());
  int mismatches = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    uint32_t a, b;
    std::memcpy(&a, &want[i], 4);
    std::memcpy(&b, &got[i], 4);
    if (std::isnan(got[i]) && std::isnan(want[i])) continue;
    if (a != b && ++mismatches <= 5) {
      ADD_FAILURE() << "value " << i << ": " << got[i] << " vs " << want[i];
    }
  }
  EXPECT_EQ(mismatches, 0);
}

TEST(Q3KAsQ6KTest, RewriteDequantizesToTheSameBits) {
  std::mt19937 rng(3);
  const std::vector<uint8_t> q3 = RandomBlocks(kQ3KBlockBytes, {108}, rng);
  std::vector<uint8_t> q6(kBlocks * kQ6KBlockBytes);
  Q3KBlocksAsQ6K(q3.data(), kBlocks, q6.data());
  std::vector<float> want(kBlocks * 256), got(kBlocks * 256);
  DequantizeGgmlBlocks(GgmlBlockType::kQ3_K, q3.data(), kBlocks, want.data());
  DequantizeGgmlBlocks(GgmlBlockType::kQ6_K, q6.data(), kBlocks, got.data());
  ExpectSameBits(got, want);
  // The random blocks reached every scale and code.
  std::set<std::pair<int, int>> seen;
  for (int64_t i = 0; i < kBlocks; ++i) {
    int8_t codes[256], scales[16];
    Q3KCodes(q3.data() + i * kQ3KBlockBytes, codes, scales);
    for (int e = 0; e < 256; ++e) seen.insert({scales[e / 16], codes[e]});
  }
  EXPECT_EQ(seen.size(), 64u * 8u);
  // Q6_K's own view of the rewrite: codes q + 32 and the scales as stored.
  uint8_t codes6[256];
  int8_t codes3[256], scales3[16];
  Q6KCodes(q6.data() + 9 * kQ6KBlockBytes, codes6, nullptr);
  Q3KCodes(q3.data() + 9 * kQ3KBlockBytes, codes3, scales3);
  for (int e = 0; e < 256; ++e) ASSERT_EQ(codes6[e], codes3[e] + 32) << e;
  EXPECT_EQ(std::memcmp(q6.data() + 9 * kQ6KBlockBytes + 192, scales3, 16), 0);
}

TEST(Q2KAsQ6KTest, ProductTermsPlusOffsetsDequantizeToTheSameBits) {
  std::mt19937 rng(2);
  const std::vector<uint8_t> q2 = RandomBlocks(kQ2KBlockBytes, {80, 82}, rng);
  std::vector<uint8_t> q6(kBlocks * kQ6KBlockBytes);
  std::vector<float> offsets(kBlocks * 16);
  Q2KBlocksAsQ6K(q2.data(), kBlocks, q6.data(), offsets.data());
  std::vector<float> want(kBlocks * 256), got(kBlocks * 256);
  DequantizeGgmlBlocks(GgmlBlockType::kQ2_K, q2.data(), kBlocks, want.data());
  DequantizeGgmlBlocks(GgmlBlockType::kQ6_K, q6.data(), kBlocks, got.data());
  for (size_t e = 0; e < got.size(); ++e) got[e] += offsets[e / 16];
  ExpectSameBits(got, want);
  std::set<std::pair<int, int>> seen;  // (scale | min << 4, code): every one reached
  for (int64_t i = 0; i < kBlocks; ++i) {
    const uint8_t* b = q2.data() + i * kQ2KBlockBytes;
    for (int e = 0; e < 256; ++e) {
      seen.insert({b[e / 16], (b[16 + 32 * (e / 128) + e % 32] >> (2 * ((e / 32) % 4))) & 3});
    }
  }
  EXPECT_EQ(seen.size(), 256u * 4u);
}

}  // namespace
}  // namespace tessera::kernels::cpu
