// ExpertStackStore shows a Hugging Face checkpoint's stacked MoE experts one expert at a time, so
// the decoder and the precision plan treat each as a linear layer of its own, as they do every
// other MoE's. Two layouts stack them:
//  * gpt-oss (kGptOss): transformers keeps a layer's experts in mlp.experts.gate_up_proj
//    [E, H, 2F] and down_proj [E, F, H] (input-major, gate and up columns interleaved) with biases
//    gate_up_proj_bias [E, 2F] and down_proj_bias [E, H]; OpenAI's MXFP4 checkpoints store
//    gate_up_proj_blocks [E, 2F, H/32, 16] / _scales [E, 2F, H/32] and down_proj_blocks / _scales
//    output-major instead. Expert e of layer L is
//      model.layers.L.mlp.experts.e.gate_up_proj{.weight [2F, H], .bias, _blocks, _scales}
//      model.layers.L.mlp.experts.e.down_proj{.weight [H, F], .bias, _blocks, _scales}
//    with gate and up still interleaved (ExpertMlp::gate_up).
//  * Granite MoE (kGraniteMoe): block_sparse_moe.input_linear.weight [E, 2F, H] ([gate; up]
//    halves) and output_linear.weight [E, H, F], output-major; expert e is
//    model.layers.L.block_sparse_moe.experts.e.{input_linear,output_linear}.weight.
// Output-major slabs, blocks, scales and biases are read in place; input-major weights are
// transposed into memory the store owns on their first Get (their mapped source pages given
// back), which lives until the layer built from it says it keeps a copy of its own (Release) or
// the store goes.
#ifndef TESSERA_ENGINE_MODEL_EXPERT_STACK_STORE_H_
#define TESSERA_ENGINE_MODEL_EXPERT_STACK_STORE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "engine/io/tensor_store.h"

namespace tessera::model {

enum class ExpertStackLayout { kGptOss, kGraniteMoe };

class ExpertStackStore : public io::TensorStore {
 public:
  // INVALID_ARGUMENT naming the tensor when a stacked tensor is not [num_experts, ...] of the
  // expected rank with no empty dimension, or (weights to transpose) not f32, f16 or bf16.
  static absl::StatusOr<std::unique_ptr<ExpertStackStore>> Create(
      std::unique_ptr<io::TensorStore> inner, ExpertStackLayout layout, int64_t num_experts);

  io::ContainerKind kind() const override { return inner_->kind(); }
  const std::vector<std::string>& names() const override { return names_; }
  bool Contains(absl::string_view name) const override {
    return slices_.contains(name) || (inner_->Contains(name) && !hidden_.contains(name));
  }
  absl::StatusOr<io::TensorView> Get(absl::string_view name) const override;
  // Frees a transposed copy (a later Get makes it again).
  void Release(absl::string_view name) const override;
  std::vector<std::pair<std::string, std::string>> DescribeMetadata() const override {
    return inner_->DescribeMetadata();
  }

  struct PrivateTag {};  // construct through Create
  ExpertStackStore(PrivateTag, std::unique_ptr<io::TensorStore> inner) : inner_(std::move(inner)) {}

 private:
  struct Slice {
    std::string stacked;  // the inner tensor
    int64_t expert = 0;
    bool transpose = false;  // a [K, N] weight shown as [N, K]
  };
  std::unique_ptr<io::TensorStore> inner_;
  std::vector<std::string> names_;
  absl::flat_hash_map<std::string, Slice> slices_;
  absl::flat_hash_map<std::string, std::string> hidden_;  // stacked tensor -> its slices' names
  mutable absl::Mutex mu_;
  mutable absl::flat_hash_map<std::string, std::unique_ptr<uint8_t[]>> transposed_
      ABSL_GUARDED_BY(mu_);
};

}  // namespace tessera::model

#endif  // TESSERA_ENGINE_MODEL_EXPERT_STACK_STORE_H_
