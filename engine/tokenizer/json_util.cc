#include "engine/tokenizer/json_util.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace tessera::tokenizer {

absl::StatusOr<nlohmann::json> ParseJson(absl::string_view text, absl::string_view source) {
  nlohmann::json j = nlohmann::json::parse(text.begin(), text.end(), /*cb=*/nullptr,
                                           /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    return absl::InvalidArgumentError(absl::StrCat(source, " is not valid JSON"));
  }
  return j;
}

absl::StatusOr<std::string> GetString(const nlohmann::json& obj, const char* key,
                                      absl::string_view context) {
  if (obj.is_object()) {
    auto it = obj.find(key);
    if (it != obj.end() && it->is_string()) return it->get<std::string>();
  }
  return absl::InvalidArgumentError(
      absl::StrCat(context, ": field '", key, "' is missing or not a string"));
}

std::optional<std::string> GetOptionalString(const nlohmann::json& obj, const char* key) {
  if (!obj.is_object()) return std::nullopt;
  auto it = obj.find(key);
  if (it == obj.end() || !it->is_string()) return std::nullopt;
  return it->get<std::string>();
}

bool GetBoolOr(const nlohmann::json& obj, const char* key, bool fallback) {
  if (!obj.is_object()) return fallback;
  auto it = obj.find(key);
  if (it == obj.end() || !it->is_boolean()) return fallback;
  return it->get<bool>();
}

std::optional<int64_t> GetOptionalInt(const nlohmann::json& obj, const char* key) {
  if (!obj.is_object()) return std::nullopt;
  auto it = obj.find(key);
  if (it == obj.end() || !it->is_number_integer()) return std::nullopt;
  return it->get<int64_t>();
}

const nlohmann::json* FindArray(const nlohmann::json& obj, const char* key) {
  if (!obj.is_object()) return nullptr;
  auto it = obj.find(key);
  return it != obj.end() && it->is_array() ? &*it : nullptr;
}

const nlohmann::json* FindObject(const nlohmann::json& obj, const char* key) {
  if (!obj.is_object()) return nullptr;
  auto it = obj.find(key);
  return it != obj.end() && it->is_object() ? &*it : nullptr;
}

absl::StatusOr<Pattern> GetPattern(const nlohmann::json& obj, absl::string_view context) {
  const nlohmann::json* p = FindObject(obj, "pattern");
  if (p != nullptr) {
    if (auto s = GetOptionalString(*p, "String")) return Pattern{*s, false};
    if (auto r = GetOptionalString(*p, "Regex")) return Pattern{*r, true};
  }
  return absl::InvalidArgumentError(
      absl::StrCat(context, ": 'pattern' must be {\"String\": ...} or {\"Regex\": ...}"));
}

}  // namespace tessera::tokenizer
