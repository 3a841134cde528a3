// Pre-tokenizers cut normalized text into pieces that the BPE model encodes independently, as
// tokenizer.json's "pre_tokenizer" describes: Split (regex or string, with the five
// SplitDelimiterBehaviors and invert), ByteLevel (optional prefix space, the GPT-2 regex, and
// the byte-to-unicode mapping), Metaspace (space -> ▁ with prepend_scheme first/always/never),
// Digits, Punctuation, Whitespace, WhitespaceSplit and Sequence. GGUF "gpt2" vocabularies are
// built from the same parts: a chain of Isolated regex splits followed by the byte mapping.
#ifndef TESSERA_ENGINE_TOKENIZER_PRE_TOKENIZER_H_
#define TESSERA_ENGINE_TOKENIZER_PRE_TOKENIZER_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "engine/tokenizer/regex.h"
#include "nlohmann/json_fwd.hpp"

namespace tessera::tokenizer {

struct Piece {
  std::string text;
  // The piece begins at offset 0 of the text given to Encode; Metaspace's prepend_scheme
  // "first" adds ▁ only there (not after an added token).
  bool at_start = false;
};

class PreTokenizer {
 public:
  virtual ~PreTokenizer() = default;
  // Rewrites `pieces` in place; empty pieces are dropped.
  virtual void PreTokenize(std::vector<Piece>* pieces) const = 0;
};

enum class SplitBehavior { kRemoved, kIsolated, kMergedWithPrevious, kMergedWithNext, kContiguous };

std::unique_ptr<PreTokenizer> MakeSplitPreTokenizer(std::unique_ptr<Regex> regex,
                                                    SplitBehavior behavior, bool invert);
// Maps each piece's bytes to the GPT-2 alphabet (ByteLevel with add_prefix_space=false and
// use_regex=false).
std::unique_ptr<PreTokenizer> MakeByteLevelMappingPreTokenizer();
std::unique_ptr<PreTokenizer> MakeSequencePreTokenizer(
    std::vector<std::unique_ptr<PreTokenizer>> steps);

// Builds the pre-tokenizer a tokenizer.json "pre_tokenizer" object describes; null gives null.
absl::StatusOr<std::unique_ptr<PreTokenizer>> ParseHfPreTokenizer(const nlohmann::json& config);

}  // namespace tessera::tokenizer

#endif  // TESSERA_ENGINE_TOKENIZER_PRE_TOKENIZER_H_
