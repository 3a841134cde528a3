// `tessera perplexity --model PATH --file TEXT --ctx N`: llama.cpp's perplexity methodology
// (engine/model/perplexity.h), printing each window's perplexity and the final estimate with its
// standard error, so quantized formats can be compared with each other and across engines.
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "cli/args.h"
#include "cli/cpu_activation_flags.h"
#include "cli/commands.h"
#include "engine/model/decoder_model.h"
#include "engine/model/perplexity.h"
#include "engine/runtime/engine_loader.h"

namespace tessera::cli {
namespace {

const std::vector<FlagSpec> kFlags = {
    {"model", false, "HF directory or .gguf file"},
    {"file", false, "text file to score"},
    {"ctx", false, "window size in tokens (default 512)"},
    {"threads", false, "CPU threads (default: all)"},
    {"precision_plan", false, "precision plan JSON file (per-layer override rules)"},
    kCpuInt8ActivationsFlag,
    kCpuBf16ActivationsFlag,
    kCpuInt16ActivationsFlag,
    kKvCacheDtypeFlag,
    {"help", true, "show this help"},
};

int Fail(const absl::Status& s) {
  std::fprintf(stderr, "error: %s\n", std::string(s.message()).c_str());
  return 1;
}

}  // namespace

int RunPerplexity(const std::vector<std::string>& argv) {
  auto args = Args::Parse(argv, kFlags);
  if (!args.ok()) return Fail(args.status());
  if (args->GetBool("help") || !args->Has("model") || !args->Has("file")) {
    std::fprintf(stderr, "usage: tessera perplexity --model PATH --file TEXT [--ctx N]\n%s",
                 FlagsHelp(kFlags).c_str());
    return args->GetBool("help") ? 0 : 2;
  }
  auto ctx = args->GetInt("ctx", 512);
  auto threads = args->GetInt("threads", 0);
  if (!ctx.ok()) return Fail(ctx.status());
  if (!threads.ok()) return Fail(threads.status());
  std::ifstream in(args->GetString("file"), std::ios::binary);
  if (!in) return Fail(absl::NotFoundError("cannot read --file " + args->GetString("file")));
  std::stringstream ss;
  ss << in.rdbuf();

  runtime::EngineOptions options;
  options.threads = static_cast<int>(*threads);
  options.precision_plan_path = args->GetString("precision_plan");
  options.cpu_int8_activations = Int8ActivationsFlag(*args);
  options.cpu_bf16_activations = args->GetBool("cpu_bf16_activations");
  options.cpu_int16_activations = args->GetBool("cpu_int16_activations");
  options.kv_cache_dtype = args->GetString("kv_cache_dtype", "auto");
  auto engine = runtime::LoadEngine(args->GetString("model"), options);
  if (!engine.ok()) return Fail(engine.status());
  auto& e = **engine;
  auto tokens = e.tokenizer->Encode(ss.str(), /*add_special=*/true);
  if (!tokens.ok()) return Fail(tokens.status());
  const auto bos = e.tokenizer->bos_id();
  if (!bos) return Fail(absl::FailedPreconditionError("the tokenizer has no BOS token"));
  std::printf("tokens: %zu, ctx %lld, windows %lld\n", tokens->size(), static_cast<long long>(*ctx),
              static_cast<long long>(tokens->size() / *ctx));
  auto result = model::ComputePerplexity(*e.model, *tokens, *ctx, *bos, [](int64_t w, double ppl) {
    std::printf("[%lld] %.4f\n", static_cast<long long>(w + 1), ppl);
    std::fflush(stdout);
  });
  if (!result.ok()) return Fail(result.status());
  std::printf("Final estimate: PPL = %.4f +/- %.5f (%lld scored tokens)\n", result->perplexity,
              result->perplexity_stderr, static_cast<long long>(result->scored_tokens));
  return 0;
}

}  // namespace tessera::cli
