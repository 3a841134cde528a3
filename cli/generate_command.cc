// `tessera generate --model PATH --prompt TEXT [sampling flags]`: loads a model (HF directory or
// GGUF), streams the continuation to stdout as it is produced, and reports load time, prompt
// tokens/s and decode tokens/s on stderr. With --server ADDR it streams from a running server
// instead (remote_generate.cc).
#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "absl/strings/numbers.h"
#include "cli/args.h"
#include "cli/cpu_activation_flags.h"
#include "cli/commands.h"
#include "cli/sampling_flags.h"
#include "engine/common/logging.h"
#include "engine/runtime/engine_loader.h"
#include "engine/runtime/scheduler.h"

namespace tessera::cli {
namespace {

std::vector<FlagSpec> Flags() {
  std::vector<FlagSpec> f = {
      {"model", false, "HF directory or .gguf file"},
      {"server", false, "stream from a running tessera server at ADDR instead"},
      {"prompt", false, "prompt text"},
      {"threads", false, "CPU threads (default: all)"},
      kCpuInt8ActivationsFlag,
      kCpuBf16ActivationsFlag,
      kCpuInt16ActivationsFlag,
      {"precision_plan", false, "precision plan JSON file (per-layer override rules)"},
      kKvCacheDtypeFlag,
      {"device", false, "cpu (default), cuda or cuda:N"},
      {"no_bos", true, "do not add the BOS token"},
      {"log_level", false, "debug, info, warning, error"},
      {"help", true, "show this help"},
  };
  for (const auto& s : SamplingFlagSpecs()) f.push_back(s);
  return f;
}

int Fail(const absl::Status& s) {
  std::fprintf(stderr, "error: %s\n", std::string(s.message()).c_str());
  return 1;
}

}  // namespace

int RunGenerate(const std::vector<std::string>& argv) {
  const auto flags = Flags();
  auto args = Args::Parse(argv, flags);
  if (!args.ok()) return Fail(args.status());
  if (args->GetBool("help") || (!args->Has("model") && !args->Has("server"))) {
    std::fprintf(stderr, "usage: tessera generate --model PATH --prompt TEXT [flags]\n%s",
                 FlagsHelp(flags).c_str());
    return args->GetBool("help") ? 0 : 2;
  }
  if (args->Has("server")) return RunRemoteGenerate(argv);
  if (args->Has("log_level")) {
    auto level = ParseLogLevel(args->GetString("log_level"));
    if (!level.ok()) return Fail(level.status());
    SetLogLevel(*level);
  }
  auto threads = args->GetInt("threads", 0);
  if (!threads.ok()) return Fail(threads.status());
  runtime::GenerationRequest request;
  if (absl::Status s = ParseSamplingFlags(*args, &request); !s.ok()) return Fail(s);

  runtime::EngineOptions options;
  options.threads = static_cast<int>(*threads);
  options.precision_plan_path = args->GetString("precision_plan");
  options.cpu_int8_activations = Int8ActivationsFlag(*args);
  options.cpu_bf16_activations = args->GetBool("cpu_bf16_activations");
  options.cpu_int16_activations = args->GetBool("cpu_int16_activations");
  options.device = args->GetString("device", "cpu");
  options.kv_cache_dtype = args->GetString("kv_cache_dtype", "auto");
  auto engine = runtime::LoadEngine(args->GetString("model"), options);
  if (!engine.ok()) return Fail(engine.status());
  auto& e = **engine;
  if (args->GetString("prompt").empty()) {
    return Fail(absl::InvalidArgumentError("--prompt: the prompt is empty"));
  }
  const bool add_bos = !args->GetBool("no_bos");
  auto ids = e.tokenizer->Encode(args->GetString("prompt"), add_bos);
  if (!ids.ok()) return Fail(ids.status());
  request.prompt_tokens = *ids;
  request.request_id = "cli";

  runtime::SchedulerOptions opts;
  opts.max_running = 1;
  opts.max_queued = 1;
  opts.max_new_tokens = static_cast<int32_t>(e.source.config.max_context);
  opts.kv_blocks = (e.source.config.max_context + opts.kv_block_tokens - 1) / opts.kv_block_tokens;
  runtime::Scheduler scheduler(*e.model, *e.tokenizer, opts);
  scheduler.Start();
  auto handle = scheduler.Submit(std::move(request));
  if (!handle.ok()) return Fail(handle.status());
  runtime::TokenEvent ev;
  while (true) {
    if (!(*handle)->Next(&ev, absl::Seconds(1))) continue;
    std::fwrite(ev.text.data(), 1, ev.text.size(), stdout);
    std::fflush(stdout);
    if (ev.finished) break;
  }
  std::printf("\n");
  if (!ev.status.ok()) return Fail(ev.status);
  const auto& t = ev.timings;
  const double prefill_s = t.first_token_seconds - t.queue_seconds;
  const double decode_s = t.total_seconds - t.first_token_seconds;
  std::fprintf(stderr,
               "finish: %s; load %.3f s; prompt %d tokens, %.1f tokens/s; generated %d tokens, "
               "decode %.1f tokens/s\n",
               std::string(runtime::FinishReasonName(ev.finish_reason)).c_str(), e.load_seconds,
               ev.prompt_tokens, prefill_s > 0 ? ev.prompt_tokens / prefill_s : 0.0,
               ev.completion_tokens,
               (decode_s > 0 && ev.completion_tokens > 1) ? (ev.completion_tokens - 1) / decode_s : 0.0);
  return 0;
}

}  // namespace tessera::cli
