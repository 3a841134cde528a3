// Added (and special) tokens are found in the raw text before any normalization or
// pre-tokenization, and each occurrence becomes exactly its own id, as tokenizers'
// AddedVocabulary and llama.cpp's tokenizer_st_partition do. Matching is leftmost-longest (the
// Aho-Corasick mode tokenizers uses); lstrip/rstrip let a token swallow the whitespace beside it
// and single_word only matches outside words. Special tokens match only when the caller asks
// (parse_special); non-special added tokens always match.
#ifndef TESSERA_ENGINE_TOKENIZER_ADDED_TOKENS_H_
#define TESSERA_ENGINE_TOKENIZER_ADDED_TOKENS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"

namespace tessera::tokenizer {

struct AddedToken {
  int32_t id = 0;
  std::string content;
  bool special = false;
  bool lstrip = false;
  bool rstrip = false;
  bool single_word = false;
  // tokenizers matches normalized=true tokens against normalized text; we match every token
  // against the raw text, which agrees whenever the normalizer leaves the token's text alone.
  bool normalized = false;
};

struct Fragment {
  absl::string_view text;     // the raw text, when !id
  std::optional<int32_t> id;  // an added token
  bool at_start = false;      // begins at offset 0 of the input
};

class AddedTokenSplitter {
 public:
  AddedTokenSplitter() = default;
  explicit AddedTokenSplitter(std::vector<AddedToken> tokens);

  // Cuts `text` into raw fragments and added tokens; empty raw fragments are left out.
  std::vector<Fragment> Split(absl::string_view text, bool parse_special) const;
  const std::vector<AddedToken>& tokens() const { return tokens_; }

 private:
  std::vector<AddedToken> tokens_;
  // First byte -> indices into tokens_, longest content first.
  absl::flat_hash_map<char, std::vector<size_t>> by_first_byte_;
};

}  // namespace tessera::tokenizer

#endif  // TESSERA_ENGINE_TOKENIZER_ADDED_TOKENS_H_
