// MoeBlock: the sparse mixture-of-experts MLP of qwen2_moe, qwen3_moe, mixtral, olmoe, granitemoe
// and gpt-oss decoder layers on the CPU backend. A router scores every expert for each token; the
// token runs through the SwiGLU MLPs of its top-k experts and gets their outputs summed with the
// routing weights. Tokens are grouped by expert, so each expert's weights stream once per step for
// all the tokens routed to it (one GEMM over those rows, any Linear the plan chose), and experts no
// token picked are not read.
#ifndef TESSERA_ENGINE_MODEL_MOE_BLOCK_H_
#define TESSERA_ENGINE_MODEL_MOE_BLOCK_H_

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "engine/backend/linear.h"
#include "kernels/cpu/thread_pool.h"

namespace tessera::model {

// An expert's projections: gate and up apart, or one gate_up whose output holds both: gpt-oss's
// (as Hugging Face stores it) interleaved, gate in the even columns and up in the odd ones,
// Granite MoE's in halves, [gate; up] (MoeBlock::SetGateUpHalves). Any of them may carry a bias
// (the Linear's own).
struct ExpertMlp {
  std::unique_ptr<backend::Linear> gate, up, down;
  std::unique_ptr<backend::Linear> gate_up;  // instead of gate and up
  int64_t width() const {
    return gate_up != nullptr ? gate_up->out_features() / 2 : gate->out_features();
  }
  int64_t weight_bytes() const;
};

// One token's routing, computed as transformers' Qwen3MoeSparseMoeBlock / MixtralSparseMoeBlock
// do: a softmax of the router logits in f32, the top_k largest probabilities (ties to the lower
// expert index, so a batch routes alike whatever its order), divided by their sum when
// `normalize`. Writes top_k experts in descending probability and their weights.
// `prob` and `order` are num_experts long each (the caller's scratch: no allocation per token).
void RouteTopK(const float* logits, int64_t num_experts, int64_t top_k, bool normalize,
               int32_t* experts, float* weights, float* prob, int32_t* order);

class MoeBlock {
 public:
  // `router` maps hidden -> num_experts logits; every expert maps hidden -> hidden through its own
  // width. The caller checked the shapes.
  MoeBlock(std::unique_ptr<backend::Linear> router, std::vector<ExpertMlp> experts, int64_t top_k,
           bool normalize)
      : router_(std::move(router)),
        experts_(std::move(experts)),
        top_k_(top_k),
        normalize_(normalize) {}

  // gpt-oss: the experts' activation is the clamped SwiGLU (kernels/cpu/elementwise.h
  // SwiGluClamped) instead of SwiGLU.
  void SetClampedSwiGlu(float alpha, float limit) {
    clamped_ = true;
    alpha_ = alpha;
    limit_ = limit;
  }

  // Fused gate_up outputs are [gate; up] halves (Granite MoE's input_linear, transformers'
  // chunk(2)) instead of interleaved.
  void SetGateUpHalves() { halves_ = true; }

  // qwen2_moe: every row also runs `shared`, whose output is scaled by sigmoid(shared_gate · x)
  // (shared_gate: hidden -> 1) and added after the routed experts' sum, as transformers adds it.
  void SetSharedExpert(ExpertMlp shared, std::unique_ptr<backend::Linear> shared_gate) {
    shared_ = std::move(shared);
    shared_gate_ = std::move(shared_gate);
  }

  // out[rows, hidden] (overwritten) = Σ over each row's top-k experts of weight · expert(x row),
  // added in ascending expert order as transformers' index_add_ loop adds them, plus the shared
  // expert's gated output where there is one. A row's result does not depend on the other rows.
  void Forward(const float* x, int64_t rows, float* out, kernels::cpu::ThreadPool* pool) const;

  // Weight bytes one token reads (Linear::weight_bytes' counting): the router, top_k experts of
  // the mean size and the shared expert. A batch reads the union of its tokens' experts.
  int64_t TokenWeightBytes() const;

  const backend::Linear& router() const { return *router_; }
  const std::vector<ExpertMlp>& experts() const { return experts_; }
  // Null members when there is no shared expert.
  const ExpertMlp& shared_expert() const { return shared_; }
  const backend::Linear* shared_expert_gate() const { return shared_gate_.get(); }
  int64_t top_k() const { return top_k_; }

 private:
  void AddSharedExpert(const float* x, int64_t rows, float* out,
                       kernels::cpu::ThreadPool* pool) const;

  std::unique_ptr<backend::Linear> router_;
  std::vector<ExpertMlp> experts_;
  int64_t top_k_;
  bool normalize_;
  ExpertMlp shared_;
  std::unique_ptr<backend::Linear> shared_gate_;
  bool clamped_ = false;
  bool halves_ = false;
  float alpha_ = 0.0f, limit_ = 0.0f;
};

}  // namespace tessera::model

#endif  // TESSERA_ENGINE_MODEL_MOE_BLOCK_H_
