// Reader for GGUF v2 and v3 files (quant-formats.md §11): metadata of every value type, tensor
// infos, alignment, and tensor data, all validated before use the way ggml's gguf.cpp does
// (magic, version, sane counts, string and array lengths inside the file, at most 4 dims, known
// types, whole blocks along ne0, aligned in-bounds non-overlapping data, no duplicate names).
// Views expose shapes in PyTorch order: GGUF dims [K, N] become [N, K].
#ifndef TESSERA_ENGINE_IO_GGUF_FILE_H_
#define TESSERA_ENGINE_IO_GGUF_FILE_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "engine/io/gguf_metadata.h"
#include "engine/io/mapped_file.h"
#include "engine/io/tensor_store.h"

namespace tessera::io {

struct GgufTensorInfo {
  std::string name;
  std::vector<int64_t> dims;  // GGUF order: dims[0] = ne0, the contiguous dimension
  uint32_t ggml_type = 0;
  DType dtype = DType::kF32;
  uint64_t offset = 0;  // relative to the data section
  uint64_t size = 0;    // bytes
};

class GgufFile : public TensorStore {
 public:
  static constexpr uint32_t kDefaultAlignment = 32;
  static constexpr int kMaxDims = 4;
  static constexpr int kMaxNameLength = 63;  // ggml's GGML_MAX_NAME (64) counts the NUL
  static constexpr int kMaxArrayDepth = 8;

  static absl::StatusOr<std::unique_ptr<GgufFile>> Open(const std::string& path);
  // Parses an in-memory image (tests, fuzzers). `bytes` must outlive the object.
  static absl::StatusOr<std::unique_ptr<GgufFile>> Parse(absl::Span<const uint8_t> bytes,
                                                         std::string source_name);

  ContainerKind kind() const override { return ContainerKind::kGguf; }
  const std::vector<std::string>& names() const override { return names_; }
  bool Contains(absl::string_view name) const override { return FindInfo(name) != nullptr; }
  absl::StatusOr<TensorView> Get(absl::string_view name) const override;
  std::vector<std::pair<std::string, std::string>> DescribeMetadata() const override;

  uint32_t version() const { return version_; }
  uint32_t alignment() const { return alignment_; }
  uint64_t data_offset() const { return data_offset_; }
  const GgufMetadata& metadata() const { return metadata_; }
  const std::vector<GgufTensorInfo>& tensor_infos() const { return infos_; }
  // A tensor's info, its own or a slice's (AddOuterSlices).
  const GgufTensorInfo* FindInfo(absl::string_view name) const;

  // Exposes each slab of `name` along its outermost dimension as a tensor of its own, slab i under
  // slice_names[i], with the remaining dims (llama.cpp stacks a MoE layer's experts into one
  // [experts, N, K] tensor; the decoder reads each expert as a linear weight). The slices are
  // views of the same bytes: not in names() or tensor_infos(), so listings and byte counts see
  // the file as written. Fails naming the tensor when it is missing, has fewer than 2 dims, its
  // outermost dim differs from slice_names.size(), or a name is already taken.
  absl::Status AddOuterSlices(absl::string_view name, absl::Span<const std::string> slice_names);

 private:
  absl::Status ParseAll(absl::Span<const uint8_t> bytes);

  std::unique_ptr<MappedFile> file_;
  std::string source_name_;
  uint32_t version_ = 0;
  uint32_t alignment_ = kDefaultAlignment;
  uint64_t data_offset_ = 0;
  absl::Span<const uint8_t> data_;
  GgufMetadata metadata_;
  std::vector<GgufTensorInfo> infos_;
  std::vector<std::string> names_;
  absl::flat_hash_map<std::string, size_t> by_name_;
  std::vector<GgufTensorInfo> slice_infos_;  // AddOuterSlices' views, offsets in the data section
  absl::flat_hash_map<std::string, size_t> slice_by_name_;
};

}  // namespace tessera::io

#endif  // TESSERA_ENGINE_IO_GGUF_FILE_H_
