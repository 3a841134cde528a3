// GPT-2's byte-to-unicode alphabet: byte-level BPE vocabularies spell every byte as one
// printable character (printable Latin-1 bytes as themselves, the other 68 bytes as U+0100..),
// so a merge table over characters covers arbitrary bytes. Used by the ByteLevel pre-tokenizer
// and decoder of tokenizer.json and by GGUF "gpt2" vocabularies.
#ifndef TESSERA_ENGINE_TOKENIZER_BYTE_LEVEL_H_
#define TESSERA_ENGINE_TOKENIZER_BYTE_LEVEL_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/strings/string_view.h"

namespace tessera::tokenizer {

// The UTF-8 spelling of one byte in the alphabet.
absl::string_view ByteLevelChar(uint8_t byte);

// Every byte of `bytes` spelled in the alphabet.
std::string ByteLevelEncode(absl::string_view bytes);

// The bytes a token spelled in the alphabet stands for; nullopt when some character is not in
// the alphabet (tokenizers then decodes the token's own UTF-8 bytes, and so do we).
std::optional<std::string> ByteLevelDecode(absl::string_view token);

}  // namespace tessera::tokenizer

#endif  // TESSERA_ENGINE_TOKENIZER_BYTE_LEVEL_H_
