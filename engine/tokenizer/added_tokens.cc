#include "engine/tokenizer/added_tokens.h"

#include <algorithm>
#include <utility>

#include "engine/tokenizer/utf8.h"

namespace tessera::tokenizer {
namespace {

bool IsSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

// Word characters for single_word: ASCII alphanumerics, '_', and any non-ASCII character (an
// approximation of Rust's char::is_alphanumeric that errs toward "inside a word").
bool IsWordByte(char c) {
  const auto u = static_cast<unsigned char>(c);
  return u >= 0x80 || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         c == '_';
}

}  // namespace

AddedTokenSplitter::AddedTokenSplitter(std::vector<AddedToken> tokens)
    : tokens_(std::move(tokens)) {
  for (size_t i = 0; i < tokens_.size(); ++i) {
    if (!tokens_[i].content.empty()) by_first_byte_[tokens_[i].content[0]].push_back(i);
  }
  for (auto& [first, list] : by_first_byte_) {
    std::stable_sort(list.begin(), list.end(), [&](size_t a, size_t b) {
      return tokens_[a].content.size() > tokens_[b].content.size();
    });
  }
}

std::vector<Fragment> AddedTokenSplitter::Split(absl::string_view text, bool parse_special) const {
  std::vector<Fragment> out;
  size_t raw_begin = 0;  // start of the pending raw fragment
  auto flush_raw = [&](size_t end) {
    if (end > raw_begin)
      out.push_back({text.substr(raw_begin, end - raw_begin), std::nullopt, raw_begin == 0});
  };
  size_t pos = 0;
  while (pos < text.size()) {
    const AddedToken* found = nullptr;
    if (auto it = by_first_byte_.find(text[pos]); it != by_first_byte_.end()) {
      for (size_t index : it->second) {
        const AddedToken& t = tokens_[index];
        if (t.special && !parse_special) continue;
        if (text.substr(pos, t.content.size()) != t.content) continue;
        if (t.single_word) {
          const size_t end = pos + t.content.size();
          const bool left_ok = pos == 0 || !IsWordByte(text[pos - 1]);
          const bool right_ok = end == text.size() || !IsWordByte(text[end]);
          if (!left_ok || !right_ok) continue;
        }
        found = &t;
        break;
      }
    }
    if (found == nullptr) {
      const size_t n = ValidSequenceLength(text, pos);
      pos += n == 0 ? 1 : n;
      continue;
    }
    size_t begin = pos;
    size_t end = pos + found->content.size();
    if (found->lstrip) {
      while (begin > raw_begin && IsSpace(text[begin - 1])) --begin;
    }
    if (found->rstrip) {
      while (end < text.size() && IsSpace(text[end])) ++end;
    }
    flush_raw(begin);
    out.push_back({absl::string_view(), found->id, begin == 0});
    raw_begin = end;
    pos = end;
  }
  flush_raw(text.size());
  return out;
}

}  // namespace tessera::tokenizer
