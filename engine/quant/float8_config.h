// Float8Config: the summary of a float8 checkpoint that the seed API (MAX's Float8Config) exposes,
// built by ParseFloat8Config from any float8 producer (HF fp8 per-tensor or 128x128 block,
// fbgemm_fp8, compressed-tensors float-quantized, ModelOpt FP8, Quark fp8): weight and input scale
// specs, and the per-layer sets of decoder layers whose MLP / attention projections are stored in
// float8 — derived from the tensors present and all-or-nothing per layer, with a clear error when
// a layer mixes float8 and high-precision projections (quant-formats.md §4.2).
#ifndef TESSERA_ENGINE_QUANT_FLOAT8_CONFIG_H_
#define TESSERA_ENGINE_QUANT_FLOAT8_CONFIG_H_

#include <optional>
#include <set>
#include <string>

#include "absl/status/statusor.h"
#include "engine/io/tensor_store.h"
#include "engine/quant/linear_spec.h"

namespace tessera::quant {

struct Float8ScaleSpec {
  ScaleGranularity granularity = ScaleGranularity::kNone;  // tensor | rowwise | colwise | block
  ScaleOrigin origin = ScaleOrigin::kStatic;
  std::string dtype = "F32";
  int64_t block_n = 0, block_k = 0;
  std::optional<float> activation_upper_bound;  // fbgemm_fp8 activation_scale_ub
};

struct Float8Config {
  std::string quant_method;     // "fp8", "fbgemm_fp8", "compressed-tensors", "modelopt", "quark"
  Float8ScaleSpec weight_scale;
  std::optional<Float8ScaleSpec> input_scale;  // nullopt: weight-only (W8A16)
  std::set<int> mlp_in_float8;        // decoder layers whose gate/up/down are float8
  std::set<int> attn_qkv_in_float8;   // decoder layers whose q/k/v/o are float8
  std::string embedding_output_dtype;  // dtype of embed_tokens.weight (else lm_head.weight)
};

// Reads the float8 facts of a checkpoint. `qc` is the quantization_config JSON text.
absl::StatusOr<Float8Config> ParseFloat8Config(const std::string& quantization_config_json,
                                               const io::TensorStore& store);

}  // namespace tessera::quant

#endif  // TESSERA_ENGINE_QUANT_FLOAT8_CONFIG_H_
