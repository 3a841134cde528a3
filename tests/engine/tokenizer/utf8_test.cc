// UTF-8 helpers against the Unicode standard's rules (Table 3-7 well-formed sequences, and
// "maximal subpart" replacement as Python's errors="replace" and Rust's from_utf8_lossy do),
// and the GPT-2 byte alphabet.
#include "engine/tokenizer/utf8.h"

#include <string>

#include "engine/tokenizer/byte_level.h"
#include "gtest/gtest.h"

namespace tessera::tokenizer {
namespace {

TEST(Utf8Test, Validity) {
  EXPECT_TRUE(IsValidUtf8(""));
  EXPECT_TRUE(IsValidUtf8("a\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80"));
  EXPECT_FALSE(IsValidUtf8("\xC0\xAF"));          // overlong
  EXPECT_FALSE(IsValidUtf8("\xED\xA0\x80"));      // surrogate
  EXPECT_FALSE(IsValidUtf8("\xF4\x90\x80\x80"));  // above U+10FFFF
  EXPECT_FALSE(IsValidUtf8("\xE2\x82"));          // truncated
  EXPECT_FALSE(IsValidUtf8("\x80"));
}

TEST(Utf8Test, RepairUsesMaximalSubparts) {
  // Python: b"\xF0\x9F\x98a\xE2\x82\xFF\xC0\xAF".decode("utf-8", "replace")
  EXPECT_EQ(RepairUtf8("\xF0\x9F\x98"
                       "a\xE2\x82\xFF\xC0\xAF"),
            "\xEF\xBF\xBD"
            "a\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");
  EXPECT_EQ(RepairUtf8("ok"), "ok");
}

TEST(Utf8Test, CompletePrefixHoldsOnlyAnUnfinishedTail) {
  EXPECT_EQ(CompletePrefixLength("ab"), 2u);
  EXPECT_EQ(CompletePrefixLength("a\xF0\x9F"), 1u);
  EXPECT_EQ(CompletePrefixLength("a\xF0\x9F\x98\x80"), 5u);
  EXPECT_EQ(CompletePrefixLength("a\xF0"
                                 "b"),
            3u);  // cannot complete: emit now
  EXPECT_EQ(CompletePrefixLength("\xFF"), 1u);
}

TEST(Utf8Test, SplitCharsKeepsInvalidBytesAsCharacters) {
  const auto chars = SplitChars("a\xC3\xA9\xFFz");
  ASSERT_EQ(chars.size(), 4u);
  EXPECT_EQ(chars[1], "\xC3\xA9");
  EXPECT_EQ(chars[2], "\xFF");
}

TEST(ByteLevelTest, Gpt2Alphabet) {
  EXPECT_EQ(ByteLevelChar(' '), "\xC4\xA0");   // Ġ
  EXPECT_EQ(ByteLevelChar('\n'), "\xC4\x8A");  // Ċ
  EXPECT_EQ(ByteLevelChar('A'), "A");
  std::string all;
  for (int b = 0; b < 256; ++b) all.push_back(static_cast<char>(b));
  EXPECT_EQ(ByteLevelDecode(ByteLevelEncode(all)), all);
  EXPECT_FALSE(ByteLevelDecode("\xE2\x96\x81").has_value());  // ▁ is not in the alphabet
}

}  // namespace
}  // namespace tessera::tokenizer
