// `tessera inspect PATH`: the container's metadata and every tensor's name, dtype, shape and
// byte size, for a safetensors file, an HF directory or a GGUF file.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/str_format.h"
#include "cli/args.h"
#include "cli/cpu_activation_flags.h"
#include "cli/commands.h"
#include "engine/io/gguf_file.h"
#include "engine/io/tensor_store.h"
#include "engine/model/model_source.h"
#include "engine/runtime/engine_loader.h"

namespace tessera::cli {
namespace {

const std::vector<FlagSpec> kFlags = {
    {"precision_plan", false, "for a model: resolve the plan with this override file"},
    kCpuInt8ActivationsFlag,
    kCpuBf16ActivationsFlag,
    kCpuInt16ActivationsFlag,
    {"help", true, "show this help"},
};

absl::string_view KindName(io::ContainerKind k) {
  switch (k) {
    case io::ContainerKind::kSafetensors: return "safetensors";
    case io::ContainerKind::kHfDirectory: return "hf-directory";
    case io::ContainerKind::kGguf: return "gguf";
  }
  return "?";
}

}  // namespace

int RunInspect(const std::vector<std::string>& argv) {
  auto args = Args::Parse(argv, kFlags);
  if (!args.ok() || args->GetBool("help") || args->positionals().size() != 1) {
    if (!args.ok()) std::fprintf(stderr, "error: %s\n", std::string(args.status().message()).c_str());
    std::fprintf(stderr, "usage: tessera inspect PATH\n%s", FlagsHelp(kFlags).c_str());
    return 2;
  }
  const std::string path = args->positionals()[0];
  auto store = io::OpenTensorStore(path);
  if (!store.ok()) {
    std::fprintf(stderr, "error: %s\n", std::string(store.status().message()).c_str());
    return 1;
  }
  const io::TensorStore& s = **store;
  std::printf("container: %s\npath: %s\n", std::string(KindName(s.kind())).c_str(), path.c_str());
  std::printf("\nmetadata:\n");
  for (const auto& [k, v] : s.DescribeMetadata()) std::printf("  %s = %s\n", k.c_str(), v.c_str());

  size_t name_width = 4;
  for (const auto& n : s.names()) name_width = std::max(name_width, n.size());
  std::printf("\ntensors: %zu\n", s.names().size());
  // GGUF files also show their own dim order (ne0 first), as llama.cpp tools print it.
  const auto* gguf = dynamic_cast<const io::GgufFile*>(&s);
  std::printf("  %-*s  %-8s  %-20s  %12s%s\n", static_cast<int>(name_width), "name", "dtype",
              "shape", "bytes", gguf ? "  gguf dims" : "");
  uint64_t total = 0;
  for (const auto& n : s.names()) {
    auto view = s.Get(n);
    if (!view.ok()) {
      std::fprintf(stderr, "error: %s\n", std::string(view.status().message()).c_str());
      return 1;
    }
    total += view->bytes.size();
    std::string dims;
    if (gguf) dims = "  " + io::ShapeToString(gguf->FindInfo(n)->dims);
    std::printf("  %-*s  %-8s  %-20s  %12zu%s\n", static_cast<int>(name_width), n.c_str(),
                std::string(io::DTypeName(view->dtype)).c_str(), view->ShapeString().c_str(),
                view->bytes.size(), dims.c_str());
  }
  std::printf("total tensor bytes: %llu\n", static_cast<unsigned long long>(total));

  // A model (HF directory with config.json, or GGUF): also the precision plan, without loading.
  const bool is_model = s.kind() == io::ContainerKind::kGguf ||
                        std::filesystem::exists(std::filesystem::path(path) / "config.json");
  if (!is_model) {
    if (args->Has("precision_plan")) {
      std::fprintf(stderr, "error: --precision_plan needs a model (HF directory or GGUF)\n");
      return 1;
    }
    return 0;
  }
  auto source = model::ModelSource::Open(path);
  if (!source.ok()) {
    std::fprintf(stderr, "error: %s\n", std::string(source.status().message()).c_str());
    return 1;
  }
  auto quant_config = quant::ParseQuantConfig(source->config_json, source->is_hf() ? path : "",
                                              *source->store);
  if (!quant_config.ok()) {
    std::fprintf(stderr, "error: %s\n", std::string(quant_config.status().message()).c_str());
    return 1;
  }
  auto plan =
      runtime::ResolvePlan(*source, **quant_config, args->GetString("precision_plan"),
                           {Int8ActivationsFlag(*args), args->GetBool("cpu_bf16_activations"),
                            args->GetBool("cpu_int16_activations")});
  if (!plan.ok()) {
    std::fprintf(stderr, "error: %s\n", std::string(plan.status().message()).c_str());
    return 1;
  }
  std::printf("\n%s", plan->ToTable().c_str());
  return 0;
}

}  // namespace tessera::cli
