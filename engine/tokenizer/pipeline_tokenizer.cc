#include "engine/tokenizer/pipeline_tokenizer.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "engine/tokenizer/byte_level.h"
#include "engine/tokenizer/utf8.h"

namespace tessera::tokenizer {

PipelineTokenizer::PipelineTokenizer(PipelineParts parts)
    : parts_(std::move(parts)), splitter_(parts_.added_tokens) {}

absl::StatusOr<std::vector<int32_t>> PipelineTokenizer::Encode(absl::string_view text,
                                                               bool add_special,
                                                               bool parse_special) const {
  std::vector<int32_t> ids;
  if (add_special) ids = parts_.prefix_ids;
  std::vector<Piece> pieces;
  for (const Fragment& fragment : splitter_.Split(text, parse_special)) {
    if (fragment.id) {
      ids.push_back(*fragment.id);
      continue;
    }
    pieces.clear();
    pieces.push_back({parts_.normalizer != nullptr ? parts_.normalizer->Normalize(fragment.text)
                                                   : std::string(fragment.text),
                      fragment.at_start});
    if (parts_.pre_tokenizer != nullptr) parts_.pre_tokenizer->PreTokenize(&pieces);
    for (const Piece& piece : pieces) parts_.model->Encode(parts_.vocab, piece.text, &ids);
  }
  if (add_special) ids.insert(ids.end(), parts_.suffix_ids.begin(), parts_.suffix_ids.end());
  return ids;
}

absl::StatusOr<std::string> PipelineTokenizer::Decode(absl::Span<const int32_t> ids,
                                                      bool skip_special) const {
  std::string bytes;
  bool first = true;
  for (int32_t id : ids) {
    if (!parts_.vocab.Contains(id)) {
      return absl::InvalidArgumentError(absl::StrCat("token id ", id, " is not in the vocabulary (",
                                                     parts_.vocab.size(), " ids)"));
    }
    if (skip_special && IsSpecial(id)) continue;
    std::string piece = TokenBytes(id);
    if (first && parts_.decoding.strip_leading_space && !piece.empty() && piece[0] == ' ') {
      piece.erase(0, 1);
    }
    first = false;
    bytes += piece;
  }
  return RepairUtf8(bytes);
}

std::string PipelineTokenizer::TokenText(int32_t id) const {
  return parts_.vocab.Contains(id) ? parts_.vocab.Text(id) : std::string();
}

std::string PipelineTokenizer::TokenBytes(int32_t id) const {
  if (!parts_.vocab.Contains(id)) return std::string();
  const TokenDecoding& d = parts_.decoding;
  const std::string& text = parts_.vocab.Text(id);
  const uint8_t attrs = parts_.vocab.Attrs(id);
  if (d.raw_added_tokens && (attrs & (kAttrControl | kAttrUserDefined)) != 0) return text;
  if (d.byte_fallback) {
    if (auto byte = ParseByteToken(text)) return std::string(1, static_cast<char>(*byte));
  }
  std::string out = text;
  if (d.byte_level) {
    if (auto decoded = ByteLevelDecode(text)) out = *std::move(decoded);
  }
  for (const auto& [from, to] : d.replacements) out = absl::StrReplaceAll(out, {{from, to}});
  return out;
}

std::string PipelineTokenizer::Describe() const {
  return absl::StrCat(parts_.description, ", ", parts_.vocab.size(), " tokens");
}

}  // namespace tessera::tokenizer
