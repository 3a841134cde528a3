#include "engine/tokenizer/utf8.h"

namespace tessera::tokenizer {
namespace {

// Number of bytes a sequence with this lead byte has, 0 for a byte that cannot lead.
int LeadLength(uint8_t b) {
  if (b < 0x80) return 1;
  if (b >= 0xC2 && b <= 0xDF) return 2;
  if (b >= 0xE0 && b <= 0xEF) return 3;
  if (b >= 0xF0 && b <= 0xF4) return 4;
  return 0;
}

// Valid range of the second byte for a lead byte (Unicode Table 3-7); later bytes are 80..BF.
bool SecondByteOk(uint8_t lead, uint8_t b) {
  if (lead == 0xE0) return b >= 0xA0 && b <= 0xBF;
  if (lead == 0xED) return b >= 0x80 && b <= 0x9F;
  if (lead == 0xF0) return b >= 0x90 && b <= 0xBF;
  if (lead == 0xF4) return b >= 0x80 && b <= 0x8F;
  return b >= 0x80 && b <= 0xBF;
}

// How many bytes starting at pos form a valid prefix of a sequence (at least 1 when the lead is
// valid), and whether that prefix is the whole sequence.
size_t ValidPrefix(absl::string_view text, size_t pos, bool* complete) {
  const auto lead = static_cast<uint8_t>(text[pos]);
  const int len = LeadLength(lead);
  *complete = false;
  if (len == 0) return 0;
  size_t n = 1;
  while (n < static_cast<size_t>(len) && pos + n < text.size()) {
    const auto b = static_cast<uint8_t>(text[pos + n]);
    const bool ok = n == 1 ? SecondByteOk(lead, b) : (b >= 0x80 && b <= 0xBF);
    if (!ok) return n;
    ++n;
  }
  *complete = n == static_cast<size_t>(len);
  return n;
}

}  // namespace

size_t ValidSequenceLength(absl::string_view text, size_t pos) {
  if (pos >= text.size()) return 0;
  bool complete = false;
  const size_t n = ValidPrefix(text, pos, &complete);
  return complete ? n : 0;
}

std::vector<absl::string_view> SplitChars(absl::string_view text) {
  std::vector<absl::string_view> chars;
  chars.reserve(text.size());
  size_t pos = 0;
  while (pos < text.size()) {
    size_t n = ValidSequenceLength(text, pos);
    if (n == 0) n = 1;
    chars.push_back(text.substr(pos, n));
    pos += n;
  }
  return chars;
}

bool IsValidUtf8(absl::string_view text) {
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t n = ValidSequenceLength(text, pos);
    if (n == 0) return false;
    pos += n;
  }
  return true;
}

std::string RepairUtf8(absl::string_view text) {
  std::string out;
  out.reserve(text.size());
  size_t pos = 0;
  while (pos < text.size()) {
    bool complete = false;
    const size_t n = ValidPrefix(text, pos, &complete);
    if (complete) {
      out.append(text.data() + pos, n);
      pos += n;
    } else {
      // A maximal subpart (a valid but cut-off prefix, or one bad byte) becomes one U+FFFD.
      out.append(kReplacementChar.data(), kReplacementChar.size());
      pos += n == 0 ? 1 : n;
    }
  }
  return out;
}

size_t CompletePrefixLength(absl::string_view text) {
  size_t pos = 0;
  while (pos < text.size()) {
    bool complete = false;
    const size_t n = ValidPrefix(text, pos, &complete);
    if (complete) {
      pos += n;
    } else if (n > 0 && pos + n == text.size()) {
      return pos;  // a truncated sequence at the very end: wait for more bytes
    } else {
      pos += n == 0 ? 1 : n;  // invalid whatever follows: emit it (repaired) now
    }
  }
  return pos;
}

void AppendCodepoint(uint32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

uint32_t DecodeChar(absl::string_view ch) {
  const size_t n = ValidSequenceLength(ch, 0);
  if (n == 0) return 0xFFFD;
  const auto b0 = static_cast<uint8_t>(ch[0]);
  if (n == 1) return b0;
  uint32_t cp = b0 & (0x7F >> n);
  for (size_t i = 1; i < n; ++i) cp = (cp << 6) | (static_cast<uint8_t>(ch[i]) & 0x3F);
  return cp;
}

}  // namespace tessera::tokenizer
