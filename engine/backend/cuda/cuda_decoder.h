// CudaDecoder: the Llama-family decoder (llama, mistral, qwen2, qwen3) on one CUDA device. It
// runs the same step as the CPU model::DecoderModel, operation for operation — embedding,
// RMSNorm, q/k/v (+ bias), optional per-head q/k RMSNorm, RoPE in the config's pairing, K/V
// appended at each row's position, paged attention, o_proj, residual, RMSNorm, gate/up, SwiGLU,
// down, residual; final norm and lm_head on the requested rows — with the kernels the precision
// plan chose per layer (CudaKernelSelector) and logits copied back as f32 for the host sampler.
//
// Memory: one DeviceArena (one cudaMalloc at Create) holds the weights, the KV block pools and
// the per-step scratch; a step allocates nothing. runtime::KvCache stays the block allocator
// (uses_host_kv_storage() is false, so the cache keeps no floats) and the device pools are
// indexed by its block ids, in their own [block][layer][K|V][token][kv_head][dim] f32 layout (the
// host cache, when it holds data, is head-major with K transposed: kernels/cpu/attention.h).
// Steps with more rows than Limits::max_step_tokens run as consecutive passes over row ranges,
// which is exact: a later row of a sequence only reads K/V that an earlier pass appended.
//
// Not thread-safe: one caller (the scheduler thread) steps it.
#ifndef TESSERA_ENGINE_BACKEND_CUDA_CUDA_DECODER_H_
#define TESSERA_ENGINE_BACKEND_CUDA_CUDA_DECODER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "engine/backend/cuda/device_arena.h"
#include "engine/backend/cuda/device_linear.h"
#include "engine/backend/cuda/weight_upload.h"
#include "engine/model/decoder.h"
#include "engine/model/model_source.h"
#include "engine/quant/precision_plan.h"
#include "engine/quant/quant_config.h"
#include "kernels/cuda/attention.h"
#include "kernels/cuda/cublaslt_gemm.h"
#include "kernels/cuda/cuda_graph.h"
#include "kernels/cuda/device.h"
#include "kernels/cuda/device_memory.h"

namespace tessera::backend::cuda {

// Device `ordinal` made current, with its properties. UNAVAILABLE "no CUDA device:
// cudaGetDeviceCount failed: ..." without a driver or device; INVALID_ARGUMENT for an ordinal
// past the device count.
absl::StatusOr<kernels::cuda::DeviceInfo> OpenCudaDevice(int ordinal);

// UNIMPLEMENTED naming what the model needs beyond the plain llama / qwen decoder this backend
// has (ModelConfig::ExtendedFeatures: experts, multipliers, Gemma norms, ...), and --device cpu.
absl::Status CheckCudaDecoderSupports(const model::ModelConfig& config);

// The CUDA attention kernel has no sliding window; full attention equals windowed attention up
// to the window, so a model with sliding layers has its context capped there (a longer request
// is refused, not answered differently). Returns whether it capped.
bool CapContextAtSlidingWindow(model::ModelConfig& config);

class CudaDecoder : public model::Decoder {
 public:
  struct Limits {
    int64_t max_step_tokens = 512;  // rows per device pass (scratch is sized for this)
    int64_t max_logit_rows = 64;    // lm_head rows per pass (logit scratch: rows x vocab)
    // kv_blocks <= 0: the pool takes this share of the device memory left after weights and
    // scratch, capped at max_auto_kv_contexts full contexts.
    double kv_memory_fraction = 0.9;
    int64_t max_auto_kv_contexts = 64;
    // Passes of at most this many rows replay a CUDA graph captured the second time their shape
    // (rows, logit rows) is seen; 0 (or TESSERA_CUDA_GRAPHS=0 in the environment) launches every
    // kernel from the host instead. Replays run the same kernels with the same arguments, so
    // results are bit-identical either way.
    int64_t graph_max_rows = 256;
    int64_t max_graphs = 64;  // distinct shapes kept; later shapes run eagerly
  };

  // `plan` must have been resolved with CudaKernelSelector for this device's sm. `source`,
  // `plan` and `quant_config` are read during Create only. `kv_blocks` blocks of
  // `kv_block_tokens` positions (kv_blocks <= 0: sized from free memory, see Limits).
  static absl::StatusOr<std::unique_ptr<CudaDecoder>> Create(
      const model::ModelSource& source, const quant::PrecisionPlan& plan,
      const quant::QuantConfig& quant_config, int device_ordinal, int64_t kv_blocks,
      int64_t kv_block_tokens);
  static absl::StatusOr<std::unique_ptr<CudaDecoder>> Create(
      const model::ModelSource& source, const quant::PrecisionPlan& plan,
      const quant::QuantConfig& quant_config, int device_ordinal, int64_t kv_blocks,
      int64_t kv_block_tokens, const Limits& limits);

  struct PrivateTag {};  // only Create constructs (through std::make_unique)
  explicit CudaDecoder(PrivateTag) {}
  CudaDecoder(const CudaDecoder&) = delete;
  CudaDecoder& operator=(const CudaDecoder&) = delete;

