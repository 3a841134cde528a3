// Text normalizers, applied to each stretch of text between added tokens before
// pre-tokenization, as tokenizer.json's "normalizer" describes: NFC/NFD/NFKC/NFKD (through ICU,
// which implements the Unicode algorithms tokenizers gets from the unicode-normalization crate),
// Lowercase, Prepend, Replace (string or regex), Strip and Sequence. GGUF "llama" vocabularies
// reuse Prepend("▁") and Replace(" ", "▁") for SentencePiece's dummy prefix and whitespace
// escaping. Unsupported types (e.g. SentencePiece "Precompiled" charsmaps) fail at load.
#ifndef TESSERA_ENGINE_TOKENIZER_NORMALIZER_H_
#define TESSERA_ENGINE_TOKENIZER_NORMALIZER_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "nlohmann/json_fwd.hpp"

namespace tessera::tokenizer {

class Normalizer {
 public:
  virtual ~Normalizer() = default;
  virtual std::string Normalize(absl::string_view text) const = 0;
};

// Prepends `prefix` to non-empty text.
std::unique_ptr<Normalizer> MakePrependNormalizer(std::string prefix);
// Replaces every occurrence of the literal `from` by `to`.
std::unique_ptr<Normalizer> MakeReplaceNormalizer(std::string from, std::string to);
std::unique_ptr<Normalizer> MakeSequenceNormalizer(std::vector<std::unique_ptr<Normalizer>> steps);

// Builds the normalizer a tokenizer.json "normalizer" object describes; null JSON gives null.
absl::StatusOr<std::unique_ptr<Normalizer>> ParseHfNormalizer(const nlohmann::json& config);

}  // namespace tessera::tokenizer

#endif  // TESSERA_ENGINE_TOKENIZER_NORMALIZER_H_
