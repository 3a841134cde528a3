#include "engine/runtime/engine_loader.h"

#include "absl/time/clock.h"
#include "engine/common/logging.h"
#include "engine/common/status_macros.h"

namespace tessera::runtime {

absl::StatusOr<std::unique_ptr<LoadedEngine>> LoadEngine(const std::string& path,
                                                         const EngineOptions& options) {
  const absl::Time start = absl::Now();
  auto e = std::make_unique<LoadedEngine>();
  TESSERA_ASSIGN_OR_RETURN(e->source, model::ModelSource::Open(path));
  if (const io::GgufFile* g = e->source.gguf()) {
    TESSERA_ASSIGN_OR_RETURN(e->tokenizer, tokenizer::LoadGgufTokenizer(g->metadata()));
  } else {
    TESSERA_ASSIGN_OR_RETURN(e->tokenizer, tokenizer::LoadHfTokenizer(path));
  }
  e->pool = std::make_unique<kernels::cpu::ThreadPool>(options.threads);
  e->factory = model::MakeDenseLinearFactory(e->pool.get());
  TESSERA_ASSIGN_OR_RETURN(e->model, model::DecoderModel::Load(e->source.config, *e->source.store,
                                                                e->source.naming, *e->factory,
                                                                e->pool.get()));
  e->load_seconds = absl::ToDoubleSeconds(absl::Now() - start);
  const auto& c = e->source.config;
  TLOG_INFO("loaded %s: %s, %d layers, hidden %d, heads %d/%d, vocab %d, context %d; tokenizer %s; "
            "%d threads; %.3f s",
            path, c.ArchitectureName(), c.num_layers, c.hidden_size, c.num_heads, c.num_kv_heads,
            c.vocab_size, c.max_context, e->tokenizer->Describe(), e->pool->size(), e->load_seconds);
  return e;
}

}  // namespace tessera::runtime
