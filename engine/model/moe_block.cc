#include "engine/model/moe_block.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "engine/backend/cpu/column_split.h"
#include "kernels/cpu/fast/fast_elementwise.h"

namespace tessera::model {

namespace kf = kernels::cpu::fast;

void RouteTopK(const float* logits, int64_t num_experts, int64_t top_k, bool normalize,
               int32_t* experts, float* weights) {
  // torch.softmax: exp(x - max) / Σ exp(x - max), in f32.
  float max_logit = logits[0];
  for (int64_t e = 1; e < num_experts; ++e) max_logit = std::max(max_logit, logits[e]);
  std::vector<float> prob(num_experts);
  float sum = 0.0f;
  for (int64_t e = 0; e < num_experts; ++e) {
    prob[e] = std::exp(logits[e] - max_logit);
    sum += prob[e];
  }
  for (float& p : prob) p /= sum;
  std::vector<int32_t> order(num_experts);
  std::iota(order.begin(), order.end(), 0);
  // NaN logits (a broken checkpoint) must not break the comparator's strict weak order.
  auto key = [&](int32_t e) { return std::isnan(prob[e]) ? -1.0f : prob[e]; };
  std::partial_sort(order.begin(), order.begin() + top_k, order.end(), [&](int32_t a, int32_t b) {
    const float ka = key(a), kb = key(b);
    return ka != kb ? ka > kb : a < b;
  });
  float picked = 0.0f;
  for (int64_t j = 0; j < top_k; ++j) {
    experts[j] = order[j];
    weights[j] = prob[order[j]];
    picked += weights[j];
  }
  if (normalize) {
    for (int64_t j = 0; j < top_k; ++j) weights[j] /= picked;
  }
}

int64_t MoeBlock::TokenWeightBytes() const {
  int64_t experts = 0;
  for (const ExpertMlp& e : experts_) {
    experts += e.gate->weight_bytes() + e.up->weight_bytes() + e.down->weight_bytes();
  }
  return router_->weight_bytes() + experts * top_k_ / static_cast<int64_t>(experts_.size());
}

void MoeBlock::Forward(const float* x, int64_t rows, float* out,
                       kernels::cpu::ThreadPool* pool) const {
  const int64_t num_experts = static_cast<int64_t>(experts_.size());
  const int64_t hidden = router_->in_features();
  std::vector<float> logits(rows * num_experts);
  router_->Forward(x, rows, logits.data());
  std::vector<int32_t> chosen(rows * top_k_);
  std::vector<float> weight(rows * top_k_);
  for (int64_t r = 0; r < rows; ++r) {
    RouteTopK(logits.data() + r * num_experts, num_experts, top_k_, normalize_,
              chosen.data() + r * top_k_, weight.data() + r * top_k_);
  }
  // Each expert's rows, in row order, with their weights.
  struct Routed {
    int64_t row;
    float weight;
  };
  std::vector<std::vector<Routed>> routed(num_experts);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t j = 0; j < top_k_; ++j) {
      routed[chosen[r * top_k_ + j]].push_back({r, weight[r * top_k_ + j]});
    }
  }
  std::fill(out, out + rows * hidden, 0.0f);
  std::vector<float> xs, gate, up, y;
  for (int64_t e = 0; e < num_experts; ++e) {
    const std::vector<Routed>& mine = routed[e];
    if (mine.empty()) continue;
    const ExpertMlp& mlp = experts_[e];
    const int64_t n = static_cast<int64_t>(mine.size()), width = mlp.gate->out_features();
    const float* input = x;
    if (n != rows) {  // gather the rows routed here (all rows: read x in place)
      xs.resize(n * hidden);
      for (int64_t i = 0; i < n; ++i) {
        std::copy_n(x + mine[i].row * hidden, hidden, xs.data() + i * hidden);
      }
      input = xs.data();
    }
    gate.resize(n * width);
    up.resize(n * width);
    y.resize(n * hidden);
    backend::cpu::ForwardSharedInput({mlp.gate.get(), mlp.up.get()}, input, n,
                                     {gate.data(), up.data()}, pool);
    kf::FastSwiGlu(gate.data(), up.data(), n * width, gate.data());
    mlp.down->Forward(gate.data(), n, y.data());
    // transformers: out.index_add_(rows, expert(x) * w), the product rounded before the sum.
    for (int64_t i = 0; i < n; ++i) {
      float* yr = y.data() + i * hidden;
      const float w = mine[i].weight;
      for (int64_t c = 0; c < hidden; ++c) yr[c] *= w;
      kf::FastAddInPlace(out + mine[i].row * hidden, yr, hidden);
    }
  }
}

}  // namespace tessera::model
