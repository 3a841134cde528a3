// --kv_cache_dtype through the engine loader: "auto" (the default) gives GGUF models llama.cpp's
// f16 cache and every other model the exact f32 one; explicit names win; bad names are errors
// that name the flag and the accepted spellings.
#include <string>

#include "engine/runtime/engine_loader.h"
#include "engine/runtime/kv_cache.h"
#include "gtest/gtest.h"

namespace tessera::runtime {
namespace {

const std::string kGguf = std::string(TESSERA_SHARED_DIR) + "/models/stories260K/stories260K.gguf";
const std::string kHf = std::string(TESSERA_SOURCE_DIR) + "/tests/data/models/llama";

KvCacheFormat FormatOf(const std::string& model, const std::string& dtype) {
  EngineOptions options;
  options.threads = 1;
  if (!dtype.empty()) options.kv_cache_dtype = dtype;
  auto e = LoadEngine(model, options);
  EXPECT_TRUE(e.ok()) << e.status();
  return e.ok() ? (*e)->model->kv_cache_format() : KvCacheFormat::kFp8E4m3;
}

TEST(KvCacheDtypeTest, AutoIsF16ForGgufAndF32Otherwise) {
  EXPECT_EQ(EngineOptions{}.kv_cache_dtype, "auto");
  EXPECT_EQ(FormatOf(kGguf, ""), KvCacheFormat::kF16);
  EXPECT_EQ(FormatOf(kGguf, "auto"), KvCacheFormat::kF16);
  EXPECT_EQ(FormatOf(kHf, ""), KvCacheFormat::kF32);
}

TEST(KvCacheDtypeTest, ExplicitNamesWin) {
  EXPECT_EQ(FormatOf(kGguf, "f32"), KvCacheFormat::kF32);
  EXPECT_EQ(FormatOf(kGguf, "bfloat16"), KvCacheFormat::kBf16);
  EXPECT_EQ(FormatOf(kHf, "fp16"), KvCacheFormat::kF16);
}

TEST(KvCacheDtypeTest, UnknownNameIsAnErrorListingTheSpellings) {
  EngineOptions options;
  options.threads = 1;
  options.kv_cache_dtype = "f8";
  auto e = LoadEngine(kGguf, options);
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(e.status().message().find("--kv_cache_dtype 'f8' is not auto, f32"), std::string::npos)
      << e.status();
}

TEST(KvCacheDtypeTest, FormatNamesRoundTrip) {
  for (KvCacheFormat f : {KvCacheFormat::kF32, KvCacheFormat::kF16, KvCacheFormat::kBf16,
                          KvCacheFormat::kFp8E4m3}) {
    EXPECT_EQ(ParseKvCacheFormat(KvCacheFormatName(f)), f);
  }
}

}  // namespace
}  // namespace tessera::runtime
