// QuantConfig: what a checkpoint's quantization config says about each linear module. One parser
// per producer (quant-formats.md §3) reads `quantization_config` from config.json, or the side
// files hf_quant_config.json / quantize_config.json / quant_config.json, and answers Resolve():
// the LinearSpec the checkpoint stores for that module, checked against the tensors actually
// present (quant-formats.md §4.2: tensors are authoritative; a float weight with no scale is
// unquantized whatever the config says).
#ifndef TESSERA_ENGINE_QUANT_QUANT_CONFIG_H_
#define TESSERA_ENGINE_QUANT_QUANT_CONFIG_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "engine/io/tensor_store.h"
#include "engine/quant/linear_spec.h"
#include "nlohmann/json_fwd.hpp"

namespace tessera::quant {

class QuantConfig {
 public:
  virtual ~QuantConfig() = default;
  // "none", "gguf", "fp8", "fbgemm_fp8", "compressed-tensors", "modelopt", "gptq", "awq",
  // "quark", "mxfp4", "bitsandbytes".
  virtual std::string method() const = 0;
  // The stored spec of `module` (HF name) whose tensors start with `prefix` (the module name for
  // HF checkpoints, e.g. "blk.0.attn_q" for GGUF). n, k: the expected logical shape.
  virtual absl::StatusOr<LinearSpec> Resolve(const std::string& module, const std::string& prefix,
                                             int64_t n, int64_t k,
                                             const io::TensorStore& store) const = 0;
  // One line for logs and GetModelInfo ("compressed-tensors (nvfp4-pack-quantized), 2 groups").
  virtual std::string Summary() const { return method(); }
};

// The spec of an unquantized weight `<prefix>.weight` from its stored dtype; errors name the
// tensor when it is missing, misshaped or not a float type.
absl::StatusOr<LinearSpec> DenseSpec(const std::string& module, const std::string& prefix,
                                     int64_t n, int64_t k, const io::TensorStore& store);

// True when `<prefix>.weight` is stored as a plain float tensor and no quantization tensors sit
// beside it (the robust rule).
bool IsStoredDense(const std::string& prefix, const io::TensorStore& store);

// Reads the checkpoint's quantization config. `config_json` is config.json's text (empty for
// GGUF), `directory` the HF directory (for side files; empty for GGUF). Unknown quant_method is
// an error naming it; a checkpoint with no config resolves every layer from its stored dtype.
absl::StatusOr<std::unique_ptr<QuantConfig>> ParseQuantConfig(const std::string& config_json,
                                                              const std::string& directory,
                                                              const io::TensorStore& store);

}  // namespace tessera::quant

#endif  // TESSERA_ENGINE_QUANT_QUANT_CONFIG_H_
