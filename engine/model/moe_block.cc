#include "engine/model/moe_block.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <numeric>
#include <utility>

#include "engine/backend/cpu/column_split.h"
#include "kernels/cpu/fast/fast_elementwise.h"

namespace tessera::model {

namespace kf = kernels::cpu::fast;

void RouteTopK(const float* logits, int64_t num_experts, int64_t top_k, bool normalize,
               int32_t* experts, float* weights, float* prob, int32_t* order) {
  // torch.softmax: exp(x - max) / Σ exp(x - max), in f32.
  float max_logit = logits[0];
  for (int64_t e = 1; e < num_experts; ++e) max_logit = std::max(max_logit, logits[e]);
  float sum = 0.0f;
  for (int64_t e = 0; e < num_experts; ++e) {
    prob[e] = std::exp(logits[e] - max_logit);
    sum += prob[e];
  }
  for (int64_t e = 0; e < num_experts; ++e) prob[e] /= sum;
  std::iota(order, order + num_experts, 0);
  // NaN logits (a broken checkpoint) must not break the comparator's strict weak order.
  auto key = [&](int32_t e) { return std::isnan(prob[e]) ? -1.0f : prob[e]; };
  std::partial_sort(order, order + top_k, order + num_experts, [&](int32_t a, int32_t b) {
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

int64_t ExpertMlp::weight_bytes() const {
  return gate_up != nullptr ? gate_up->weight_bytes() + down->weight_bytes()
                            : gate->weight_bytes() + up->weight_bytes() + down->weight_bytes();
}

int64_t MoeBlock::TokenWeightBytes() const {
  int64_t experts = 0;
  for (const ExpertMlp& e : experts_) experts += e.weight_bytes();
  int64_t shared = 0;
  if (shared_gate_ != nullptr) {
    shared = shared_gate_->weight_bytes() + shared_.gate->weight_bytes() +
             shared_.up->weight_bytes() + shared_.down->weight_bytes();
  }
  return router_->weight_bytes() + experts * top_k_ / static_cast<int64_t>(experts_.size()) +
         shared;
}

void MoeBlock::Forward(const float* x, int64_t rows, float* out,
                       kernels::cpu::ThreadPool* pool) const {
  const int64_t num_experts = static_cast<int64_t>(experts_.size());
  const int64_t hidden = router_->in_features();
  std::vector<float> logits(rows * num_experts);
  router_->Forward(x, rows, logits.data());
  std::vector<int32_t> chosen(rows * top_k_);
  std::vector<float> weight(rows * top_k_);
  std::vector<float> prob(num_experts);
  std::vector<int32_t> order(num_experts);
  for (int64_t r = 0; r < rows; ++r) {
    RouteTopK(logits.data() + r * num_experts, num_experts, top_k_, normalize_,
              chosen.data() + r * top_k_, weight.data() + r * top_k_, prob.data(), order.data());
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
  // The picked experts in ascending order, in chunks: each chunk's gate and up run in one
  // parallel pass, then its downs in another. A decode step's experts are small matrices
  // (Qwen3-30B-A3B: 0.9 MB each in Q4_0) and one pass per matrix would spend as much time joining
  // threads as streaming weights; a prefill's are bounded by kChunkRows routed rows (one expert
  // may exceed it alone) so the gathered inputs and intermediates stay cache-sized instead of
  // hundreds of MB per layer.
  constexpr int64_t kChunkRows = 256, kChunkExperts = 16;
  std::vector<int64_t> active;
  for (int64_t e = 0; e < num_experts; ++e) {
    if (!routed[e].empty()) active.push_back(e);
  }
  std::vector<std::pair<size_t, size_t>> chunks;  // [begin, end) into active
  int64_t max_rows = 0, max_width = 0;
  for (size_t b = 0; b < active.size();) {
    size_t e = b;
    int64_t chunk_rows = 0, chunk_width = 0;
    while (e < active.size() && e - b < kChunkExperts) {
      const int64_t n = static_cast<int64_t>(routed[active[e]].size());
      if (e > b && chunk_rows + n > kChunkRows) break;
      chunk_rows += n;
      chunk_width += n * experts_[active[e]].width();
      ++e;
    }
    chunks.emplace_back(b, e);
    max_rows = std::max(max_rows, chunk_rows);
    max_width = std::max(max_width, chunk_width);
    b = e;
  }
  auto xs = std::make_unique_for_overwrite<float[]>(max_rows * hidden);
  auto y = std::make_unique_for_overwrite<float[]>(max_rows * hidden);
  auto gate = std::make_unique_for_overwrite<float[]>(max_width);
  auto up = std::make_unique_for_overwrite<float[]>(max_width);
  // Fused experts' gate / up output (interleaved or halves), split before the activation.
  const bool any_fused = std::any_of(experts_.begin(), experts_.end(),
                                     [](const ExpertMlp& e) { return e.gate_up != nullptr; });
  std::unique_ptr<float[]> fused;
  if (any_fused) fused = std::make_unique_for_overwrite<float[]>(2 * max_width);
  std::fill(out, out + rows * hidden, 0.0f);
  std::vector<backend::cpu::LinearCall> gate_up, down;
  for (const auto& [begin, end] : chunks) {
    gate_up.clear();
    down.clear();
    int64_t row_off = 0, width_off = 0;
    for (size_t a = begin; a < end; ++a) {
      const std::vector<Routed>& mine = routed[active[a]];
      const ExpertMlp& mlp = experts_[active[a]];
      const int64_t n = static_cast<int64_t>(mine.size());
      const float* input = x;  // every row picked this expert: read x in place
      if (n != rows) {
        float* dst = xs.get() + row_off * hidden;
        for (int64_t i = 0; i < n; ++i)
          std::copy_n(x + mine[i].row * hidden, hidden, dst + i * hidden);
        input = dst;
      }
      if (mlp.gate_up != nullptr) {
        gate_up.push_back({mlp.gate_up.get(), input, n, fused.get() + 2 * width_off});
      } else {
        gate_up.push_back({mlp.gate.get(), input, n, gate.get() + width_off});
        gate_up.push_back({mlp.up.get(), input, n, up.get() + width_off});
      }
      down.push_back({mlp.down.get(), gate.get() + width_off, n, y.get() + row_off * hidden});
      row_off += n;
      width_off += n * mlp.width();
    }
    backend::cpu::ForwardMany(gate_up, pool);
    width_off = 0;
    for (size_t a = begin; a < end; ++a) {
      const ExpertMlp& mlp = experts_[active[a]];
      const int64_t w = static_cast<int64_t>(routed[active[a]].size()) * mlp.width();
      if (mlp.gate_up != nullptr) {
        const float* f = fused.get() + 2 * width_off;
        if (halves_) {  // transformers' chunk(2): each row's first half gate, second half up
          const int64_t width = mlp.width();
          for (int64_t r = 0; r < w / width; ++r) {
            std::copy_n(f + 2 * r * width, width, gate.get() + width_off + r * width);
            std::copy_n(f + (2 * r + 1) * width, width, up.get() + width_off + r * width);
          }
        } else {  // transformers' gate_up[..., ::2], gate_up[..., 1::2]
          for (int64_t i = 0; i < w; ++i) {
            gate[width_off + i] = f[2 * i];
            up[width_off + i] = f[2 * i + 1];
          }
        }
      }
      width_off += w;
    }
    if (clamped_) {
      kf::FastSwiGluClamped(gate.get(), up.get(), width_off, alpha_, limit_, gate.get());
    } else {
      kf::FastSwiGlu(gate.get(), up.get(), width_off, gate.get());
    }
    backend::cpu::ForwardMany(down, pool);
    // transformers: out.index_add_(rows, expert(x) * w) expert by expert in ascending order, the
    // product rounded before the sum.
    row_off = 0;
    for (size_t a = begin; a < end; ++a) {
      for (const Routed& r : routed[active[a]]) {
        float* yr = y.get() + (row_off++) * hidden;
        for (int64_t c = 0; c < hidden; ++c) yr[c] *= r.weight;
        kf::FastAddInPlace(out + r.row * hidden, yr, hidden);
      }
    }
  }
  if (shared_gate_ != nullptr) AddSharedExpert(x, rows, out, pool);
}

void MoeBlock::AddSharedExpert(const float* x, int64_t rows, float* out,
                               kernels::cpu::ThreadPool* pool) const {
  const int64_t hidden = router_->in_features(), width = shared_.gate->out_features();
  auto gate = std::make_unique_for_overwrite<float[]>(rows * width);
  auto up = std::make_unique_for_overwrite<float[]>(rows * width);
  auto y = std::make_unique_for_overwrite<float[]>(rows * hidden);
  std::vector<float> g(rows);
  backend::cpu::ForwardMany({{shared_.gate.get(), x, rows, gate.get()},
                             {shared_.up.get(), x, rows, up.get()},
                             {shared_gate_.get(), x, rows, g.data()}},
                            pool);
  kf::FastSwiGlu(gate.get(), up.get(), rows * width, gate.get());
  shared_.down->Forward(gate.get(), rows, y.get());
  // transformers: final + sigmoid(shared_expert_gate(x)) * shared_expert(x).
  for (int64_t r = 0; r < rows; ++r) {
    const float s = 1.0f / (1.0f + std::exp(-g[r]));
    float* yr = y.get() + r * hidden;
    for (int64_t c = 0; c < hidden; ++c) yr[c] *= s;
    kf::FastAddInPlace(out + r * hidden, yr, hidden);
  }
}

}  // namespace tessera::model
