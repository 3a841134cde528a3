#include "engine/tokenizer/incremental_detokenizer.h"

#include "engine/tokenizer/utf8.h"

namespace tessera::tokenizer {

IncrementalDetokenizer::IncrementalDetokenizer(const Tokenizer& tokenizer,
                                               bool first_piece_of_sequence, bool skip_special)
    : tokenizer_(tokenizer),
      strip_next_space_(first_piece_of_sequence && tokenizer.StripsLeadingSpace()),
      skip_special_(skip_special) {}

std::string IncrementalDetokenizer::Push(int32_t id) {
  if (id < 0 || id >= tokenizer_.vocab_size()) return std::string();
  if (skip_special_ && tokenizer_.IsSpecial(id)) return std::string();
  std::string bytes = tokenizer_.TokenBytes(id);
  // Decode strips the space from the first token it keeps, whatever that token's text is.
  if (strip_next_space_) {
    if (!bytes.empty() && bytes[0] == ' ') bytes.erase(0, 1);
    strip_next_space_ = false;
  }
  pending_ += bytes;
  const size_t n = CompletePrefixLength(pending_);
  std::string out = RepairUtf8(absl::string_view(pending_).substr(0, n));
  pending_.erase(0, n);
  return out;
}

std::string IncrementalDetokenizer::Flush() {
  std::string out = RepairUtf8(pending_);
  pending_.clear();
  return out;
}

}  // namespace tessera::tokenizer
