// DecoderModel: the Llama-family decoder (llama, mistral, qwen2, qwen3, granite, phi3, the Gemma
// family, and with sparse MoE MLPs qwen2_moe, qwen3_moe, mixtral and olmoe) on the CPU backend. It
// owns prepared weights and runs a batch of sequence chunks in one step: all new tokens of all
// sequences go through each weight once (a batched GEMM), each token attends over its own
// sequence's paged KV cache, and logits come back for the positions asked for.
#ifndef TESSERA_ENGINE_MODEL_DECODER_MODEL_H_
#define TESSERA_ENGINE_MODEL_DECODER_MODEL_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "engine/backend/linear.h"
#include "engine/model/decoder.h"
#include "engine/io/tensor_store.h"
#include "engine/model/model_config.h"
#include "engine/model/moe_block.h"
#include "engine/model/weight_names.h"
#include "engine/runtime/kv_cache.h"
#include "kernels/cpu/thread_pool.h"

namespace tessera::model {

// Builds the Linear for one named module from its tensors; lets quantized formats plug in.
class LinearFactory {
 public:
  virtual ~LinearFactory() = default;
  // `module` is the HF module name ("model.layers.0.self_attn.q_proj", "lm_head"); `weight_name`
  // the checkpoint tensor; `bias` empty or N values.
  virtual absl::StatusOr<std::unique_ptr<backend::Linear>> Create(
      const std::string& module, const std::string& weight_name, const io::TensorStore& store,
      std::vector<float> bias) = 0;
};

// The default factory: DenseLinear over the mapped tensor (f32, bf16, f16, GGUF blocks).
std::unique_ptr<LinearFactory> MakeDenseLinearFactory(kernels::cpu::ThreadPool* pool);

class DecoderModel : public Decoder {
 public:
  struct Layer {
    std::vector<float> attn_norm, ffn_norm, q_norm, k_norm;
    std::vector<float> sinks;  // gpt-oss: one logit per query head; empty: none
    std::vector<float> attn_post_norm, ffn_post_norm;  // gemma2 / gemma3; empty elsewhere
    std::unique_ptr<backend::Linear> q, k, v, o, gate, up, down;  // gate/up/down: a dense MLP
    std::unique_ptr<backend::Linear> qkv, gate_up;  // phi3: fused instead of q, k, v / gate, up
    std::unique_ptr<MoeBlock> moe;                                 // or a sparse MoE one
    float k_scale = 1.0f, v_scale = 1.0f;  // FP8 KV cache (kv_cache_scales.h)
  };

  // `store` must outlive the model (weights stay memory-mapped). `kv_format` kFp8E4m3 reads the
  // per-layer k/v scales (missing: 1.0); Forward then needs a cache of that format.
  static absl::StatusOr<std::unique_ptr<DecoderModel>> Load(
      const ModelConfig& config, const io::TensorStore& store, NamingScheme naming,
      LinearFactory& factory, kernels::cpu::ThreadPool* pool,
      runtime::KvCacheFormat kv_format = runtime::KvCacheFormat::kF32);

  runtime::KvCacheFormat kv_cache_format() const override { return kv_format_; }

  const ModelConfig& config() const override { return config_; }
  std::string device() const override { return "cpu"; }
  bool uses_host_kv_storage() const override { return true; }
  const std::vector<Layer>& layers() const { return layers_; }
  const backend::Linear& lm_head() const { return *lm_head_; }

  // Runs one step. Reserves KV blocks for every chunk first (RESOURCE_EXHAUSTED, with nothing
  // changed, when the cache is full), then appends the chunks' K/V. `logits` receives
  // [rows, vocab] in chunk order: every position of all_logits chunks, else the last position of
  // last_logits chunks.
  absl::Status Forward(absl::Span<const SequenceChunk> chunks, runtime::KvCache& cache,
                       std::vector<float>* logits) override;

 private:
  absl::Status EmbedToken(int32_t token, float* out) const;

  ModelConfig config_;
  io::TensorView embedding_;
  std::vector<float> final_norm_;
  std::vector<Layer> layers_;
  std::unique_ptr<backend::Linear> lm_head_;
  std::vector<float> inv_freq_;
  std::vector<float> inv_freq_sliding_;  // gemma3's sliding layers; empty: as inv_freq_
  std::vector<float> inv_freq_long_;     // LongRoPE's long factors; inv_freq_ has the short ones
  kernels::cpu::ThreadPool* pool_ = nullptr;
  runtime::KvCacheFormat kv_format_ = runtime::KvCacheFormat::kF32;
};

}  // namespace tessera::model

#endif  // TESSERA_ENGINE_MODEL_DECODER_MODEL_H_
