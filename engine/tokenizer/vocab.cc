#include "engine/tokenizer/vocab.h"

#include <utility>

#include "absl/strings/str_format.h"

namespace tessera::tokenizer {

void Vocab::Set(int32_t id, std::string text, uint8_t attrs, float score) {
  if (id >= size()) {
    texts_.resize(id + 1);
    attrs_.resize(id + 1, kAttrNone);
    scores_.resize(id + 1, 0.0f);
  }
  ids_.try_emplace(text, id);
  texts_[id] = std::move(text);
  attrs_[id] = attrs | kAttrPresent;
  scores_[id] = score;
}

std::optional<int32_t> Vocab::Find(absl::string_view text) const {
  auto it = ids_.find(text);
  if (it == ids_.end()) return std::nullopt;
  return it->second;
}

std::optional<int32_t> Vocab::ByteToken(uint8_t byte) const { return Find(ByteTokenText(byte)); }

std::string ByteTokenText(uint8_t byte) { return absl::StrFormat("<0x%02X>", byte); }

std::optional<uint8_t> ParseByteToken(absl::string_view text) {
  if (text.size() != 6 || text.substr(0, 3) != "<0x" || text[5] != '>') return std::nullopt;
  int value = 0;
  for (char c : text.substr(3, 2)) {
    value <<= 4;
    if (c >= '0' && c <= '9') {
      value |= c - '0';
    } else if (c >= 'A' && c <= 'F') {
      value |= c - 'A' + 10;
    } else if (c >= 'a' && c <= 'f') {
      value |= c - 'a' + 10;
    } else {
      return std::nullopt;
    }
  }
  return static_cast<uint8_t>(value);
}

}  // namespace tessera::tokenizer
