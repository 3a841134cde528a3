#include "engine/io/renamed_tensor_store.h"

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace tessera::io {

absl::StatusOr<std::unique_ptr<RenamedTensorStore>> RenamedTensorStore::Create(
    std::unique_ptr<TensorStore> inner, std::vector<PrefixRule> rules) {
  auto store = std::make_unique<RenamedTensorStore>(PrivateTag{}, std::move(inner));
  for (const std::string& name : store->inner_->names()) {
    for (const PrefixRule& rule : rules) {
      if (!absl::StartsWith(name, rule.from)) continue;
      std::string renamed = absl::StrCat(rule.to, name.substr(rule.from.size()));
      auto [it, inserted] = store->original_.emplace(renamed, name);
      if (!inserted) {
        return absl::InvalidArgumentError(absl::StrCat("tensors '", it->second, "' and '", name,
                                                       "' would both be read as '", renamed, "'"));
      }
      store->names_.push_back(std::move(renamed));
      break;
    }
  }
  return store;
}

absl::StatusOr<TensorView> RenamedTensorStore::Get(absl::string_view name) const {
  auto it = original_.find(name);
  if (it == original_.end()) {
    return absl::NotFoundError(absl::StrCat("tensor '", name, "' not found"));
  }
  return inner_->Get(it->second);
}

}  // namespace tessera::io
