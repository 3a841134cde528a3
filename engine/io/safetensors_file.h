// Reader for one safetensors file (quant-formats.md §1). The header is validated exactly as the
// reference Rust implementation does (size limit, JSON object, known dtypes, byte size equal to
// shape × dtype, tensors tiling the buffer with no holes or overlaps, no duplicate names,
// string-only __metadata__) before any tensor is handed out.
#ifndef TESSERA_ENGINE_IO_SAFETENSORS_FILE_H_
#define TESSERA_ENGINE_IO_SAFETENSORS_FILE_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "engine/io/mapped_file.h"
#include "engine/io/tensor_store.h"

namespace tessera::io {

class SafetensorsFile : public TensorStore {
 public:
  static constexpr uint64_t kMaxHeaderSize = 100'000'000;

  static absl::StatusOr<std::unique_ptr<SafetensorsFile>> Open(const std::string& path);
  // Parses an in-memory image (tests, fuzzers). `bytes` must outlive the object.
  static absl::StatusOr<std::unique_ptr<SafetensorsFile>> Parse(absl::Span<const uint8_t> bytes,
                                                                std::string source_name);

  ContainerKind kind() const override { return ContainerKind::kSafetensors; }
  const std::vector<std::string>& names() const override { return names_; }
  bool Contains(absl::string_view name) const override;
  absl::StatusOr<TensorView> Get(absl::string_view name) const override;
  std::vector<std::pair<std::string, std::string>> DescribeMetadata() const override;

  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  const std::string& source_name() const { return source_name_; }

 private:
  struct Entry {
    DType dtype;
    std::vector<int64_t> shape;
    uint64_t begin;
    uint64_t end;
  };
  absl::Status ParseHeader(absl::Span<const uint8_t> bytes);

  std::unique_ptr<MappedFile> file_;  // null when parsed from memory
  std::string source_name_;
  absl::Span<const uint8_t> buffer_;  // the byte buffer after the header
  absl::flat_hash_map<std::string, Entry> entries_;
  std::vector<std::string> names_;
  std::map<std::string, std::string> metadata_;
};

}  // namespace tessera::io

#endif  // TESSERA_ENGINE_IO_SAFETENSORS_FILE_H_
