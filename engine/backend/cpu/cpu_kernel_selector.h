// The CPU backend's answer to "which kernel runs this LinearSpec": every format has a scalar
// reference kernel on the CPU, so every spec is supported; the kernel id names it for the plan.
#ifndef TESSERA_ENGINE_BACKEND_CPU_CPU_KERNEL_SELECTOR_H_
#define TESSERA_ENGINE_BACKEND_CPU_CPU_KERNEL_SELECTOR_H_

#include <string>

#include "engine/quant/precision_plan.h"

namespace tessera::backend::cpu {

class CpuKernelSelector : public quant::KernelSelector {
 public:
  std::string name() const override { return "cpu"; }
  absl::Status Select(quant::LinearSpec* spec) const override;
};

}  // namespace tessera::backend::cpu

#endif  // TESSERA_ENGINE_BACKEND_CPU_CPU_KERNEL_SELECTOR_H_
