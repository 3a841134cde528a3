#include "engine/model/decoder_attention.h"

#include <algorithm>
#include <memory>

#include "kernels/cpu/attention.h"
#include "kernels/cpu/fast/fp8_act_quant.h"
#include "kernels/cpu/fast/half_convert.h"
#include "kernels/cpu/fast/paged_attention.h"

namespace tessera::model {
namespace {

namespace kc = kernels::cpu;
namespace kf = kernels::cpu::fast;

// One position's K row (kv_dim elements, heads in order) stored into a transposed K block
// ([kv_heads][head_dim][block_tokens], kernels/cpu/attention.h): element j at j · block_tokens +
// slot.
template <typename T>
void StoreKColumn(const T* k, int64_t kv_dim, int64_t block_tokens, int64_t slot, T* block) {
  for (int64_t j = 0; j < kv_dim; ++j) block[j * block_tokens + slot] = k[j];
}

kc::KvHalf HalfOf(runtime::KvCacheFormat f) {
  return f == runtime::KvCacheFormat::kBf16 ? kc::KvHalf::kBf16 : kc::KvHalf::kF16;
}

}  // namespace

void AppendKv(const ModelConfig& c, const StepRows& rows, const LayerAttention& layer,
              const float* k, const float* v, runtime::KvCache& cache) {
  const int64_t KV = c.kv_dim(), d = c.head_dim, bt = cache.block_tokens();
  const int64_t li = layer.layer;
  const runtime::KvCacheFormat format = cache.format();
  const auto encode16 =
      HalfOf(format) == kc::KvHalf::kBf16 ? kf::ConvertF32ToBf16 : kf::ConvertF32ToF16;
  // One position's K encoded before it is stored as a column of a transposed K block.
  std::vector<uint8_t> k8(format == runtime::KvCacheFormat::kFp8E4m3 ? KV : 0);
  std::vector<uint16_t> k16(
      format == runtime::KvCacheFormat::kF16 || format == runtime::KvCacheFormat::kBf16 ? KV : 0);
  for (int64_t r = 0; r < rows.size(); ++r) {
    const runtime::SequenceKv& seq = *rows.chunks[rows.chunk[r]].kv;
    const int32_t block = seq.blocks[rows.position[r] / bt];
    const int64_t slot = rows.position[r] % bt;
    const float* kr = k + r * KV;
    const float* vr = v + r * KV;
    // Head-major blocks (kernels/cpu/attention.h): V [kv_heads][block_tokens][head_dim], so each
    // KV head's row of this position goes to its own run; K transposed,
    // [kv_heads][head_dim][block_tokens], so this position is a column.
    switch (format) {
      case runtime::KvCacheFormat::kFp8E4m3:
        // kc::EncodeKvFp8's bytes, vectorized (fp8_act_quant.h).
        kf::FastEncodeE4m3Divide(kr, KV, layer.k_scale, k8.data());
        StoreKColumn(k8.data(), KV, bt, slot, cache.KBlockFp8(li, block));
        for (int64_t kvh = 0; kvh < c.num_kv_heads; ++kvh) {
          kf::FastEncodeE4m3Divide(vr + kvh * d, d, layer.v_scale,
                                   cache.VBlockFp8(li, block) + (kvh * bt + slot) * d);
        }
        break;
      case runtime::KvCacheFormat::kF16:
      case runtime::KvCacheFormat::kBf16:
        // kc::EncodeKv16's bits, vectorized (half_convert.h).
        encode16(kr, KV, k16.data());
        StoreKColumn(k16.data(), KV, bt, slot, cache.KBlock16(li, block));
        for (int64_t kvh = 0; kvh < c.num_kv_heads; ++kvh) {
          encode16(vr + kvh * d, d, cache.VBlock16(li, block) + (kvh * bt + slot) * d);
        }
        break;
      case runtime::KvCacheFormat::kF32:
        StoreKColumn(kr, KV, bt, slot, cache.KBlock(li, block));
        for (int64_t kvh = 0; kvh < c.num_kv_heads; ++kvh) {
          std::copy(vr + kvh * d, vr + (kvh + 1) * d,
                    cache.VBlock(li, block) + (kvh * bt + slot) * d);
        }
        break;
    }
  }
}

void Attend(const ModelConfig& c, const StepRows& rows, const LayerAttention& layer, const float* q,
            runtime::KvCache& cache, kc::ThreadPool* pool, float* attn) {
  const int64_t Q = c.q_dim(), total = rows.size(), li = layer.layer, max_ctx = rows.max_context;
  const kc::KvHalf kv_half = HalfOf(cache.format());
  // Each (row, head) is independent; split rows × heads across threads. A task's heads of one
  // row share that row's block table and run as one call.
  auto attend = [&](int64_t b, int64_t e) {
    // Rows for one run of heads sharing a KV head, uninitialized (each row is written first).
    const int64_t run_heads = std::min<int64_t>(e - b, c.num_heads / c.num_kv_heads);
    auto scratch = std::make_unique_for_overwrite<float[]>(
        static_cast<size_t>(kf::FastAttentionScratch(max_ctx, run_heads)));
    // The sequence's block table as K and V block pointers of the cache's element type.
    std::vector<const float*> kb, vb;
    std::vector<const uint16_t*> kb16, vb16;
    std::vector<const uint8_t*> kb8, vb8;
    auto table = [](const runtime::SequenceKv& seq, auto& k, auto& v, auto k_block, auto v_block) {
      k.clear();
      v.clear();
      for (int32_t blk : seq.blocks) {
        k.push_back(k_block(blk));
        v.push_back(v_block(blk));
      }
    };
    for (int64_t idx = b; idx < e;) {
      const int64_t r = idx / c.num_heads, head = idx % c.num_heads;
      const int64_t head_end = std::min(c.num_heads, head + (e - idx));
      idx += head_end - head;
      const runtime::SequenceKv& seq = *rows.chunks[rows.chunk[r]].kv;
      const float* qr = q + r * Q;
      float* out = attn + r * Q;
      const int64_t ctx = rows.position[r] + 1, bt = cache.block_tokens();
      const kc::AttentionOptions options{
          layer.window > 0 ? std::max<int64_t>(0, ctx - layer.window) : 0, layer.softcap,
          layer.sinks};
      switch (cache.format()) {
        case runtime::KvCacheFormat::kFp8E4m3: {  // decoded on the fly with this layer's scales
          table(
              seq, kb8, vb8, [&](int32_t x) { return cache.KBlockFp8(li, x); },
              [&](int32_t x) { return cache.VBlockFp8(li, x); });
          const kc::PagedKvViewFp8 view{kb8.data(), vb8.data(),    bt,           c.num_kv_heads,
                                        c.head_dim, layer.k_scale, layer.v_scale};
          kf::FastPagedAttentionFp8(qr, c.num_heads, view, ctx, layer.scale, head, head_end,
                                    scratch.get(), out, options);
          break;
        }
        case runtime::KvCacheFormat::kF16:
        case runtime::KvCacheFormat::kBf16: {
          table(
              seq, kb16, vb16, [&](int32_t x) { return cache.KBlock16(li, x); },
              [&](int32_t x) { return cache.VBlock16(li, x); });
          const kc::PagedKvView16 view{kb16.data(),    vb16.data(), bt,
                                       c.num_kv_heads, c.head_dim,  kv_half};
          kf::FastPagedAttention16(qr, c.num_heads, view, ctx, layer.scale, head, head_end,
                                   scratch.get(), out, options);
          break;
        }
        case runtime::KvCacheFormat::kF32: {
          table(
              seq, kb, vb, [&](int32_t x) { return cache.KBlock(li, x); },
              [&](int32_t x) { return cache.VBlock(li, x); });
          const kc::PagedKvView view{kb.data(), vb.data(), bt, c.num_kv_heads, c.head_dim};
          kf::FastPagedAttention(qr, c.num_heads, view, ctx, layer.scale, head, head_end,
                                 scratch.get(), out, options);
          break;
        }
      }
    }
  };
  if (pool != nullptr) {
    // Chunks of whole GQA groups where there are enough to keep every thread busy: a group's
    // heads share one read of its K and V (FastPagedAttention takes each K row once for all of
    // them, and V once per block of heads, tile by tile).
    const int64_t group = c.num_heads / c.num_kv_heads;
    const bool whole_groups = total * c.num_kv_heads >= pool->size();
    pool->ParallelFor(total * c.num_heads, whole_groups ? group : 1, attend);
  } else {
    attend(0, total * c.num_heads);
  }
}

}  // namespace tessera::model
