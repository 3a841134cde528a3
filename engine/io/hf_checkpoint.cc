#include "engine/io/hf_checkpoint.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "engine/common/status_macros.h"
#include "nlohmann/json.hpp"

namespace tessera::io {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

absl::StatusOr<std::string> ReadSmallFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", path));
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

absl::StatusOr<std::unique_ptr<HfCheckpoint>> HfCheckpoint::Open(const std::string& directory) {
  std::error_code ec;
  if (!fs::is_directory(directory, ec)) {
    return absl::NotFoundError(absl::StrCat(directory, " is not a directory"));
  }
  auto ckpt = std::make_unique<HfCheckpoint>();
  ckpt->directory_ = directory;
  const std::string index_path = (fs::path(directory) / "model.safetensors.index.json").string();
  if (fs::exists(index_path, ec)) {
    ckpt->index_file_ = "model.safetensors.index.json";
    TESSERA_ASSIGN_OR_RETURN(std::string text, ReadSmallFile(index_path));
    Json index = Json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (index.is_discarded() || !index.is_object()) {
      return absl::DataLossError(absl::StrCat(index_path, " is not valid JSON"));
    }
    auto wm = index.find("weight_map");
    if (wm == index.end() || !wm->is_object()) {
      return absl::DataLossError(absl::StrCat(index_path, " has no weight_map object"));
    }
    absl::flat_hash_map<std::string, int> shard_index;
    for (auto it = wm->begin(); it != wm->end(); ++it) {
      if (!it.value().is_string()) {
        return absl::DataLossError(
            absl::StrCat(index_path, ": weight_map entry '", it.key(), "' is not a file name"));
      }
      const std::string shard = it.value().get<std::string>();
      // A shard name is a plain file name in this directory; anything else is a lying index.
      if (shard.empty() || absl::StrContains(shard, "/") || shard == "." || shard == "..") {
        return absl::DataLossError(
            absl::StrCat(index_path, ": shard '", shard, "' is not a file in the directory"));
      }
      auto [pos, inserted] = shard_index.emplace(shard, static_cast<int>(ckpt->shards_.size()));
      if (inserted) TESSERA_RETURN_IF_ERROR(ckpt->AddShard(shard));
      const SafetensorsFile& file = *ckpt->shards_[pos->second];
      if (!file.Contains(it.key())) {
        return absl::DataLossError(absl::StrFormat(
            "%s: tensor '%s' is mapped to %s, which does not contain it", index_path, it.key(), shard));
      }
      ckpt->owner_[it.key()] = pos->second;
    }
  } else if (fs::exists(fs::path(directory) / "model.safetensors", ec)) {
    TESSERA_RETURN_IF_ERROR(ckpt->AddShard("model.safetensors"));
  } else {
    std::vector<std::string> files;
    for (const auto& entry : fs::directory_iterator(directory, ec)) {
      if (entry.is_regular_file() && entry.path().extension() == ".safetensors") {
        files.push_back(entry.path().filename().string());
      }
    }
    if (files.empty()) {
      return absl::NotFoundError(absl::StrCat(directory, " has no *.safetensors files"));
    }
    std::sort(files.begin(), files.end());
    for (const std::string& f : files) TESSERA_RETURN_IF_ERROR(ckpt->AddShard(f));
  }
  if (ckpt->index_file_.empty()) {
    for (size_t s = 0; s < ckpt->shards_.size(); ++s) {
      for (const std::string& name : ckpt->shards_[s]->names()) {
        if (!ckpt->owner_.emplace(name, static_cast<int>(s)).second) {
          return absl::DataLossError(absl::StrFormat("tensor '%s' is defined in both %s and %s", name,
                                                     ckpt->shard_names_[ckpt->owner_[name]],
                                                     ckpt->shard_names_[s]));
        }
      }
    }
  }
  for (const auto& [name, s] : ckpt->owner_) ckpt->names_.push_back(name);
  std::sort(ckpt->names_.begin(), ckpt->names_.end());
  return ckpt;
}

absl::Status HfCheckpoint::AddShard(const std::string& file_name) {
  TESSERA_ASSIGN_OR_RETURN(auto file,
                           SafetensorsFile::Open((fs::path(directory_) / file_name).string()));
  shards_.push_back(std::move(file));
  shard_names_.push_back(file_name);
  return absl::OkStatus();
}

absl::StatusOr<TensorView> HfCheckpoint::Get(absl::string_view name) const {
  auto it = owner_.find(name);
  if (it == owner_.end()) {
    return absl::NotFoundError(absl::StrCat("tensor '", name, "' is not in checkpoint ", directory_));
  }
  return shards_[it->second]->Get(name);
}

std::string HfCheckpoint::ShardOf(absl::string_view name) const {
  auto it = owner_.find(name);
  return it == owner_.end() ? "" : shard_names_[it->second];
}

std::vector<std::pair<std::string, std::string>> HfCheckpoint::DescribeMetadata() const {
  std::vector<std::pair<std::string, std::string>> out;
  out.emplace_back("shards", absl::StrCat(shards_.size()));
  if (!index_file_.empty()) out.emplace_back("index", index_file_);
  for (size_t s = 0; s < shards_.size(); ++s) {
    for (const auto& [k, v] : shards_[s]->metadata()) {
      out.emplace_back(absl::StrCat(shard_names_[s], ":", k), v);
    }
  }
  return out;
}

}  // namespace tessera::io
