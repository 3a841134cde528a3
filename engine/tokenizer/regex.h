// A compiled PCRE2 pattern for pre-tokenization. tokenizers uses Oniguruma and llama.cpp its own
// splitter; PCRE2 with UTF and UCP gives the same Unicode classes (\p{L}, \p{N}, \s) and the
// lookahead the GPT-2 family of patterns needs. Patterns are JIT-compiled once and shared
// between threads; matching allocates its own match data, so FindAll is thread-safe. Text that
// is not valid UTF-8 is still matched (PCRE2_MATCH_INVALID_UTF): invalid bytes match no class.
#ifndef TESSERA_ENGINE_TOKENIZER_REGEX_H_
#define TESSERA_ENGINE_TOKENIZER_REGEX_H_

#include <cstddef>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace tessera::tokenizer {

class Regex {
 public:
  // `literal` matches the pattern text itself (tokenizer.json Split {"String": ...}).
  static absl::StatusOr<std::unique_ptr<Regex>> Compile(absl::string_view pattern,
                                                        bool literal = false);
  ~Regex();
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;

  // Non-empty, non-overlapping matches from left to right as [begin, end) byte offsets.
  std::vector<std::pair<size_t, size_t>> FindAll(absl::string_view text) const;

  const std::string& pattern() const { return pattern_; }

 private:
  Regex(std::string pattern, void* code) : pattern_(std::move(pattern)), code_(code) {}

  std::string pattern_;
  void* code_;  // pcre2_code_8*; kept opaque so users need not include pcre2.h
};

}  // namespace tessera::tokenizer

#endif  // TESSERA_ENGINE_TOKENIZER_REGEX_H_
