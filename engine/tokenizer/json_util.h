// Checked accessors for tokenizer.json and tokenizer_config.json. nlohmann's get<> throws on a
// type mismatch and the project lets no exception escape, so every read goes through these:
// they check the type first and turn a wrong or missing field into an INVALID_ARGUMENT naming
// the field and the object it belongs to.
#ifndef TESSERA_ENGINE_TOKENIZER_JSON_UTIL_H_
#define TESSERA_ENGINE_TOKENIZER_JSON_UTIL_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"

namespace tessera::tokenizer {

// Parses without exceptions; a syntax error is INVALID_ARGUMENT naming `source`.
absl::StatusOr<nlohmann::json> ParseJson(absl::string_view text, absl::string_view source);

absl::StatusOr<std::string> GetString(const nlohmann::json& obj, const char* key,
                                      absl::string_view context);
std::optional<std::string> GetOptionalString(const nlohmann::json& obj, const char* key);
bool GetBoolOr(const nlohmann::json& obj, const char* key, bool fallback);
std::optional<int64_t> GetOptionalInt(const nlohmann::json& obj, const char* key);
// The member when it is an array (resp. object), else null.
const nlohmann::json* FindArray(const nlohmann::json& obj, const char* key);
const nlohmann::json* FindObject(const nlohmann::json& obj, const char* key);

// tokenizer.json patterns: {"String": "..."} or {"Regex": "..."} under "pattern".
struct Pattern {
  std::string text;
  bool is_regex = false;
};
absl::StatusOr<Pattern> GetPattern(const nlohmann::json& obj, absl::string_view context);

}  // namespace tessera::tokenizer

#endif  // TESSERA_ENGINE_TOKENIZER_JSON_UTIL_H_
