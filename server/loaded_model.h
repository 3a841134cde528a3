// LoadedModel: the engine one server runs (runtime::LoadedEngine: store, tokenizer, thread pool,
// precision plan, prepared decoder), or the built-in demo assembled the same way, plus the facts
// GetModelInfo, the start-up log and the metrics report about it. It knows nothing of gRPC, so
// tests load a model exactly the way `serve` does.
#ifndef TESSERA_SERVER_LOADED_MODEL_H_
#define TESSERA_SERVER_LOADED_MODEL_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/model/decoder.h"
#include "engine/runtime/engine_loader.h"
#include "engine/tokenizer/tokenizer.h"

namespace tessera::server {

// One linear module as the precision plan resolved it.
struct PlanRow {
  std::string module;         // "model.layers.0.self_attn.q_proj", "lm_head"
  std::string weight_format;  // the Quark-like scheme name: "f32", "gguf_q4_0", "nvfp4", ...
  std::string description;    // weights and activations in words
  std::string kernel;         // "cpu/dense-ref", ...
  std::string reason;         // "checkpoint: ...", "override rule 2: ...", "fallback: ..."
  int64_t out_features = 0;
  int64_t in_features = 0;
};

struct LoadedModel {
  std::string name;  // the --model path, or "demo"
  bool is_demo = false;
  std::vector<PlanRow> plan;
  std::unique_ptr<runtime::LoadedEngine> engine;

  // The decoder, whichever backend runs it (the scheduler steps it).
  model::Decoder& model() const { return *engine->model; }
  const tokenizer::Tokenizer& tokenizer() const { return *engine->tokenizer; }
  const model::ModelConfig& config() const { return engine->model->config(); }
  double load_seconds() const { return engine->load_seconds; }
  std::string quantization_method() const;
  std::string backend() const;
};

// Loads `path` (an HF directory or a .gguf file); an empty path loads the built-in demo model
// (CPU only; of `options` it uses threads and precision_plan_path).
absl::StatusOr<std::unique_ptr<LoadedModel>> LoadModel(const std::string& path,
                                                       const runtime::EngineOptions& options);

}  // namespace tessera::server

#endif  // TESSERA_SERVER_LOADED_MODEL_H_
