// llama.cpp's tokenizer test vectors (../shared/reference/vocab/): vocabulary-only GGUF files
// with test strings (.inp) and the ids Hugging Face tokenizers produced for them (.out). The
// ids were made with encode(text, add_special_tokens=False), and llama.cpp's test-tokenizer-0
// tokenizes with add_special=false, parse_special=false; so do we. Every case must match.
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "engine/io/gguf_file.h"
#include "engine/tokenizer/tokenizer.h"
#include "gtest/gtest.h"

namespace tessera::tokenizer {
namespace {

const std::string kVocabDir = std::string(TESSERA_SHARED_DIR) + "/reference/vocab/";

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

struct Case {
  std::string text;
  std::vector<int32_t> ids;
};

// .inp: each string is followed by "\n__ggml_vocab_test__\n"; .out: one line of ids per string.
std::vector<Case> ReadCases(const std::string& name) {
  const std::string inp = ReadFile(kVocabDir + "ggml-vocab-" + name + ".gguf.inp");
  const std::string out = ReadFile(kVocabDir + "ggml-vocab-" + name + ".gguf.out");
  std::vector<std::string> texts = absl::StrSplit(inp, "\n__ggml_vocab_test__\n");
  if (!texts.empty() && texts.back().empty()) texts.pop_back();
  std::vector<std::string> lines = absl::StrSplit(out, '\n');
  if (!lines.empty() && lines.back().empty()) lines.pop_back();
  std::vector<Case> cases;
  if (texts.size() != lines.size()) return cases;
  for (size_t i = 0; i < texts.size(); ++i) {
    Case c{texts[i], {}};
    for (absl::string_view tok : absl::StrSplit(lines[i], ' ', absl::SkipEmpty())) {
      int32_t id = 0;
      if (absl::SimpleAtoi(tok, &id)) c.ids.push_back(id);
    }
    cases.push_back(std::move(c));
  }
  return cases;
}

std::string Show(const std::vector<int32_t>& ids) {
  std::string s;
  for (int32_t id : ids) s += std::to_string(id) + " ";
  return s;
}

class LlamaVocabTest : public ::testing::TestWithParam<std::string> {};

TEST_P(LlamaVocabTest, MatchesHuggingFaceIds) {
  auto file = io::GgufFile::Open(kVocabDir + "ggml-vocab-" + GetParam() + ".gguf");
  ASSERT_TRUE(file.ok()) << file.status();
  auto tok = LoadGgufTokenizer((*file)->metadata());
  ASSERT_TRUE(tok.ok()) << tok.status();
  const std::vector<Case> cases = ReadCases(GetParam());
  ASSERT_EQ(cases.size(), 46u) << "cannot read the .inp/.out pair";
  int passed = 0;
  for (const Case& c : cases) {
    auto ids = (*tok)->Encode(c.text, /*add_special=*/false, /*parse_special=*/false);
    ASSERT_TRUE(ids.ok()) << ids.status();
    // Decoding the reference ids gives the text back (byte-level BPE and SentencePiece with
    // byte fallback are lossless; the dummy-prefix space is the one Decode strips).
    auto text = (*tok)->Decode(c.ids, /*skip_special=*/false);
    ASSERT_TRUE(text.ok()) << text.status();
    EXPECT_EQ(*text, c.text) << GetParam();
    if (*ids == c.ids) {
      ++passed;
    } else {
      ADD_FAILURE() << GetParam() << ": '" << c.text << "'\n  expected " << Show(c.ids)
                    << "\n  got      " << Show(*ids);
    }
  }
  std::cout << "[ vocab    ] " << GetParam() << ": " << passed << "/" << cases.size()
            << " cases pass (" << (*tok)->Describe() << ")\n";
}

INSTANTIATE_TEST_SUITE_P(AllVocabs, LlamaVocabTest,
                         ::testing::Values("llama-spm", "phi-3", "gpt-2", "deepseek-llm",
                                           "deepseek-coder", "falcon", "mpt", "starcoder",
                                           "refact"),
                         [](const auto& info) {
                           std::string name = info.param;
                           for (char& ch : name) {
                             if (ch == '-') ch = '_';
                           }
                           return name;
                         });

// bert-bge is a WordPiece vocabulary (tokenizer.ggml.model "bert"); tessera serves decoder LLMs
// with BPE vocabularies only, so loading it must fail cleanly rather than tokenize wrongly.
TEST(LlamaVocabTest, WordPieceIsRejectedCleanly) {
  auto file = io::GgufFile::Open(kVocabDir + "ggml-vocab-bert-bge.gguf");
  ASSERT_TRUE(file.ok()) << file.status();
  auto tok = LoadGgufTokenizer((*file)->metadata());
  EXPECT_EQ(tok.status().code(), absl::StatusCode::kUnimplemented) << tok.status();
}

}  // namespace
}  // namespace tessera::tokenizer
