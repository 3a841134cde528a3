#include "engine/io/safetensors_writer.h"

#include <cstdio>
#include <memory>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"

namespace tessera::io {

void SafetensorsWriter::AddMetadata(const std::string& key, const std::string& value) {
  metadata_.emplace_back(key, value);
}

void SafetensorsWriter::AddTensor(std::string name, std::string dtype, std::vector<int64_t> shape,
                                  uint64_t bytes, TensorSource source) {
  tensors_.push_back({std::move(name), std::move(dtype), std::move(shape), bytes,
                      std::move(source)});
}

absl::Status SafetensorsWriter::Write(const std::string& path) const {
  const std::string tmp = path + ".partial";
  absl::Status st = WriteTo(tmp);
  if (st.ok() && std::rename(tmp.c_str(), path.c_str()) != 0) {
    st = absl::InternalError(absl::StrCat("cannot rename '", tmp, "' to '", path, "'"));
  }
  if (!st.ok()) std::remove(tmp.c_str());  // no half-written file is left behind
  return st;
}

absl::Status SafetensorsWriter::WriteTo(const std::string& tmp) const {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata_.empty()) {
    nlohmann::ordered_json meta = nlohmann::ordered_json::object();
    for (const auto& [k, v] : metadata_) meta[k] = v;
    header["__metadata__"] = meta;
  }
  uint64_t offset = 0;
  for (const Tensor& t : tensors_) {
    // JSON keys are unique: a second tensor of the same name would silently replace the first
    // one's entry while its bytes stayed in the file.
    if (t.name == "__metadata__" || header.contains(t.name)) {
      return absl::InvalidArgumentError(
          absl::StrCat("safetensors: tensor name '", t.name, "' is used twice or reserved"));
    }
    header[t.name] = {{"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {offset, offset + t.bytes}}};
    offset += t.bytes;
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // the data starts 8-byte aligned
  const uint64_t header_size = text.size();

  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(tmp.c_str(), "wb"), &std::fclose);
  if (!f) return absl::InternalError(absl::StrCat("cannot create '", tmp, "'"));
  auto write = [&](const void* p, size_t n) -> absl::Status {
    if (n != 0 && std::fwrite(p, 1, n, f.get()) != n) {
      return absl::InternalError(absl::StrCat("write to '", tmp, "' failed"));
    }
    return absl::OkStatus();
  };
  uint8_t size_le[8];
  for (int i = 0; i < 8; ++i) size_le[i] = static_cast<uint8_t>(header_size >> (8 * i));
  if (auto st = write(size_le, 8); !st.ok()) return st;
  if (auto st = write(text.data(), text.size()); !st.ok()) return st;
  std::vector<uint8_t> buf;
  for (const Tensor& t : tensors_) {
    buf.clear();
    if (auto st = t.source(&buf); !st.ok()) return st;
    if (buf.size() != t.bytes) {
      return absl::InternalError(absl::StrCat("tensor '", t.name, "' produced ", buf.size(),
                                              " bytes, declared ", t.bytes));
    }
    if (auto st = write(buf.data(), buf.size()); !st.ok()) return st;
  }
  if (std::fclose(f.release()) != 0) {
    return absl::InternalError(absl::StrCat("closing '", tmp, "' failed"));
  }
  return absl::OkStatus();
}

}  // namespace tessera::io
