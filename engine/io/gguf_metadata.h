// GGUF metadata values (quant-formats.md §11.1): the twelve scalar and string types and arrays of
// them, nested to any depth. Model and tokenizer loaders read keys through the typed getters,
// which accept any integer width where llama.cpp writers and the spec disagree (u32 vs u64).
#ifndef TESSERA_ENGINE_IO_GGUF_METADATA_H_
#define TESSERA_ENGINE_IO_GGUF_METADATA_H_

#include <cstdint>
#include <string>
#include "absl/strings/string_view.h"
#include <variant>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"

namespace tessera::io {

enum class GgufValueType : uint32_t {
  kU8 = 0, kI8 = 1, kU16 = 2, kI16 = 3, kU32 = 4, kI32 = 5, kF32 = 6, kBool = 7,
  kString = 8, kArray = 9, kU64 = 10, kI64 = 11, kF64 = 12,
};

absl::string_view GgufValueTypeName(GgufValueType type);

struct GgufValue {
  GgufValueType type = GgufValueType::kU8;
  GgufValueType element_type = GgufValueType::kU8;  // meaningful when type == kArray
  // Unsigned ints in uint64_t, signed in int64_t, floats in double, bool, string, or array.
  std::variant<uint64_t, int64_t, double, bool, std::string, std::vector<GgufValue>> value;

  bool is_integer() const;
  // Human-readable rendering; arrays longer than `max_items` are abbreviated.
  std::string ToString(size_t max_items = 8) const;
};

struct GgufKeyValue {
  std::string key;
  GgufValue value;
};

// Ordered key-value list with typed lookups; errors name the key.
class GgufMetadata {
 public:
  void Add(std::string key, GgufValue value);
  const std::vector<GgufKeyValue>& entries() const { return entries_; }
  const GgufValue* Find(absl::string_view key) const;
  bool Contains(absl::string_view key) const { return Find(key) != nullptr; }

  absl::StatusOr<uint64_t> GetUint(absl::string_view key) const;
  absl::StatusOr<int64_t> GetInt(absl::string_view key) const;
  absl::StatusOr<double> GetFloat(absl::string_view key) const;  // any float or int type
  absl::StatusOr<bool> GetBool(absl::string_view key) const;
  absl::StatusOr<std::string> GetString(absl::string_view key) const;
  absl::StatusOr<const std::vector<GgufValue>*> GetArray(absl::string_view key) const;
  absl::StatusOr<std::vector<std::string>> GetStringArray(absl::string_view key) const;
  absl::StatusOr<std::vector<double>> GetFloatArray(absl::string_view key) const;
  absl::StatusOr<std::vector<int64_t>> GetIntArray(absl::string_view key) const;

 private:
  std::vector<GgufKeyValue> entries_;
  absl::flat_hash_map<std::string, size_t> index_;
};

}  // namespace tessera::io

#endif  // TESSERA_ENGINE_IO_GGUF_METADATA_H_
