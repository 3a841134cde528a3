// FastDequantizeGgmlBlocks against the scalar DequantizeGgmlBlocks, bit for bit, under every
// Highway target this CPU runs: random block bytes (every scale, code and high-bit pattern, f16
// scales of any value including zero, subnormals, inf and NaN) for the K-quants it vectorizes,
// and the other block types it hands to the scalar decoder.
#include "kernels/cpu/fast/ggml_dequant_fast.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/cpu/ggml_dequant.h"
#include "tests/kernels/cpu/hwy_targets_test_util.h"

namespace tessera::kernels::cpu::fast {
namespace {

TEST(GgmlDequantFastTest, EqualsScalarDecoderBitForBit) {
  std::mt19937 rng(97);
  for (const GgmlBlockType type : {GgmlBlockType::kQ4_K, GgmlBlockType::kQ5_K,
                                   GgmlBlockType::kQ6_K, GgmlBlockType::kQ4_0,
                                   GgmlBlockType::kQ8_0, GgmlBlockType::kQ5_1}) {
    const GgmlBlockInfo info = GetGgmlBlockInfo(type);
    const int64_t blocks = 37;
    std::vector<uint8_t> src(blocks * info.bytes);
    for (auto& b : src) b = static_cast<uint8_t>(rng());
    // Block 0: zero f16 scales (d and dmin for Q4_K / Q5_K at 0; Q6_K's d at 208).
    const int64_t d_at = type == GgmlBlockType::kQ6_K ? 208 : 0;
    std::memset(src.data() + d_at, 0, type == GgmlBlockType::kQ6_K ? 2 : 4);
    std::vector<float> want(blocks * info.elements), got(blocks * info.elements, -7.0f);
    DequantizeGgmlBlocks(type, src.data(), blocks, want.data());
    ForEachHwyTarget([&] {
      FastDequantizeGgmlBlocks(type, src.data(), blocks, got.data());
      for (size_t i = 0; i < want.size(); ++i) {
        if (std::isnan(want[i]) && std::isnan(got[i])) continue;
        ASSERT_EQ(std::memcmp(&want[i], &got[i], 4), 0)
            << "type " << static_cast<int>(type) << " i " << i << ": " << got[i] << " vs " << want[i];
      }
    });
  }
}

}  // namespace
}  // namespace tessera::kernels::cpu::fast
