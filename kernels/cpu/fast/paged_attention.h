// Paged attention of one query token (decode, and each row of a prefill chunk) vectorized with
// Highway's runtime dispatch: the same contract and the same formulas as the scalar
// kernels/cpu/attention.h (scores q·k times scale, softmax with the max subtracted, then
// Σ p·v), with the dot products, the exponentials and the weighted V sum over vector lanes. The
// scalar kernel's one-lane dependency chains (64 multiply-adds per score, one exp per position)
// made attention the second-largest cost of a batched decode step (bench/README.md). The query
// heads of one call that share a KV head (a GQA group) go through the context together: each K
// vector (one dim of up to 16 consecutive positions of a transposed K block) is read, and for
// FP8 / f16 / bf16 widened, once for all of them, the scores come out one row per head with
// positions in lanes (no sums across lanes; the softmax reduces each row once), and the V rows
// are read once per block of heads, tile by tile.
//
// Order: every output depends only on q, the sequence's own K/V, context_len and the options
// (window start, soft cap, sinks), summed in an order fixed by head_dim and those, so a row's
// result is the same whichever rows share its batch (the server's concurrent-equals-sequential
// guarantee). The order differs from the scalar kernel's, so results agree with it to rounding
// (tests/kernels/cpu/paged_attention_test.cc), not bit for bit; FP8 elements decode to exactly
// DecodeE4m3(b) · scale, as there.
#ifndef TESSERA_KERNELS_CPU_FAST_PAGED_ATTENTION_H_
#define TESSERA_KERNELS_CPU_FAST_PAGED_ATTENTION_H_

#include <cstdint>

#include "kernels/cpu/attention.h"

namespace tessera::kernels::cpu::fast {

// Query heads that go through the context together while sharing a KV head (GQA groups larger
// than this run in parts; 8 on targets narrower than AVX-512).
inline constexpr int64_t kAttentionMaxGroupRun = 16;
// Score rows hold whole vectors of positions: context lengths round up to this.
inline constexpr int64_t kAttentionScoreAlign = 16;

// Floats between two heads' rows of scores.
inline int64_t FastAttentionScoreStride(int64_t context_len) {
  return (context_len + kAttentionScoreAlign - 1) / kAttentionScoreAlign * kAttentionScoreAlign;
}

// Floats of scratch FastPagedAttention needs for calls of up to `heads` query heads: a row of
// scores per head of a run (positions in lanes), the run rounded up to 4 heads.
inline int64_t FastAttentionScratch(int64_t context_len, int64_t heads) {
  const int64_t run = heads < kAttentionMaxGroupRun ? heads : kAttentionMaxGroupRun;
  return (run + 3) / 4 * 4 * FastAttentionScoreStride(context_len);
}

// As PagedAttention: q [heads, head_dim]; attends to positions [options.first_position,
// context_len) (K blocks wholly before it are not read; scores soft-capped as there); writes query
// heads [head_begin, head_end) of out [heads, head_dim]. scratch: FastAttentionScratch(context_len,
// n) floats, n the most heads of one GQA group inside [head_begin, head_end) (the call works
// through one group's heads at a time; head_end - head_begin always suffices).
void FastPagedAttention(const float* q, int64_t heads, const PagedKvView& kv, int64_t context_len,
                        float scale, int64_t head_begin, int64_t head_end, float* scratch,
                        float* out, const AttentionOptions& options = {});

// As PagedAttentionFp8 (E4M3 blocks, element = DecodeE4m3(byte) · k_scale or v_scale).
void FastPagedAttentionFp8(const float* q, int64_t heads, const PagedKvViewFp8& kv,
                           int64_t context_len, float scale, int64_t head_begin, int64_t head_end,
                           float* scratch, float* out, const AttentionOptions& options = {});

// As PagedAttention16 (f16 or bf16 blocks, widened exactly).
void FastPagedAttention16(const float* q, int64_t heads, const PagedKvView16& kv,
                          int64_t context_len, float scale, int64_t head_begin, int64_t head_end,
                          float* scratch, float* out, const AttentionOptions& options = {});

}  // namespace tessera::kernels::cpu::fast

#endif  // TESSERA_KERNELS_CPU_FAST_PAGED_ATTENTION_H_
