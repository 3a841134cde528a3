// Builds the GetModelInfo answer: the model's shape and tokenizer, its quantization, the
// per-layer precision plan, where it runs, and the server's limits. Computed once when the
// engine is attached (none of it changes while serving).
#ifndef TESSERA_SERVER_MODEL_INFO_H_
#define TESSERA_SERVER_MODEL_INFO_H_

#include "engine/runtime/scheduler.h"
#include "server/loaded_model.h"
#include "tessera/v1/generation.pb.h"

namespace tessera::server {

tessera::v1::ModelInfo BuildModelInfo(const LoadedModel& model,
                                      const runtime::Scheduler& scheduler);

}  // namespace tessera::server

#endif  // TESSERA_SERVER_MODEL_INFO_H_
