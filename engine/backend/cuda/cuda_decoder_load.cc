// CudaDecoder::Create: open the device, size everything (weights from the plan, KV pools from
// kv_blocks or free memory, scratch from Limits), take the one arena, and upload. Weights are
// read in the order model::DecoderModel::Load reads them, with the same shape checks and the
// same bias rules, so a checkpoint loads on the GPU exactly when it loads on the CPU (plus the
// kernel constraints the plan already checked).
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "engine/backend/cuda/cuda_decoder.h"
#include "engine/backend/cuda/cuda_kernel_selector.h"
#include "engine/common/logging.h"
#include "engine/common/status_macros.h"
#include "engine/model/weight_names.h"
#include "kernels/cuda/cuda_status.h"
#include "kernels/cuda/nvfp4_scale_layout.h"
#include "kernels/cuda/w4a16_gemm.h"

namespace tessera::backend::cuda {
namespace {

using model::LayerTensor;
using model::WeightNames;

double MiB(size_t bytes) { return static_cast<double>(bytes) / (1 << 20); }

absl::StatusOr<std::vector<float>> LoadVector(const io::TensorStore& store,
                                              const std::string& name, int64_t expected) {
  TESSERA_ASSIGN_OR_RETURN(io::TensorView view, store.Get(name));
  if (view.numel() != expected) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "tensor '%s' has shape %s, expected %d values", name, view.ShapeString(), expected));
  }
  return io::ToFloat32(view);
}

// One linear module to upload: where its spec and tensors are, and which slot it fills.
struct LinearJob {
  const quant::LinearSpec* spec = nullptr;
  std::string weight_name;
  std::vector<float> bias;
  int layer = -1;  // -1: lm_head
  LayerTensor tensor = LayerTensor::kQ;
};

}  // namespace

absl::StatusOr<kernels::cuda::DeviceInfo> OpenCudaDevice(int ordinal) {
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    return absl::UnavailableError(absl::StrCat("no CUDA device: cudaGetDeviceCount failed: ",
                                               cudaGetErrorName(err), " (",
                                               cudaGetErrorString(err), ")"));
  }
  if (count == 0) return absl::UnavailableError("no CUDA device: cudaGetDeviceCount found none");
  if (ordinal < 0 || ordinal >= count) {
    return absl::InvalidArgumentError(
        absl::StrCat("CUDA device ", ordinal, " does not exist (", count, " found)"));
  }
  RETURN_IF_CUDA_ERROR(cudaSetDevice(ordinal));
  return kernels::cuda::QueryDevice(ordinal);
}

absl::Status CheckCudaDecoderSupports(const model::ModelConfig& config) {
  if (const std::string extended = config.ExtendedFeatures(); !extended.empty()) {
    return absl::UnimplementedError(absl::StrCat("the CUDA decoder has no ", extended, " (",
                                                 config.ArchitectureName(),
                                                 "); run this model with --device cpu"));
  }
  return absl::OkStatus();
}

bool CapContextAtSlidingWindow(model::ModelConfig& config) {
  if (!config.HasSlidingLayers() || config.max_context <= config.sliding_window) return false;
  config.max_context = config.sliding_window;
  return true;
}

absl::StatusOr<std::unique_ptr<CudaDecoder>> CudaDecoder::Create(
    const model::ModelSource& source, const quant::PrecisionPlan& plan,
    const quant::QuantConfig& quant_config, int device_ordinal, int64_t kv_blocks,
    int64_t kv_block_tokens) {
  return Create(source, plan, quant_config, device_ordinal, kv_blocks, kv_block_tokens, Limits{});
}

