#include "engine/io/safetensors_file.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/engine/io/test_bytes.h"

namespace tessera::io {
namespace {

using ::testing::HasSubstr;
using testing::SafetensorsImage;

absl::Status ParseStatus(const std::vector<uint8_t>& image) {
  return SafetensorsFile::Parse(image, "test").status();
}

void ExpectError(const std::vector<uint8_t>& image, const std::string& fragment) {
  absl::Status s = ParseStatus(image);
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(std::string(s.message()), HasSubstr(fragment)) << s;
}

TEST(SafetensorsFileTest, ParsesValidImage) {
  auto image = SafetensorsImage(
      R"({"a":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]},)"
      R"("b":{"dtype":"F4","shape":[4],"data_offsets":[16,18]},)"
      R"("__metadata__":{"format":"pt"}})",
      18);
  auto st = SafetensorsFile::Parse(image, "test");
  ASSERT_TRUE(st.ok()) << st.status();
  EXPECT_THAT((*st)->names(), ::testing::ElementsAre("a", "b"));
  auto a = (*st)->Get("a");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->shape, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(a->bytes.size(), 16u);
  EXPECT_EQ((*st)->metadata().at("format"), "pt");
  EXPECT_EQ((*st)->Get("zzz").status().code(), absl::StatusCode::kNotFound);
  EXPECT_FALSE(a->As<int32_t>().ok());  // wrong dtype is an error, not a reinterpretation
}

TEST(SafetensorsFileTest, HeaderPaddedWithSpacesIsAccepted) {
  auto image = SafetensorsImage(R"({"a":{"dtype":"U8","shape":[3],"data_offsets":[0,3]}}    )", 3);
  EXPECT_TRUE(ParseStatus(image).ok());
}

TEST(SafetensorsFileTest, ScalarAndEmptyTensors) {
  auto image = SafetensorsImage(
      R"({"s":{"dtype":"F32","shape":[],"data_offsets":[0,4]},)"
      R"("e":{"dtype":"F32","shape":[0,5],"data_offsets":[4,4]}})",
      4);
  auto st = SafetensorsFile::Parse(image, "test");
  ASSERT_TRUE(st.ok()) << st.status();
  EXPECT_EQ((*st)->Get("s")->numel(), 1);
  EXPECT_EQ((*st)->Get("e")->numel(), 0);
}

TEST(SafetensorsFileTest, TruncatedFile) {
  ExpectError({1, 2, 3}, "too short");
  auto image = SafetensorsImage(R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", 16);
  image.resize(image.size() - 3);
  ExpectError(image, "truncated");
}

TEST(SafetensorsFileTest, HeaderLengthPastEnd) {
  auto image = SafetensorsImage(R"({})", 0);
  uint64_t n = 1000;
  std::memcpy(image.data(), &n, 8);
  ExpectError(image, "past the end");
  n = 200'000'000;
  std::memcpy(image.data(), &n, 8);
  ExpectError(image, "exceeds the limit");
}

TEST(SafetensorsFileTest, OverlapAndHole) {
  ExpectError(SafetensorsImage(R"({"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]},)"
                               R"("b":{"dtype":"U8","shape":[4],"data_offsets":[2,6]}})",
                               6),
              "overlap");
  ExpectError(SafetensorsImage(R"({"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]},)"
                               R"("b":{"dtype":"U8","shape":[4],"data_offsets":[6,10]}})",
                               10),
              "hole");
  ExpectError(SafetensorsImage(R"({"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]}})", 9),
              "not covered");
}

TEST(SafetensorsFileTest, SizeNotMatchingShape) {
  ExpectError(SafetensorsImage(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", 8),
              "needs 12");
  ExpectError(SafetensorsImage(R"({"a":{"dtype":"F4","shape":[3],"data_offsets":[0,2]}})", 2),
              "whole number");
}

TEST(SafetensorsFileTest, DuplicateNames) {
  ExpectError(SafetensorsImage(R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},)"
                               R"("a":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}})",
                               2),
              "duplicate tensor name 'a'");
}

TEST(SafetensorsFileTest, BadHeaders) {
  ExpectError(SafetensorsImage(R"([1,2])", 0), "JSON object");
  ExpectError(SafetensorsImage(R"({"a":)", 0), "not valid JSON");
  ExpectError(SafetensorsImage(R"({"a":{"dtype":"F17","shape":[1],"data_offsets":[0,4]}})", 4),
              "unknown safetensors dtype 'F17'");
  ExpectError(SafetensorsImage(R"({"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", 4),
              "invalid dimension");
  ExpectError(SafetensorsImage(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,0]}})", 4),
              "end before begin");
  ExpectError(SafetensorsImage(R"({"a":{"dtype":"F32","shape":[1]}})", 4), "data_offsets");
  ExpectError(SafetensorsImage(R"({"__metadata__":{"k":{"nested":1}}})", 0), "not a string");
  ExpectError(SafetensorsImage(
                  R"({"a":{"dtype":"U8","shape":[4294967296,4294967296,4294967296],"data_offsets":[0,1]}})",
                  1),
              "overflows");
}

TEST(SafetensorsFileTest, OpenMissingFileIsNotFound) {
  EXPECT_EQ(SafetensorsFile::Open("/nonexistent/x.safetensors").status().code(),
            absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace tessera::io
