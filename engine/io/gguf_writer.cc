#include "engine/io/gguf_writer.h"

#include <cstdio>
#include <cstring>
#include <memory>

#include "absl/strings/str_cat.h"

namespace tessera::io {
namespace {

// Serializes little-endian values into a byte buffer (x86 and ARM hosts are little-endian).
class Sink {
 public:
  template <typename T>
  void Put(T v) {
    const size_t at = buf_.size();
    buf_.resize(at + sizeof(T));
    std::memcpy(buf_.data() + at, &v, sizeof(T));
  }
  void PutString(const std::string& s) {
    Put<uint64_t>(s.size());
    buf_.insert(buf_.end(), s.begin(), s.end());
  }
  void PadTo(uint64_t alignment) {
    while (buf_.size() % alignment != 0) buf_.push_back(0);
  }
  std::vector<uint8_t>& bytes() { return buf_; }

 private:
  std::vector<uint8_t> buf_;
};

void PutValueBody(Sink& s, GgufValueType type, const GgufValue& v);

void PutScalar(Sink& s, GgufValueType type, const GgufValue& v) {
  auto u = [&] { return std::holds_alternative<uint64_t>(v.value)
                            ? std::get<uint64_t>(v.value)
                            : static_cast<uint64_t>(std::get<int64_t>(v.value)); };
  auto i = [&] { return std::holds_alternative<int64_t>(v.value)
                            ? std::get<int64_t>(v.value)
                            : static_cast<int64_t>(std::get<uint64_t>(v.value)); };
  switch (type) {
    case GgufValueType::kU8: s.Put<uint8_t>(static_cast<uint8_t>(u())); break;
    case GgufValueType::kI8: s.Put<int8_t>(static_cast<int8_t>(i())); break;
    case GgufValueType::kU16: s.Put<uint16_t>(static_cast<uint16_t>(u())); break;
    case GgufValueType::kI16: s.Put<int16_t>(static_cast<int16_t>(i())); break;
    case GgufValueType::kU32: s.Put<uint32_t>(static_cast<uint32_t>(u())); break;
    case GgufValueType::kI32: s.Put<int32_t>(static_cast<int32_t>(i())); break;
    case GgufValueType::kU64: s.Put<uint64_t>(u()); break;
    case GgufValueType::kI64: s.Put<int64_t>(i()); break;
    case GgufValueType::kF32: s.Put<float>(static_cast<float>(std::get<double>(v.value))); break;
    case GgufValueType::kF64: s.Put<double>(std::get<double>(v.value)); break;
    case GgufValueType::kBool: s.Put<uint8_t>(std::get<bool>(v.value) ? 1 : 0); break;
    case GgufValueType::kString: s.PutString(std::get<std::string>(v.value)); break;
    case GgufValueType::kArray: PutValueBody(s, type, v); break;
  }
}

void PutValueBody(Sink& s, GgufValueType type, const GgufValue& v) {
  if (type != GgufValueType::kArray) {
    PutScalar(s, type, v);
    return;
  }
  const auto& items = std::get<std::vector<GgufValue>>(v.value);
  s.Put<uint32_t>(static_cast<uint32_t>(v.element_type));
  s.Put<uint64_t>(items.size());
  for (const GgufValue& item : items) {
    if (v.element_type == GgufValueType::kArray) {
      PutValueBody(s, GgufValueType::kArray, item);
    } else {
      PutScalar(s, v.element_type, item);
    }
  }
}

}  // namespace

void GgufWriter::AddMetadata(const std::string& key, GgufValue value) {
  for (GgufKeyValue& kv : metadata_) {
    if (kv.key == key) {
      kv.value = std::move(value);
      return;
    }
  }
  metadata_.push_back({key, std::move(value)});
}

void GgufWriter::AddString(const std::string& key, const std::string& v) {
  GgufValue value;
  value.type = GgufValueType::kString;
  value.value = v;
  AddMetadata(key, std::move(value));
}

void GgufWriter::AddUint32(const std::string& key, uint32_t v) {
  GgufValue value;
  value.type = GgufValueType::kU32;
  value.value = uint64_t{v};
  AddMetadata(key, std::move(value));
}

void GgufWriter::AddFloat32(const std::string& key, float v) {
  GgufValue value;
  value.type = GgufValueType::kF32;
  value.value = double{v};
  AddMetadata(key, std::move(value));
}

void GgufWriter::AddTensor(std::string name, std::vector<int64_t> dims, uint32_t ggml_type,
                           uint64_t bytes, TensorSource source) {
  tensors_.push_back({std::move(name), std::move(dims), ggml_type, bytes, std::move(source)});
}

absl::Status GgufWriter::Write(const std::string& path) const {
  uint64_t alignment = 32;
  for (const GgufKeyValue& kv : metadata_) {
    if (kv.key == "general.alignment" && kv.value.is_integer()) {
      alignment = std::holds_alternative<uint64_t>(kv.value.value)
                      ? std::get<uint64_t>(kv.value.value)
                      : static_cast<uint64_t>(std::get<int64_t>(kv.value.value));
    }
  }
  Sink head;
  head.Put<uint32_t>(0x46554747);  // "GGUF"
  head.Put<uint32_t>(3);
  head.Put<uint64_t>(tensors_.size());
  head.Put<uint64_t>(metadata_.size());
  for (const GgufKeyValue& kv : metadata_) {
    head.PutString(kv.key);
    head.Put<uint32_t>(static_cast<uint32_t>(kv.value.type));
    PutValueBody(head, kv.value.type, kv.value);
  }
  uint64_t offset = 0;
  for (const Tensor& t : tensors_) {
    head.PutString(t.name);
    head.Put<uint32_t>(static_cast<uint32_t>(t.dims.size()));
    for (int64_t d : t.dims) head.Put<uint64_t>(static_cast<uint64_t>(d));
    head.Put<uint32_t>(t.ggml_type);
    head.Put<uint64_t>(offset);
    offset = (offset + t.bytes + alignment - 1) / alignment * alignment;
  }
  head.PadTo(alignment);

  const std::string tmp = path + ".partial";
  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(tmp.c_str(), "wb"), &std::fclose);
  if (!f) return absl::InternalError(absl::StrCat("cannot create '", tmp, "'"));
  auto write = [&](const uint8_t* p, size_t n) -> absl::Status {
    if (n != 0 && std::fwrite(p, 1, n, f.get()) != n) {
      return absl::InternalError(absl::StrCat("write to '", tmp, "' failed"));
    }
    return absl::OkStatus();
  };
  if (auto st = write(head.bytes().data(), head.bytes().size()); !st.ok()) return st;
  std::vector<uint8_t> buf;
  const std::vector<uint8_t> zeros(alignment, 0);
  for (const Tensor& t : tensors_) {
    buf.clear();
    if (auto st = t.source(&buf); !st.ok()) return st;
    if (buf.size() != t.bytes) {
      return absl::InternalError(absl::StrCat("tensor '", t.name, "' produced ", buf.size(),
                                              " bytes, expected ", t.bytes));
    }
    if (auto st = write(buf.data(), buf.size()); !st.ok()) return st;
    if (auto st = write(zeros.data(), (alignment - t.bytes % alignment) % alignment); !st.ok()) {
      return st;
    }
  }
  if (std::fflush(f.get()) != 0) return absl::InternalError("flush failed");
  f.reset();
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    return absl::InternalError(absl::StrCat("cannot rename '", tmp, "' to '", path, "'"));
  }
  return absl::OkStatus();
}

}  // namespace tessera::io
