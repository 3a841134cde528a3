// int16 activations (--cpu_int16_activations, a: int16 act) of the CPU QuantizedLinear: the 4-bit
// pair panels' int16 route (kernels/cpu/fast/quant_panel_matmul.h), activations quantized once
// per call with one scale per weight group (rows over the pool, each row alone: batch
// invariance), and x̂ = d · q for the paths that multiply floats, so every path of the layer
// multiplies the same activations.
#include <cstdint>
#include <vector>

#include "engine/backend/cpu/quantized_linear.h"
#include "kernels/cpu/fast/bf16_dot_matmul.h"
#include "kernels/cpu/fast/int16_act_quant.h"
#include "kernels/cpu/fast/quant_panel_matmul.h"
#include "kernels/cpu/thread_pool.h"

namespace tessera::backend::cpu {

namespace kf = kernels::cpu::fast;

bool QuantizedLinear::uses_int16_route() const {
  const int64_t group = w_.spec.activation_group;
  return w_.spec.activation == quant::ActivationFormat::kInt16Group && quant_pairs_ && group > 0 &&
         kf::QuantPanelInt16Group(fast_) == group;
}

bool QuantizedLinear::ForwardInt16(const float*& x, int64_t rows, float* y, ColumnSplit split,
                                   kernels::cpu::ScratchFrame& scratch) const {
  if (!uses_int16_route()) {
    float* rounded = scratch.Alloc<float>(rows * w_.spec.k);
    RoundToInt16Groups(x, rows, rounded);
    x = rounded;
    return false;
  }
  const int64_t k = w_.spec.k, group = w_.spec.activation_group, groups = k / group;
  int16_t* q = scratch.Alloc<int16_t>(rows * kf::Bf16DotActStride(k));
  float* d = scratch.Alloc<float>(rows * groups);
  float* sums = scratch.Alloc<float>(rows * groups);
  kernels::cpu::ParallelForOrInline(pool_, rows, 1, [&](int64_t r0, int64_t r1) {
    kf::QuantizeActsInt16(x, k, group, r0, r1, q, d, sums);
  });
  const float* bias = bias_.empty() ? nullptr : bias_.data();
  const kf::Int16Acts acts{q, d, sums};
  split(w_.spec.n,
        [&](int64_t b, int64_t e) { kf::QuantPanelInt16Matmul(fast_, acts, rows, bias, y, b, e); });
  return true;
}

void QuantizedLinear::RoundToInt16Groups(const float* x, int64_t rows, float* out) const {
  const int64_t k = w_.spec.k, group = w_.spec.activation_group;
  kernels::cpu::ParallelForOrInline(pool_, rows, 1, [&](int64_t r0, int64_t r1) {
    std::vector<int16_t> q(group);
    for (int64_t i = r0 * k; i < r1 * k; i += group) {
      float d, sum;
      kf::QuantizeGroupInt16Scalar(x + i, group, q.data(), &d, &sum);
      for (int64_t j = 0; j < group; ++j) out[i + j] = d * static_cast<float>(q[j]);
    }
  });
}

}  // namespace tessera::backend::cpu
