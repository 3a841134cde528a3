// ModelSource::Open recognises what a model path is (an HF directory with config.json and
// safetensors, or a .gguf file), opens its TensorStore, and reads its ModelConfig: the first step
// of the load path (design.md §2). Tokenizers and quantization configs are read from it later.
#ifndef TESSERA_ENGINE_MODEL_MODEL_SOURCE_H_
#define TESSERA_ENGINE_MODEL_MODEL_SOURCE_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "engine/io/gguf_file.h"
#include "engine/io/tensor_store.h"
#include "engine/model/model_config.h"
#include "engine/model/weight_names.h"

namespace tessera::model {

struct ModelSource {
  std::string path;
  std::unique_ptr<io::TensorStore> store;
  ModelConfig config;
  NamingScheme naming = NamingScheme::kHf;
  std::string config_json;  // HF config.json text (empty for GGUF)

  // The GGUF file, or null for HF directories.
  const io::GgufFile* gguf() const { return dynamic_cast<const io::GgufFile*>(store.get()); }
  bool is_hf() const { return naming == NamingScheme::kHf; }

  static absl::StatusOr<ModelSource> Open(const std::string& path);
};

}  // namespace tessera::model

#endif  // TESSERA_ENGINE_MODEL_MODEL_SOURCE_H_
