// GptqConfig: the GPTQ (AutoGPTQ / GPTQModel / optimum) settings in the seed API's terms —
// quant_method, bits, group_size, desc_act, sym — plus the checkpoint format (v1 stores zeros
// minus one, v2 as-is), GPTQModel `dynamic` per-module overrides and lm_head quantization.
#ifndef TESSERA_ENGINE_QUANT_GPTQ_CONFIG_H_
#define TESSERA_ENGINE_QUANT_GPTQ_CONFIG_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace tessera::quant {

struct GptqConfig {
  std::string quant_method = "gptq";
  int bits = 4;
  int group_size = 128;  // -1: one group spanning K
  bool desc_act = false;
  bool sym = true;
  std::string checkpoint_format = "gptq";  // "gptq" (v1) or "gptq_v2"
  bool lm_head = false;
  struct DynamicRule {
    std::string pattern;  // regex, anchored at the start (re.match)
    bool quantize = true;  // "-:" prefix => not quantized
    int bits = 0, group_size = 0;  // 0: inherit
    int desc_act = -1, sym = -1;   // -1: inherit
  };
  std::vector<DynamicRule> dynamic;

  // Settings for one module after `dynamic` overrides (first match wins); `quantized` false
  // for "-:" matches.
  struct Resolved {
    bool quantized = true;
    int bits = 4, group_size = 128;
    bool desc_act = false, sym = true;
  };
  Resolved For(const std::string& module) const;
};

absl::StatusOr<GptqConfig> ParseGptqConfig(const std::string& quantization_config_json);

}  // namespace tessera::quant

#endif  // TESSERA_ENGINE_QUANT_GPTQ_CONFIG_H_
