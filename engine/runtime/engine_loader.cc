#include "engine/runtime/engine_loader.h"

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "engine/backend/cpu/cpu_kernel_selector.h"
#include "engine/common/logging.h"
#include "engine/common/status_macros.h"
#include "engine/model/plan_linear_factory.h"
#ifdef TESSERA_HAVE_CUDA
#include "engine/backend/cuda/cuda_decoder.h"
#include "engine/backend/cuda/cuda_kernel_selector.h"
#endif

namespace tessera::runtime {
namespace {

[[maybe_unused]] absl::Status NoCudaBackend(const std::string& device) {
  return absl::UnimplementedError(absl::StrCat(
      "--device ", device, ": this build has no CUDA backend (configure with "
      "-DTESSERA_ENABLE_CUDA=ON)"));
}

// GGUF K-quant (and Q4_1 / Q5_x) layers with f32 activations (--cpu_int8_activations=false, or a
// CPU without AVX-512 VNNI) run the CPU kernel that dequantizes blocks per call ("-dequant"):
// correct but several times slower than their int8 tiles, which is what llama.cpp always runs.
// Said once at load, so a user who expected llama.cpp's speed sees why.
void WarnAboutDequantizingLayers(const quant::PrecisionPlan& plan) {
  int layers = 0;
  for (const quant::LinearSpec& s : plan.layers()) {
    layers += absl::EndsWith(s.kernel, "-dequant") ? 1 : 0;
  }
  if (layers == 0) return;
  TLOG_WARNING(
      "%d GGUF layers dequantize their blocks per call with f32 activations (kernel *-dequant): "
      "several times slower than the int8-activation VNNI tiles llama.cpp's method runs by "
      "default, which need AVX-512 VNNI and no --cpu_int8_activations=false",
      layers);
}

// The plan for the chosen backend and the decoder that runs it, on `e` (whose source, pool and
// quant config are set).
absl::Status BuildDecoder(LoadedEngine& e, const EngineOptions& options, int cuda_ordinal) {
  if (cuda_ordinal < 0) {
    TESSERA_ASSIGN_OR_RETURN(
        quant::PrecisionPlan plan,
        ResolvePlan(e.source, *e.quant_config, options.precision_plan_path,
                    {options.cpu_int8_activations, options.cpu_bf16_activations,
                     options.cpu_int16_activations}));
    e.plan = std::make_unique<quant::PrecisionPlan>(std::move(plan));
    TLOG_INFO("%s", e.plan->ToTable());
    for (const std::string& w : e.plan->warnings()) TLOG_WARNING("%s", w);
    WarnAboutDequantizingLayers(*e.plan);
    e.factory = std::make_unique<model::PlanLinearFactory>(*e.plan, *e.quant_config, e.pool.get());
    // GGUF models run as llama.cpp runs them by default: an f16 cache, like the int8
    // activations of the block formats (half the KV memory and attention traffic of f32).
    const std::string kv_dtype =
        options.kv_cache_dtype != "auto" ? options.kv_cache_dtype
        : e.source.naming == model::NamingScheme::kGguf ? "f16"
                                                        : "f32";
    const auto kv_format = runtime::ParseKvCacheFormat(kv_dtype);
    if (!kv_format) {
      return absl::InvalidArgumentError(absl::StrCat("--kv_cache_dtype '", options.kv_cache_dtype,
                                                     "' is not auto, ",
                                                     runtime::kKvCacheFormatNames));
    }
    TESSERA_ASSIGN_OR_RETURN(e.model,
                             model::DecoderModel::Load(e.source.config, *e.source.store,
                                                       e.source.naming, *e.factory, e.pool.get(),
                                                       *kv_format));
    return absl::OkStatus();
  }
  if (options.kv_cache_dtype != "f32" && options.kv_cache_dtype != "auto") {
    return absl::UnimplementedError(absl::StrCat("--kv_cache_dtype ", options.kv_cache_dtype,
                                                 ": the CUDA decoder keeps an f32 KV cache"));
  }
#ifdef TESSERA_HAVE_CUDA
  // Before the plan, so no layer's kernel choice speaks first (CudaDecoder::Create checks the
  // same for direct callers).
  TESSERA_RETURN_IF_ERROR(backend::cuda::CheckCudaDecoderSupports(e.source.config));
  if (backend::cuda::CapContextAtSlidingWindow(e.source.config)) {
    TLOG_WARNING(
        "sliding attention window of %d tokens: the CUDA decoder caps the context at %d "
        "(--device cpu attends through the window at any length)",
        e.source.config.sliding_window, e.source.config.max_context);
  }
  TESSERA_ASSIGN_OR_RETURN(kernels::cuda::DeviceInfo info,
                           backend::cuda::OpenCudaDevice(cuda_ordinal));
  const backend::cuda::CudaKernelSelector selector(info.sm);
  TESSERA_ASSIGN_OR_RETURN(quant::PrecisionPlan plan,
                           ResolvePlan(e.source, *e.quant_config, options.precision_plan_path,
                                       {}, &selector));
  e.plan = std::make_unique<quant::PrecisionPlan>(std::move(plan));
  TLOG_INFO("%s", e.plan->ToTable());
  for (const std::string& w : e.plan->warnings()) TLOG_WARNING("%s", w);
  TESSERA_ASSIGN_OR_RETURN(
      e.model, backend::cuda::CudaDecoder::Create(e.source, *e.plan, *e.quant_config,
                                                  cuda_ordinal, options.kv_blocks,
                                                  options.kv_block_tokens));
  return absl::OkStatus();
#else
  return NoCudaBackend(options.device);
#endif
}

// A CUDA device is usable (or why not) before the model is read, so `--device cuda:0` on a
// machine without a GPU fails in milliseconds with the runtime's reason.
absl::Status CheckDevice([[maybe_unused]] const EngineOptions& options, int cuda_ordinal) {
  if (cuda_ordinal < 0) return absl::OkStatus();
#ifdef TESSERA_HAVE_CUDA
  return backend::cuda::OpenCudaDevice(cuda_ordinal).status();
#else
  return NoCudaBackend(options.device);
#endif
}

}  // namespace

absl::StatusOr<int> ParseDevice(const std::string& device) {
  if (device.empty() || device == "cpu") return -1;
  if (device == "cuda") return 0;
  int ordinal = 0;
  if (device.rfind("cuda:", 0) == 0 && absl::SimpleAtoi(device.substr(5), &ordinal) &&
      ordinal >= 0) {
    return ordinal;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("--device: '", device, "' is not cpu, cuda or cuda:N"));
}

absl::StatusOr<std::unique_ptr<LoadedEngine>> LoadEngine(const std::string& path,
                                                         const EngineOptions& options) {
  const absl::Time start = absl::Now();
  // The device string is checked before anything is read, so a typo fails fast.
  TESSERA_ASSIGN_OR_RETURN(const int cuda_ordinal, ParseDevice(options.device));
  TESSERA_RETURN_IF_ERROR(CheckDevice(options, cuda_ordinal));
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
  TESSERA_RETURN_IF_ERROR(BuildDecoder(*e, options, cuda_ordinal));
  e->load_seconds = absl::ToDoubleSeconds(absl::Now() - start);
  const auto& c = e->source.config;
  TLOG_INFO("loaded %s: %s, %d layers, hidden %d, heads %d/%d, vocab %d, context %d; tokenizer %s; "
            "%d threads; device %s; KV cache %s; %.3f s",
            path, c.ArchitectureName(), c.num_layers, c.hidden_size, c.num_heads, c.num_kv_heads,
            c.vocab_size, c.max_context, e->tokenizer->Describe(), e->pool->size(),
            e->model->device(), runtime::KvCacheFormatName(e->model->kv_cache_format()),
            e->load_seconds);
  return e;
}

absl::StatusOr<quant::PrecisionPlan> ResolvePlan(const model::ModelSource& source,
                                                 const quant::QuantConfig& quant_config,
                                                 const std::string& precision_plan_path,
                                                 CpuActivationChoices cpu_choices,
                                                 const quant::KernelSelector* backend) {
  quant::PlanOverrides overrides;
  if (!precision_plan_path.empty()) {
    TESSERA_ASSIGN_OR_RETURN(overrides, quant::PlanOverrides::FromFile(precision_plan_path));
  }
  const auto modules = model::DecoderLinearModules(source.config, source.naming, *source.store);
  backend::cpu::CpuKernelSelector cpu(cpu_choices.int8, cpu_choices.bf16, cpu_choices.int16);
  return quant::PrecisionPlan::Resolve(modules, quant_config, *source.store, overrides,
                                       backend != nullptr ? *backend : cpu);
}

}  // namespace tessera::runtime