  const model::ModelConfig& config() const override { return config_; }
  std::string device() const override;  // "cuda:0 (sm_90)"
  bool uses_host_kv_storage() const override { return false; }
  // The contract of model::DecoderModel::Forward. The cache must have been built with
  // host_storage = false, kv_block_tokens() positions per block and at most kv_blocks() blocks
  // (FAILED_PRECONDITION otherwise, before anything changes).
  absl::Status Forward(absl::Span<const model::SequenceChunk> chunks, runtime::KvCache& cache,
                       std::vector<float>* logits) override;

  int64_t kv_blocks() const { return kv_blocks_; }
  int64_t kv_block_tokens() const { return kv_block_tokens_; }
  size_t arena_bytes() const { return arena_.capacity(); }
  // Device bytes of every Linear (lm_head included): what one decode step streams.
  int64_t linear_weight_bytes() const { return linear_weight_bytes_; }
  // CUDA graphs captured so far (at most Limits::max_graphs): the second pass of a shape
  // captures one, later passes of that shape replay it.
  int64_t captured_graphs() const { return captured_graphs_; }
  // Elements of the bf16 scratch that W4A16 layers dequantize into on passes of at least
  // kW4A16DequantMinRows rows (0: every W4A16 pass runs the fused kernel).
  int64_t w4_dequant_elems() const { return w4_dequant_elems_; }

 private:
  struct Layer {
    const float* attn_norm = nullptr;
    const float* ffn_norm = nullptr;
    const float* q_norm = nullptr;  // qk_norm only
    const float* k_norm = nullptr;
    DeviceLinear q, k, v, o, gate, up, down;
  };
  // Per-step device buffers, carved once (sizes in Limits).
  struct Scratch {
    float *h, *xn, *q, *k, *v, *attn, *tmp, *gate, *up, *sel, *logits;
    uint16_t *act_bf16, *sel_bf16;
    int32_t* ints;  // tokens, positions, token_seq, context_lens, sel_rows: max_step_tokens
                    // each, then block tables [max_step_tokens, max_blocks_per_seq]
    LinearScratch linear;
  };
  // Create's steps (cuda_decoder_load.cc).
  absl::Status Load(const model::ModelSource& source, const quant::PrecisionPlan& plan,
                    const quant::QuantConfig& quant_config, int64_t kv_blocks);
  absl::Status CarveScratch(ArenaRegion& region);

  absl::Status RunPass(absl::Span<const model::SequenceChunk> chunks,
                       absl::Span<const int> row_chunk, absl::Span<const int64_t> row_pos,
                       int64_t begin, int64_t end, absl::Span<const int64_t> selected,
                       float* logits_out);
  absl::Status RunLayers(int64_t rows, const kernels::cuda::AttentionBatch& batch);
  // Embedding, the layers and (count <= max_logit_rows) the lm_head of one pass whose metadata
  // is already in s_.ints: everything between the metadata upload and the logits download.
  absl::Status EnqueuePass(int64_t rows, int64_t count, const kernels::cuda::AttentionBatch& batch);
  // EnqueuePass through the graph cache: eager the first time a shape is seen, captured the
  // second, replayed after that.
  absl::Status RunPassKernels(int64_t rows, int64_t count,
                              const kernels::cuda::AttentionBatch& batch);

  struct GraphSlot {
    int uses = 0;
    bool failed = false;  // capture failed once: this shape stays eager
    kernels::cuda::CapturedGraph graph;
  };
  absl::flat_hash_map<std::pair<int64_t, int64_t>, GraphSlot> graphs_;
  int64_t captured_graphs_ = 0;

  model::ModelConfig config_;
  Limits limits_;
  kernels::cuda::DeviceInfo info_;
  int64_t kv_blocks_ = 0;
  int64_t kv_block_tokens_ = 0;
  int64_t max_blocks_per_seq_ = 0;
  // Some layer runs a GEMM with a bf16 result first (FP8 W8A8, NVFP4 W4A4), which needs the
  // GEMM output scratch; the lm_head too (vocab-wide output scratch).
  bool bf16_gemm_out_ = false;
  bool bf16_gemm_out_lm_head_ = false;
  int64_t nvfp4_max_k_ = 0;  // widest K of the NVFP4 W4A4 layers (swizzled scale scratch), or 0
  bool bf16_layers_ = false;  // a decoder layer runs as bf16 (stacked-GEMM scratch)
  int64_t linear_weight_bytes_ = 0;
  int64_t w4_dequant_elems_ = 0;  // largest W4A16 layer (N x K), dequantized for big passes

  kernels::cuda::CudaStream stream_;
  std::unique_ptr<kernels::cuda::CublasLtGemm> lt_;
  DeviceArena arena_;
  ArenaRegion weights_, kv_region_, scratch_region_;

  const void* embedding_ = nullptr;
  bool embedding_bf16_ = false;
  const float* final_norm_ = nullptr;
  const float* inv_freq_ = nullptr;
  std::vector<Layer> layers_;
  DeviceLinear lm_head_;
  float* kv_pool_ = nullptr;
  Scratch s_{};
};

}  // namespace tessera::backend::cuda

#endif  // TESSERA_ENGINE_BACKEND_CUDA_CUDA_DECODER_H_
