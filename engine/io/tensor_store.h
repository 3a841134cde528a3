// TensorStore is the one interface the engine reads weights through, whatever the container: a
// single safetensors file, a (sharded) Hugging Face directory, or a GGUF file. It lists tensor
// names and hands out validated TensorViews in PyTorch shape order; the files stay memory-mapped
// for the store's lifetime, so views are valid as long as the store lives.
#ifndef TESSERA_ENGINE_IO_TENSOR_STORE_H_
#define TESSERA_ENGINE_IO_TENSOR_STORE_H_

#include <memory>
#include <string>
#include "absl/strings/string_view.h"
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/io/tensor_view.h"

namespace tessera::io {

enum class ContainerKind { kSafetensors, kHfDirectory, kGguf };

class TensorStore {
 public:
  virtual ~TensorStore() = default;

  virtual ContainerKind kind() const = 0;
  // Tensor names in a stable order (file order for GGUF, sorted for safetensors).
  virtual const std::vector<std::string>& names() const = 0;
  virtual bool Contains(absl::string_view name) const = 0;
  // NOT_FOUND naming the tensor when absent.
  virtual absl::StatusOr<TensorView> Get(absl::string_view name) const = 0;
  // The caller keeps what it needs of tensor `name` in memory of its own and will not read its
  // view again: a store that made those bytes itself (ExpertStackStore's transposed experts) may
  // free them. Mapped bytes are given back by io::ReleaseMappedPages instead; a no-op here.
  virtual void Release(absl::string_view name) const { (void)name; }
  // Human-readable metadata (key, value) pairs for `tessera inspect`; long arrays abbreviated.
  virtual std::vector<std::pair<std::string, std::string>> DescribeMetadata() const = 0;
};

// Opens a .safetensors file, an HF directory (model.safetensors or a sharded index) or a .gguf
// file, recognised by content (the GGUF magic) and by being a directory.
absl::StatusOr<std::unique_ptr<TensorStore>> OpenTensorStore(const std::string& path);

}  // namespace tessera::io

#endif  // TESSERA_ENGINE_IO_TENSOR_STORE_H_
