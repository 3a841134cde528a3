// Act-order (g_idx) layers of the CPU QuantizedLinear: the load-time channel sort and the per-call
// activation gather (see quantized_linear.h), and the plan label of layers the sort cannot serve.
#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "engine/backend/cpu/quantized_linear.h"

namespace tessera::backend::cpu {

using quant::ActivationFormat;
using quant::WeightFormat;

void QuantizedLinear::SortActOrder() {
  // TESSERA_QUANT_REFERENCE keeps the checkpoint order too, so the escape hatch bisects the sort.
  if (w_.g_idx.empty() || std::getenv("TESSERA_QUANT_REFERENCE") != nullptr) return;
  switch (w_.spec.weight_format) {
    case WeightFormat::kInt2: case WeightFormat::kInt3: case WeightFormat::kInt4:
    case WeightFormat::kInt4Awq:
      w_.SortActOrder();
      break;
    case WeightFormat::kInt8:
      if (w_.spec.activation != ActivationFormat::kInt8 && !w_.zeros.empty()) w_.SortActOrder();
      break;
    default:
      return;
  }
  if (!w_.g_idx.empty()) {
    // Groups of unequal size (not GPTQ's): the scalar reference kernel, with f32 activations,
    // since no int8 kernel would take the layer (bf16 activations, which the reference rounds
    // alike, stay); the plan says so.
    if (w_.spec.activation != ActivationFormat::kBf16) {
      w_.spec.activation = ActivationFormat::kFloat;
      w_.spec.activation_group = 0;
    }
    w_.spec.kernel = "cpu/int-wo-ref";
    absl::StrAppend(&w_.spec.reason, "; g_idx groups of unequal size: reference kernel");
  }
}

const float* QuantizedLinear::GatherActOrder(const float* x, int64_t rows,
                                             kernels::cpu::ScratchFrame& scratch) const {
  if (w_.k_perm.empty()) return x;
  const int64_t k = w_.spec.k;
  const int32_t* perm = w_.k_perm.data();
  float* out = scratch.Alloc<float>(rows * k);
  auto gather = [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      for (int64_t j = 0; j < k; ++j) out[r * k + j] = x[r * k + perm[j]];
    }
  };
  if (pool_ != nullptr && rows > 1) {
    pool_->ParallelFor(rows, 1, gather);
  } else {
    gather(0, rows);
  }
  return out;
}

}  // namespace tessera::backend::cpu
