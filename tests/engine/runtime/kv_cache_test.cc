// The KV cache's formats: the --kv_cache_dtype spellings, bytes per element, and that each
// format's blocks are distinct, writable and sized for [kv_heads, block_tokens, head_dim] per layer
// and K / V (a block's last element written through one accessor never shows in another block).
#include "engine/runtime/kv_cache.h"

#include <cstdint>

#include "gtest/gtest.h"

namespace tessera::runtime {
namespace {

TEST(KvCacheFormatTest, ParsesEverySpelling) {
  EXPECT_EQ(ParseKvCacheFormat("f32"), KvCacheFormat::kF32);
  for (const char* s : {"f16", "fp16", "float16"}) EXPECT_EQ(ParseKvCacheFormat(s), KvCacheFormat::kF16) << s;
  for (const char* s : {"bf16", "bfloat16"}) EXPECT_EQ(ParseKvCacheFormat(s), KvCacheFormat::kBf16) << s;
  for (const char* s : {"fp8", "fp8_e4m3"}) EXPECT_EQ(ParseKvCacheFormat(s), KvCacheFormat::kFp8E4m3) << s;
  for (const char* s : {"", "F16", "fp4", "int8", "fp8_e5m2"}) EXPECT_FALSE(ParseKvCacheFormat(s)) << s;
  EXPECT_EQ(KvCacheElementBytes(KvCacheFormat::kF32), 4);
  EXPECT_EQ(KvCacheElementBytes(KvCacheFormat::kF16), 2);
  EXPECT_EQ(KvCacheElementBytes(KvCacheFormat::kBf16), 2);
  EXPECT_EQ(KvCacheElementBytes(KvCacheFormat::kFp8E4m3), 1);
}

TEST(KvCacheTest, SixteenBitBlocksAreDisjoint) {
  constexpr int64_t kLayers = 3, kKvHeads = 2, kHeadDim = 5, kTokens = 4, kBlocks = 6;
  constexpr int64_t kElems = kKvHeads * kTokens * kHeadDim;
  for (KvCacheFormat f : {KvCacheFormat::kF16, KvCacheFormat::kBf16}) {
    KvCache cache(kLayers, kKvHeads, kHeadDim, kTokens, kBlocks, true, f);
    EXPECT_EQ(cache.format(), f);
    uint16_t tag = 1;
    for (int32_t b = 0; b < kBlocks; ++b) {
      for (int64_t l = 0; l < kLayers; ++l) {
        for (uint16_t* p : {cache.KBlock16(l, b), cache.VBlock16(l, b)}) {
          for (int64_t i = 0; i < kElems; ++i) p[i] = tag;
          ++tag;
        }
      }
    }
    tag = 1;
    for (int32_t b = 0; b < kBlocks; ++b) {
      for (int64_t l = 0; l < kLayers; ++l) {
        for (const uint16_t* p : {cache.KBlock16(l, b), cache.VBlock16(l, b)}) {
          EXPECT_EQ(p[0], tag);
          EXPECT_EQ(p[kElems - 1], tag);
          ++tag;
        }
      }
    }
    SequenceKv seq;
    ASSERT_TRUE(cache.Reserve(seq, kTokens * kBlocks).ok());
    EXPECT_EQ(cache.free_blocks(), 0);
    cache.Release(seq);
    EXPECT_EQ(cache.free_blocks(), kBlocks);
  }
}

}  // namespace
}  // namespace tessera::runtime
