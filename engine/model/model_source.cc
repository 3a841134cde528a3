#include "engine/model/model_source.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "engine/common/status_macros.h"

namespace tessera::model {

absl::StatusOr<ModelSource> ModelSource::Open(const std::string& path) {
  ModelSource src;
  src.path = path;
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    const std::string cfg = (std::filesystem::path(path) / "config.json").string();
    std::ifstream in(cfg);
    if (!in) return absl::NotFoundError(absl::StrCat(path, " has no config.json"));
    std::stringstream ss;
    ss << in.rdbuf();
    src.config_json = ss.str();
    TESSERA_ASSIGN_OR_RETURN(src.config, ModelConfigFromHfJson(src.config_json));
    TESSERA_ASSIGN_OR_RETURN(src.store, io::OpenTensorStore(path));
    src.naming = NamingScheme::kHf;
    return src;
  }
  TESSERA_ASSIGN_OR_RETURN(src.store, io::OpenTensorStore(path));
  const io::GgufFile* g = src.gguf();
  if (g == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, " is a bare safetensors file; a model needs an HF directory (config.json) or GGUF"));
  }
  TESSERA_ASSIGN_OR_RETURN(src.config, ModelConfigFromGguf(g->metadata()));
  src.naming = NamingScheme::kGguf;
  return src;
}

}  // namespace tessera::model
