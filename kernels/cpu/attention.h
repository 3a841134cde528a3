// Causal attention of one query token over a paged KV cache on the CPU. K and V live in
// fixed-size blocks addressed through a per-sequence block table, the layout the scheduler
// allocates; grouped-query attention maps query head h to KV head h / (heads / kv_heads). Blocks
// are head-major, so attention's walk over one KV head reads one contiguous run per block (with
// all heads' rows interleaved per position it read a quarter of every 1 KiB at TinyLlama's shape:
// BM_PagedAttention f32 ctx 4096 712 -> 460 us): a V block is [kv_heads, block_tokens, head_dim]
// and a K block is transposed, [kv_heads, head_dim, block_tokens], so that consecutive positions
// of one dim are one vector load and the fast kernel computes scores with positions in lanes (no
// sums across lanes). Softmax runs in float with the max subtracted, in one fixed order.
// AttentionOptions adds what sliding-window, Gemma 2 and gpt-oss models need: a first attended
// position (the window's start; the cache still holds the earlier positions, which full-attention
// layers of the same model read), a tanh soft cap on the scores and per-head attention sinks.
#ifndef TESSERA_KERNELS_CPU_ATTENTION_H_
#define TESSERA_KERNELS_CPU_ATTENTION_H_

#include <cstdint>

namespace tessera::kernels::cpu {

// Beyond plain causal attention over [0, context_len).
struct AttentionOptions {
  // Positions [first_position, context_len) are attended (a sliding window of W tokens at query
  // position p: first_position = max(0, p + 1 - W), as transformers' and llama.cpp's masks).
  int64_t first_position = 0;
  // Scores (q·k · scale) become softcap · tanh(score / softcap) before the softmax (Gemma 2's
  // attn_logit_softcapping); 0: none.
  float softcap = 0.0f;
  // gpt-oss's attention sinks: sinks[h] is query head h's learned logit, one more entry in its
  // softmax's denominator (after the max is taken over it too) whose probability is dropped, so a
  // head can attend to nothing; null: none. Indexed by the head's absolute number, not by its
  // place in [head_begin, head_end).
  const float* sinks = nullptr;
};

struct PagedKvView {
  const float* const* k_blocks;  // [num_blocks] pointers to [kv_heads, head_dim, block_tokens]
                                 // (v_blocks: [kv_heads, block_tokens, head_dim])
  const float* const* v_blocks;
  int64_t block_tokens;
  int64_t kv_heads;
  int64_t head_dim;
};

// q: [heads, head_dim]; attends to KV positions [options.first_position, context_len) (which
// must not be empty); out: [heads, head_dim]. Only query heads [head_begin, head_end) are
// computed, so callers can split heads across threads. scratch must hold context_len floats.
void PagedAttention(const float* q, int64_t heads, const PagedKvView& kv, int64_t context_len,
                    float scale, int64_t head_begin, int64_t head_end, float* scratch, float* out,
                    const AttentionOptions& options = {});

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
                       float scale, int64_t head_begin, int64_t head_end, float* scratch,
                       float* out, const AttentionOptions& options = {});

// Stores `count` values as sat_e4m3(x / scale) (the division, as vLLM's scaled_vec_conversion).
void EncodeKvFp8(const float* x, int64_t count, float scale, uint8_t* out);

// 16-bit blocks, llama.cpp's default KV type (f16) and vLLM's for bf16 models: elements are IEEE
// binary16 or bfloat16 bit patterns (kernels/numeric/half.h), rounded to nearest even once when
// stored and decoded exactly, so attention is PagedAttention's arithmetic, in its order, on the
// rounded values. Half the bytes of f32 per position, no scales.
enum class KvHalf { kF16, kBf16 };

struct PagedKvView16 {
  const uint16_t* const* k_blocks;
  const uint16_t* const* v_blocks;
  int64_t block_tokens;
  int64_t kv_heads;
  int64_t head_dim;
  KvHalf half;
};

void PagedAttention16(const float* q, int64_t heads, const PagedKvView16& kv, int64_t context_len,
                      float scale, int64_t head_begin, int64_t head_end, float* scratch, float* out,
                      const AttentionOptions& options = {});

// Stores `count` values rounded to the 16-bit format (RNE, IEEE overflow to inf for f16).
void EncodeKv16(const float* x, int64_t count, KvHalf half, uint16_t* out);

}  // namespace tessera::kernels::cpu

#endif  // TESSERA_KERNELS_CPU_ATTENTION_H_
