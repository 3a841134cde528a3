#include "engine/io/safetensors_writer.h"

#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "engine/io/safetensors_file.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tessera::io {
namespace {

using ::testing::HasSubstr;
namespace fs = std::filesystem;

SafetensorsWriter::TensorSource Bytes(std::vector<uint8_t> bytes) {
  return [bytes](std::vector<uint8_t>* out) {
    *out = bytes;
    return absl::OkStatus();
  };
}

std::string TempPath(const std::string& name) {
  const fs::path p = fs::path(::testing::TempDir()) / name;
  fs::remove(p);
  fs::remove(p.string() + ".partial");
  return p.string();
}

TEST(SafetensorsWriterTest, RoundTripsThroughTheReader) {
  const std::string path = TempPath("writer_ok.safetensors");
  SafetensorsWriter w;
  w.AddMetadata("format", "pt");
  std::vector<uint8_t> a(12);
  const float af[3] = {1.5f, -2.0f, 3.25f};
  std::memcpy(a.data(), af, 12);
  w.AddTensor("a", "F32", {3}, 12, Bytes(a));
  w.AddTensor("b.weight", "U8", {1, 5}, 5, Bytes({1, 2, 3, 4, 5}));
  w.AddTensor("empty", "BF16", {0, 4}, 0, Bytes({}));
  ASSERT_TRUE(w.Write(path).ok());
  EXPECT_FALSE(fs::exists(path + ".partial"));
  auto f = SafetensorsFile::Open(path);
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_THAT((*f)->names(), ::testing::ElementsAre("a", "b.weight", "empty"));
  EXPECT_EQ((*f)->metadata().at("format"), "pt");
  auto ta = (*f)->Get("a");
  ASSERT_TRUE(ta.ok());
  auto values = ta->As<float>();
  ASSERT_TRUE(values.ok());
  EXPECT_THAT(*values, ::testing::ElementsAre(1.5f, -2.0f, 3.25f));
  auto tb = (*f)->Get("b.weight");
  ASSERT_TRUE(tb.ok());
  EXPECT_EQ(tb->shape, (std::vector<int64_t>{1, 5}));
  EXPECT_EQ(tb->bytes[4], 5);
}

TEST(SafetensorsWriterTest, DuplicateNameIsAnErrorAndLeavesNoFile) {
  const std::string path = TempPath("writer_dup.safetensors");
  SafetensorsWriter w;
  w.AddTensor("x", "U8", {1}, 1, Bytes({1}));
  w.AddTensor("x", "U8", {1}, 1, Bytes({2}));
  absl::Status st = w.Write(path);
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(st.message()), HasSubstr("'x'"));
  EXPECT_FALSE(fs::exists(path));
  EXPECT_FALSE(fs::exists(path + ".partial"));
}

TEST(SafetensorsWriterTest, FailingOrShortSourceLeavesNoFile) {
  for (int which = 0; which < 2; ++which) {
    const std::string path = TempPath("writer_fail.safetensors");
    SafetensorsWriter w;
    w.AddTensor("ok", "U8", {2}, 2, Bytes({1, 2}));
    if (which == 0) {
      w.AddTensor("bad", "U8", {2}, 2, [](std::vector<uint8_t>*) {
        return absl::DataLossError("source failed");
      });
    } else {
      w.AddTensor("short", "U8", {2}, 2, Bytes({1}));
    }
    absl::Status st = w.Write(path);
    EXPECT_FALSE(st.ok());
    EXPECT_FALSE(fs::exists(path)) << which;
    EXPECT_FALSE(fs::exists(path + ".partial")) << which;
  }
}

}  // namespace
}  // namespace tessera::io
