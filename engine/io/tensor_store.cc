#include "engine/io/tensor_store.h"

#include <cstring>
#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "engine/io/gguf_file.h"
#include "engine/io/hf_checkpoint.h"
#include "engine/io/safetensors_file.h"

namespace tessera::io {

absl::StatusOr<std::unique_ptr<TensorStore>> OpenTensorStore(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    auto ckpt = HfCheckpoint::Open(path);
    if (!ckpt.ok()) return ckpt.status();
    return std::unique_ptr<TensorStore>(std::move(*ckpt));
  }
  if (!std::filesystem::exists(path, ec)) return absl::NotFoundError(absl::StrCat(path, " does not exist"));
  char magic[4] = {0, 0, 0, 0};
  {
    std::ifstream in(path, std::ios::binary);
    in.read(magic, 4);
  }
  if (std::memcmp(magic, "GGUF", 4) == 0) {
    auto g = GgufFile::Open(path);
    if (!g.ok()) return g.status();
    return std::unique_ptr<TensorStore>(std::move(*g));
  }
  auto st = SafetensorsFile::Open(path);
  if (!st.ok()) return st.status();
  return std::unique_ptr<TensorStore>(std::move(*st));
}

}  // namespace tessera::io