absl::StatusOr<std::unique_ptr<CudaDecoder>> CudaDecoder::Create(
    const model::ModelSource& source, const quant::PrecisionPlan& plan,
    const quant::QuantConfig& quant_config, int device_ordinal, int64_t kv_blocks,
    int64_t kv_block_tokens, const Limits& limits) {
  TESSERA_RETURN_IF_ERROR(CheckCudaDecoderSupports(source.config));
  TESSERA_ASSIGN_OR_RETURN(kernels::cuda::DeviceInfo info, OpenCudaDevice(device_ordinal));
  TESSERA_RETURN_IF_ERROR(source.config.Validate());
  if (source.store == nullptr) return absl::InvalidArgumentError("model source has no tensors");
  if (kv_block_tokens <= 0 || limits.max_step_tokens <= 0 || limits.max_logit_rows <= 0) {
    return absl::InvalidArgumentError("CudaDecoder: block size and limits must be positive");
  }
  if (source.config.head_dim > kernels::cuda::kMaxAttentionHeadDim) {
    return absl::UnimplementedError(absl::StrCat("CUDA attention supports head_dim <= ",
                                                 kernels::cuda::kMaxAttentionHeadDim, ", not ",
                                                 source.config.head_dim));
  }
  auto d = std::make_unique<CudaDecoder>(PrivateTag{});
  d->config_ = source.config;
  CapContextAtSlidingWindow(d->config_);  // for direct callers; the engine loader capped already
  d->limits_ = limits;
  d->limits_.max_logit_rows = std::min(limits.max_logit_rows, limits.max_step_tokens);
  if (const char* env = std::getenv("TESSERA_CUDA_GRAPHS"); env != nullptr && env[0] == '0') {
    d->limits_.graph_max_rows = 0;
  }
  d->info_ = info;
  d->kv_block_tokens_ = kv_block_tokens;
  d->max_blocks_per_seq_ = (source.config.max_context + kv_block_tokens - 1) / kv_block_tokens;
  TESSERA_ASSIGN_OR_RETURN(d->stream_, kernels::cuda::CudaStream::Create());
  TESSERA_ASSIGN_OR_RETURN(d->lt_, kernels::cuda::CublasLtGemm::Create());
  TESSERA_RETURN_IF_ERROR(d->Load(source, plan, quant_config, kv_blocks));
  return d;
}

