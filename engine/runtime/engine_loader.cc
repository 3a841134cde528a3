#include "engine/runtime/engine_loader.h"

#include "absl/time/clock.h"
#include "engine/common/logging.h"
#include "engine/backend/cpu/cpu_kernel_selector.h"
#include "engine/common/status_macros.h"
#include "engine/model/plan_linear_factory.h"

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
  const std::string directory = e->source.is_hf() ? path : "";
  TESSERA_ASSIGN_OR_RETURN(e->quant_config,
                           quant::ParseQuantConfig(e->source.config_json, directory, *e->source.store));
  TESSERA_ASSIGN_OR_RETURN(quant::PrecisionPlan plan,
                           ResolvePlan(e->source, *e->quant_config, options.precision_plan_path));
  e->plan = std::make_unique<quant::PrecisionPlan>(std::move(plan));
  TLOG_INFO("%s", e->plan->ToTable());
  for (const std::string& w : e->plan->warnings()) TLOG_WARNING("%s", w);
  e->factory = std::make_unique<model::PlanLinearFactory>(*e->plan, *e->quant_config, e->pool.get());
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

absl::StatusOr<quant::PrecisionPlan> ResolvePlan(const model::ModelSource& source,
                                                 const quant::QuantConfig& quant_config,
                                                 const std::string& precision_plan_path) {
  quant::PlanOverrides overrides;
  if (!precision_plan_path.empty()) {
    TESSERA_ASSIGN_OR_RETURN(overrides, quant::PlanOverrides::FromFile(precision_plan_path));
  }
  const auto modules = model::DecoderLinearModules(source.config, source.naming, *source.store);
  backend::cpu::CpuKernelSelector cpu;
  return quant::PrecisionPlan::Resolve(modules, quant_config, *source.store, overrides, cpu);
}

}  // namespace tessera::runtime
