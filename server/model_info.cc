#include "server/model_info.h"

#include "engine/runtime/sampling_params.h"
#include "engine/tokenizer/utf8.h"

namespace tessera::server {

tessera::v1::ModelInfo BuildModelInfo(const LoadedModel& model,
                                      const runtime::Scheduler& scheduler) {
  tessera::v1::ModelInfo info;
  const model::ModelConfig& c = model.config();
  const tokenizer::Tokenizer& tok = model.tokenizer();
  info.set_model(model.name);
  info.set_architecture(c.architecture_name.empty() ? c.ArchitectureName() : c.architecture_name);
  info.set_context_length(c.max_context);
  info.set_vocab_size(static_cast<int32_t>(c.vocab_size));
  info.set_tokenizer(tokenizer::RepairUtf8(tok.Describe()));
  if (tok.bos_id()) info.set_bos_token_id(*tok.bos_id());
  for (int32_t id : tok.eos_ids()) info.add_eos_token_ids(id);
  info.set_quantization_method(model.quantization_method());
  for (const PlanRow& row : model.plan) {
    tessera::v1::PrecisionPlanRow* r = info.add_precision_plan();
    r->set_module(row.module);
    r->set_weight_format(row.weight_format);
    r->set_kernel(row.kernel);
    r->set_reason(row.reason);
    r->set_description(row.description);
    r->set_out_features(row.out_features);
    r->set_in_features(row.in_features);
  }
  info.set_backend(model.backend());
  info.set_device(model.model().device());
  const runtime::SchedulerOptions& o = scheduler.options();
  tessera::v1::Limits* limits = info.mutable_limits();
  limits->set_max_running_requests(o.max_running);
  limits->set_max_queued_requests(o.max_queued);
  limits->set_max_prompt_tokens(o.max_prompt_tokens);
  limits->set_max_new_tokens(o.max_new_tokens);
  limits->set_kv_cache_tokens(scheduler.kv_cache().capacity_tokens());
  limits->set_max_stop_strings(runtime::kMaxStopStrings);
  limits->set_max_top_logprobs(runtime::kMaxLogprobs);
  info.set_is_demo(model.is_demo);
  info.set_hidden_size(c.hidden_size);
  info.set_num_layers(c.num_layers);
  info.set_num_heads(c.num_heads);
  info.set_num_kv_heads(c.num_kv_heads);
  info.set_load_seconds(model.load_seconds());
  return info;
}

}  // namespace tessera::server