absl::Status CudaDecoder::Load(const model::ModelSource& source, const quant::PrecisionPlan& plan,
                               const quant::QuantConfig& quant_config, int64_t kv_blocks) {
  const model::ModelConfig& c = config_;
  const io::TensorStore& store = *source.store;
  const WeightNames names(source.naming);

  // 1. Everything the weights region will hold, read as model::DecoderModel::Load reads it.
  TESSERA_ASSIGN_OR_RETURN(io::TensorView embedding, store.Get(names.Embedding()));
  TESSERA_RETURN_IF_ERROR(embedding.ExpectShape({c.vocab_size, c.hidden_size}));
  embedding_bf16_ = embedding.dtype == io::DType::kBF16;
  TESSERA_ASSIGN_OR_RETURN(std::vector<float> final_norm,
                           LoadVector(store, names.FinalNorm(), c.hidden_size));
  const std::vector<float> inv_freq = model::RopeInverseFrequencies(c);
  size_t weight_bytes = ArenaAligned(embedding.numel() * (embedding_bf16_ ? 2 : 4)) +
                        ArenaAligned(final_norm.size() * 4) + ArenaAligned(inv_freq.size() * 4);
  const size_t norms_per_layer = 2 * ArenaAligned(c.hidden_size * 4) +
                                 (c.qk_norm ? 2 * ArenaAligned(c.head_dim * 4) : 0);
  weight_bytes += c.num_layers * norms_per_layer;

  std::vector<LinearJob> jobs;
  auto add_job = [&](int layer, LayerTensor t, std::optional<LayerTensor> bias_t,
                     const std::string& module, const std::string& weight) -> absl::Status {
    LinearJob job;
    job.layer = layer;
    job.tensor = t;
    job.weight_name = weight;
    job.spec = plan.Find(module);
    if (job.spec == nullptr) {
      return absl::InternalError(absl::StrCat("no precision plan entry for ", module));
    }
    if (bias_t && store.Contains(names.Layer(layer, *bias_t))) {
      TESSERA_ASSIGN_OR_RETURN(job.bias,
                               LoadVector(store, names.Layer(layer, *bias_t), job.spec->n));
    } else if (bias_t && c.attention_bias) {
      return absl::NotFoundError(absl::StrCat("tensor '", names.Layer(layer, *bias_t),
                                              "' is missing (this architecture has q/k/v biases)"));
    }
    TESSERA_ASSIGN_OR_RETURN(size_t bytes, DeviceLinearBytes(*job.spec, !job.bias.empty()));
    weight_bytes += bytes;
    linear_weight_bytes_ += static_cast<int64_t>(bytes);
    jobs.push_back(std::move(job));
    return absl::OkStatus();
  };
  for (int i = 0; i < c.num_layers; ++i) {
    const std::pair<LayerTensor, std::optional<LayerTensor>> tensors[] = {
        {LayerTensor::kQ, LayerTensor::kQBias}, {LayerTensor::kK, LayerTensor::kKBias},
        {LayerTensor::kV, LayerTensor::kVBias}, {LayerTensor::kO, std::nullopt},
        {LayerTensor::kGate, std::nullopt},     {LayerTensor::kUp, std::nullopt},
        {LayerTensor::kDown, std::nullopt}};
    for (const auto& [t, bias_t] : tensors) {
      TESSERA_RETURN_IF_ERROR(
          add_job(i, t, bias_t, WeightNames::ModuleName(i, t), names.Layer(i, t)));
    }
  }
  // An absent lm_head means tied embeddings (GGUF omits output.weight; HF sets the flag).
  const std::string head = (c.tie_word_embeddings || !store.Contains(names.LmHead()))
                               ? names.Embedding()
                               : names.LmHead();
  TESSERA_RETURN_IF_ERROR(add_job(-1, LayerTensor::kQ, std::nullopt, "lm_head", head));

  // 2. Scratch (measured by carving it from a counting region) and the KV pools.
  for (const LinearJob& job : jobs) {
    // The lm_head sees at most min(max_logit_rows, max_step_tokens) rows per pass; by default
    // that is below the dequant threshold, and sizing the scratch for a vocab x hidden matrix
    // it never dequantizes would cost ~1 GB on a Llama-3-8B.
    const int64_t job_rows = job.layer < 0
                                 ? std::min(limits_.max_logit_rows, limits_.max_step_tokens)
                                 : limits_.max_step_tokens;
    if (job.spec->kernel.rfind("cuda/w4a16-", 0) == 0 &&
        job_rows >= kernels::cuda::kW4A16DequantMinRows) {
      w4_dequant_elems_ = std::max(w4_dequant_elems_, job.spec->n * job.spec->k);
    }
    // FP8 W8A8 and NVFP4 W4A4 write their GEMM result in bf16 first (LinearScratch::y_bf16).
    const bool bf16_out =
        job.spec->kernel.rfind("cuda/fp8-w8a8-", 0) == 0 || job.spec->kernel == kNvfp4W4A4Kernel;
    if (bf16_out) bf16_gemm_out_ = true;
    if (job.layer < 0 && bf16_out) bf16_gemm_out_lm_head_ = true;
    if (job.spec->kernel == kNvfp4W4A4Kernel) {
      nvfp4_max_k_ = std::max(nvfp4_max_k_, job.spec->k);
    }
    // Layers uploaded as bf16 (dense, or FP8 dequantized at load): RunLinears may stack them.
    if (job.layer >= 0) {
      absl::StatusOr<DeviceLinearKind> kind = DeviceLinearKindFor(*job.spec);
      if (kind.ok() && *kind == DeviceLinearKind::kBf16) bf16_layers_ = true;
    }
  }
  ArenaRegion measuring = ArenaRegion::Measuring("scratch");
  TESSERA_RETURN_IF_ERROR(CarveScratch(measuring));
  const size_t scratch_bytes = ArenaAligned(measuring.used());
  const size_t block_bytes = static_cast<size_t>(c.num_layers) * 2 * kv_block_tokens_ *
                             c.num_kv_heads * c.head_dim * sizeof(float);
  if (kv_blocks <= 0) {
    size_t free_bytes = 0, total_bytes = 0;
    RETURN_IF_CUDA_ERROR(cudaMemGetInfo(&free_bytes, &total_bytes));
    const double budget = free_bytes * limits_.kv_memory_fraction -
                          static_cast<double>(weight_bytes + scratch_bytes);
    kv_blocks = budget > 0 ? static_cast<int64_t>(budget / block_bytes) : 0;
    kv_blocks = std::min(kv_blocks, limits_.max_auto_kv_contexts * max_blocks_per_seq_);
    if (kv_blocks < 1) {
      return absl::ResourceExhaustedError(absl::StrFormat(
          "%s: %.1f MiB free cannot hold %.1f MiB of weights and %.1f MiB of scratch plus a KV "
          "block of %.2f MiB",
          device(), MiB(free_bytes), MiB(weight_bytes), MiB(scratch_bytes), MiB(block_bytes)));
    }
  }
  kv_blocks_ = kv_blocks;
  const size_t kv_bytes = ArenaAligned(block_bytes * static_cast<size_t>(kv_blocks));

  // 3. The one allocation, split into its three regions.
  TESSERA_ASSIGN_OR_RETURN(arena_, DeviceArena::Create(weight_bytes + kv_bytes + scratch_bytes));
  TESSERA_ASSIGN_OR_RETURN(weights_, arena_.Carve("weights", weight_bytes));
  TESSERA_ASSIGN_OR_RETURN(kv_region_, arena_.Carve("kv", kv_bytes));
  TESSERA_ASSIGN_OR_RETURN(scratch_region_, arena_.Carve("scratch", scratch_bytes));
  TESSERA_ASSIGN_OR_RETURN(kv_pool_, kv_region_.AllocateArray<float>(
                                         static_cast<int64_t>(block_bytes / 4) * kv_blocks,
                                         "kv blocks"));
  TESSERA_RETURN_IF_ERROR(CarveScratch(scratch_region_));

  // 4. Upload.
  if (embedding_bf16_) {
    TESSERA_ASSIGN_OR_RETURN(void* table, weights_.Allocate(embedding.bytes.size(), "embedding"));
    TESSERA_RETURN_IF_ERROR(CopyToDevice(table, embedding.bytes.data(), embedding.bytes.size()));
    embedding_ = table;
  } else {
    TESSERA_ASSIGN_OR_RETURN(std::vector<float> table, io::ToFloat32(embedding));
    TESSERA_ASSIGN_OR_RETURN(embedding_, UploadVector<float>(table, weights_, "embedding"));
  }
  TESSERA_ASSIGN_OR_RETURN(final_norm_, UploadVector<float>(final_norm, weights_, "final norm"));
  TESSERA_ASSIGN_OR_RETURN(inv_freq_, UploadVector<float>(inv_freq, weights_, "rope"));
  layers_.resize(c.num_layers);
  for (int i = 0; i < c.num_layers; ++i) {
    Layer& L = layers_[i];
    auto norm = [&](LayerTensor t, int64_t n, const float** out) -> absl::Status {
      TESSERA_ASSIGN_OR_RETURN(std::vector<float> v, LoadVector(store, names.Layer(i, t), n));
      TESSERA_ASSIGN_OR_RETURN(*out, UploadVector<float>(v, weights_, names.Layer(i, t)));
      return absl::OkStatus();
    };
    TESSERA_RETURN_IF_ERROR(norm(LayerTensor::kAttnNorm, c.hidden_size, &L.attn_norm));
    TESSERA_RETURN_IF_ERROR(norm(LayerTensor::kFfnNorm, c.hidden_size, &L.ffn_norm));
    if (c.qk_norm) {
      TESSERA_RETURN_IF_ERROR(norm(LayerTensor::kQNorm, c.head_dim, &L.q_norm));
      TESSERA_RETURN_IF_ERROR(norm(LayerTensor::kKNorm, c.head_dim, &L.k_norm));
    }
  }
  for (const LinearJob& job : jobs) {
    TESSERA_ASSIGN_OR_RETURN(DeviceLinear l, UploadLinear(*job.spec, job.weight_name, store,
                                                          quant_config, job.bias, weights_));
    if (job.layer < 0) {
      lm_head_ = std::move(l);
      continue;
    }
    Layer& L = layers_[job.layer];
    DeviceLinear* slot = nullptr;
    switch (job.tensor) {
      case LayerTensor::kQ: slot = &L.q; break;
      case LayerTensor::kK: slot = &L.k; break;
      case LayerTensor::kV: slot = &L.v; break;
      case LayerTensor::kO: slot = &L.o; break;
      case LayerTensor::kGate: slot = &L.gate; break;
      case LayerTensor::kUp: slot = &L.up; break;
      default: slot = &L.down; break;
    }
    *slot = std::move(l);
  }
  TLOG_INFO("%s (%s): arena %.1f MiB = weights %.1f + KV %.1f (%d blocks of %d tokens) + "
            "scratch %.1f (%d tokens per pass)",
            device(), info_.name, MiB(arena_.capacity()), MiB(weight_bytes), MiB(kv_bytes),
            kv_blocks_, kv_block_tokens_, MiB(scratch_bytes), limits_.max_step_tokens);
  return absl::OkStatus();
}

