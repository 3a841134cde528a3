// Test helper of the model tests: a LinearFactory of DenseLinear layers with int8 (Q8_0-block)
// activations on every GGUF block weight, as --cpu_int8_activations (and the GGUF default of the
// CLI's plan) loads them, and exact f32 activations on F32 / F16 / BF16 weights.
#ifndef TESSERA_TESTS_ENGINE_MODEL_INT8_ACTIVATION_FACTORY_H_
#define TESSERA_TESTS_ENGINE_MODEL_INT8_ACTIVATION_FACTORY_H_

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/backend/cpu/dense_linear.h"
#include "engine/io/dtype.h"
#include "engine/model/decoder_model.h"

namespace tessera::model::testing {

class Int8ActivationFactory : public LinearFactory {
 public:
  explicit Int8ActivationFactory(kernels::cpu::ThreadPool* pool) : pool_(pool) {}
  absl::StatusOr<std::unique_ptr<backend::Linear>> Create(const std::string&,
                                                          const std::string& weight_name,
                                                          const io::TensorStore& store,
                                                          std::vector<float> bias) override {
    auto view = store.Get(weight_name);
    if (!view.ok()) return view.status();
    const bool block = io::GgmlBlockTypeOf(view->dtype).has_value();
    auto l = backend::cpu::DenseLinear::Create(*view, std::move(bias), pool_,
                                               block ? backend::cpu::DenseActivations::kInt8Block32
                                                     : backend::cpu::DenseActivations::kFloat);
    if (!l.ok()) return l.status();
    return std::unique_ptr<backend::Linear>(std::move(*l));
  }

 private:
  kernels::cpu::ThreadPool* pool_;
};

}  // namespace tessera::model::testing

#endif  // TESSERA_TESTS_ENGINE_MODEL_INT8_ACTIVATION_FACTORY_H_
