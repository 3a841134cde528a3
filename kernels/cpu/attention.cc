#include "kernels/cpu/attention.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "kernels/numeric/fp8.h"
#include "kernels/numeric/half.h"

namespace tessera::kernels::cpu {

namespace {

// One body for the f32, FP8 and 16-bit caches: `decode_k(ptr, i)` / `decode_v(ptr, i)` turn a
// stored element into f32, so every cache type shares the same arithmetic in the same order.
template <typename View, typename DecodeK, typename DecodeV>
void PagedAttentionImpl(const float* q, int64_t heads, const View& kv, int64_t context_len,
                        float scale, int64_t head_begin, int64_t head_end, float* scratch,
                        float* out, const AttentionOptions& options, DecodeK decode_k,
                        DecodeV decode_v) {
  const int64_t d = kv.head_dim;
  const int64_t group = heads / kv.kv_heads;
  const int64_t bt = kv.block_tokens;
  // V row of position t: [kv_heads][block_tokens][head_dim]; K column start of position t, dims
  // bt apart: [kv_heads][head_dim][block_tokens].
  auto at = [&](const auto* const* blocks, int64_t t, int64_t kvh) {
    return blocks[t / bt] + (kvh * bt + t % bt) * d;
  };
  auto k_at = [&](int64_t t, int64_t kvh) { return kv.k_blocks[t / bt] + kvh * d * bt + t % bt; };
  for (int64_t h = head_begin; h < head_end; ++h) {
    const float* qh = q + h * d;
    const int64_t kvh = h / group;
    const int64_t first = std::max<int64_t>(options.first_position, 0);
    const float cap = options.softcap;
    // A sink takes part in the max and adds its exp to the denominator last (transformers'
    // softmax over [scores, sink]).
    const float sink =
        options.sinks != nullptr ? options.sinks[h] : -std::numeric_limits<float>::infinity();
    float max_score = sink;
    for (int64_t t = first; t < context_len; ++t) {
      const auto* k = k_at(t, kvh);
      float dot = 0;
      for (int64_t i = 0; i < d; ++i) dot += qh[i] * decode_k(k, i * bt);
      scratch[t] = dot * scale;
      if (cap > 0) scratch[t] = cap * std::tanh(scratch[t] / cap);
      if (scratch[t] > max_score) max_score = scratch[t];
    }
    float denom = 0;
    for (int64_t t = first; t < context_len; ++t) {
      scratch[t] = std::exp(scratch[t] - max_score);
      denom += scratch[t];
    }
    if (options.sinks != nullptr) denom += std::exp(sink - max_score);
    const float inv = 1.0f / denom;
    float* o = out + h * d;
    for (int64_t i = 0; i < d; ++i) o[i] = 0;
    for (int64_t t = first; t < context_len; ++t) {
      const auto* v = at(kv.v_blocks, t, kvh);
      const float p = scratch[t] * inv;
      for (int64_t i = 0; i < d; ++i) o[i] += p * decode_v(v, i);
    }
  }
}

}  // namespace

void PagedAttention(const float* q, int64_t heads, const PagedKvView& kv, int64_t context_len,
                    float scale, int64_t head_begin, int64_t head_end, float* scratch, float* out,
                    const AttentionOptions& options) {
  auto f32 = [](const float* p, int64_t i) { return p[i]; };
  PagedAttentionImpl(q, heads, kv, context_len, scale, head_begin, head_end, scratch, out, options,
                     f32, f32);
}

void PagedAttentionFp8(const float* q, int64_t heads, const PagedKvViewFp8& kv, int64_t context_len,
                       float scale, int64_t head_begin, int64_t head_end, float* scratch,
                       float* out, const AttentionOptions& options) {
  auto k8 = [&](const uint8_t* p, int64_t i) { return numeric::DecodeE4m3(p[i]) * kv.k_scale; };
  auto v8 = [&](const uint8_t* p, int64_t i) { return numeric::DecodeE4m3(p[i]) * kv.v_scale; };
  PagedAttentionImpl(q, heads, kv, context_len, scale, head_begin, head_end, scratch, out, options,
                     k8, v8);
}

void EncodeKvFp8(const float* x, int64_t count, float scale, uint8_t* out) {
  for (int64_t i = 0; i < count; ++i) out[i] = numeric::EncodeE4m3(x[i] / scale);
}

void PagedAttention16(const float* q, int64_t heads, const PagedKvView16& kv, int64_t context_len,
                      float scale, int64_t head_begin, int64_t head_end, float* scratch, float* out,
                      const AttentionOptions& options) {
  if (kv.half == KvHalf::kBf16) {
    auto bf16 = [](const uint16_t* p, int64_t i) { return numeric::Bf16ToFloat(p[i]); };
    PagedAttentionImpl(q, heads, kv, context_len, scale, head_begin, head_end, scratch, out,
                       options, bf16, bf16);
    return;
  }
  auto f16 = [](const uint16_t* p, int64_t i) { return numeric::HalfToFloat(p[i]); };
  PagedAttentionImpl(q, heads, kv, context_len, scale, head_begin, head_end, scratch, out, options,
                     f16, f16);
}

void EncodeKv16(const float* x, int64_t count, KvHalf half, uint16_t* out) {
  if (half == KvHalf::kBf16) {
    for (int64_t i = 0; i < count; ++i) out[i] = numeric::FloatToBf16(x[i]);
    return;
  }
  for (int64_t i = 0; i < count; ++i) out[i] = numeric::FloatToHalf(x[i]);
}

}  // namespace tessera::kernels::cpu
