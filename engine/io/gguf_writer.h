// A small GGUF v3 writer: ordered metadata of any GgufValue type, then tensor infos, then tensor
// data, each tensor aligned to general.alignment (32 unless the metadata says otherwise). Tensor
// bytes are produced on demand by a callback while the file is written, so multi-gigabyte random
// models (tessera synth) never sit in memory whole. The output is what ggml's gguf.cpp and
// gguf-py's GGUFReader expect; tessera's own GgufFile reads it back in the tests.
#ifndef TESSERA_ENGINE_IO_GGUF_WRITER_H_
#define TESSERA_ENGINE_IO_GGUF_WRITER_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "engine/io/gguf_metadata.h"

namespace tessera::io {

class GgufWriter {
 public:
  // Fills `out` with exactly the tensor's bytes.
  using TensorSource = std::function<absl::Status(std::vector<uint8_t>* out)>;

  // Appends a key (replacing an earlier one of the same name keeps the first position).
  void AddMetadata(const std::string& key, GgufValue value);
  void AddString(const std::string& key, const std::string& v);
  void AddUint32(const std::string& key, uint32_t v);
  void AddFloat32(const std::string& key, float v);

  // dims in GGUF order (dims[0] = ne0, the contiguous dimension); `bytes` is the data size.
  void AddTensor(std::string name, std::vector<int64_t> dims, uint32_t ggml_type, uint64_t bytes,
                 TensorSource source);

  // Writes the whole file (to a temporary name, renamed into place when complete).
  absl::Status Write(const std::string& path) const;

 private:
  struct Tensor {
    std::string name;
    std::vector<int64_t> dims;
    uint32_t ggml_type;
    uint64_t bytes;
    TensorSource source;
  };
  std::vector<GgufKeyValue> metadata_;
  std::vector<Tensor> tensors_;
};

}  // namespace tessera::io

#endif  // TESSERA_ENGINE_IO_GGUF_WRITER_H_
