// The attention half of a CPU decoder layer for one batched step: each new row's K and V stored
// into its sequence's paged blocks (f32, f16 / bf16 or FP8 E4M3, kernels/cpu/attention.h), then
// every (row, head) attending over its own sequence — through the layer's sliding window and
// soft cap where it has them — split across the thread pool. Split from DecoderModel so the
// layer loop reads as the architecture does.
#ifndef TESSERA_ENGINE_MODEL_DECODER_ATTENTION_H_
#define TESSERA_ENGINE_MODEL_DECODER_ATTENTION_H_

#include <cstdint>
#include <vector>

#include "absl/types/span.h"
#include "engine/model/decoder.h"
#include "engine/model/model_config.h"
#include "engine/runtime/kv_cache.h"
#include "kernels/cpu/thread_pool.h"

namespace tessera::model {

// Which sequence and position each new row of a step is (rows in chunk order).
struct StepRows {
  absl::Span<const SequenceChunk> chunks;
  std::vector<int> chunk;         // row -> index into chunks
  std::vector<int64_t> position;  // row -> its position in its sequence
  int64_t max_context = 0;        // the longest row's context: max position + 1
  int64_t size() const { return static_cast<int64_t>(position.size()); }
};

// One layer's attention parameters.
struct LayerAttention {
  int64_t layer = 0;
  float scale = 1.0f;    // on q·k
  float softcap = 0.0f;  // 0: none
  int64_t window = 0;    // sliding window in positions; 0: the whole context
  float k_scale = 1.0f;  // FP8 cache
  float v_scale = 1.0f;
  const float* sinks = nullptr;  // [heads] attention sink logits (gpt-oss); null: none
};

// Stores rows' K and V (k, v: [rows, kv_dim], RoPE applied) at their positions. Blocks must be
// reserved (ValidateChunksAndReserve).
void AppendKv(const ModelConfig& c, const StepRows& rows, const LayerAttention& layer,
              const float* k, const float* v, runtime::KvCache& cache);

// attn [rows, q_dim]: each row's heads attending over positions up to its own (inclusive) of its
// sequence, within the window. q: [rows, q_dim]. pool may be null.
void Attend(const ModelConfig& c, const StepRows& rows, const LayerAttention& layer, const float* q,
            runtime::KvCache& cache, kernels::cpu::ThreadPool* pool, float* attn);

}  // namespace tessera::model

#endif  // TESSERA_ENGINE_MODEL_DECODER_ATTENTION_H_
