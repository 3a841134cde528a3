// PrecisionPlan (design.md §2 step 4): one LinearSpec with a reason for every linear module of
// the model. It starts from what the checkpoint stores (QuantConfig::Resolve), applies the
// ordered glob rules of a plan file (first match wins; Quark-like scheme names; optional fallback
// scheme for layers a rule cannot cover), quantizes high-precision weights online when a rule asks
// for a lossy scheme, dequantizes when a rule asks for bf16 on a quantized layer, refuses every
// other re-quantization, checks that fused groups (q/k/v, gate/up) of HF checkpoints agree (vLLM's
// rule; GGUF files mix types in them by design), and asks the backend which kernel runs each
// spec. An impossible plan fails at load naming the layer and the reason.
#ifndef TESSERA_ENGINE_QUANT_PRECISION_PLAN_H_
#define TESSERA_ENGINE_QUANT_PRECISION_PLAN_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "engine/io/tensor_store.h"
#include "engine/quant/linear_spec.h"
#include "engine/quant/quant_config.h"

namespace tessera::quant {

// A linear module of the model: its HF name, where its tensors are, and its shape.
struct LinearModule {
  std::string module;  // "model.layers.0.self_attn.q_proj", "lm_head"
  std::string prefix;  // tensor-name prefix ("blk.0.attn_q" for GGUF; the module name for HF)
  int64_t n = 0, k = 0;
  std::string fused_group;  // modules vLLM fuses ("model.layers.0.qkv"); may be empty
};

struct PlanRule {
  std::string match;                    // fnmatch glob on the module name
  std::string scheme;                   // bf16, fp8, ptpc_fp8, fp8_wo, int8, int4_wo_32/64/128,
                                        // int4_wo_per_channel, nvfp4, nvfp4_w4a16, mxfp4
  std::optional<std::string> fallback;  // used where `scheme` cannot cover the layer
};

struct PlanOverrides {
  std::vector<PlanRule> rules;
  // {"rules": [{"match": "*.mlp.*", "scheme": "nvfp4", "fallback": "bf16"}, ...]}
  static absl::StatusOr<PlanOverrides> FromJson(const std::string& text);
  static absl::StatusOr<PlanOverrides> FromFile(const std::string& path);
};

bool IsKnownScheme(const std::string& scheme);
// The spec that online (RTN) quantization into `scheme` produces, or an error explaining why the
// scheme cannot cover a [n, k] weight (e.g. "K = 172 is not a multiple of 16").
absl::StatusOr<LinearSpec> OnlineSchemeSpec(const std::string& scheme, const std::string& module,
                                            int64_t n, int64_t k);

// What a backend can run; the plan records its kernel choice in LinearSpec::kernel.
class KernelSelector {
 public:
  virtual ~KernelSelector() = default;
  virtual std::string name() const = 0;  // "cpu", "cuda sm_90"
  // OK with spec->kernel filled, or an error saying why the backend cannot run it.
  virtual absl::Status Select(LinearSpec* spec) const = 0;
};

class PrecisionPlan {
 public:
  static absl::StatusOr<PrecisionPlan> Resolve(const std::vector<LinearModule>& modules,
                                               const QuantConfig& quant_config,
                                               const io::TensorStore& store,
                                               const PlanOverrides& overrides,
                                               const KernelSelector& backend);

  const std::vector<LinearSpec>& layers() const { return layers_; }
  const LinearSpec* Find(const std::string& module) const;
  const std::vector<std::string>& warnings() const { return warnings_; }
  const std::string& quant_method() const { return quant_method_; }
  const std::string& backend() const { return backend_; }
  // A fixed-width text table: module, n x k, scheme, weights/activations, kernel, reason.
  std::string ToTable() const;

 private:
  std::vector<LinearSpec> layers_;
  // module -> index into layers_: a MoE model's plan has ~20k entries (Qwen3-30B-A3B), and the
  // loader looks each one up.
  absl::flat_hash_map<std::string, size_t> index_;
  std::vector<std::string> warnings_;
  std::string quant_method_;
  std::string backend_;
};

}  // namespace tessera::quant

#endif  // TESSERA_ENGINE_QUANT_PRECISION_PLAN_H_
