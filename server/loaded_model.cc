#include "server/loaded_model.h"

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "engine/common/logging.h"
#include "engine/common/status_macros.h"
#include "engine/model/demo_model.h"
#include "engine/model/plan_linear_factory.h"
#include "engine/quant/quant_config.h"

namespace tessera::server {
namespace {

// The demo through the same steps as runtime::LoadEngine, with the in-memory store in place of
// an opened checkpoint (so a --precision_plan applies to the demo too).
absl::StatusOr<std::unique_ptr<runtime::LoadedEngine>> LoadDemo(
    int threads, const std::string& precision_plan_path) {
  const absl::Time start = absl::Now();
  auto e = std::make_unique<runtime::LoadedEngine>();
  e->source.path = "demo";
  e->source.config = model::DemoModelConfig();
  e->source.store = model::MakeDemoTensorStore(e->source.config);
  e->source.naming = model::NamingScheme::kHf;
  e->tokenizer = model::MakeDemoTokenizer();
  e->pool = std::make_unique<kernels::cpu::ThreadPool>(threads);
  TESSERA_ASSIGN_OR_RETURN(e->quant_config, quant::ParseQuantConfig("", "", *e->source.store));
  TESSERA_ASSIGN_OR_RETURN(quant::PrecisionPlan plan,
                           runtime::ResolvePlan(e->source, *e->quant_config, precision_plan_path));
  e->plan = std::make_unique<quant::PrecisionPlan>(std::move(plan));
  e->factory =
      std::make_unique<model::PlanLinearFactory>(*e->plan, *e->quant_config, e->pool.get());
  TESSERA_ASSIGN_OR_RETURN(
      e->model, model::DecoderModel::Load(e->source.config, *e->source.store, e->source.naming,
                                          *e->factory, e->pool.get()));
  e->load_seconds = absl::ToDoubleSeconds(absl::Now() - start);
  TLOG_WARNING(
      "no --model given: serving the built-in DEMO model (random weights, byte "
      "tokenizer; its output is gibberish by design)");
  TLOG_INFO("%s", e->plan->ToTable());
  return e;
}

}  // namespace

std::string LoadedModel::quantization_method() const {
  return engine->plan != nullptr ? engine->plan->quant_method() : "unknown";
}

std::string LoadedModel::backend() const {
  return engine->plan != nullptr && !engine->plan->backend().empty() ? engine->plan->backend()
                                                                     : "cpu";
}

absl::StatusOr<std::unique_ptr<LoadedModel>> LoadModel(const std::string& path,
                                                       const runtime::EngineOptions& options) {
  auto lm = std::make_unique<LoadedModel>();
  if (path.empty() && !options.device.empty() && options.device != "cpu") {
    return absl::InvalidArgumentError(absl::StrCat(
        "--device ", options.device, ": the built-in demo model runs on the CPU only (pass --model)"));
  }
  if (path.empty()) {
    lm->name = "demo";
    lm->is_demo = true;
    TESSERA_ASSIGN_OR_RETURN(lm->engine, LoadDemo(options.threads, options.precision_plan_path));
  } else {
    lm->name = path;
    TESSERA_ASSIGN_OR_RETURN(lm->engine, runtime::LoadEngine(path, options));
  }
  if (lm->tokenizer().vocab_size() > lm->config().vocab_size) {
    return absl::InvalidArgumentError(
        absl::StrFormat("the tokenizer has %d tokens but the model's vocabulary is %d",
                        lm->tokenizer().vocab_size(), lm->config().vocab_size));
  }
  if (lm->engine->plan != nullptr) {
    for (const quant::LinearSpec& spec : lm->engine->plan->layers()) {
      lm->plan.push_back({spec.module, spec.SchemeName(), spec.Describe(), spec.kernel, spec.reason,
                          spec.n, spec.k});
    }
  }
  return lm;
}

}  // namespace tessera::server
