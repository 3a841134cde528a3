// The incremental detokenizer: for every golden id sequence of every tokenizer.json fixture and
// for the GGUF stories260K vocabulary, streaming token by token gives exactly the full decode,
// and no chunk is ever invalid UTF-8. Byte-fallback and byte-level pieces of one emoji are held
// until the last byte arrives.
#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "engine/io/gguf_file.h"
#include "engine/tokenizer/incremental_detokenizer.h"
#include "engine/tokenizer/tokenizer.h"
#include "engine/tokenizer/utf8.h"
#include "gtest/gtest.h"
#include "tests/engine/tokenizer/golden_fixtures.h"

namespace tessera::tokenizer {
namespace {

using ::tessera::tokenizer::testing::GoldenDir;
using ::tessera::tokenizer::testing::GoldenFixtureNames;
using ::tessera::tokenizer::testing::ReadGoldens;

// Streams `ids`, checking each chunk; returns the concatenation.
std::string Stream(const Tokenizer& tok, const std::vector<int32_t>& ids, bool first,
                   std::vector<std::string>* chunks = nullptr) {
  IncrementalDetokenizer detok(tok, first);
  std::string all;
  for (int32_t id : ids) {
    std::string chunk = detok.Push(id);
    EXPECT_TRUE(IsValidUtf8(chunk)) << "chunk '" << absl::CHexEscape(chunk) << "' after id " << id;
    if (chunks != nullptr) chunks->push_back(chunk);
    all += chunk;
  }
  std::string rest = detok.Flush();
  EXPECT_TRUE(IsValidUtf8(rest));
  if (chunks != nullptr) chunks->push_back(rest);
  return all + rest;
}

class StreamGoldensTest : public ::testing::TestWithParam<std::string> {};

TEST_P(StreamGoldensTest, StreamEqualsFullDecode) {
  auto tok = LoadHfTokenizer(GoldenDir(GetParam()));
  ASSERT_TRUE(tok.ok()) << tok.status();
  const auto goldens = ReadGoldens(GetParam());
  ASSERT_FALSE(goldens.cases.empty());
  for (const auto& c : goldens.cases) {
    // Whole sequences (specials skipped), compared with tokenizers' own decode.
    EXPECT_EQ(Stream(**tok, c.ids_with_special, true), c.decoded_skip_special)
        << absl::CEscape(c.text);
    // Every suffix streamed as a continuation equals the bytes of its tokens; every suffix
    // streamed as a new sequence equals Decode of that suffix.
    for (size_t start = 1; start < c.ids.size(); ++start) {
      const std::vector<int32_t> tail(c.ids.begin() + start, c.ids.end());
      auto full = (*tok)->Decode(tail, /*skip_special=*/true);
      ASSERT_TRUE(full.ok());
      EXPECT_EQ(Stream(**tok, tail, true), *full) << absl::CEscape(c.text) << " from " << start;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, StreamGoldensTest, ::testing::ValuesIn(GoldenFixtureNames()),
                         [](const auto& info) { return info.param; });

TEST(IncrementalDetokenizerTest, ByteFallbackEmojiIsHeldUntilComplete) {
  auto file =
      io::GgufFile::Open(std::string(TESSERA_SHARED_DIR) + "/models/stories260K/stories260K.gguf");
  ASSERT_TRUE(file.ok()) << file.status();
  auto tok = LoadGgufTokenizer((*file)->metadata());
  ASSERT_TRUE(tok.ok()) << tok.status();
  const std::string emoji = "\xF0\x9F\x91\x8D\xF0\x9F\x8F\xBD";  // thumbs up, skin tone
  auto ids = (*tok)->Encode("ok " + emoji + "!", /*add_special=*/false);
  ASSERT_TRUE(ids.ok());
  std::vector<std::string> chunks;
  EXPECT_EQ(Stream(**tok, *ids, true, &chunks), "ok " + emoji + "!");
  // Eight byte tokens: the first three of each 4-byte character produce nothing.
  int empty = 0;
  for (const auto& chunk : chunks) empty += chunk.empty() ? 1 : 0;
  EXPECT_GE(empty, 6);
  bool whole = false;
  for (const auto& chunk : chunks) whole |= chunk.find("\xF0\x9F\x91\x8D") != std::string::npos;
  EXPECT_TRUE(whole);
}

TEST(IncrementalDetokenizerTest, ByteLevelEmojiIsHeldUntilComplete) {
  auto tok = LoadHfTokenizer(GoldenDir("bytelevel_gpt2"));
  ASSERT_TRUE(tok.ok()) << tok.status();
  const std::string family = "\xF0\x9F\x91\xA8\xE2\x80\x8D\xF0\x9F\x91\xA9";  // man ZWJ woman
  auto ids = (*tok)->Encode(family, /*add_special=*/false);
  ASSERT_TRUE(ids.ok());
  ASSERT_GT(ids->size(), 1u);  // the small vocabulary splits it inside characters
  std::vector<std::string> chunks;
  EXPECT_EQ(Stream(**tok, *ids, true, &chunks), family);
}

TEST(IncrementalDetokenizerTest, InvalidBytesBecomeReplacementCharacters) {
  auto file =
      io::GgufFile::Open(std::string(TESSERA_SHARED_DIR) + "/models/stories260K/stories260K.gguf");
  ASSERT_TRUE(file.ok()) << file.status();
  auto tok = LoadGgufTokenizer((*file)->metadata());
  ASSERT_TRUE(tok.ok());
  // <0xF0> <0x9F> then "▁a": the cut-off sequence is one U+FFFD (maximal subpart), emitted as
  // soon as the next byte shows it cannot complete; a trailing lone <0xE2> is flushed as U+FFFD.
  // The first token is <0xF0>, so the space of "▁a" is not the sequence's leading space.
  const int32_t f0 = 0xF0 + 3, x9f = 0x9F + 3, e2 = 0xE2 + 3;
  ASSERT_EQ((*tok)->TokenText(f0), "<0xF0>");
  auto a = (*tok)->Encode("a", false);
  ASSERT_TRUE(a.ok());
  std::vector<int32_t> ids = {f0, x9f};
  ids.insert(ids.end(), a->begin(), a->end());
  ids.push_back(e2);
  auto full = (*tok)->Decode(ids, true);
  ASSERT_TRUE(full.ok());
  EXPECT_EQ(*full, "\xEF\xBF\xBD a\xEF\xBF\xBD");
  EXPECT_EQ(Stream(**tok, ids, true), *full);
}

TEST(IncrementalDetokenizerTest, ContinuationKeepsLeadingSpace) {
  auto file =
      io::GgufFile::Open(std::string(TESSERA_SHARED_DIR) + "/models/stories260K/stories260K.gguf");
  ASSERT_TRUE(file.ok()) << file.status();
  auto tok = LoadGgufTokenizer((*file)->metadata());
  ASSERT_TRUE(tok.ok());
  auto ids = (*tok)->Encode("Once upon", false);
  ASSERT_TRUE(ids.ok());
  EXPECT_EQ(Stream(**tok, *ids, /*first=*/true), "Once upon");
  EXPECT_EQ(Stream(**tok, *ids, /*first=*/false), " Once upon");
}

}  // namespace
}  // namespace tessera::tokenizer