absl::Status CudaDecoder::CarveScratch(ArenaRegion& r) {
  const model::ModelConfig& c = config_;
  const int64_t T = limits_.max_step_tokens, R = limits_.max_logit_rows;
  const int64_t H = c.hidden_size, Q = c.q_dim(), KV = c.kv_dim(), F = c.intermediate_size,
                V = c.vocab_size;
  const int64_t widest = std::max({H, Q, F});
  auto f32 = [&](float** p, int64_t n, absl::string_view what) -> absl::Status {
    TESSERA_ASSIGN_OR_RETURN(*p, r.AllocateArray<float>(n, what));
    return absl::OkStatus();
  };
  TESSERA_RETURN_IF_ERROR(f32(&s_.h, T * H, "h"));
  TESSERA_RETURN_IF_ERROR(f32(&s_.xn, T * H, "xn"));
  TESSERA_RETURN_IF_ERROR(f32(&s_.q, T * Q, "q"));
  TESSERA_RETURN_IF_ERROR(f32(&s_.k, T * KV, "k"));
  TESSERA_RETURN_IF_ERROR(f32(&s_.v, T * KV, "v"));
  TESSERA_RETURN_IF_ERROR(f32(&s_.attn, T * Q, "attn"));
  TESSERA_RETURN_IF_ERROR(f32(&s_.tmp, T * H, "tmp"));
  TESSERA_RETURN_IF_ERROR(f32(&s_.gate, T * F, "gate"));
  TESSERA_RETURN_IF_ERROR(f32(&s_.up, T * F, "up"));
  TESSERA_RETURN_IF_ERROR(f32(&s_.sel, R * H, "final rows"));
  TESSERA_RETURN_IF_ERROR(f32(&s_.logits, R * V, "logits"));
  TESSERA_ASSIGN_OR_RETURN(s_.act_bf16, r.AllocateArray<uint16_t>(T * widest, "act bf16"));
  TESSERA_ASSIGN_OR_RETURN(s_.sel_bf16, r.AllocateArray<uint16_t>(R * H, "final rows bf16"));
  TESSERA_ASSIGN_OR_RETURN(
      s_.ints, r.AllocateArray<int32_t>(5 * T + T * max_blocks_per_seq_, "step metadata"));
  // FP8 GEMMs may pad their rows to a multiple of 4 (kernels::cuda::Fp8GemmRows).
  const int64_t T4 = (T + 3) / 4 * 4, R4 = (R + 3) / 4 * 4;
  const int64_t x_elems = std::max(T4 * widest, R4 * H);
  int64_t y_elems = bf16_gemm_out_ ? T4 * std::max({Q, KV, H, F}) : 0;
  if (bf16_gemm_out_lm_head_) y_elems = std::max(y_elems, R4 * V);
  // RunLinears' stacked bf16 q / k / v and gate / up GEMMs at decode (f32 output only).
  const int64_t stacked_elems =
      bf16_layers_ ? std::min(T, kStackedBf16MaxRows) * std::max(Q + 2 * KV, 2 * F) : 0;
  // NVFP4 W4A4 activation scales, swizzled: rows padded to 128, K/16 columns padded to 4.
  const int64_t fp4_scale_bytes =
      nvfp4_max_k_ > 0 ? kernels::cuda::SwizzledScaleBytes(std::max(T, R), nvfp4_max_k_ / 16) : 0;
  TESSERA_ASSIGN_OR_RETURN(
      s_.linear, LinearScratch::Carve(std::max(T4, R4), x_elems, y_elems, w4_dequant_elems_,
                                      fp4_scale_bytes, stacked_elems, r));
  return absl::OkStatus();
}

}  // namespace tessera::backend::cuda
