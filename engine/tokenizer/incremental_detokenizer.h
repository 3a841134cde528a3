// Streams the text of generated tokens one token at a time. A token can end in the middle of a
// UTF-8 character (byte-fallback <0xF0><0x9F>..., byte-level BPE pieces of an emoji), so bytes
// are held until the character they start is complete, and every chunk returned is valid UTF-8.
// Invalid bytes are replaced by U+FFFD as soon as no later byte can complete them, so the
// concatenation of all chunks (after Flush) equals Tokenizer::Decode(ids, skip_special=true)
// of the same ids. Not thread-safe: one per sequence.
#ifndef TESSERA_ENGINE_TOKENIZER_INCREMENTAL_DETOKENIZER_H_
#define TESSERA_ENGINE_TOKENIZER_INCREMENTAL_DETOKENIZER_H_

#include <cstdint>
#include <string>

#include "engine/tokenizer/tokenizer.h"

namespace tessera::tokenizer {

class IncrementalDetokenizer {
 public:
  // first_piece_of_sequence: the first token pushed starts the text, so the tokenizer's leading
  // space rule applies (StripsLeadingSpace). Pass false when streaming a continuation after a
  // prompt: its leading space is real. skip_special: control tokens (EOS, <|im_end|>, ...)
  // contribute nothing, as in Decode(ids, true).
  explicit IncrementalDetokenizer(const Tokenizer& tokenizer, bool first_piece_of_sequence = true,
                                  bool skip_special = true);

  // The text that became complete with this token (possibly empty). Unknown ids add nothing.
  std::string Push(int32_t id);
  // Everything still held, with incomplete bytes replaced by U+FFFD; resets the held bytes.
  std::string Flush();

 private:
  const Tokenizer& tokenizer_;
  bool strip_next_space_;
  bool skip_special_;
  std::string pending_;  // bytes of an incomplete character
};

}  // namespace tessera::tokenizer

#endif  // TESSERA_ENGINE_TOKENIZER_INCREMENTAL_DETOKENIZER_H_
