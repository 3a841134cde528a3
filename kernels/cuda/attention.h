// Causal attention over the paged KV cache on the GPU, for decode and prefill alike: every query
// token t attends to positions [0, context_lens[t]) of its own sequence, so a decode step is the
// case of one token per sequence and a prefill chunk passes context_lens = position + 1 per
// token (no tiled tensor-core prefill kernel yet; the query tokens of a chunk run in parallel).
// The device cache shares runtime::KvCache's block ids (the allocator) but keeps its own layout:
// one pool of blocks, each holding, for every layer, K then V as [block_tokens, kv_heads,
// head_dim] f32 (token-major; the CPU cache's blocks are head-major with K transposed), addressed
// through per-sequence block tables. Grouped-query attention maps query head h to KV head h / (heads / kv_heads), as the CPU
// kernel (kernels/cpu/attention.h) does. Softmax uses an online (streaming) max per warp, merged
// across warps at the end, so no scratch of context length is needed.
#ifndef TESSERA_KERNELS_CUDA_ATTENTION_H_
#define TESSERA_KERNELS_CUDA_ATTENTION_H_

#include <cuda_runtime_api.h>

#include <cstdint>

#include "absl/status/status.h"

namespace tessera::kernels::cuda {

inline constexpr int64_t kMaxAttentionHeadDim = 256;

// One layer's view of the device KV pool (all offsets in floats).
struct DevicePagedKv {
  float* base = nullptr;       // block 0, layer 0, K
  int64_t block_stride = 0;    // from block b to block b + 1 (num_layers * 2 * block_floats)
  int64_t layer_offset = 0;    // from a block's start to this layer's K (layer * 2 * block_floats)
  int64_t v_offset = 0;        // from a layer's K to its V (block_floats)
  int64_t block_tokens = 0;
  int64_t kv_heads = 0;
  int64_t head_dim = 0;
};

// Which sequence and how much context each query token has. Device pointers.
struct AttentionBatch {
  const int32_t* block_tables = nullptr;  // [num_seqs, max_blocks_per_seq]
  int64_t max_blocks_per_seq = 0;
  const int32_t* token_seq = nullptr;     // [tokens] sequence of each token
  const int32_t* positions = nullptr;     // [tokens] position of each token (AppendKv)
  const int32_t* context_lens = nullptr;  // [tokens] attend to [0, len) (PagedAttention)
};

// Writes k, v ([tokens, kv_heads, head_dim]) at positions[t] of sequence token_seq[t].
absl::Status AppendKv(const float* k, const float* v, int64_t tokens, const DevicePagedKv& kv,
                      const AttentionBatch& batch, cudaStream_t stream);

// out[t, h, :] = softmax(scale * q[t, h, :] · K[0..len)ᵀ) · V[0..len) for q, out
// [tokens, heads, head_dim]. head_dim must be at most 256 (any value: lanes past it idle); heads
// a multiple of kv_heads. A token with context length 0 gets zeros. With `out_bf16`, the output
// is also stored rounded to bf16 there (the input of a bf16 output projection: one launch less).
absl::Status PagedAttention(const float* q, int64_t tokens, int64_t heads,
                            const DevicePagedKv& kv, const AttentionBatch& batch, float scale,
                            float* out, uint16_t* out_bf16, cudaStream_t stream);

}  // namespace tessera::kernels::cuda

#endif  // TESSERA_KERNELS_CUDA_ATTENTION_H_
