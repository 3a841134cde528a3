// Fuzz target: config.json text through ModelConfig, the quantization-config parsers, the
// precision-plan file parser and the HF tokenizer.json loader's JSON handling — none may throw
// (nlohmann type errors included) or crash on any input.
#include <cstddef>
#include <cstdint>
#include <string>

#include "engine/io/safetensors_file.h"
#include "engine/model/model_config.h"
#include "engine/quant/precision_plan.h"
#include "engine/quant/quant_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  (void)tessera::model::ModelConfigFromHfJson(text);
  (void)tessera::quant::PlanOverrides::FromJson(text);
  // An empty safetensors image: the parsers see no tensors, so every layer resolves as missing.
  static const uint8_t kEmpty[] = {2, 0, 0, 0, 0, 0, 0, 0, '{', '}'};
  auto store = tessera::io::SafetensorsFile::Parse({kEmpty, sizeof(kEmpty)}, "empty");
  if (!store.ok()) return 0;
  auto qc = tessera::quant::ParseQuantConfig(text, "", **store);
  if (qc.ok()) {
    (void)(*qc)->Resolve("model.layers.0.self_attn.q_proj", "model.layers.0.self_attn.q_proj", 64,
                         64, **store);
  }
  return 0;
}
