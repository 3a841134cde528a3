// LoadEngine: everything a command needs to run a model, built in load-path order (design.md §2):
// open the source, read the config, build the tokenizer, prepare every linear layer, and time it.
// `tessera generate`, `perplexity`, `serve` and `bench` all load through here.
#ifndef TESSERA_ENGINE_RUNTIME_ENGINE_LOADER_H_
#define TESSERA_ENGINE_RUNTIME_ENGINE_LOADER_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "engine/model/decoder_model.h"
#include "engine/model/model_source.h"
#include "engine/quant/precision_plan.h"
#include "engine/quant/quant_config.h"
#include "engine/tokenizer/tokenizer.h"
#include "kernels/cpu/thread_pool.h"

namespace tessera::runtime {

struct LoadedEngine {
  model::ModelSource source;
  std::unique_ptr<kernels::cpu::ThreadPool> pool;
  std::unique_ptr<quant::QuantConfig> quant_config;
  std::unique_ptr<quant::PrecisionPlan> plan;
  std::unique_ptr<model::LinearFactory> factory;
  std::unique_ptr<model::DecoderModel> model;
  std::unique_ptr<tokenizer::Tokenizer> tokenizer;
  double load_seconds = 0;
};

struct EngineOptions {
  int threads = 0;  // 0 = all hardware threads
  std::string precision_plan_path;  // a plan file with override rules; empty = checkpoint as is
};

// Resolves the precision plan of an opened model without preparing weights (for inspect).
absl::StatusOr<quant::PrecisionPlan> ResolvePlan(const model::ModelSource& source,
                                                 const quant::QuantConfig& quant_config,
                                                 const std::string& precision_plan_path);

absl::StatusOr<std::unique_ptr<LoadedEngine>> LoadEngine(const std::string& path,
                                                         const EngineOptions& options);

}  // namespace tessera::runtime

#endif  // TESSERA_ENGINE_RUNTIME_ENGINE_LOADER_H_
