// Highway implementation of paged_attention.h; compiled once per x86 target by foreach_target.h.
#include "kernels/cpu/fast/paged_attention.h"

#include <algorithm>
#include <cstring>
#include <limits>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/cpu/fast/paged_attention.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
// After highway.h, which it needs (re-included per target).
#include "hwy/contrib/math/math-inl.h"

HWY_BEFORE_NAMESPACE();
namespace tessera::kernels::cpu::fast {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
// Internal linkage: other fast kernels define same-named helpers in the same target namespaces.
namespace {

using DF = hn::ScalableTag<float>;
using VF = hn::Vec<DF>;
constexpr int64_t kN = static_cast<int64_t>(hn::MaxLanes(DF()));
static_assert(kN <= 16, "FastAttentionScratchRow rounds to 16 lanes");
// Vectors of V accumulated in registers per pass over the context (head_dim 64 is one pass on
// AVX-512, two on AVX2).
constexpr int kPvChunks = 4;

// Row readers: Load(p, i) is elements [i, i + kN) of a K or V row as f32; Tail(p, i, rem) the
// last rem < kN of them, zeros after.
struct F32Reader {
  using Elem = float;
  HWY_INLINE VF Load(DF d, const float* p, int64_t i) const { return hn::LoadU(d, p + i); }
  HWY_INLINE VF Tail(DF d, const float* p, int64_t i, int64_t rem) const {
    HWY_ALIGN float t[kN] = {};
    std::memcpy(t, p + i, static_cast<size_t>(rem) * sizeof(float));
    return hn::Load(d, t);
  }
};

// E4M3: the byte sign-extended and shifted left by 20 has the sign in bit 31 and exponent and
// mantissa where an f32 with exponent bias 127 − 120 has them; the mask drops the sign copies, the
// multiply by 2^120 rebiases to the exact E4M3 value (subnormal codes pass through f32 subnormals,
// exact unless the process sets MXCSR.DAZ, which tessera never does) and the multiply by the scale
// is the one rounding: DecodeE4m3(b) · scale, as the scalar kernel computes it, for any finite
// scale (2^120 · scale in one constant would overflow for scales ≥ 256). The NaN codes (0x7F,
// 0xFF) are selected apart.
struct Fp8Reader {
  using Elem = uint8_t;
  float scale;
  HWY_INLINE VF FromBytes(DF d, const uint8_t* p) const {
    const hn::RebindToSigned<DF> di;
    const hn::Rebind<int8_t, DF> d8;
    const auto v = hn::PromoteTo(di, hn::LoadU(d8, reinterpret_cast<const int8_t*>(p)));
    const auto bits = hn::And(hn::ShiftLeft<20>(v), hn::Set(di, static_cast<int32_t>(0x87F00000u)));
    constexpr float kTwoTo120 = 1.329227995784916e36f;
    const VF value =
        hn::Mul(hn::Mul(hn::BitCast(d, bits), hn::Set(d, kTwoTo120)), hn::Set(d, scale));
    const auto nan = hn::RebindMask(d, hn::Eq(hn::And(v, hn::Set(di, 0x7F)), hn::Set(di, 0x7F)));
    return hn::IfThenElse(nan, hn::Set(d, std::numeric_limits<float>::quiet_NaN()), value);
  }
  HWY_INLINE VF Load(DF d, const uint8_t* p, int64_t i) const { return FromBytes(d, p + i); }
  HWY_INLINE VF Tail(DF d, const uint8_t* p, int64_t i, int64_t rem) const {
    uint8_t t[kN] = {};
    std::memcpy(t, p + i, static_cast<size_t>(rem));
    return FromBytes(d, t);
  }
};

// The blocks of one sequence for one KV head: position t is row t % block_tokens of block
// t / block_tokens, walked block by block (one division per block).
template <typename Elem>
struct KvRows {
  const Elem* const* blocks;
  int64_t block_tokens, token_stride, head_offset;
  // f(t, row of position t) for t in [t0, t1).
  template <typename F>
  HWY_INLINE void ForEach(int64_t t0, int64_t t1, F&& f) const {
    for (int64_t t = t0; t < t1;) {
      const int64_t s0 = t % block_tokens;
      const Elem* row = blocks[t / block_tokens] + head_offset;
      const int64_t n = std::min(block_tokens - s0, t1 - t);
      for (int64_t s = s0; s < s0 + n; ++s, ++t) f(t, row + s * token_stride);
    }
  }
};

// Positions per context tile: the query heads that share a KV head take each tile in turn, so the
// tile's K (or V) rows come from DRAM once and from L2 for the others (64 KiB of f32 K per tile
// at head_dim 64). Per head the arithmetic and its order are those of an untiled pass.
constexpr int64_t kTileTokens = 256;

// scores[t] = (q · k_t) · scale for t in [t0, t1): lanes of one accumulator over the head_dim
// chunks, then their sum.
template <typename Reader>
void Scores(DF d, const float* qh, int64_t head_dim, const KvRows<typename Reader::Elem>& k,
            int64_t t0, int64_t t1, float scale, const Reader& reader, float* scores) {
  const int64_t full = head_dim / kN * kN, rem = head_dim - full;
  VF q_tail = hn::Zero(d);
  if (rem > 0) q_tail = F32Reader().Tail(d, qh, full, rem);
  k.ForEach(t0, t1, [&](int64_t t, const typename Reader::Elem* row) {
    VF acc = hn::Zero(d);
    for (int64_t i = 0; i < full; i += kN)
      acc = hn::MulAdd(hn::LoadU(d, qh + i), reader.Load(d, row, i), acc);
    if (rem > 0) acc = hn::MulAdd(q_tail, reader.Tail(d, row, full, rem), acc);
    scores[t] = hn::GetLane(hn::SumOfLanes(d, acc)) * scale;
  });
}

// Highway's Exp maps NaN to 0 (its range check fails); a NaN in the cache must reach the output
// as it does through std::exp in the scalar kernel.
HWY_INLINE VF ExpKeepNan(DF d, VF x) { return hn::IfThenElse(hn::IsNaN(x), x, hn::Exp(d, x)); }

// scores[t] = exp(scores[t] − max); returns 1 / Σ.
float Softmax(DF d, int64_t context_len, float* scores) {
  const int64_t full = context_len / kN * kN, rem = context_len - full;
  VF vmax = hn::Set(d, -std::numeric_limits<float>::infinity());
  for (int64_t t = 0; t < full; t += kN) vmax = hn::Max(vmax, hn::LoadU(d, scores + t));
  float max_score = hn::GetLane(hn::MaxOfLanes(d, vmax));
  for (int64_t t = full; t < context_len; ++t) max_score = std::max(max_score, scores[t]);
  const VF m = hn::Set(d, max_score);
  VF sum = hn::Zero(d);
  for (int64_t t = 0; t < full; t += kN) {
    const VF e = ExpKeepNan(d, hn::Sub(hn::LoadU(d, scores + t), m));
    hn::StoreU(e, d, scores + t);
    sum = hn::Add(sum, e);
  }
  if (rem > 0) {
    // A scores row holds whole vectors (FastAttentionScratchRow): lanes past the context are
    // computed, stored there and masked out of the sum.
    const VF e = hn::IfThenElseZero(hn::FirstN(d, static_cast<size_t>(rem)),
                                    ExpKeepNan(d, hn::Sub(hn::LoadU(d, scores + full), m)));
    hn::StoreU(e, d, scores + full);
    sum = hn::Add(sum, e);
  }
  return 1.0f / hn::GetLane(hn::SumOfLanes(d, sum));
}

// out[c0, c0 + NF·kN (+ tail)) += Σ_{t in [t0, t1)} (p_t · inv) · v_t over the same lanes (out
// starts from zero when t0 is 0), NF full vectors plus a partial one of `tail` lanes when
// tail > 0, kept in registers across the tile; storing and reloading between tiles is exact.
template <int NF, typename Reader>
void WeightedV(DF d, const KvRows<typename Reader::Elem>& v, int64_t t0, int64_t t1, const float* p,
               float inv, const Reader& reader, int64_t c0, int64_t tail, float* out) {
  VF acc[NF + 1];
  HWY_ALIGN float part[kN] = {};
  for (int j = 0; j < NF; ++j) acc[j] = t0 == 0 ? hn::Zero(d) : hn::LoadU(d, out + c0 + j * kN);
  if (tail > 0 && t0 != 0) std::memcpy(part, out + c0 + NF * kN, static_cast<size_t>(tail) * 4);
  acc[NF] = hn::Load(d, part);
  v.ForEach(t0, t1, [&](int64_t t, const typename Reader::Elem* row) {
    const VF pt = hn::Set(d, p[t] * inv);
    for (int j = 0; j < NF; ++j) acc[j] = hn::MulAdd(pt, reader.Load(d, row, c0 + j * kN), acc[j]);
    if (tail > 0) acc[NF] = hn::MulAdd(pt, reader.Tail(d, row, c0 + NF * kN, tail), acc[NF]);
  });
  for (int j = 0; j < NF; ++j) hn::StoreU(acc[j], d, out + c0 + j * kN);
  if (tail > 0) {
    hn::Store(acc[NF], d, part);
    std::memcpy(out + c0 + NF * kN, part, static_cast<size_t>(tail) * sizeof(float));
  }
}

// One head's Σ p·v over positions [t0, t1), head_dim in passes of kPvChunks vectors.
template <typename Reader>
void WeightedVHead(DF d, const KvRows<typename Reader::Elem>& v, int64_t t0, int64_t t1,
                   const float* p, float inv, const Reader& reader, int64_t head_dim, float* o) {
  for (int64_t c0 = 0; c0 < head_dim; c0 += kPvChunks * kN) {
    const int64_t left = head_dim - c0;
    const int64_t nf = std::min<int64_t>(kPvChunks, left / kN);
    const int64_t tail = nf < kPvChunks ? left - nf * kN : 0;
    switch (nf) {
      case 0:
        WeightedV<0>(d, v, t0, t1, p, inv, reader, c0, tail, o);
        break;
      case 1:
        WeightedV<1>(d, v, t0, t1, p, inv, reader, c0, tail, o);
        break;
      case 2:
        WeightedV<2>(d, v, t0, t1, p, inv, reader, c0, tail, o);
        break;
      case 3:
        WeightedV<3>(d, v, t0, t1, p, inv, reader, c0, tail, o);
        break;
      default:
        WeightedV<kPvChunks>(d, v, t0, t1, p, inv, reader, c0, tail, o);
    }
  }
}

// Heads [head_begin, head_end) in runs that share a KV head (at most kAttentionMaxGroupRun);
// within a run every head takes a context tile before the next tile (the scores, then after a
// softmax per head the Σ p·v), so K and V stream from memory once per run, not once per head.
// scratch holds a row of scores per head of the run.
template <typename Reader>
void AttendHeads(const float* q, int64_t heads, const typename Reader::Elem* const* k_blocks,
                 const typename Reader::Elem* const* v_blocks, int64_t block_tokens,
                 int64_t kv_heads, int64_t head_dim, int64_t context_len, float scale,
                 int64_t head_begin, int64_t head_end, float* scratch, float* out,
                 const Reader& k_reader, const Reader& v_reader) {
  const DF d;
  const int64_t group = heads / kv_heads, token_stride = kv_heads * head_dim;
  const int64_t row = FastAttentionScratchRow(context_len);
  float inv[kAttentionMaxGroupRun];
  for (int64_t h0 = head_begin; h0 < head_end;) {
    const int64_t kvh = h0 / group;
    const int64_t h1 = std::min({head_end, (kvh + 1) * group, h0 + kAttentionMaxGroupRun});
    const KvRows<typename Reader::Elem> k{k_blocks, block_tokens, token_stride, kvh * head_dim};
    const KvRows<typename Reader::Elem> v{v_blocks, block_tokens, token_stride, kvh * head_dim};
    for (int64_t t0 = 0; t0 < context_len; t0 += kTileTokens) {
      const int64_t t1 = std::min(context_len, t0 + kTileTokens);
      for (int64_t h = h0; h < h1; ++h) {
        Scores(d, q + h * head_dim, head_dim, k, t0, t1, scale, k_reader, scratch + (h - h0) * row);
      }
    }
    for (int64_t h = h0; h < h1; ++h)
      inv[h - h0] = Softmax(d, context_len, scratch + (h - h0) * row);
    for (int64_t t0 = 0; t0 < context_len; t0 += kTileTokens) {
      const int64_t t1 = std::min(context_len, t0 + kTileTokens);
      for (int64_t h = h0; h < h1; ++h) {
        WeightedVHead(d, v, t0, t1, scratch + (h - h0) * row, inv[h - h0], v_reader, head_dim,
                      out + h * head_dim);
      }
    }
    h0 = h1;
  }
}

}  // namespace

void FastPagedAttentionImpl(const float* q, int64_t heads, const PagedKvView& kv,
                            int64_t context_len, float scale, int64_t head_begin, int64_t head_end,
                            float* scratch, float* out) {
  const F32Reader reader;
  AttendHeads(q, heads, kv.k_blocks, kv.v_blocks, kv.block_tokens, kv.kv_heads, kv.head_dim,
              context_len, scale, head_begin, head_end, scratch, out, reader, reader);
}

void FastPagedAttentionFp8Impl(const float* q, int64_t heads, const PagedKvViewFp8& kv,
                               int64_t context_len, float scale, int64_t head_begin,
                               int64_t head_end, float* scratch, float* out) {
  AttendHeads(q, heads, kv.k_blocks, kv.v_blocks, kv.block_tokens, kv.kv_heads, kv.head_dim,
              context_len, scale, head_begin, head_end, scratch, out, Fp8Reader{kv.k_scale},
              Fp8Reader{kv.v_scale});
}

}  // namespace HWY_NAMESPACE
}  // namespace tessera::kernels::cpu::fast
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace tessera::kernels::cpu::fast {

HWY_EXPORT(FastPagedAttentionImpl);
HWY_EXPORT(FastPagedAttentionFp8Impl);

void FastPagedAttention(const float* q, int64_t heads, const PagedKvView& kv, int64_t context_len,
                        float scale, int64_t head_begin, int64_t head_end, float* scratch,
                        float* out) {
  if (context_len <= 0 || head_begin >= head_end) return;
  HWY_DYNAMIC_DISPATCH(FastPagedAttentionImpl)
  (q, heads, kv, context_len, scale, head_begin, head_end, scratch, out);
}

void FastPagedAttentionFp8(const float* q, int64_t heads, const PagedKvViewFp8& kv,
                           int64_t context_len, float scale, int64_t head_begin, int64_t head_end,
                           float* scratch, float* out) {
  if (context_len <= 0 || head_begin >= head_end) return;
  HWY_DYNAMIC_DISPATCH(FastPagedAttentionFp8Impl)
  (q, heads, kv, context_len, scale, head_begin, head_end, scratch, out);
}

}  // namespace tessera::kernels::cpu::fast
#endif  // HWY_ONCE
