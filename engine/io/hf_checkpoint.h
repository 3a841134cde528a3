// A Hugging Face checkpoint directory as one TensorStore: `model.safetensors`, or the shards named
// by `model.safetensors.index.json` (its weight_map is authoritative: each listed tensor must be in
// the shard it names; shards the index does not reference are not opened, as in vLLM), or, with
// neither, every *.safetensors file in the directory with no name defined twice.
#ifndef TESSERA_ENGINE_IO_HF_CHECKPOINT_H_
#define TESSERA_ENGINE_IO_HF_CHECKPOINT_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "engine/io/safetensors_file.h"
#include "engine/io/tensor_store.h"

namespace tessera::io {

class HfCheckpoint : public TensorStore {
 public:
  static absl::StatusOr<std::unique_ptr<HfCheckpoint>> Open(const std::string& directory);

  ContainerKind kind() const override { return ContainerKind::kHfDirectory; }
  const std::vector<std::string>& names() const override { return names_; }
  bool Contains(absl::string_view name) const override { return owner_.contains(name); }
  absl::StatusOr<TensorView> Get(absl::string_view name) const override;
  std::vector<std::pair<std::string, std::string>> DescribeMetadata() const override;

  const std::string& directory() const { return directory_; }
  // The shard file (base name) holding `name`, or "" when absent.
  std::string ShardOf(absl::string_view name) const;

 private:
  absl::Status AddShard(const std::string& file_name);

  std::string directory_;
  std::string index_file_;  // empty when not sharded
  std::vector<std::unique_ptr<SafetensorsFile>> shards_;
  std::vector<std::string> shard_names_;
  absl::flat_hash_map<std::string, int> owner_;  // tensor -> index into shards_
  std::vector<std::string> names_;
};

}  // namespace tessera::io

#endif  // TESSERA_ENGINE_IO_HF_CHECKPOINT_H_
