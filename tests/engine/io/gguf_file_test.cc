#include "engine/io/gguf_file.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/engine/io/test_bytes.h"

namespace tessera::io {
namespace {

using ::testing::HasSubstr;
using testing::GgufBuilder;

void ExpectError(const std::vector<uint8_t>& image, const std::string& fragment) {
  absl::Status s = GgufFile::Parse(image, "test").status();
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(std::string(s.message()), HasSubstr(fragment)) << s;
}

// One F32 tensor [4, 2] (GGUF dims [2, 4]) and one u32 key.
std::vector<uint8_t> ValidImage(uint32_t version = 3) {
  GgufBuilder b;
  b.Header(version, 1, 1).Str("general.thing").Put<uint32_t>(4).Put<uint32_t>(7);
  b.TensorInfo("w", {2, 4}, 0, 0).PadTo(32);
  for (int i = 0; i < 8; ++i) b.Put<float>(static_cast<float>(i));
  return b.bytes();
}

TEST(GgufFileTest, ParsesValidImageV2AndV3) {
  for (uint32_t version : {2u, 3u}) {
    auto image = ValidImage(version);
    auto g = GgufFile::Parse(image, "test");
    ASSERT_TRUE(g.ok()) << g.status();
    EXPECT_EQ((*g)->version(), version);
    EXPECT_EQ(*(*g)->metadata().GetUint("general.thing"), 7u);
    auto w = (*g)->Get("w");
    ASSERT_TRUE(w.ok());
    EXPECT_EQ(w->shape, (std::vector<int64_t>{4, 2}));  // PyTorch order
    auto values = ToFloat32(*w);
    ASSERT_TRUE(values.ok());
    EXPECT_EQ((*values)[7], 7.0f);
  }
}

TEST(GgufFileTest, BadMagicAndVersion) {
  auto image = ValidImage();
  image[0] = 'X';
  ExpectError(image, "bad magic");
  image = ValidImage(1);
  ExpectError(image, "version 1");
  image = ValidImage(0x03000000);
  ExpectError(image, "big-endian");
  image = ValidImage(99);
  ExpectError(image, "unsupported GGUF version 99");
}

TEST(GgufFileTest, TruncatedAnywhereIsAnError) {
  auto image = ValidImage();
  for (size_t n = 0; n < image.size(); ++n) {
    std::vector<uint8_t> cut(image.begin(), image.begin() + n);
    EXPECT_FALSE(GgufFile::Parse(cut, "test").ok()) << "prefix of " << n << " bytes parsed";
  }
}

TEST(GgufFileTest, AbsurdCounts) {
  GgufBuilder a;
  a.Header(3, 0, uint64_t{1} << 60);
  ExpectError(a.bytes(), "absurd metadata count");
  GgufBuilder b;
  b.Header(3, uint64_t{1} << 60, 0);
  ExpectError(b.bytes(), "absurd tensor count");
  GgufBuilder c;
  c.Header(3, 0, 1).Str("arr").Put<uint32_t>(9).Put<uint32_t>(4).Put<uint64_t>(uint64_t{1} << 40);
  ExpectError(c.bytes(), "cannot fit");
}

TEST(GgufFileTest, StringLengthPastEnd) {
  GgufBuilder b;
  b.Header(3, 0, 1).Put<uint64_t>(1000).Put<uint8_t>('k').Zeros(16);
  ExpectError(b.bytes(), "string length 1000");
  GgufBuilder c;
  c.Header(3, 0, 1).Str("k").Put<uint32_t>(8).Put<uint64_t>(uint64_t{1} << 63);
  ExpectError(c.bytes(), "runs past the end");
}

TEST(GgufFileTest, InvalidValueTypeAndDeepNesting) {
  GgufBuilder b;
  b.Header(3, 0, 1).Str("k").Put<uint32_t>(77);
  ExpectError(b.bytes(), "invalid value type 77");
  GgufBuilder c;
  c.Header(3, 0, 1).Str("k").Put<uint32_t>(9);
  for (int i = 0; i < 20; ++i) c.Put<uint32_t>(9).Put<uint64_t>(1);
  c.Zeros(64);
  ExpectError(c.bytes(), "nested deeper");
}

TEST(GgufFileTest, DuplicateKeysAndTensors) {
  GgufBuilder a;
  a.Header(3, 0, 2).Str("k").Put<uint32_t>(0).Put<uint8_t>(1).Str("k").Put<uint32_t>(0).Put<uint8_t>(2);
  ExpectError(a.bytes(), "duplicate metadata key 'k'");
  GgufBuilder b;
  b.Header(3, 2, 0).TensorInfo("w", {8}, 0, 0).TensorInfo("w", {8}, 0, 32).PadTo(32).Zeros(64);
  ExpectError(b.bytes(), "duplicate tensor name 'w'");
}

TEST(GgufFileTest, TensorInfoValidation) {
  GgufBuilder dims;
  dims.Header(3, 1, 0).TensorInfo("w", {1, 1, 1, 1, 1}, 0, 0).PadTo(32).Zeros(4);
  ExpectError(dims.bytes(), "5 dims");
  GgufBuilder type;
  type.Header(3, 1, 0).TensorInfo("w", {32}, 41, 0).PadTo(32).Zeros(64);
  ExpectError(type.bytes(), "unsupported ggml type 41");
  GgufBuilder block;
  block.Header(3, 1, 0).TensorInfo("w", {31}, 8, 0).PadTo(32).Zeros(64);
  ExpectError(block.bytes(), "not a multiple of the Q8_0 block size 32");
  GgufBuilder align;
  align.Header(3, 1, 0).TensorInfo("w", {8}, 0, 4).PadTo(32).Zeros(64);
  ExpectError(align.bytes(), "not a multiple of the alignment");
  GgufBuilder past;
  past.Header(3, 1, 0).TensorInfo("w", {64}, 0, 0).PadTo(32).Zeros(100);
  ExpectError(past.bytes(), "needs bytes [0, 256)");
  GgufBuilder overlap;
  overlap.Header(3, 2, 0).TensorInfo("a", {16}, 0, 0).TensorInfo("b", {16}, 0, 32).PadTo(32).Zeros(128);
  ExpectError(overlap.bytes(), "overlap");
  GgufBuilder huge;
  huge.Header(3, 1, 0).TensorInfo("w", {uint64_t{1} << 40, uint64_t{1} << 40}, 0, 0).PadTo(32);
  ExpectError(huge.bytes(), "absurd shape");
  GgufBuilder name;
  name.Header(3, 1, 0).TensorInfo(std::string(70, 'x'), {8}, 0, 0).PadTo(32).Zeros(32);
  ExpectError(name.bytes(), "longer than 63");
}

TEST(GgufFileTest, AlignmentKey) {
  GgufBuilder b;
  b.Header(3, 0, 1).Str("general.alignment").Put<uint32_t>(4).Put<uint32_t>(48);
  ExpectError(b.bytes(), "power of two");
  GgufBuilder ok;
  ok.Header(3, 1, 1).Str("general.alignment").Put<uint32_t>(4).Put<uint32_t>(64);
  ok.TensorInfo("w", {4}, 0, 0).PadTo(64).Zeros(16);
  auto g = GgufFile::Parse(ok.bytes(), "test");
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ((*g)->alignment(), 64u);
  EXPECT_EQ((*g)->data_offset() % 64, 0u);
}

TEST(GgufFileTest, NonBooleanByteRejected) {
  GgufBuilder b;
  b.Header(3, 0, 1).Str("flag").Put<uint32_t>(7).Put<uint8_t>(2);
  ExpectError(b.bytes(), "not 0 or 1");
}

}  // namespace
}  // namespace tessera::io
