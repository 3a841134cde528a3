#include "engine/io/safetensors_file.h"

#include <algorithm>
#include <cstring>
#include <tuple>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "engine/common/status_macros.h"
#include "nlohmann/json.hpp"

namespace tessera::io {
namespace {

using Json = nlohmann::json;

absl::Status Corrupt(const std::string& source, const std::string& what) {
  return absl::DataLossError(absl::StrCat("safetensors ", source, ": ", what));
}

}  // namespace

absl::StatusOr<std::unique_ptr<SafetensorsFile>> SafetensorsFile::Open(const std::string& path) {
  TESSERA_ASSIGN_OR_RETURN(std::unique_ptr<MappedFile> file, MappedFile::Open(path));
  TESSERA_ASSIGN_OR_RETURN(std::unique_ptr<SafetensorsFile> st, Parse(file->bytes(), path));
  st->file_ = std::move(file);
  return st;
}

absl::StatusOr<std::unique_ptr<SafetensorsFile>> SafetensorsFile::Parse(
    absl::Span<const uint8_t> bytes, std::string source_name) {
  auto st = std::make_unique<SafetensorsFile>();
  st->source_name_ = std::move(source_name);
  TESSERA_RETURN_IF_ERROR(st->ParseHeader(bytes));
  return st;
}

absl::Status SafetensorsFile::ParseHeader(absl::Span<const uint8_t> bytes) {
  const std::string& src = source_name_;
  if (bytes.size() < 8) {
    return Corrupt(src, absl::StrFormat("file is %d bytes, too short for the 8-byte header length",
                                        bytes.size()));
  }
  uint64_t header_len;
  std::memcpy(&header_len, bytes.data(), 8);
  if (header_len > kMaxHeaderSize) {
    return Corrupt(src, absl::StrFormat("header length %d exceeds the limit of %d bytes",
                                        header_len, kMaxHeaderSize));
  }
  if (header_len > bytes.size() - 8) {
    return Corrupt(src, absl::StrFormat("header length %d runs past the end of the %d-byte file",
                                        header_len, bytes.size()));
  }
  const char* hbegin = reinterpret_cast<const char*>(bytes.data() + 8);
  const char* hend = hbegin + header_len;
  if (header_len == 0 || hbegin[0] != '{') {
    return Corrupt(src, "header is not a JSON object (must start with '{')");
  }

  // nlohmann keeps the last of duplicate keys silently; the reference rejects them, so watch the
  // top-level keys while parsing.
  absl::flat_hash_set<std::string> seen;
  std::string duplicate;
  Json::parser_callback_t cb = [&](int depth, Json::parse_event_t event, Json& parsed) {
    if (event == Json::parse_event_t::key && depth == 1 && parsed.is_string()) {
      const std::string& k = parsed.get_ref<const std::string&>();
      if (!seen.insert(k).second && duplicate.empty()) duplicate = k;
    }
    return true;
  };
  Json header = Json::parse(hbegin, hend, cb, /*allow_exceptions=*/false);
  if (header.is_discarded() || !header.is_object()) {
    return Corrupt(src, "header is not valid JSON");
  }
  if (!duplicate.empty()) return Corrupt(src, absl::StrCat("duplicate tensor name '", duplicate, "'"));

  buffer_ = bytes.subspan(8 + header_len);
  // (begin, end, name): copies, because the hash map moves entries as it grows.
  std::vector<std::tuple<uint64_t, uint64_t, std::string>> order;
  for (auto it = header.begin(); it != header.end(); ++it) {
    const std::string& name = it.key();
    const Json& v = it.value();
    if (name == "__metadata__") {
      if (!v.is_object()) return Corrupt(src, "__metadata__ is not an object");
      for (auto m = v.begin(); m != v.end(); ++m) {
        if (!m.value().is_string()) {
          return Corrupt(src, absl::StrCat("__metadata__ value of '", m.key(), "' is not a string"));
        }
        metadata_[m.key()] = m.value().get<std::string>();
      }
      continue;
    }
    if (!v.is_object()) return Corrupt(src, absl::StrCat("entry '", name, "' is not an object"));
    auto dt = v.find("dtype");
    auto sh = v.find("shape");
    auto off = v.find("data_offsets");
    if (dt == v.end() || !dt->is_string()) {
      return Corrupt(src, absl::StrCat("tensor '", name, "' has no dtype string"));
    }
    if (sh == v.end() || !sh->is_array()) {
      return Corrupt(src, absl::StrCat("tensor '", name, "' has no shape array"));
    }
    if (off == v.end() || !off->is_array() || off->size() != 2 || !(*off)[0].is_number_unsigned() ||
        !(*off)[1].is_number_unsigned()) {
      return Corrupt(src, absl::StrCat("tensor '", name, "' has no [begin, end] data_offsets"));
    }
    Entry e;
    auto dtype = ParseSafetensorsDType(dt->get<std::string>());
    if (!dtype.ok()) return Corrupt(src, absl::StrCat("tensor '", name, "': ", dtype.status().message()));
    e.dtype = *dtype;
    int64_t numel = 1;
    for (const Json& d : *sh) {
      if (!d.is_number_unsigned() || d.get<uint64_t>() > (uint64_t{1} << 62)) {
        return Corrupt(src, absl::StrCat("tensor '", name, "' has an invalid dimension"));
      }
      const int64_t dim = static_cast<int64_t>(d.get<uint64_t>());
      if (__builtin_mul_overflow(numel, dim, &numel)) {
        return Corrupt(src, absl::StrCat("tensor '", name, "' element count overflows"));
      }
      e.shape.push_back(dim);
    }
    e.begin = (*off)[0].get<uint64_t>();
    e.end = (*off)[1].get<uint64_t>();
    if (e.end < e.begin) {
      return Corrupt(src, absl::StrFormat("tensor '%s' has data_offsets [%d, %d] with end before begin",
                                          name, e.begin, e.end));
    }
    auto expected = ByteSizeFor(e.dtype, numel);
    if (!expected.ok()) {
      return Corrupt(src, absl::StrCat("tensor '", name, "': ", expected.status().message()));
    }
    if (e.end - e.begin != static_cast<uint64_t>(*expected)) {
      return Corrupt(src, absl::StrFormat(
                              "tensor '%s' has %d bytes but shape %s of %s needs %d", name,
                              e.end - e.begin, ShapeToString(e.shape), DTypeName(e.dtype), *expected));
    }
    order.emplace_back(e.begin, e.end, name);
    entries_.emplace(name, std::move(e));
  }

  // The tensors must tile the byte buffer exactly (no holes, no overlaps, nothing past the end).
  std::sort(order.begin(), order.end());
  uint64_t cursor = 0;
  for (const auto& [begin, end, name] : order) {
    if (begin != cursor) {
      return Corrupt(src, absl::StrFormat(
                              "tensor '%s' starts at byte %d but the previous tensor ends at %d (%s)",
                              name, begin, cursor, begin > cursor ? "a hole" : "an overlap"));
    }
    cursor = end;
  }
  if (cursor != buffer_.size()) {
    return Corrupt(src, cursor > buffer_.size()
                            ? absl::StrFormat("tensors need %d data bytes but the file has %d "
                                              "(truncated)",
                                              cursor, buffer_.size())
                            : absl::StrFormat("%d bytes after the last tensor are not covered",
                                              buffer_.size() - cursor));
  }
  for (const auto& [name, e] : entries_) names_.push_back(name);
  std::sort(names_.begin(), names_.end());
  return absl::OkStatus();
}

bool SafetensorsFile::Contains(absl::string_view name) const { return entries_.contains(name); }

absl::StatusOr<TensorView> SafetensorsFile::Get(absl::string_view name) const {
  auto it = entries_.find(name);
  if (it == entries_.end()) {
    return absl::NotFoundError(absl::StrCat("tensor '", name, "' is not in ", source_name_));
  }
  const Entry& e = it->second;
  TensorView view;
  view.name = std::string(name);
  view.dtype = e.dtype;
  view.shape = e.shape;
  view.bytes = buffer_.subspan(e.begin, e.end - e.begin);
  return view;
}

std::vector<std::pair<std::string, std::string>> SafetensorsFile::DescribeMetadata() const {
  return {metadata_.begin(), metadata_.end()};
}

}  // namespace tessera::io
