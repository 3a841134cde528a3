#include "engine/io/gguf_metadata.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_join.h"

namespace tessera::io {

absl::string_view GgufValueTypeName(GgufValueType type) {
  static constexpr absl::string_view kNames[] = {"u8",  "i8",   "u16",    "i16",   "u32",
                                                "i32", "f32",  "bool",   "string", "array",
                                                "u64", "i64",  "f64"};
  const auto i = static_cast<uint32_t>(type);
  return i < 13 ? kNames[i] : "invalid";
}

bool GgufValue::is_integer() const {
  return std::holds_alternative<uint64_t>(value) || std::holds_alternative<int64_t>(value);
}

std::string GgufValue::ToString(size_t max_items) const {
  if (auto* u = std::get_if<uint64_t>(&value)) return absl::StrCat(*u);
  if (auto* i = std::get_if<int64_t>(&value)) return absl::StrCat(*i);
  if (auto* d = std::get_if<double>(&value)) return absl::StrFormat("%g", *d);
  if (auto* b = std::get_if<bool>(&value)) return *b ? "true" : "false";
  if (auto* s = std::get_if<std::string>(&value)) {
    std::string shown = s->size() > 80 ? s->substr(0, 77) + "..." : *s;
    return absl::StrCat("\"", absl::CHexEscape(shown), "\"");
  }
  const auto& arr = std::get<std::vector<GgufValue>>(value);
  std::vector<std::string> items;
  for (size_t i = 0; i < arr.size() && i < max_items; ++i) items.push_back(arr[i].ToString(max_items));
  std::string out = absl::StrCat("[", absl::StrJoin(items, ", "));
  if (arr.size() > max_items) absl::StrAppend(&out, ", ... (", arr.size(), " items)");
  absl::StrAppend(&out, "]");
  return out;
}

void GgufMetadata::Add(std::string key, GgufValue value) {
  index_[key] = entries_.size();
  entries_.push_back({std::move(key), std::move(value)});
}

const GgufValue* GgufMetadata::Find(absl::string_view key) const {
  auto it = index_.find(key);
  return it == index_.end() ? nullptr : &entries_[it->second].value;
}

namespace {

absl::Status Missing(absl::string_view key) {
  return absl::NotFoundError(absl::StrCat("GGUF metadata key '", key, "' is missing"));
}
absl::Status WrongType(absl::string_view key, const GgufValue& v, absl::string_view want) {
  return absl::InvalidArgumentError(absl::StrFormat("GGUF metadata key '%s' has type %s, expected %s",
                                                    key, GgufValueTypeName(v.type), want));
}

}  // namespace

absl::StatusOr<uint64_t> GgufMetadata::GetUint(absl::string_view key) const {
  const GgufValue* v = Find(key);
  if (v == nullptr) return Missing(key);
  if (auto* u = std::get_if<uint64_t>(&v->value)) return *u;
  if (auto* i = std::get_if<int64_t>(&v->value); i != nullptr && *i >= 0) {
    return static_cast<uint64_t>(*i);
  }
  return WrongType(key, *v, "a non-negative integer");
}

absl::StatusOr<int64_t> GgufMetadata::GetInt(absl::string_view key) const {
  const GgufValue* v = Find(key);
  if (v == nullptr) return Missing(key);
  if (auto* i = std::get_if<int64_t>(&v->value)) return *i;
  if (auto* u = std::get_if<uint64_t>(&v->value); u != nullptr && *u <= INT64_MAX) {
    return static_cast<int64_t>(*u);
  }
  return WrongType(key, *v, "an integer");
}

absl::StatusOr<double> GgufMetadata::GetFloat(absl::string_view key) const {
  const GgufValue* v = Find(key);
  if (v == nullptr) return Missing(key);
  if (auto* d = std::get_if<double>(&v->value)) return *d;
  if (auto* u = std::get_if<uint64_t>(&v->value)) return static_cast<double>(*u);
  if (auto* i = std::get_if<int64_t>(&v->value)) return static_cast<double>(*i);
  return WrongType(key, *v, "a number");
}

absl::StatusOr<bool> GgufMetadata::GetBool(absl::string_view key) const {
  const GgufValue* v = Find(key);
  if (v == nullptr) return Missing(key);
  if (auto* b = std::get_if<bool>(&v->value)) return *b;
  return WrongType(key, *v, "bool");
}

absl::StatusOr<std::string> GgufMetadata::GetString(absl::string_view key) const {
  const GgufValue* v = Find(key);
  if (v == nullptr) return Missing(key);
  if (auto* s = std::get_if<std::string>(&v->value)) return *s;
  return WrongType(key, *v, "string");
}

absl::StatusOr<const std::vector<GgufValue>*> GgufMetadata::GetArray(absl::string_view key) const {
  const GgufValue* v = Find(key);
  if (v == nullptr) return Missing(key);
  if (auto* a = std::get_if<std::vector<GgufValue>>(&v->value)) return a;
  return WrongType(key, *v, "array");
}

absl::StatusOr<std::vector<std::string>> GgufMetadata::GetStringArray(absl::string_view key) const {
  auto arr = GetArray(key);
  if (!arr.ok()) return arr.status();
  std::vector<std::string> out;
  out.reserve((*arr)->size());
  for (const GgufValue& v : **arr) {
    auto* s = std::get_if<std::string>(&v.value);
    if (s == nullptr) return WrongType(key, v, "array of strings");
    out.push_back(*s);
  }
  return out;
}

absl::StatusOr<std::vector<double>> GgufMetadata::GetFloatArray(absl::string_view key) const {
  auto arr = GetArray(key);
  if (!arr.ok()) return arr.status();
  std::vector<double> out;
  out.reserve((*arr)->size());
  for (const GgufValue& v : **arr) {
    if (auto* d = std::get_if<double>(&v.value)) out.push_back(*d);
    else if (auto* u = std::get_if<uint64_t>(&v.value)) out.push_back(static_cast<double>(*u));
    else if (auto* i = std::get_if<int64_t>(&v.value)) out.push_back(static_cast<double>(*i));
    else return WrongType(key, v, "array of numbers");
  }
  return out;
}

absl::StatusOr<std::vector<int64_t>> GgufMetadata::GetIntArray(absl::string_view key) const {
  auto arr = GetArray(key);
  if (!arr.ok()) return arr.status();
  std::vector<int64_t> out;
  out.reserve((*arr)->size());
  for (const GgufValue& v : **arr) {
    if (auto* u = std::get_if<uint64_t>(&v.value)) out.push_back(static_cast<int64_t>(*u));
    else if (auto* i = std::get_if<int64_t>(&v.value)) out.push_back(*i);
    else return WrongType(key, v, "array of integers");
  }
  return out;
}

}  // namespace tessera::io
