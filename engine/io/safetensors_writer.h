// A streaming safetensors writer: the JSON header (dtype, shape and byte range of every tensor,
// in the order added, plus optional string metadata), padded with spaces to 8 bytes as
// huggingface/safetensors does, then the tensors' bytes back to back. Like GgufWriter, tensor
// bytes come from a callback while the file is written, so a multi-gigabyte random model
// (tessera synth --format hf) never sits in memory whole. The safetensors Python package, torch
// and tessera's SafetensorsFile read the result.
#ifndef TESSERA_ENGINE_IO_SAFETENSORS_WRITER_H_
#define TESSERA_ENGINE_IO_SAFETENSORS_WRITER_H_

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"

namespace tessera::io {

class SafetensorsWriter {
 public:
  // Fills `out` with exactly the tensor's bytes (little-endian, row-major).
  using TensorSource = std::function<absl::Status(std::vector<uint8_t>* out)>;

  void AddMetadata(const std::string& key, const std::string& value);
  // `dtype` as safetensors spells it ("BF16", "F32", ...); `bytes` is the data size.
  void AddTensor(std::string name, std::string dtype, std::vector<int64_t> shape, uint64_t bytes,
                 TensorSource source);
  // Writes the whole file (to a temporary name, renamed into place when complete and removed
  // on any failure). INVALID_ARGUMENT when two tensors share a name.
  absl::Status Write(const std::string& path) const;

 private:
  absl::Status WriteTo(const std::string& tmp) const;
  struct Tensor {
    std::string name, dtype;
    std::vector<int64_t> shape;
    uint64_t bytes;
    TensorSource source;
  };
  std::vector<std::pair<std::string, std::string>> metadata_;
  std::vector<Tensor> tensors_;
};

}  // namespace tessera::io

#endif  // TESSERA_ENGINE_IO_SAFETENSORS_WRITER_H_
