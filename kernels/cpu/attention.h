// Causal attention of one query token over a paged KV cache on the CPU. K and V live in
// fixed-size blocks ([block_tokens, kv_heads, head_dim] each) addressed through a per-sequence
// block table, the layout the scheduler allocates; grouped-query attention maps query head h to
// KV head h / (heads / kv_heads). Softmax runs in float with the max subtracted, in one fixed order.
#ifndef TESSERA_KERNELS_CPU_ATTENTION_H_
#define TESSERA_KERNELS_CPU_ATTENTION_H_

#include <cstdint>

namespace tessera::kernels::cpu {

struct PagedKvView {
  const float* const* k_blocks;  // [num_blocks] pointers to [block_tokens, kv_heads, head_dim]
  const float* const* v_blocks;
  int64_t block_tokens;
  int64_t kv_heads;
  int64_t head_dim;
};

// q: [heads, head_dim]; attends to KV positions [0, context_len); out: [heads, head_dim]. Only
// query heads [head_begin, head_end) are computed, so callers can split heads across threads.
// scratch must hold context_len floats.
void PagedAttention(const float* q, int64_t heads, const PagedKvView& kv, int64_t context_len,
                    float scale, int64_t head_begin, int64_t head_end, float* scratch, float* out);

// FP8 E4M3 blocks (quant-formats.md §10): element = fp32(byte) * k_scale (v_scale for V), decoded
// on the fly; otherwise the same arithmetic, in the same order, as PagedAttention.
struct PagedKvViewFp8 {
  const uint8_t* const* k_blocks;
  const uint8_t* const* v_blocks;
  int64_t block_tokens;
  int64_t kv_heads;
  int64_t head_dim;
  float k_scale;
  float v_scale;
};

void PagedAttentionFp8(const float* q, int64_t heads, const PagedKvViewFp8& kv, int64_t context_len,
                       float scale, int64_t head_begin, int64_t head_end, float* scratch, float* out);

// Stores `count` values as sat_e4m3(x / scale) (the division, as vLLM's scaled_vec_conversion).
void EncodeKvFp8(const float* x, int64_t count, float scale, uint8_t* out);

}  // namespace tessera::kernels::cpu

#endif  // TESSERA_KERNELS_CPU_ATTENTION_H_
