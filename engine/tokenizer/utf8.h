// UTF-8 helpers shared by the tokenizer parts: splitting text into characters (invalid bytes
// become one-byte "characters" so no input is ever rejected), validation, the lossy repair that
// decoding applies (each maximal invalid subpart becomes U+FFFD, as Rust's from_utf8_lossy and
// Python's errors="replace" do, so our decode matches Hugging Face tokenizers), and finding the
// end of the last complete character for streaming.
#ifndef TESSERA_ENGINE_TOKENIZER_UTF8_H_
#define TESSERA_ENGINE_TOKENIZER_UTF8_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace tessera::tokenizer {

inline constexpr absl::string_view kReplacementChar = "\xEF\xBF\xBD";  // U+FFFD

// Length of the valid UTF-8 sequence starting at text[pos], or 0 when the bytes there are not a
// complete valid sequence (bad lead byte, bad continuation, overlong, surrogate, truncated).
size_t ValidSequenceLength(absl::string_view text, size_t pos);

// The characters of `text`; an invalid byte is a character of its own.
std::vector<absl::string_view> SplitChars(absl::string_view text);

bool IsValidUtf8(absl::string_view text);

// `text` with every maximal invalid subpart replaced by U+FFFD.
std::string RepairUtf8(absl::string_view text);

// Length of the longest prefix of `text` after which the rest could still become valid UTF-8
// with more bytes: the rest is empty or a proper prefix of a valid sequence. A streaming
// decoder emits RepairUtf8(text.substr(0, n)) and holds the rest.
size_t CompletePrefixLength(absl::string_view text);

// Appends the UTF-8 encoding of `cp` (must be a scalar value).
void AppendCodepoint(uint32_t cp, std::string* out);

// Decodes one valid character (as returned by SplitChars); invalid bytes decode to 0xFFFD.
uint32_t DecodeChar(absl::string_view ch);

}  // namespace tessera::tokenizer

#endif  // TESSERA_ENGINE_TOKENIZER_UTF8_H_
