// LoadEngine: everything a command needs to run a model, built in load-path order (design.md §2):
// open the source, read the config, build the tokenizer, prepare every linear layer, and time it.
// `tessera generate`, `perplexity`, `serve` and `bench` all load through here. EngineOptions::device
// picks the backend: "cpu" (model::DecoderModel) or "cuda" / "cuda:N" (the plan is resolved with
// CudaKernelSelector for that device's sm and a backend::cuda::CudaDecoder runs it; only in builds
// with TESSERA_HAVE_CUDA, else UNIMPLEMENTED).
#ifndef TESSERA_ENGINE_RUNTIME_ENGINE_LOADER_H_
#define TESSERA_ENGINE_RUNTIME_ENGINE_LOADER_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "engine/backend/cpu/cpu_kernel_selector.h"
#include "engine/model/decoder.h"
#include "engine/model/decoder_model.h"
#include "engine/model/model_source.h"
#include "engine/quant/precision_plan.h"
#include "engine/quant/quant_config.h"
#include "engine/tokenizer/tokenizer.h"
#include "kernels/cpu/thread_pool.h"

namespace tessera::runtime {

struct LoadedEngine {
  model::ModelSource source;
  std::unique_ptr<kernels::cpu::ThreadPool> pool;
  std::unique_ptr<quant::QuantConfig> quant_config;
  std::unique_ptr<quant::PrecisionPlan> plan;
  std::unique_ptr<model::LinearFactory> factory;  // CPU only
  std::unique_ptr<model::Decoder> model;  // model::DecoderModel or backend::cuda::CudaDecoder
  std::unique_ptr<tokenizer::Tokenizer> tokenizer;
  double load_seconds = 0;
};

struct EngineOptions {
  int threads = 0;  // 0 = all hardware threads
  std::string precision_plan_path;  // a plan file with override rules; empty = checkpoint as is
  // Which layers quantize their activations to int8 blocks of 32 (llama.cpp's method; AVX-512
  // VNNI or AVX2 kernels): faster, but results differ from f32 activations by the activation
  // rounding. Default: the GGUF block formats, as llama.cpp runs them
  // (backend/cpu/cpu_kernel_selector.h).
  backend::cpu::Int8Activations cpu_int8_activations = backend::cpu::Int8Activations::kGgufBlocks;
  // bf16 weights, FP8 W8A16 and the 4-bit weight-only formats (INT4, NVFP4 W4A16, MXFP4)
  // multiply bf16-rounded activations (one vdpbf16ps per weight pair, as PyTorch and llama.cpp
  // run bf16 models and vLLM's Marlin kernels run W8A16 / W4A16): up to twice the prefill GEMM
  // rate on AVX-512 BF16, but results differ from f32 activations by the activation rounding.
  // Off: exact f32 activations (the hi + lo split on the bf16 kernels).
  bool cpu_bf16_activations = false;
  // The integer weight-only formats (INT4 with or without act-order, INT8 / INT3 / INT2), NVFP4
  // W4A16 and MXFP4 (groups of 16-128) on AVX-512 VNNI (BF16 not needed) multiply int16
  // activations, one scale per weight group (one vpdpwssd per weight pair: 1.4-1.6x the exact
  // prefill GEMM rate), within 2^-16 of each group's largest |x|. cpu_bf16_activations wins where
  // it covers a layer.
  bool cpu_int16_activations = false;
  std::string device = "cpu";  // "cpu", "cuda" (= cuda:0) or "cuda:N"
  // CUDA only: the device KV pool, in blocks of kv_block_tokens positions (the scheduler's
  // KvCache must use the same block size and at most this many blocks). 0: sized from free
  // device memory.
  int64_t kv_blocks = 0;
  int64_t kv_block_tokens = 16;
  // "auto", "f32", "f16", "bf16" or "fp8" (E4M3 with the checkpoint's per-layer
  // k_scale/v_scale); other spellings in runtime::ParseKvCacheFormat. "auto": f16 for GGUF
  // models (llama.cpp's default, as the int8 activations above), f32 otherwise and on CUDA.
  // CPU backend only.
  std::string kv_cache_dtype = "auto";
};

// "cpu" (or empty) -> -1, "cuda" -> 0, "cuda:N" -> N; anything else is INVALID_ARGUMENT naming
// --device.
absl::StatusOr<int> ParseDevice(const std::string& device);

// Resolves the precision plan of an opened model without preparing weights (for inspect).
// The CPU selector's activation choices (the EngineOptions fields of the same names).
struct CpuActivationChoices {
  backend::cpu::Int8Activations int8 = backend::cpu::Int8Activations::kGgufBlocks;
  bool bf16 = false;   // cpu_bf16_activations
  bool int16 = false;  // cpu_int16_activations
};
absl::StatusOr<quant::PrecisionPlan> ResolvePlan(const model::ModelSource& source,
                                                 const quant::QuantConfig& quant_config,
                                                 const std::string& precision_plan_path,
                                                 CpuActivationChoices cpu = {},
                                                 const quant::KernelSelector* backend = nullptr);
// (`backend` null: the CPU selector, with `cpu`.)

absl::StatusOr<std::unique_ptr<LoadedEngine>> LoadEngine(const std::string& path,
                                                         const EngineOptions& options);

}  // namespace tessera::runtime

#endif  // TESSERA_ENGINE_RUNTIME_ENGINE_LOADER_H_
