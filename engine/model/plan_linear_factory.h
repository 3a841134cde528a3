// Connects the precision plan to the decoder: the list of linear modules a decoder has (with the
// tensor prefixes of its container and its fused groups), and the LinearFactory that builds each
// module's Linear from its LinearSpec — a dense view, an unpacked quantized weight, an online
// quantization of a high-precision weight, or a dequantization to bf16 when the plan asks.
#ifndef TESSERA_ENGINE_MODEL_PLAN_LINEAR_FACTORY_H_
#define TESSERA_ENGINE_MODEL_PLAN_LINEAR_FACTORY_H_

#include <memory>
#include <string>
#include <vector>

#include "engine/model/decoder_model.h"
#include "engine/model/model_config.h"
#include "engine/model/weight_names.h"
#include "engine/quant/precision_plan.h"
#include "engine/quant/quant_config.h"
#include "kernels/cpu/thread_pool.h"

namespace tessera::model {

// Every linear module in execution order: per layer q, k, v, o, then gate, up, down (a MoE layer:
// each expert's gate, up, down in expert order, then a shared expert's); then lm_head.
std::vector<quant::LinearModule> DecoderLinearModules(const ModelConfig& config, NamingScheme naming,
                                                      const io::TensorStore& store);

class PlanLinearFactory : public LinearFactory {
 public:
  // All arguments must outlive the factory and the Linears it makes.
  PlanLinearFactory(const quant::PrecisionPlan& plan, const quant::QuantConfig& quant_config,
                    kernels::cpu::ThreadPool* pool)
      : plan_(plan), quant_config_(quant_config), pool_(pool) {}

  absl::StatusOr<std::unique_ptr<backend::Linear>> Create(const std::string& module,
                                                          const std::string& weight_name,
                                                          const io::TensorStore& store,
                                                          std::vector<float> bias) override;

 private:
  const quant::PrecisionPlan& plan_;
  const quant::QuantConfig& quant_config_;
  kernels::cpu::ThreadPool* pool_;
  std::vector<std::vector<uint16_t>> owned_bf16_;  // dequantized-to-bf16 weights
};

}  // namespace tessera::model

#endif  // TESSERA_ENGINE_MODEL_PLAN_LINEAR_FACTORY_H_
