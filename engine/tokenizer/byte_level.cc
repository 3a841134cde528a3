#include "engine/tokenizer/byte_level.h"

#include <array>

#include "absl/container/flat_hash_map.h"
#include "engine/tokenizer/utf8.h"

namespace tessera::tokenizer {
namespace {

struct Tables {
  std::array<std::string, 256> byte_to_char;
  absl::flat_hash_map<uint32_t, uint8_t> char_to_byte;
};

// bytes_to_unicode() from GPT-2's encoder.py.
Tables BuildTables() {
  Tables t;
  uint32_t next = 256;
  for (uint32_t b = 0; b < 256; ++b) {
    const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
    const uint32_t cp = printable ? b : next++;
    AppendCodepoint(cp, &t.byte_to_char[b]);
    t.char_to_byte[cp] = static_cast<uint8_t>(b);
  }
  return t;
}

const Tables& GetTables() {
  static const Tables tables = BuildTables();
  return tables;
}

}  // namespace

absl::string_view ByteLevelChar(uint8_t byte) { return GetTables().byte_to_char[byte]; }

std::string ByteLevelEncode(absl::string_view bytes) {
  const Tables& t = GetTables();
  std::string out;
  out.reserve(bytes.size() * 2);
  for (char c : bytes) out += t.byte_to_char[static_cast<uint8_t>(c)];
  return out;
}

std::optional<std::string> ByteLevelDecode(absl::string_view token) {
  const Tables& t = GetTables();
  std::string out;
  out.reserve(token.size());
  for (absl::string_view ch : SplitChars(token)) {
    if (ValidSequenceLength(ch, 0) == 0) return std::nullopt;
    auto it = t.char_to_byte.find(DecodeChar(ch));
    if (it == t.char_to_byte.end()) return std::nullopt;
    out.push_back(static_cast<char>(it->second));
  }
  return out;
}

}  // namespace tessera::tokenizer
