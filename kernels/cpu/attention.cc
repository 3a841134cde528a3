#include "kernels/cpu/attention.h"

#include <cmath>
#include <limits>

#include "kernels/numeric/fp8.h"

namespace tessera::kernels::cpu {

void PagedAttention(const float* q, int64_t heads, const PagedKvView& kv, int64_t context_len,
                    float scale, int64_t head_begin, int64_t head_end, float* scratch, float* out) {
  const int64_t d = kv.head_dim;
  const int64_t group = heads / kv.kv_heads;
  const int64_t token_stride = kv.kv_heads * d;
  for (int64_t h = head_begin; h < head_end; ++h) {
    const float* qh = q + h * d;
    const int64_t kvh = h / group;
    float max_score = -std::numeric_limits<float>::infinity();
    for (int64_t t = 0; t < context_len; ++t) {
      const float* k = kv.k_blocks[t / kv.block_tokens] + (t % kv.block_tokens) * token_stride + kvh * d;
      float dot = 0;
      for (int64_t i = 0; i < d; ++i) dot += qh[i] * k[i];
      scratch[t] = dot * scale;
      if (scratch[t] > max_score) max_score = scratch[t];
    }
    float denom = 0;
    for (int64_t t = 0; t < context_len; ++t) {
      scratch[t] = std::exp(scratch[t] - max_score);
      denom += scratch[t];
    }
    const float inv = 1.0f / denom;
    float* o = out + h * d;
    for (int64_t i = 0; i < d; ++i) o[i] = 0;
    for (int64_t t = 0; t < context_len; ++t) {
      const float* v = kv.v_blocks[t / kv.block_tokens] + (t % kv.block_tokens) * token_stride + kvh * d;
      const float p = scratch[t] * inv;
      for (int64_t i = 0; i < d; ++i) o[i] += p * v[i];
    }
  }
}

void PagedAttentionFp8(const float* q, int64_t heads, const PagedKvViewFp8& kv, int64_t context_len,
                       float scale, int64_t head_begin, int64_t head_end, float* scratch, float* out) {
  const int64_t d = kv.head_dim;
  const int64_t group = heads / kv.kv_heads;
  const int64_t token_stride = kv.kv_heads * d;
  for (int64_t h = head_begin; h < head_end; ++h) {
    const float* qh = q + h * d;
    const int64_t kvh = h / group;
    float max_score = -std::numeric_limits<float>::infinity();
    for (int64_t t = 0; t < context_len; ++t) {
      const uint8_t* k = kv.k_blocks[t / kv.block_tokens] + (t % kv.block_tokens) * token_stride + kvh * d;
      float dot = 0;
      for (int64_t i = 0; i < d; ++i) dot += qh[i] * (numeric::DecodeE4m3(k[i]) * kv.k_scale);
      scratch[t] = dot * scale;
      if (scratch[t] > max_score) max_score = scratch[t];
    }
    float denom = 0;
    for (int64_t t = 0; t < context_len; ++t) {
      scratch[t] = std::exp(scratch[t] - max_score);
      denom += scratch[t];
    }
    const float inv = 1.0f / denom;
    float* o = out + h * d;
    for (int64_t i = 0; i < d; ++i) o[i] = 0;
    for (int64_t t = 0; t < context_len; ++t) {
      const uint8_t* v = kv.v_blocks[t / kv.block_tokens] + (t % kv.block_tokens) * token_stride + kvh * d;
      const float p = scratch[t] * inv;
      for (int64_t i = 0; i < d; ++i) o[i] += p * (numeric::DecodeE4m3(v[i]) * kv.v_scale);
    }
  }
}

void EncodeKvFp8(const float* x, int64_t count, float scale, uint8_t* out) {
  for (int64_t i = 0; i < count; ++i) out[i] = numeric::EncodeE4m3(x[i] / scale);
}

}  // namespace tessera::kernels::cpu
