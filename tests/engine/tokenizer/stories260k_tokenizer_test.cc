// The real stories260K GGUF against llama.cpp's own output (../shared/reference/
// stories260K-greedy.json): prompts encode to llama.cpp's ids (BOS prepended, dummy-prefix
// space), and the generated ids decode to llama.cpp's text. llama.cpp printed the continuation
// piece by piece after the prompt, so its text keeps the leading space of a first "▁were"; that
// is our incremental detokenizer with first_piece_of_sequence=false, and a full Decode of prompt
// plus continuation gives prompt + text.
#include <fstream>
#include <string>
#include <vector>

#include "engine/io/gguf_file.h"
#include "engine/tokenizer/incremental_detokenizer.h"
#include "engine/tokenizer/tokenizer.h"
#include "engine/tokenizer/utf8.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace tessera::tokenizer {
namespace {

const std::string kShared = TESSERA_SHARED_DIR;

class Stories260kTokenizerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto file = io::GgufFile::Open(kShared + "/models/stories260K/stories260K.gguf");
    ASSERT_TRUE(file.ok()) << file.status();
    auto tok = LoadGgufTokenizer((*file)->metadata());
    ASSERT_TRUE(tok.ok()) << tok.status();
    tok_ = *std::move(tok);
    std::ifstream in(kShared + "/reference/stories260K-greedy.json");
    reference_ = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
    ASSERT_TRUE(reference_.is_object() && reference_["results"].is_array());
    ASSERT_EQ(reference_["results"].size(), 3u);
  }

  std::unique_ptr<Tokenizer> tok_;
  nlohmann::json reference_;
};

TEST_F(Stories260kTokenizerTest, Metadata) {
  EXPECT_EQ(tok_->vocab_size(), 512);
  EXPECT_EQ(tok_->bos_id(), 1);
  EXPECT_EQ(tok_->eos_ids(), std::vector<int32_t>{2});
  EXPECT_TRUE(tok_->IsSpecial(1));
  EXPECT_TRUE(tok_->IsSpecial(2));
  EXPECT_FALSE(tok_->IsSpecial(403));
  EXPECT_TRUE(tok_->StripsLeadingSpace());
  EXPECT_EQ(tok_->Describe(), "gguf llama (SentencePiece BPE), 512 tokens");
  EXPECT_EQ(tok_->TokenBytes(13), "\n");  // <0x0A>
}

TEST_F(Stories260kTokenizerTest, PromptsEncodeLikeLlamaCpp) {
  for (const auto& r : reference_["results"]) {
    const std::string prompt = r["prompt"].get<std::string>();
    const auto expected = r["prompt_ids_with_bos"].get<std::vector<int32_t>>();
    auto ids = tok_->Encode(prompt, /*add_special=*/true);
    ASSERT_TRUE(ids.ok()) << ids.status();
    EXPECT_EQ(*ids, expected) << prompt;
    auto without = tok_->Encode(prompt, /*add_special=*/false);
    ASSERT_TRUE(without.ok());
    EXPECT_EQ(*without, std::vector<int32_t>(expected.begin() + 1, expected.end())) << prompt;
  }
}

TEST_F(Stories260kTokenizerTest, GeneratedIdsDecodeLikeLlamaCpp) {
  for (const auto& r : reference_["results"]) {
    const std::string prompt = r["prompt"].get<std::string>();
    const std::string text = r["generated_text"].get<std::string>();
    const auto prompt_ids = r["prompt_ids_with_bos"].get<std::vector<int32_t>>();
    const auto generated = r["generated_ids"].get<std::vector<int32_t>>();

    // Streamed as a continuation: exactly llama.cpp's text, every chunk valid UTF-8.
    IncrementalDetokenizer stream(*tok_, /*first_piece_of_sequence=*/false);
    std::string streamed;
    for (int32_t id : generated) {
      const std::string chunk = stream.Push(id);
      EXPECT_TRUE(IsValidUtf8(chunk));
      streamed += chunk;
    }
    streamed += stream.Flush();
    EXPECT_EQ(streamed, text);

    // Whole sequence: the dummy-prefix space of the prompt's first word goes away.
    std::vector<int32_t> all = prompt_ids;
    all.insert(all.end(), generated.begin(), generated.end());
    auto full = tok_->Decode(all, /*skip_special=*/true);
    ASSERT_TRUE(full.ok()) << full.status();
    EXPECT_EQ(*full, prompt + text);

    // Decoding the continuation alone treats it as a new sequence and drops one leading space.
    auto alone = tok_->Decode(generated, /*skip_special=*/true);
    ASSERT_TRUE(alone.ok());
    EXPECT_EQ(*alone, text[0] == ' ' ? text.substr(1) : text);
  }
}

TEST_F(Stories260kTokenizerTest, DecodeKeepsOrSkipsSpecials) {
  auto kept = tok_->Decode(std::vector<int32_t>{1, 403, 407, 2}, /*skip_special=*/false);
  ASSERT_TRUE(kept.ok());
  // The BOS takes the place of the first piece, so " Once" keeps its space (as llama.cpp).
  EXPECT_EQ(*kept, "<s> Once upon</s>");
  auto skipped = tok_->Decode(std::vector<int32_t>{1, 403, 407, 2}, /*skip_special=*/true);
  ASSERT_TRUE(skipped.ok());
  EXPECT_EQ(*skipped, "Once upon");
}

TEST_F(Stories260kTokenizerTest, UnknownIdIsInvalidArgument) {
  auto r = tok_->Decode(std::vector<int32_t>{403, 512}, false);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("512"), std::string::npos) << r.status();
  EXPECT_EQ(tok_->Decode(std::vector<int32_t>{-1}, false).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(Stories260kTokenizerTest, SpecialTokensInTextOnlyWithParseSpecial) {
  auto parsed = tok_->Encode("<s>Once", /*add_special=*/false, /*parse_special=*/true);
  ASSERT_TRUE(parsed.ok());
  ASSERT_FALSE(parsed->empty());
  EXPECT_EQ((*parsed)[0], 1);
  auto literal = tok_->Encode("<s>Once", /*add_special=*/false, /*parse_special=*/false);
  ASSERT_TRUE(literal.ok());
  EXPECT_NE((*literal)[0], 1);
  auto round = tok_->Decode(*literal, false);
  ASSERT_TRUE(round.ok());
  EXPECT_EQ(*round, "<s>Once");
}

TEST_F(Stories260kTokenizerTest, CharactersOutsideTheVocabularyUseByteTokens) {
  // 512 tokens hold no emoji: it is spelled with <0xF0><0x9F><0x98><0x80>.
  auto ids = tok_->Encode("\xF0\x9F\x98\x80", /*add_special=*/false);
  ASSERT_TRUE(ids.ok());
  ASSERT_EQ(ids->size(), 5u);  // "▁" then the four bytes
  auto text = tok_->Decode(*ids, false);
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(*text, "\xF0\x9F\x98\x80");
}

}  // namespace
}  // namespace tessera::tokenizer
