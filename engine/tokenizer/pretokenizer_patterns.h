// The split regexes of well-known byte-level BPE tokenizers. GGUF files only name their
// pre-tokenizer (tokenizer.ggml.pre); the patterns for each name are the ones llama.cpp's
// llama-vocab.cpp uses, applied one after another as Isolated splits. PCRE2 runs them as written
// (tokenizers' Oniguruma and PCRE2 agree on these constructs), so the case-insensitive
// contractions of the Llama 3 / Qwen2 patterns keep their original (?i:...) form.
#ifndef TESSERA_ENGINE_TOKENIZER_PRETOKENIZER_PATTERNS_H_
#define TESSERA_ENGINE_TOKENIZER_PRETOKENIZER_PATTERNS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace tessera::tokenizer {

// tokenizers' ByteLevel pre-tokenizer (GPT-2 plus a trailing \s+).
inline constexpr absl::string_view kByteLevelPattern =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";
// GPT-2 as llama.cpp writes it (no trailing \s+: leftover spaces stay unmatched pieces).
inline constexpr absl::string_view kGpt2Pattern =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)";
inline constexpr absl::string_view kLlama3Pattern =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| "
    "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
inline constexpr absl::string_view kQwen2Pattern =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| "
    "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

// o200k (GPT-4o, gpt-oss, Llama 4) as its tokenizer.json writes it. llama.cpp's "gpt-4o" rewrites
// the case classes as [^a-z] / [^A-Z] lookaheads (its regex engine has no \p{Lu}); PCRE2 has
// them, so tessera runs the original, which is what tiktoken and `tokenizers` split by (the two
// can differ where letters outside ASCII change case inside a word).
inline constexpr absl::string_view kO200kPattern =
    "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+"
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+"
    "[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\\p{N}{1,3}| "
    "?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

// The regexes llama.cpp applies for a tokenizer.ggml.pre value ("" = key absent, llama.cpp's
// "default"). NOT_FOUND for names we do not know.
absl::StatusOr<std::vector<std::string>> GgufPreTokenizerPatterns(absl::string_view pre);

}  // namespace tessera::tokenizer

#endif  // TESSERA_ENGINE_TOKENIZER_PRETOKENIZER_PATTERNS_H_
