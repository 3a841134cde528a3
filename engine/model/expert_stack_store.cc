#include "engine/model/expert_stack_store.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "engine/common/status_macros.h"
#include "engine/io/mapped_file.h"

namespace tessera::model {
namespace {

// A stacked tensor (the end of its name, after "model.layers.L."), the name each expert's slab
// gets there (head, the expert's number, tail), the stacked rank, and whether the slab is an
// input-major weight to show transposed.
struct Rule {
  const char* stacked;
  const char* head;
  const char* tail;
  int rank;
  bool transpose;
};
constexpr Rule kGptOssRules[] = {
    {"mlp.experts.gate_up_proj", "mlp.experts.", "gate_up_proj.weight", 3, true},
    {"mlp.experts.gate_up_proj_bias", "mlp.experts.", "gate_up_proj.bias", 2, false},
    {"mlp.experts.gate_up_proj_blocks", "mlp.experts.", "gate_up_proj_blocks", 4, false},
    {"mlp.experts.gate_up_proj_scales", "mlp.experts.", "gate_up_proj_scales", 3, false},
    {"mlp.experts.down_proj", "mlp.experts.", "down_proj.weight", 3, true},
    {"mlp.experts.down_proj_bias", "mlp.experts.", "down_proj.bias", 2, false},
    {"mlp.experts.down_proj_blocks", "mlp.experts.", "down_proj_blocks", 4, false},
    {"mlp.experts.down_proj_scales", "mlp.experts.", "down_proj_scales", 3, false},
};
constexpr Rule kGraniteMoeRules[] = {
    {"block_sparse_moe.input_linear.weight", "block_sparse_moe.experts.", "input_linear.weight", 3,
     false},
    {"block_sparse_moe.output_linear.weight", "block_sparse_moe.experts.", "output_linear.weight",
     3, false},
};

// src [k, n] -> dst [n, k] of T-sized elements, in 32 x 32 tiles so both sides stay in cache
// (a gpt-oss-20b expert's gate_up is 2880 x 5760).
template <typename T>
void Transpose(const uint8_t* src_bytes, int64_t k, int64_t n, uint8_t* dst_bytes) {
  constexpr int64_t kTile = 32;
  for (int64_t r0 = 0; r0 < k; r0 += kTile) {
    for (int64_t c0 = 0; c0 < n; c0 += kTile) {
      for (int64_t r = r0; r < std::min(k, r0 + kTile); ++r) {
        for (int64_t c = c0; c < std::min(n, c0 + kTile); ++c) {
          T x;
          std::memcpy(&x, src_bytes + (r * n + c) * sizeof(T), sizeof(T));
          std::memcpy(dst_bytes + (c * k + r) * sizeof(T), &x, sizeof(T));
        }
      }
    }
  }
}

}  // namespace

absl::StatusOr<std::unique_ptr<ExpertStackStore>> ExpertStackStore::Create(
    std::unique_ptr<io::TensorStore> inner, ExpertStackLayout layout, int64_t num_experts) {
  auto store = std::make_unique<ExpertStackStore>(PrivateTag{}, std::move(inner));
  const absl::Span<const Rule> rules = layout == ExpertStackLayout::kGptOss
                                           ? absl::Span<const Rule>(kGptOssRules)
                                           : absl::Span<const Rule>(kGraniteMoeRules);
  for (const std::string& name : store->inner_->names()) {
    const Rule* rule = nullptr;
    for (const Rule& r : rules) {
      if (absl::EndsWith(name, absl::StrCat(".", r.stacked))) rule = &r;
    }
    if (rule == nullptr) {
      store->names_.push_back(name);
      continue;
    }
    TESSERA_ASSIGN_OR_RETURN(io::TensorView view, store->inner_->Get(name));
    const bool float_16_32 = view.dtype == io::DType::kF32 || view.dtype == io::DType::kF16 ||
                             view.dtype == io::DType::kBF16;
    if (view.rank() != rule->rank || view.shape[0] != num_experts ||
        std::find(view.shape.begin(), view.shape.end(), 0) != view.shape.end() ||
        (rule->transpose && !float_16_32)) {
      return absl::InvalidArgumentError(
          absl::StrCat("tensor '", name, "' has shape ", view.ShapeString(), " and dtype ",
                       io::DTypeName(view.dtype), ", expected a stack of ", num_experts,
                       " experts (num_local_experts) of rank ", rule->rank,
                       " with no empty dimension", rule->transpose ? ", in f32, f16 or bf16" : ""));
    }
    const std::string prefix = name.substr(0, name.size() - std::strlen(rule->stacked));
    for (int64_t e = 0; e < view.shape[0]; ++e) {
      std::string slice = absl::StrCat(prefix, rule->head, e, ".", rule->tail);
      store->slices_[slice] = Slice{name, e, rule->transpose};
      store->names_.push_back(std::move(slice));
    }
    store->hidden_[name] = absl::StrCat(prefix, rule->head, "E.", rule->tail);
  }
  return store;
}

absl::StatusOr<io::TensorView> ExpertStackStore::Get(absl::string_view name) const {
  auto it = slices_.find(name);
  if (it == slices_.end()) {
    if (auto h = hidden_.find(name); h != hidden_.end()) {
      return absl::NotFoundError(
          absl::StrCat("tensor '", name, "' is read one expert at a time (", h->second, ")"));
    }
    return inner_->Get(name);
  }
  const Slice& s = it->second;
  TESSERA_ASSIGN_OR_RETURN(io::TensorView stacked, inner_->Get(s.stacked));
  const size_t slab = stacked.bytes.size() / static_cast<size_t>(stacked.shape[0]);
  io::TensorView v;
  v.name = std::string(name);
  v.dtype = stacked.dtype;
  v.shape.assign(stacked.shape.begin() + 1, stacked.shape.end());
  v.bytes = stacked.bytes.subspan(static_cast<size_t>(s.expert) * slab, slab);
  if (!s.transpose) return v;
  // [K, N] -> [N, K], element by element (2 or 4 bytes), once per slab.
  const int64_t k = v.shape[0], n = v.shape[1];
  const size_t elem = slab / static_cast<size_t>(k * n);
  absl::MutexLock lock(&mu_);
  std::unique_ptr<uint8_t[]>& buf = transposed_[v.name];
  if (buf == nullptr) {
    buf = std::make_unique_for_overwrite<uint8_t[]>(slab);
    if (elem == 2) {
      Transpose<uint16_t>(v.bytes.data(), k, n, buf.get());
    } else {
      Transpose<uint32_t>(v.bytes.data(), k, n, buf.get());
    }
    io::ReleaseMappedPages(v.bytes);  // read once: the copy is what the layer reads
  }
  v.shape = {n, k};
  v.bytes = absl::Span<const uint8_t>(buf.get(), slab);
  return v;
}

void ExpertStackStore::Release(absl::string_view name) const {
  absl::MutexLock lock(&mu_);
  transposed_.erase(name);
}

}  // namespace tessera::model
