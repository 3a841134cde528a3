// RenamedTensorStore shows another store's tensors under new names: the first rule whose `from`
// prefixes a tensor's name replaces that prefix with `to`, and tensors no rule matches are
// hidden. Multimodal checkpoints keep their language model under a prefix of their own (Gemma 3
// 4B-27B: `language_model.model.layers.0...` on the Hub, `model.language_model.layers.0...` as
// transformers 5 saves it) beside vision weights tessera does not run; renamed, the text decoder
// reads them as any causal LM's `model.layers.0...`, and plans list no vision module.
#ifndef TESSERA_ENGINE_IO_RENAMED_TENSOR_STORE_H_
#define TESSERA_ENGINE_IO_RENAMED_TENSOR_STORE_H_

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "engine/io/tensor_store.h"

namespace tessera::io {

struct PrefixRule {
  std::string from;
  std::string to;
};

class RenamedTensorStore : public TensorStore {
 public:
  // INVALID_ARGUMENT naming both tensors when two of them would get the same name.
  static absl::StatusOr<std::unique_ptr<RenamedTensorStore>> Create(
      std::unique_ptr<TensorStore> inner, std::vector<PrefixRule> rules);

  ContainerKind kind() const override { return inner_->kind(); }
  const std::vector<std::string>& names() const override { return names_; }
  bool Contains(absl::string_view name) const override { return original_.contains(name); }
  absl::StatusOr<TensorView> Get(absl::string_view name) const override;
  void Release(absl::string_view name) const override {
    if (auto it = original_.find(name); it != original_.end()) inner_->Release(it->second);
  }
  std::vector<std::pair<std::string, std::string>> DescribeMetadata() const override {
    return inner_->DescribeMetadata();
  }
  const TensorStore& inner() const { return *inner_; }

  struct PrivateTag {};  // construct through Create
  RenamedTensorStore(PrivateTag, std::unique_ptr<TensorStore> inner) : inner_(std::move(inner)) {}

 private:
  std::unique_ptr<TensorStore> inner_;
  std::vector<std::string> names_;                          // new names, inner order
  absl::flat_hash_map<std::string, std::string> original_;  // new name -> inner name
};

}  // namespace tessera::io

#endif  // TESSERA_ENGINE_IO_RENAMED_TENSOR_STORE_H_
