// The token table every tokenizer part shares: id -> text, text -> id, and per-token attributes
// (GGUF token types, or HF added-token flags mapped onto the same bits) plus SentencePiece
// scores. Ids need not be dense in tokenizer.json; holes have no text and are rejected by Decode.
#ifndef TESSERA_ENGINE_TOKENIZER_VOCAB_H_
#define TESSERA_ENGINE_TOKENIZER_VOCAB_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"

namespace tessera::tokenizer {

// Bit flags; GGUF token_type values 1..6 map to kNormal..kByte.
enum TokenAttr : uint8_t {
  kAttrNone = 0,
  kAttrNormal = 1 << 0,
  kAttrUnknown = 1 << 1,
  kAttrControl = 1 << 2,      // special: skipped by Decode(skip_special)
  kAttrUserDefined = 1 << 3,  // added token that is not special
  kAttrUnused = 1 << 4,
  kAttrByte = 1 << 5,     // <0xNN> byte-fallback token
  kAttrPresent = 1 << 7,  // the id exists
};

class Vocab {
 public:
  // Sets id's text and attributes (growing the table); the first id given a text wins the
  // text -> id lookup, as in tokenizers and llama.cpp.
  void Set(int32_t id, std::string text, uint8_t attrs, float score = 0.0f);
  void AddAttr(int32_t id, uint8_t attrs) { attrs_[id] |= attrs; }

  int32_t size() const { return static_cast<int32_t>(texts_.size()); }
  bool Contains(int32_t id) const {
    return id >= 0 && id < size() && (attrs_[id] & kAttrPresent) != 0;
  }
  const std::string& Text(int32_t id) const { return texts_[id]; }
  uint8_t Attrs(int32_t id) const { return attrs_[id]; }
  bool Has(int32_t id, uint8_t attr) const { return Contains(id) && (attrs_[id] & attr) != 0; }
  float Score(int32_t id) const { return scores_[id]; }
  std::optional<int32_t> Find(absl::string_view text) const;
  // The <0xNN> token of a byte, if the vocabulary has one.
  std::optional<int32_t> ByteToken(uint8_t byte) const;

 private:
  std::vector<std::string> texts_;
  std::vector<uint8_t> attrs_;
  std::vector<float> scores_;
  absl::flat_hash_map<std::string, int32_t> ids_;
};

// "<0xNN>" for a byte (upper-case hex, as SentencePiece and tokenizers spell it).
std::string ByteTokenText(uint8_t byte);
// The byte a "<0xNN>" text stands for.
std::optional<uint8_t> ParseByteToken(absl::string_view text);

}  // namespace tessera::tokenizer

#endif  // TESSERA_ENGINE_TOKENIZER_VOCAB_H_
