// The CPU Linear for every quantized LinearSpec: FP8 W8A8 (static per-tensor, dynamic per-token
// with an optional upper bound, per-token-group with block weights) and W8A16; INT8 W8A8 with
// symmetric or asymmetric activations; integer weight-only (GPTQ, compressed-tensors, AWQ, Quark;
// groups, zero points, act-order); NVFP4 W4A4 (static or dynamic activation global scale) and
// W4A16; MXFP4 W4A16. Activations are quantized once per call with the reference formulas, then
// output columns are split across the thread pool.
#ifndef TESSERA_ENGINE_BACKEND_CPU_QUANTIZED_LINEAR_H_
#define TESSERA_ENGINE_BACKEND_CPU_QUANTIZED_LINEAR_H_

#include <memory>
#include <string>
#include <vector>

#include "engine/backend/linear.h"
#include "engine/quant/packed_weights.h"
#include "kernels/cpu/thread_pool.h"

namespace tessera::backend::cpu {

class QuantizedLinear : public Linear {
 public:
  QuantizedLinear(quant::PackedWeights weights, std::vector<float> bias,
                  kernels::cpu::ThreadPool* pool)
      : w_(std::move(weights)), bias_(std::move(bias)), pool_(pool) {}

  int64_t out_features() const override { return w_.spec.n; }
  int64_t in_features() const override { return w_.spec.k; }
  void Forward(const float* x, int64_t rows, float* y) const override;
  std::string Describe() const override;
  int64_t weight_bytes() const override;
  const quant::PackedWeights& weights() const { return w_; }

 private:
  quant::PackedWeights w_;
  std::vector<float> bias_;
  kernels::cpu::ThreadPool* pool_;
};

}  // namespace tessera::backend::cpu

#endif  // TESSERA_ENGINE_BACKEND_CPU_QUANTIZED_LINEAR_H_
