#include "engine/io/gguf_file.h"

#include <algorithm>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "engine/common/status_macros.h"
#include "engine/io/byte_reader.h"

namespace tessera::io {
namespace {

constexpr uint32_t kMagic = 0x46554747;  // "GGUF" read as a little-endian u32

// The fewest bytes one value of `type` can occupy; bounds element counts before allocating.
uint64_t MinBytes(GgufValueType type) {
  switch (type) {
    case GgufValueType::kU8: case GgufValueType::kI8: case GgufValueType::kBool: return 1;
    case GgufValueType::kU16: case GgufValueType::kI16: return 2;
    case GgufValueType::kU32: case GgufValueType::kI32: case GgufValueType::kF32: return 4;
    case GgufValueType::kU64: case GgufValueType::kI64: case GgufValueType::kF64: return 8;
    case GgufValueType::kString: return 8;
    case GgufValueType::kArray: return 12;
  }
  return 1;
}

absl::StatusOr<GgufValueType> ReadType(ByteReader& r, absl::string_view what) {
  TESSERA_ASSIGN_OR_RETURN(uint32_t t, r.Read<uint32_t>(what));
  if (t > static_cast<uint32_t>(GgufValueType::kF64)) {
    return absl::DataLossError(absl::StrFormat("%s: invalid value type %d", what, t));
  }
  return static_cast<GgufValueType>(t);
}

absl::StatusOr<GgufValue> ReadValue(ByteReader& r, GgufValueType type, const std::string& key,
                                    int depth) {
  GgufValue v;
  v.type = type;
  switch (type) {
    case GgufValueType::kU8: { TESSERA_ASSIGN_OR_RETURN(uint8_t x, r.Read<uint8_t>(key)); v.value = uint64_t{x}; break; }
    case GgufValueType::kI8: { TESSERA_ASSIGN_OR_RETURN(int8_t x, r.Read<int8_t>(key)); v.value = int64_t{x}; break; }
    case GgufValueType::kU16: { TESSERA_ASSIGN_OR_RETURN(uint16_t x, r.Read<uint16_t>(key)); v.value = uint64_t{x}; break; }
    case GgufValueType::kI16: { TESSERA_ASSIGN_OR_RETURN(int16_t x, r.Read<int16_t>(key)); v.value = int64_t{x}; break; }
    case GgufValueType::kU32: { TESSERA_ASSIGN_OR_RETURN(uint32_t x, r.Read<uint32_t>(key)); v.value = uint64_t{x}; break; }
    case GgufValueType::kI32: { TESSERA_ASSIGN_OR_RETURN(int32_t x, r.Read<int32_t>(key)); v.value = int64_t{x}; break; }
    case GgufValueType::kU64: { TESSERA_ASSIGN_OR_RETURN(uint64_t x, r.Read<uint64_t>(key)); v.value = x; break; }
    case GgufValueType::kI64: { TESSERA_ASSIGN_OR_RETURN(int64_t x, r.Read<int64_t>(key)); v.value = x; break; }
    case GgufValueType::kF32: { TESSERA_ASSIGN_OR_RETURN(float x, r.Read<float>(key)); v.value = double{x}; break; }
    case GgufValueType::kF64: { TESSERA_ASSIGN_OR_RETURN(double x, r.Read<double>(key)); v.value = x; break; }
    case GgufValueType::kBool: {
      TESSERA_ASSIGN_OR_RETURN(uint8_t x, r.Read<uint8_t>(key));
      if (x > 1) return absl::DataLossError(absl::StrFormat("%s: bool value %d is not 0 or 1", key, x));
      v.value = x != 0;
      break;
    }
    case GgufValueType::kString: {
      TESSERA_ASSIGN_OR_RETURN(absl::string_view s, r.ReadString(key));
      v.value = std::string(s);
      break;
    }
    case GgufValueType::kArray: {
      if (depth >= GgufFile::kMaxArrayDepth) {
        return absl::DataLossError(absl::StrFormat("%s: arrays nested deeper than %d", key,
                                                   GgufFile::kMaxArrayDepth));
      }
      TESSERA_ASSIGN_OR_RETURN(v.element_type, ReadType(r, key));
      TESSERA_ASSIGN_OR_RETURN(uint64_t count, r.Read<uint64_t>(key));
      if (count > r.remaining() / MinBytes(v.element_type)) {
        return absl::DataLossError(absl::StrFormat(
            "%s: array of %d %s values cannot fit in the %d bytes left in the file", key, count,
            GgufValueTypeName(v.element_type), r.remaining()));
      }
      std::vector<GgufValue> items;
      items.reserve(count);
      for (uint64_t i = 0; i < count; ++i) {
        TESSERA_ASSIGN_OR_RETURN(GgufValue item, ReadValue(r, v.element_type, key, depth + 1));
        items.push_back(std::move(item));
      }
      v.value = std::move(items);
      break;
    }
  }
  return v;
}

}  // namespace

absl::StatusOr<std::unique_ptr<GgufFile>> GgufFile::Open(const std::string& path) {
  TESSERA_ASSIGN_OR_RETURN(std::unique_ptr<MappedFile> file, MappedFile::Open(path));
  TESSERA_ASSIGN_OR_RETURN(std::unique_ptr<GgufFile> g, Parse(file->bytes(), path));
  g->file_ = std::move(file);
  return g;
}

absl::StatusOr<std::unique_ptr<GgufFile>> GgufFile::Parse(absl::Span<const uint8_t> bytes,
                                                          std::string source_name) {
  auto g = std::make_unique<GgufFile>();
  g->source_name_ = std::move(source_name);
  absl::Status s = g->ParseAll(bytes);
  if (!s.ok()) {
    return absl::Status(s.code(), absl::StrCat("GGUF ", g->source_name_, ": ", s.message()));
  }
  return g;
}

absl::Status GgufFile::ParseAll(absl::Span<const uint8_t> bytes) {
  ByteReader r(bytes);
  TESSERA_ASSIGN_OR_RETURN(uint32_t magic, r.Read<uint32_t>("magic"));
  if (magic != kMagic) {
    return absl::DataLossError(absl::StrFormat("bad magic 0x%08x: not a GGUF file", magic));
  }
  TESSERA_ASSIGN_OR_RETURN(version_, r.Read<uint32_t>("version"));
  if (version_ == 1) {
    return absl::UnimplementedError("GGUF version 1 (32-bit counts) is not supported; reconvert");
  }
  if (version_ != 2 && version_ != 3) {
    if ((version_ & 0xFFFF) == 0) {
      return absl::UnimplementedError(
          absl::StrFormat("version 0x%08x looks like a big-endian GGUF, which is not supported",
                          version_));
    }
    return absl::DataLossError(absl::StrFormat("unsupported GGUF version %d", version_));
  }
  TESSERA_ASSIGN_OR_RETURN(uint64_t tensor_count, r.Read<uint64_t>("tensor count"));
  TESSERA_ASSIGN_OR_RETURN(uint64_t kv_count, r.Read<uint64_t>("metadata count"));
  // A key-value needs at least 13 bytes and a tensor info 24, so larger counts are lies.
  if (kv_count > r.remaining() / 13) {
    return absl::DataLossError(absl::StrFormat(
        "absurd metadata count %d for a file with %d bytes left", kv_count, r.remaining()));
  }
  if (tensor_count > r.remaining() / 24) {
    return absl::DataLossError(absl::StrFormat(
        "absurd tensor count %d for a file with %d bytes left", tensor_count, r.remaining()));
  }

  for (uint64_t i = 0; i < kv_count; ++i) {
    TESSERA_ASSIGN_OR_RETURN(absl::string_view key_view, r.ReadString("metadata key"));
    std::string key(key_view);
    if (metadata_.Contains(key)) {
      return absl::DataLossError(absl::StrCat("duplicate metadata key '", key, "'"));
    }
    TESSERA_ASSIGN_OR_RETURN(GgufValueType type, ReadType(r, key));
    TESSERA_ASSIGN_OR_RETURN(GgufValue value, ReadValue(r, type, key, 0));
    metadata_.Add(std::move(key), std::move(value));
  }
  if (const GgufValue* a = metadata_.Find("general.alignment")) {
    const uint64_t* u = std::get_if<uint64_t>(&a->value);
    if (a->type != GgufValueType::kU32 || *u == 0 || (*u & (*u - 1)) != 0) {
      return absl::DataLossError("general.alignment must be a u32 power of two");
    }
    alignment_ = static_cast<uint32_t>(*u);
  }

  infos_.reserve(tensor_count);
  for (uint64_t i = 0; i < tensor_count; ++i) {
    GgufTensorInfo info;
    TESSERA_ASSIGN_OR_RETURN(absl::string_view name, r.ReadString("tensor name"));
    info.name = std::string(name);
    if (info.name.size() > kMaxNameLength) {
      return absl::DataLossError(absl::StrFormat("tensor name '%s' is longer than %d bytes",
                                                 info.name.substr(0, 80), kMaxNameLength));
    }
    if (by_name_.contains(info.name)) {
      return absl::DataLossError(absl::StrCat("duplicate tensor name '", info.name, "'"));
    }
    TESSERA_ASSIGN_OR_RETURN(uint32_t n_dims, r.Read<uint32_t>(info.name));
    if (n_dims > kMaxDims) {
      return absl::DataLossError(
          absl::StrFormat("tensor '%s' has %d dims, more than %d", info.name, n_dims, kMaxDims));
    }
    int64_t numel = 1;
    for (uint32_t d = 0; d < n_dims; ++d) {
      TESSERA_ASSIGN_OR_RETURN(uint64_t dim, r.Read<uint64_t>(info.name));
      if (dim > (uint64_t{1} << 62) ||
          __builtin_mul_overflow(numel, static_cast<int64_t>(dim), &numel)) {
        return absl::DataLossError(absl::StrFormat("tensor '%s' has an absurd shape", info.name));
      }
      info.dims.push_back(static_cast<int64_t>(dim));
    }
    TESSERA_ASSIGN_OR_RETURN(info.ggml_type, r.Read<uint32_t>(info.name));
    auto dtype = DTypeFromGgmlType(info.ggml_type);
    if (!dtype) {
      return absl::UnimplementedError(absl::StrFormat("tensor '%s' has unsupported ggml type %d",
                                                      info.name, info.ggml_type));
    }
    info.dtype = *dtype;
    const int64_t block = GetDTypeInfo(info.dtype).block.block_elements;
    const int64_t ne0 = info.dims.empty() ? 1 : info.dims[0];
    if (ne0 % block != 0) {
      return absl::DataLossError(absl::StrFormat(
          "tensor '%s': ne0 = %d is not a multiple of the %s block size %d", info.name, ne0,
          DTypeName(info.dtype), block));
    }
    TESSERA_ASSIGN_OR_RETURN(int64_t size, ByteSizeFor(info.dtype, numel));
    info.size = static_cast<uint64_t>(size);
    TESSERA_ASSIGN_OR_RETURN(info.offset, r.Read<uint64_t>(info.name));
    if (info.offset % alignment_ != 0) {
      return absl::DataLossError(absl::StrFormat("tensor '%s' offset %d is not a multiple of the "
                                                 "alignment %d", info.name, info.offset, alignment_));
    }
    by_name_[info.name] = infos_.size();
    names_.push_back(info.name);
    infos_.push_back(std::move(info));
  }

  const uint64_t header_end = r.offset();
  data_offset_ = (header_end + alignment_ - 1) / alignment_ * alignment_;
  if (data_offset_ > bytes.size()) {
    if (!infos_.empty()) {
      return absl::DataLossError(absl::StrFormat(
          "truncated file: the data section would start at %d but the file has %d bytes",
          data_offset_, bytes.size()));
    }
    data_offset_ = bytes.size();
  }
  data_ = bytes.subspan(data_offset_);

  std::vector<const GgufTensorInfo*> sorted;
  for (const auto& info : infos_) sorted.push_back(&info);
  std::sort(sorted.begin(), sorted.end(),
            [](const auto* a, const auto* b) { return a->offset < b->offset; });
  uint64_t prev_end = 0;
  const GgufTensorInfo* prev = nullptr;
  for (const GgufTensorInfo* t : sorted) {
    if (t->offset > data_.size() || t->size > data_.size() - t->offset) {
      return absl::DataLossError(absl::StrFormat(
          "truncated file: tensor '%s' needs bytes [%d, %d) of a %d-byte data section", t->name,
          t->offset, t->offset + t->size, data_.size()));
    }
    if (prev != nullptr && t->offset < prev_end) {
      return absl::DataLossError(absl::StrFormat("tensors '%s' and '%s' overlap", prev->name, t->name));
    }
    prev_end = t->offset + t->size;
    prev = t;
  }
  return absl::OkStatus();
}

const GgufTensorInfo* GgufFile::FindInfo(absl::string_view name) const {
  if (auto it = by_name_.find(name); it != by_name_.end()) return &infos_[it->second];
  auto it = slice_by_name_.find(name);
  return it == slice_by_name_.end() ? nullptr : &slice_infos_[it->second];
}

absl::Status GgufFile::AddOuterSlices(absl::string_view name,
                                      absl::Span<const std::string> slice_names) {
  const GgufTensorInfo* info = FindInfo(name);
  if (info == nullptr) {
    return absl::NotFoundError(absl::StrCat("tensor '", name, "' is not in ", source_name_));
  }
  const int64_t count = static_cast<int64_t>(slice_names.size());
  if (info->dims.size() < 2 || info->dims.back() != count || count == 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "tensor '%s' has GGUF dims [%s], expected %d slabs along its last dim", name,
        absl::StrJoin(info->dims, ", "), count));
  }
  // Every name is checked before any is added, so a failure leaves the file as it was.
  absl::flat_hash_set<absl::string_view> seen;
  for (const std::string& slice : slice_names) {
    if (FindInfo(slice) != nullptr || !seen.insert(slice).second) {
      return absl::AlreadyExistsError(
          absl::StrCat("tensor '", slice, "' (a slab of '", name, "') already exists"));
    }
  }
  // Blocks run along ne0 only, so every slab is a whole number of rows of whole blocks.
  const uint64_t slab = info->size / static_cast<uint64_t>(count);
  GgufTensorInfo base = *info;  // `info` may move as slice_infos_ grows
  for (int64_t i = 0; i < count; ++i) {
    const std::string& slice = slice_names[i];
    GgufTensorInfo s = base;
    s.name = slice;
    s.dims.pop_back();
    s.offset = base.offset + static_cast<uint64_t>(i) * slab;
    s.size = slab;
    slice_by_name_.emplace(slice, slice_infos_.size());
    slice_infos_.push_back(std::move(s));
  }
  return absl::OkStatus();
}

absl::StatusOr<TensorView> GgufFile::Get(absl::string_view name) const {
  const GgufTensorInfo* info = FindInfo(name);
  if (info == nullptr) {
    return absl::NotFoundError(absl::StrCat("tensor '", name, "' is not in ", source_name_));
  }
  TensorView view;
  view.name = info->name;
  view.dtype = info->dtype;
  view.shape.assign(info->dims.rbegin(), info->dims.rend());
  view.bytes = data_.subspan(info->offset, info->size);
  return view;
}

std::vector<std::pair<std::string, std::string>> GgufFile::DescribeMetadata() const {
  std::vector<std::pair<std::string, std::string>> out;
  out.emplace_back("gguf.version", absl::StrCat(version_));
  out.emplace_back("gguf.alignment", absl::StrCat(alignment_));
  for (const auto& kv : metadata_.entries()) {
    std::string type(GgufValueTypeName(kv.value.type));
    if (kv.value.type == GgufValueType::kArray) {
      type = absl::StrCat("array<", GgufValueTypeName(kv.value.element_type), ">");
    }
    out.emplace_back(kv.key, absl::StrCat(kv.value.ToString(), "  (", type, ")"));
  }
  return out;
}

}  // namespace tessera::io
