// `tessera serve`: loads one model (or the built-in demo without --model) and serves it over
// gRPC with continuous batching, health, reflection and an HTTP side port for metrics, until
// SIGTERM or SIGINT. Shutdown is graceful: readiness goes NOT_SERVING at once, no new requests
// are admitted, in-flight streams finish within --drain_timeout (the rest are cancelled), and
// the process exits 0.
//
// The ports are bound before the model loads, so health answers NOT_SERVING (not "connection
// refused") while loading; the bound ports are printed on stdout, which is how scripts using
// port 0 find them.
#include <pthread.h>
#include <signal.h>

#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/notification.h"
#include "cli/args.h"
#include "cli/cpu_activation_flags.h"
#include "cli/commands.h"
#include "engine/common/logging.h"
#include "engine/runtime/scheduler.h"
#include "server/loaded_model.h"
#include "server/server.h"

namespace tessera::cli {
namespace {

std::vector<FlagSpec> Flags() {
  return {
      {"model", false, "HF directory or .gguf file (absent: the built-in demo model)"},
      {"precision_plan", false, "precision plan file with override rules (JSON)"},
      {"grpc_address", false, "gRPC listen address (default 0.0.0.0:50051; port 0 = any)"},
      {"http_address", false,
       "HTTP /metrics /healthz /readyz address (default 0.0.0.0:9090; "
       "empty disables)"},
      {"max_running", false, "sequences decoding at once (default 16)"},
      {"max_queued", false, "waiting requests before RESOURCE_EXHAUSTED (default 64)"},
      {"max_prompt_tokens", false, "longest prompt accepted (default: the context length)"},
      {"max_new_tokens", false, "per-request cap on generated tokens (default 2048)"},
      {"kv_cache_tokens", false, "KV cache size in tokens (default: max_running full contexts)"},
      {"prefill_chunk_tokens", false, "prompt tokens prefilled per engine step (default 256)"},
      {"threads", false, "CPU threads (default: all)"},
      {"device", false, "cpu (default), cuda or cuda:N"},
      kKvCacheDtypeFlag,
      kCpuInt8ActivationsFlag,
      kCpuBf16ActivationsFlag,
      kCpuInt16ActivationsFlag,
      {"tls_cert", false, "PEM certificate chain: serve gRPC over TLS"},
      {"tls_key", false, "PEM private key for --tls_cert"},
      {"api_key_file", false, "require 'authorization: Bearer KEY' (one key per line)"},
      {"log_level", false, "debug, info, warning, error (default info)"},
      {"drain_timeout", false, "seconds to let in-flight requests finish on SIGTERM (default 30)"},
      {"help", true, "show this help"},
  };
}

int Fail(const absl::Status& s) {
  std::fprintf(stderr, "error: %s\n", std::string(s.message()).c_str());
  return 1;
}

absl::StatusOr<int32_t> PositiveInt(const Args& args, const std::string& name, int64_t def,
                                    int64_t min) {
  auto v = args.GetInt(name, def);
  if (!v.ok()) return v.status();
  if (*v < min || *v > INT32_MAX) {
    return absl::InvalidArgumentError(
        absl::StrFormat("flag --%s must be in [%d, %d], got %d", name, min, INT32_MAX, *v));
  }
  return static_cast<int32_t>(*v);
}

// Parses the limits into SchedulerOptions; kv_cache_tokens becomes whole blocks.
absl::StatusOr<runtime::SchedulerOptions> SchedulerFlags(const Args& args) {
  runtime::SchedulerOptions o;
  auto max_running = PositiveInt(args, "max_running", o.max_running, 1);
  if (!max_running.ok()) return max_running.status();
  auto max_queued = PositiveInt(args, "max_queued", o.max_queued, 0);
  if (!max_queued.ok()) return max_queued.status();
  auto max_prompt = PositiveInt(args, "max_prompt_tokens", 0, 0);
  if (!max_prompt.ok()) return max_prompt.status();
  auto max_new = PositiveInt(args, "max_new_tokens", o.max_new_tokens, 1);
  if (!max_new.ok()) return max_new.status();
  auto chunk = PositiveInt(args, "prefill_chunk_tokens", o.prefill_chunk_tokens, 1);
  if (!chunk.ok()) return chunk.status();
  auto kv_tokens = args.GetInt("kv_cache_tokens", 0);
  if (!kv_tokens.ok()) return kv_tokens.status();
  if (*kv_tokens < 0) return absl::InvalidArgumentError("flag --kv_cache_tokens must be >= 0");
  o.max_running = *max_running;
  o.max_queued = *max_queued;
  o.max_prompt_tokens = *max_prompt;
  o.max_new_tokens = *max_new;
  o.prefill_chunk_tokens = *chunk;
  o.kv_blocks = (*kv_tokens + o.kv_block_tokens - 1) / o.kv_block_tokens;
  return o;
}

}  // namespace

int RunServe(const std::vector<std::string>& argv) {
  const auto flags = Flags();
  auto args = Args::Parse(argv, flags);
  if (!args.ok()) return Fail(args.status());
  if (args->GetBool("help")) {
    std::fprintf(stderr, "usage: tessera serve [--model PATH] [flags]\n%s",
                 FlagsHelp(flags).c_str());
    return 0;
  }
  if (!args->positionals().empty()) {
    return Fail(absl::InvalidArgumentError("serve takes no positional arguments (use --model)"));
  }
  if (args->Has("log_level")) {
    auto level = ParseLogLevel(args->GetString("log_level"));
    if (!level.ok()) return Fail(level.status());
    SetLogLevel(*level);
  }
  auto sched_opts = SchedulerFlags(*args);
  if (!sched_opts.ok()) return Fail(sched_opts.status());
  auto threads = args->GetInt("threads", 0);
  if (!threads.ok()) return Fail(threads.status());
  auto drain_seconds = args->GetDouble("drain_timeout", 30);
  if (!drain_seconds.ok()) return Fail(drain_seconds.status());

  server::ServerOptions options;
  options.grpc_address = args->GetString("grpc_address", options.grpc_address);
  options.http_address = args->GetString("http_address", options.http_address);
  options.tls_cert_file = args->GetString("tls_cert");
  options.tls_key_file = args->GetString("tls_key");
  options.api_key_file = args->GetString("api_key_file");

  // SIGTERM/SIGINT are blocked in every thread (gRPC's and civetweb's inherit the mask) and
  // taken synchronously by one thread with sigwait, so no handler runs in an arbitrary context.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  absl::Notification stop_requested;
  std::thread signal_thread([&] {
    int sig = 0;
    sigwait(&signals, &sig);
    if (!stop_requested.HasBeenNotified()) {
      TLOG_INFO("received %s: shutting down", sig == SIGTERM ? "SIGTERM" : "SIGINT");
      stop_requested.Notify();
    }
  });
  // Wakes the signal thread when we leave for another reason, so it can be joined.
  auto finish = [&](int code) {
    if (!stop_requested.HasBeenNotified()) {
      stop_requested.Notify();
      pthread_kill(signal_thread.native_handle(), SIGTERM);
    }
    signal_thread.join();
    return code;
  };

  auto server = server::TesseraServer::Start(options);
  if (!server.ok()) return finish(Fail(server.status()));
  // Scripts read these lines to find OS-picked ports.
  std::printf("grpc listening on %s:%d\n",
              options.grpc_address.substr(0, options.grpc_address.rfind(':')).c_str(),
              (*server)->grpc_port());
  if ((*server)->http_port() != 0) {
    std::printf("http listening on %s:%d\n",
                options.http_address.substr(0, options.http_address.rfind(':')).c_str(),
                (*server)->http_port());
  }
  std::fflush(stdout);

  runtime::EngineOptions engine_options;
  engine_options.threads = static_cast<int>(*threads);
  engine_options.precision_plan_path = args->GetString("precision_plan");
  engine_options.cpu_int8_activations = Int8ActivationsFlag(*args);
  engine_options.cpu_bf16_activations = args->GetBool("cpu_bf16_activations");
  engine_options.cpu_int16_activations = args->GetBool("cpu_int16_activations");
  engine_options.device = args->GetString("device", "cpu");
  engine_options.kv_blocks = sched_opts->kv_blocks;
  engine_options.kv_cache_dtype = args->GetString("kv_cache_dtype", "auto");
  auto model = server::LoadModel(args->GetString("model"), engine_options);
  if (!model.ok()) {
    (*server)->Shutdown();
    return finish(Fail(model.status()));
  }
  const server::LoadedModel& m = **model;
  TLOG_INFO("model %s%s: %s, quantization %s, backend %s, loaded in %.3f s", m.name,
            m.is_demo ? " (DEMO: random weights)" : "",
            m.config().architecture_name.empty() ? m.config().ArchitectureName()
                                                 : m.config().architecture_name,
            m.quantization_method(), m.backend(), m.load_seconds());

  runtime::Scheduler scheduler(m.model(), m.tokenizer(), *sched_opts);
  scheduler.Start();
  (*server)->AttachEngine(&m, &scheduler);
  const runtime::SchedulerOptions& so = scheduler.options();
  TLOG_INFO(
      "serving: max_running %d, max_queued %d, max_prompt_tokens %d, max_new_tokens %d, "
      "KV cache %d tokens",
      so.max_running, so.max_queued, so.max_prompt_tokens, so.max_new_tokens,
      scheduler.kv_cache().capacity_tokens());
  std::printf("ready\n");
  std::fflush(stdout);

  stop_requested.WaitForNotification();
  const bool clean = (*server)->Drain(absl::Seconds(*drain_seconds));
  scheduler.Stop();
  (*server)->Shutdown();
  TLOG_INFO("stopped%s", clean ? "" : " (some requests were cancelled at the drain timeout)");
  return finish(0);
}

}  // namespace tessera::cli
