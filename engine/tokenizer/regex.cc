#include "engine/tokenizer/regex.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "absl/memory/memory.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "engine/tokenizer/utf8.h"

namespace tessera::tokenizer {
namespace {

pcre2_code* AsCode(void* p) { return static_cast<pcre2_code*>(p); }

struct MatchDataDeleter {
  void operator()(pcre2_match_data* m) const { pcre2_match_data_free(m); }
};

}  // namespace

absl::StatusOr<std::unique_ptr<Regex>> Regex::Compile(absl::string_view pattern, bool literal) {
  uint32_t options = PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF;
  if (literal) options |= PCRE2_LITERAL;
  int error = 0;
  PCRE2_SIZE error_offset = 0;
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                   options, &error, &error_offset, nullptr);
  if (code == nullptr) {
    PCRE2_UCHAR message[256];
    pcre2_get_error_message(error, message, sizeof(message));
    return absl::InvalidArgumentError(absl::StrCat("cannot compile pre-tokenizer regex '", pattern,
                                                   "' at offset ", error_offset, ": ",
                                                   reinterpret_cast<const char*>(message)));
  }
  // JIT is an optimization only; the interpreter gives the same matches when it is unavailable.
  pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);
  return absl::WrapUnique(new Regex(std::string(pattern), code));
}

Regex::~Regex() { pcre2_code_free(AsCode(code_)); }

std::vector<std::pair<size_t, size_t>> Regex::FindAll(absl::string_view text) const {
  std::vector<std::pair<size_t, size_t>> matches;
  std::unique_ptr<pcre2_match_data, MatchDataDeleter> md(
      pcre2_match_data_create_from_pattern(AsCode(code_), nullptr));
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t start = 0;
  while (start <= text.size()) {
    const int rc = pcre2_match(AsCode(code_), subject, text.size(), start, 0, md.get(), nullptr);
    if (rc < 0) break;  // PCRE2_ERROR_NOMATCH, or a resource limit: the rest stays unmatched
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md.get());
    const size_t b = ov[0];
    const size_t e = ov[1];
    if (e > b) {
      matches.emplace_back(b, e);
      start = e;
    } else {
      // Empty match: step over one character so the scan advances.
      if (b >= text.size()) break;
      const size_t n = ValidSequenceLength(text, b);
      start = b + (n == 0 ? 1 : n);
    }
  }
  return matches;
}

}  // namespace tessera::tokenizer
