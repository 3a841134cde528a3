// The CPU backend's answer to "which kernel runs this LinearSpec": every format has a scalar
// reference kernel on the CPU, so every spec is supported; the kernel id names it for the plan.
#ifndef TESSERA_ENGINE_BACKEND_CPU_CPU_KERNEL_SELECTOR_H_
#define TESSERA_ENGINE_BACKEND_CPU_CPU_KERNEL_SELECTOR_H_

#include <string>

#include "engine/quant/precision_plan.h"

namespace tessera::backend::cpu {

class CpuKernelSelector : public quant::KernelSelector {
 public:
  // int8_activations: run GGUF, integer weight-only, NVFP4 W4A16 and MXFP4 layers with int8
  // (Q8_0-block) activations and the VNNI tiles (a: q8_0 act) instead of exact f32 activations.
  // bf16_activations: bf16 weights multiply bf16-rounded activations (a: bf16) instead of the
  // exact hi + lo split.
  explicit CpuKernelSelector(bool int8_activations = false, bool bf16_activations = false)
      : int8_activations_(int8_activations), bf16_activations_(bf16_activations) {}
  std::string name() const override { return "cpu"; }
  absl::Status Select(quant::LinearSpec* spec) const override;

 private:
  bool int8_activations_;
  bool bf16_activations_;
};

}  // namespace tessera::backend::cpu

#endif  // TESSERA_ENGINE_BACKEND_CPU_CPU_KERNEL_SELECTOR_H_
