// Highway implementation of paged_attention.h; compiled once per x86 target by foreach_target.h.
#include "kernels/cpu/fast/paged_attention.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

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
// Vectors of V accumulated in registers per pass over the context (head_dim 64 is one pass on
// AVX-512, two on AVX2).
constexpr int kPvChunks = 4;

// Row readers: Load(p, i) is elements [i, i + kN) of a K or V row as f32; Tail(p, i, rem) the
// last rem < kN of them, zeros after (none on the one-lane scalar target, where rem is 0 and GCC,
// unable to see that, warns about the copy).
struct F32Reader {
  using Elem = float;
  HWY_INLINE VF Load(DF d, const float* p, int64_t i) const { return hn::LoadU(d, p + i); }
  HWY_INLINE VF Tail(DF d, const float* p, int64_t i, int64_t rem) const {
    HWY_ALIGN float t[kN] = {};
    if constexpr (kN > 1) std::memcpy(t, p + i, static_cast<size_t>(rem) * sizeof(float));
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
    if constexpr (kN > 1) std::memcpy(t, p + i, static_cast<size_t>(rem));
    return FromBytes(d, t);
  }
};

// 16-bit elements (binary16 or bfloat16 bits), widened exactly: vcvtph2ps, or the bits shifted
// into the upper half of a binary32.
template <typename Half>
struct HalfReader {
  using Elem = uint16_t;
  HWY_INLINE VF FromHalves(DF d, const uint16_t* p) const {
    const hn::Rebind<Half, DF> dh;
    return hn::PromoteTo(d, hn::LoadU(dh, reinterpret_cast<const Half*>(p)));
  }
  HWY_INLINE VF Load(DF d, const uint16_t* p, int64_t i) const { return FromHalves(d, p + i); }
  HWY_INLINE VF Tail(DF d, const uint16_t* p, int64_t i, int64_t rem) const {
    HWY_ALIGN uint16_t t[kN] = {};
    if constexpr (kN > 1) std::memcpy(t, p + i, static_cast<size_t>(rem) * sizeof(uint16_t));
    return FromHalves(d, t);
  }
};

// Positions ahead of use whose rows ForEach prefetches into L2. The blocks are separate,
// scattered allocations, so the hardware prefetchers lose the stream at every block edge: with
// the earlier token-major blocks ([block][token][kv_head][dim]) one pass over K at ctx 4096
// waited on DRAM for ~75% of its time (perf, BM_PagedAttention); one thread, f32 KV, ctx 1024
// from DRAM: no prefetch 440 us, 16 ahead 277, 64 ahead 276. With head-major blocks (each head's
// rows of a block one run), two threads, ctx 4096, f32 / f16: none 761 / 602 us, 32 ahead
// 443 / 339, 64 ahead 459-470 / 356-400, 128 ahead 444 / 362.
constexpr int64_t kPrefetchTokens = 64;

// The blocks of one sequence for one KV head: position t is row t % block_tokens of block
// t / block_tokens (at head_offset + row · token_stride; head-major blocks: token_stride is
// head_dim), walked block by block (one division per block).
template <typename Elem>
struct KvRows {
  const Elem* const* blocks;
  int64_t block_tokens, token_stride, head_offset;
  int64_t row_bytes;    // head_dim · sizeof(Elem)
  int64_t context_len;  // positions with a block (the prefetch stops there)
  // Into L2: the rows of positions [t0, min(t0 + n, context_len)), the ones ForEach(t0, ...)
  // does not prefetch itself.
  HWY_INLINE void PrefetchFirst(int64_t t0, int64_t n) const {
    for (int64_t t = t0; t < std::min(t0 + n, context_len); ++t) {
      const auto row = reinterpret_cast<uintptr_t>(blocks[t / block_tokens] + head_offset +
                                                   t % block_tokens * token_stride);
      for (uintptr_t l = row & ~uintptr_t{63}; l < row + row_bytes; l += 64) {
        __builtin_prefetch(reinterpret_cast<const void*>(l), 0, 2);
      }
    }
  }
  // f(t, row of position t) for t in [t0, t1), the row kPrefetchTokens ahead prefetched.
  template <typename F>
  HWY_INLINE void ForEach(int64_t t0, int64_t t1, F&& f) const {
    int64_t pt = t0 + kPrefetchTokens;
    int64_t pb = pt / block_tokens, ps = pt % block_tokens;
    for (int64_t t = t0; t < t1;) {
      const int64_t s0 = t % block_tokens;
      const Elem* row = blocks[t / block_tokens] + head_offset;
      const int64_t n = std::min(block_tokens - s0, t1 - t);
      for (int64_t s = s0; s < s0 + n; ++s, ++t) {
        if (pt < context_len) {
          // Every line the row touches, from the line of its first byte.
          const auto ahead =
              reinterpret_cast<uintptr_t>(blocks[pb] + head_offset + ps * token_stride);
          for (uintptr_t l = ahead & ~uintptr_t{63}; l < ahead + row_bytes; l += 64) {
            __builtin_prefetch(reinterpret_cast<const void*>(l), 0, 2);
          }
          ++pt;
          if (++ps == block_tokens) {
            ps = 0;
            ++pb;
          }
        }
        f(t, row + s * token_stride);
      }
    }
  }
};

// Positions per context tile of the Σ p·v pass: each block of kHeadBlock heads takes the tile in
// turn, so its V rows come from DRAM once and from L1/L2 for the other blocks (64 KiB of f32 V
// per tile at head_dim 64).
constexpr int64_t kTileTokens = 256;
// Heads whose Σ p·v accumulators share the registers of one pass over V (4 × kPvChunks vectors
// on AVX-512's 32 registers; 2 on targets with 16).
constexpr int kHeadBlock = kN >= 16 ? 4 : 2;
// Heads of one run: their scores are one row of the scratch per head, positions in lanes.
constexpr int64_t kRunHeads = kN >= 16 ? 16 : 8;
static_assert(kRunHeads <= kAttentionMaxGroupRun, "scratch rows hold kAttentionMaxGroupRun heads");
static_assert(kAttentionScoreAlign % kN == 0, "score rows are whole vectors");
// Blocks ahead of use whose K columns ScoresRun prefetches into L2 (64 positions at 16 per block).
constexpr int64_t kPrefetchBlocks = 4;

// The K blocks of one sequence for one KV head, transposed (kernels/cpu/attention.h): element
// (position t, dim i) at blocks[t / block_tokens] + head_offset + i · block_tokens + t %
// block_tokens. Blocks before first_block lie wholly outside a sliding window and are not read.
template <typename Elem>
struct KColumns {
  const Elem* const* blocks;
  int64_t block_tokens, head_offset, head_dim, context_len, first_block;
  // Block b's columns of this KV head into L2.
  HWY_INLINE void Prefetch(int64_t b) const {
    const auto first = reinterpret_cast<uintptr_t>(blocks[b] + head_offset);
    const auto end = first + static_cast<uintptr_t>(head_dim * block_tokens * sizeof(Elem));
    for (uintptr_t l = first & ~uintptr_t{63}; l < end; l += 64) {
      __builtin_prefetch(reinterpret_cast<const void*>(l), 0, 2);
    }
  }
};

// Heads of one run whose score accumulators share the registers (two per head: 16 of AVX-512's
// 32, 8 of AVX2's 16); a longer run walks each K vector's block once per sub-run from L1.
constexpr int kScoreSubRun = kN >= 16 ? 8 : 4;

// s[h · stride + c + lane] = (q_h · k) · scale for the R heads of a sub-run over one K vector
// column of m ≤ kN positions (K elements at col + i · bt for dims i). Each head sums its dims in
// two chains, even and odd dims, added at the end: with one chain per head a run of one or two
// heads (GQA groups of two, as Qwen3's) waited on the multiply-add latency at every dim (two
// dependent chains in flight where the FMA pipes want four or more). The order depends on
// nothing but head_dim, so it is the same for every head, run, call and batch.
template <int R, typename Reader>
HWY_INLINE void ScoreColumns(DF d, const float* q, int64_t qs, const typename Reader::Elem* col,
                             int64_t bt, int64_t head_dim, int64_t m, VF vscale,
                             const Reader& reader, float* s, int64_t stride) {
  auto load = [&](int64_t i) {
    return m == kN ? reader.Load(d, col + i * bt, 0) : reader.Tail(d, col + i * bt, 0, m);
  };
  VF even[R], odd[R];
  for (int h = 0; h < R; ++h) even[h] = odd[h] = hn::Zero(d);
  int64_t i = 0;
  for (; i + 2 <= head_dim; i += 2) {
    const VF k0 = load(i), k1 = load(i + 1);
    for (int h = 0; h < R; ++h) {
      even[h] = hn::MulAdd(hn::Set(d, q[h * qs + i]), k0, even[h]);
      odd[h] = hn::MulAdd(hn::Set(d, q[h * qs + i + 1]), k1, odd[h]);
    }
  }
  if (i < head_dim) {
    const VF k0 = load(i);
    for (int h = 0; h < R; ++h) even[h] = hn::MulAdd(hn::Set(d, q[h * qs + i]), k0, even[h]);
  }
  for (int h = 0; h < R; ++h) {
    float* dst = s + h * stride;
    const VF v = hn::Mul(hn::Add(even[h], odd[h]), vscale);
    if (m == kN) {
      hn::StoreU(v, d, dst);
    } else {
      HWY_ALIGN float part[kN];
      hn::Store(v, d, part);
      std::memcpy(dst, part, static_cast<size_t>(m) * sizeof(float));
    }
  }
}

// s[h · stride + t − base] = (q_h · k_t) · scale for the positions base <= t < context_len
// (base: the first position of k.first_block) and the run's R heads (q: R rows of qs floats,
// zero rows for padding heads): positions in lanes, so each K vector (one dim of up to kN
// positions of a block) meets every head of a sub-run in one multiply-add with that head's q
// element broadcast, and no lanes are ever summed.
template <int R, typename Reader>
void ScoresRun(DF d, const float* q, int64_t qs, const KColumns<typename Reader::Elem>& k,
               float scale, const Reader& reader, float* s, int64_t stride) {
  const int64_t bt = k.block_tokens, blocks = (k.context_len + bt - 1) / bt;
  const VF vscale = hn::Set(d, scale);
  const int64_t base_t = k.first_block * bt;
  for (int64_t b = k.first_block; b < blocks; ++b) {
    if (b + kPrefetchBlocks < blocks) k.Prefetch(b + kPrefetchBlocks);
    const typename Reader::Elem* base = k.blocks[b] + k.head_offset;
    const int64_t t0 = b * bt, in_block = std::min(bt, k.context_len - t0);
    for (int64_t c = 0; c < in_block; c += kN) {
      const int64_t m = std::min<int64_t>(kN, in_block - c);
      constexpr int kFirst = R < kScoreSubRun ? R : kScoreSubRun;
      ScoreColumns<kFirst>(d, q, qs, base + c, bt, k.head_dim, m, vscale, reader,
                           s + (t0 - base_t) + c, stride);
      if constexpr (R > kScoreSubRun) {
        static_assert(R <= 2 * kScoreSubRun, "two sub-runs at most");
        ScoreColumns<R - kScoreSubRun>(d, q + kScoreSubRun * qs, qs, base + c, bt, k.head_dim, m,
                                       vscale, reader,
                                       s + kScoreSubRun * stride + (t0 - base_t) + c, stride);
      }
    }
  }
}

// Highway's Exp maps NaN to 0 (its range check fails); a NaN in the cache must reach the output
// as it does through std::exp in the scalar kernel.
template <class D>
HWY_INLINE hn::Vec<D> ExpKeepNan(D d, hn::Vec<D> x) {
  return hn::IfThenElse(hn::IsNaN(x), x, hn::Exp(d, x));
}

// Each of `rows` score rows (stride floats, a multiple of kN; positions in lanes) becomes its
// softmax over entries [first, len): p = exp(s − max) · (1 / Σ exp), the sum in two vector
// accumulators (even and odd vectors) folded, then across lanes. Entries outside [first, len)
// (before a sliding window's start, the padding up to the stride) are set to −inf first, so
// whole vectors cover the row and add exp(−inf) = 0. softcap > 0 first maps each score to
// softcap · tanh(s / softcap), the division as transformers writes it. sinks (null: none):
// row r's sink logit, in the max and, as exp(sink − max), added to the sum last.
void Softmax(int64_t first, int64_t len, int64_t stride, int64_t rows, float softcap,
             const float* sinks, float* s) {
  const DF d;
  for (int64_t r = 0; r < rows; ++r) {
    float* row = s + r * stride;
    if (softcap > 0) {
      // Whole vectors (the stride is len rounded up to them) over a tail zeroed first, so no
      // unwritten scratch is read; the tail is masked below.
      std::fill(row + len, row + stride, 0.0f);
      const VF cap = hn::Set(d, softcap);
      for (int64_t t = 0; t < len; t += kN) {
        hn::StoreU(hn::Mul(cap, hn::Tanh(d, hn::Div(hn::LoadU(d, row + t), cap))), d, row + t);
      }
    }
    std::fill(row, row + first, -std::numeric_limits<float>::infinity());
    std::fill(row + len, row + stride, -std::numeric_limits<float>::infinity());
    VF m = hn::Set(d, -std::numeric_limits<float>::infinity());
    for (int64_t t = 0; t < stride; t += kN) m = hn::Max(m, hn::LoadU(d, row + t));
    if (sinks != nullptr) m = hn::Max(m, hn::Set(d, sinks[r]));
    m = hn::MaxOfLanes(d, m);
    VF s0 = hn::Zero(d), s1 = hn::Zero(d);
    int64_t t = 0;
    for (; t + 2 * kN <= stride; t += 2 * kN) {
      const VF e0 = ExpKeepNan(d, hn::Sub(hn::LoadU(d, row + t), m));
      const VF e1 = ExpKeepNan(d, hn::Sub(hn::LoadU(d, row + t + kN), m));
      hn::StoreU(e0, d, row + t);
      hn::StoreU(e1, d, row + t + kN);
      s0 = hn::Add(s0, e0);
      s1 = hn::Add(s1, e1);
    }
    if (t < stride) {
      const VF e0 = ExpKeepNan(d, hn::Sub(hn::LoadU(d, row + t), m));
      hn::StoreU(e0, d, row + t);
      s0 = hn::Add(s0, e0);
    }
    VF sum = hn::SumOfLanes(d, hn::Add(s0, s1));
    if (sinks != nullptr) {
      sum = hn::Add(sum, ExpKeepNan(d, hn::Sub(hn::Set(d, sinks[r]), m)));
    }
    const VF inv = hn::Div(hn::Set(d, 1.0f), sum);
    for (t = 0; t < stride; t += kN) hn::StoreU(hn::Mul(hn::LoadU(d, row + t), inv), d, row + t);
  }
}

// out_h[c0, c0 + NF·kN (+ tail)) += Σ_{t in [t0, t1)} p_h[t − base] · v_t over the same lanes
// for the HB heads h of one block (out_h starts from zero on the first tile), NF full vectors
// plus a partial one of `tail` lanes when tail > 0, kept in registers across the tile; each V
// vector is read once for the block. p_h = p + h · stride, the block's rows of probabilities
// (entry 0 is position base). Per head the order is one head's alone; storing and reloading
// between tiles is exact.
template <int HB, int NF, typename Reader>
void WeightedV(DF d, const KvRows<typename Reader::Elem>& v, int64_t t0, int64_t t1,
               bool first_tile, const float* p, int64_t base, int64_t stride, const Reader& reader,
               int64_t c0, int64_t tail, float* const* out) {
  VF acc[HB][NF + 1];
  for (int h = 0; h < HB; ++h) {
    HWY_ALIGN float part[kN] = {};
    for (int j = 0; j < NF; ++j)
      acc[h][j] = first_tile ? hn::Zero(d) : hn::LoadU(d, out[h] + c0 + j * kN);
    if (tail > 0 && !first_tile)
      std::memcpy(part, out[h] + c0 + NF * kN, static_cast<size_t>(tail) * 4);
    acc[h][NF] = hn::Load(d, part);
  }
  v.ForEach(t0, t1, [&](int64_t t, const typename Reader::Elem* row) {
    VF vv[NF + 1];
    for (int j = 0; j < NF; ++j) vv[j] = reader.Load(d, row, c0 + j * kN);
    if (tail > 0) vv[NF] = reader.Tail(d, row, c0 + NF * kN, tail);
    for (int h = 0; h < HB; ++h) {
      const VF pt = hn::Set(d, p[h * stride + t - base]);
      for (int j = 0; j < NF; ++j) acc[h][j] = hn::MulAdd(pt, vv[j], acc[h][j]);
      if (tail > 0) acc[h][NF] = hn::MulAdd(pt, vv[NF], acc[h][NF]);
    }
  });
  for (int h = 0; h < HB; ++h) {
    for (int j = 0; j < NF; ++j) hn::StoreU(acc[h][j], d, out[h] + c0 + j * kN);
    if (tail > 0) {
      HWY_ALIGN float part[kN];
      hn::Store(acc[h][NF], d, part);
      std::memcpy(out[h] + c0 + NF * kN, part, static_cast<size_t>(tail) * sizeof(float));
    }
  }
}

// One block of HB heads: Σ p·v over positions [t0, t1), head_dim in passes of kPvChunks vectors.
template <int HB, typename Reader>
void WeightedVBlock(DF d, const KvRows<typename Reader::Elem>& v, int64_t t0, int64_t t1,
                    bool first_tile, const float* p, int64_t base, int64_t stride,
                    const Reader& reader, int64_t head_dim, float* const* out) {
  for (int64_t c0 = 0; c0 < head_dim; c0 += kPvChunks * kN) {
    const int64_t left = head_dim - c0;
    const int64_t nf = std::min<int64_t>(kPvChunks, left / kN);
    const int64_t tail = nf < kPvChunks ? left - nf * kN : 0;
    switch (nf) {
      case 0:
        WeightedV<HB, 0>(d, v, t0, t1, first_tile, p, base, stride, reader, c0, tail, out);
        break;
      case 1:
        WeightedV<HB, 1>(d, v, t0, t1, first_tile, p, base, stride, reader, c0, tail, out);
        break;
      case 2:
        WeightedV<HB, 2>(d, v, t0, t1, first_tile, p, base, stride, reader, c0, tail, out);
        break;
      case 3:
        WeightedV<HB, 3>(d, v, t0, t1, first_tile, p, base, stride, reader, c0, tail, out);
        break;
      default:
        WeightedV<HB, kPvChunks>(d, v, t0, t1, first_tile, p, base, stride, reader, c0, tail, out);
    }
  }
}

// Heads [head_begin, head_end) in runs that share a KV head (at most kRunHeads). A run's scores
// come from one pass over K (each K vector meets every head of the run), its softmax is one pass
// per head over its row of scores, and its Σ p·v goes tile by tile with the heads in blocks of
// kHeadBlock. Every head's arithmetic is that of a run of one, so results do not depend on how
// heads are split across calls. scratch: FastAttentionScratch (the run's score rows).
template <typename Reader>
void AttendHeads(const float* q, int64_t heads, const typename Reader::Elem* const* k_blocks,
                 const typename Reader::Elem* const* v_blocks, int64_t block_tokens,
                 int64_t kv_heads, int64_t head_dim, int64_t context_len, float scale,
                 int64_t head_begin, int64_t head_end, float* scratch, float* out,
                 const AttentionOptions& options, const Reader& k_reader, const Reader& v_reader) {
  const DF d;
  const int64_t group = heads / kv_heads;
  // A sliding window: score rows start at the first position of the block holding the window's
  // start (base), which the softmax masks up to `first`; earlier blocks are never read.
  const int64_t first = options.first_position;
  const int64_t first_block = first / block_tokens, base = first_block * block_tokens;
  const int64_t stride = FastAttentionScoreStride(context_len - base);
  // The run's queries, zero rows padding a run of more than two heads to a multiple of 4 (runs of
  // one or two heads, GQA groups of two as in Qwen3, run as they are: padded to four they spent
  // half the K pass's multiply-adds on zero rows).
  thread_local std::vector<float> qpad;
  qpad.resize(static_cast<size_t>(kRunHeads * head_dim));
  // K blocks are [kv_heads][head_dim][block_tokens], V blocks [kv_heads][block_tokens][head_dim].
  using Elem = typename Reader::Elem;
  const int64_t row_bytes = head_dim * static_cast<int64_t>(sizeof(Elem));
  auto k_of = [&](int64_t kvh) {
    return KColumns<Elem>{k_blocks, block_tokens, kvh * block_tokens * head_dim,
                          head_dim, context_len,  first_block};
  };
  auto v_of = [&](int64_t kvh) {
    return KvRows<Elem>{v_blocks,  block_tokens, head_dim, kvh * block_tokens * head_dim,
                        row_bytes, context_len};
  };
  // The first blocks of a KV head's K and rows of its V, which the passes' own look-ahead never
  // covers, requested as its run begins: a decode step at a short context is mostly these (ctx
  // 128: 8 blocks per KV head), and each pass otherwise began with demand misses. (Requested one
  // run ahead instead, they competed with the current run's stream and were slower.)
  const int64_t end_block =
      std::min(first_block + kPrefetchBlocks, (context_len + block_tokens - 1) / block_tokens);
  auto prefetch_starts = [&](int64_t kvh) {
    const KColumns<Elem> k = k_of(kvh);
    for (int64_t b = first_block; b < end_block; ++b) k.Prefetch(b);
    v_of(kvh).PrefetchFirst(first, kPrefetchTokens);
  };
  for (int64_t h0 = head_begin; h0 < head_end;) {
    const int64_t kvh = h0 / group;
    const int64_t h1 = std::min({head_end, (kvh + 1) * group, h0 + kRunHeads});
    if (h0 == head_begin || h0 % group == 0) prefetch_starts(kvh);  // once per KV head
    const int64_t rows = h1 - h0 <= 2 ? h1 - h0 : (h1 - h0 + 3) / 4 * 4;
    std::fill(qpad.begin(), qpad.begin() + rows * head_dim, 0.0f);
    std::copy(q + h0 * head_dim, q + h1 * head_dim, qpad.begin());
    const KColumns<Elem> k = k_of(kvh);
    const KvRows<Elem> v = v_of(kvh);
    const float* qp = qpad.data();
    if (rows == 1) {
      ScoresRun<1>(d, qp, head_dim, k, scale, k_reader, scratch, stride);
    } else if (rows == 2) {
      ScoresRun<2>(d, qp, head_dim, k, scale, k_reader, scratch, stride);
    } else if (rows == 4) {
      ScoresRun<4>(d, qp, head_dim, k, scale, k_reader, scratch, stride);
    } else if (rows == 8) {
      ScoresRun<8>(d, qp, head_dim, k, scale, k_reader, scratch, stride);
    } else if constexpr (kRunHeads > 8) {
      if (rows == 12) {
        ScoresRun<12>(d, qp, head_dim, k, scale, k_reader, scratch, stride);
      } else {
        ScoresRun<16>(d, qp, head_dim, k, scale, k_reader, scratch, stride);
      }
    }
    Softmax(first - base, context_len - base, stride, h1 - h0, options.softcap,
            options.sinks != nullptr ? options.sinks + h0 : nullptr, scratch);
    for (int64_t t0 = first; t0 < context_len; t0 += kTileTokens) {
      const int64_t t1 = std::min(context_len, t0 + kTileTokens);
      const bool first_tile = t0 == first;
      for (int64_t hb = h0; hb < h1; hb += kHeadBlock) {
        const int64_t n = std::min<int64_t>(kHeadBlock, h1 - hb);
        float* outs[kHeadBlock];
        for (int64_t i = 0; i < n; ++i) outs[i] = out + (hb + i) * head_dim;
        const float* p = scratch + (hb - h0) * stride;
        if (n == kHeadBlock) {
          WeightedVBlock<kHeadBlock>(d, v, t0, t1, first_tile, p, base, stride, v_reader, head_dim,
                                     outs);
        } else if (n == 1) {
          WeightedVBlock<1>(d, v, t0, t1, first_tile, p, base, stride, v_reader, head_dim, outs);
        } else if constexpr (kHeadBlock > 2) {
          if (n == 2) {
            WeightedVBlock<2>(d, v, t0, t1, first_tile, p, base, stride, v_reader, head_dim, outs);
          } else {
            WeightedVBlock<3>(d, v, t0, t1, first_tile, p, base, stride, v_reader, head_dim, outs);
          }
        }
      }
    }
    h0 = h1;
  }
}

}  // namespace

void FastPagedAttentionImpl(const float* q, int64_t heads, const PagedKvView& kv,
                            int64_t context_len, float scale, int64_t head_begin, int64_t head_end,
                            float* scratch, float* out, const AttentionOptions& options) {
  const F32Reader reader;
  AttendHeads(q, heads, kv.k_blocks, kv.v_blocks, kv.block_tokens, kv.kv_heads, kv.head_dim,
              context_len, scale, head_begin, head_end, scratch, out, options, reader, reader);
}

void FastPagedAttentionFp8Impl(const float* q, int64_t heads, const PagedKvViewFp8& kv,
                               int64_t context_len, float scale, int64_t head_begin,
                               int64_t head_end, float* scratch, float* out,
                               const AttentionOptions& options) {
  AttendHeads(q, heads, kv.k_blocks, kv.v_blocks, kv.block_tokens, kv.kv_heads, kv.head_dim,
              context_len, scale, head_begin, head_end, scratch, out, options,
              Fp8Reader{kv.k_scale}, Fp8Reader{kv.v_scale});
}

void FastPagedAttention16Impl(const float* q, int64_t heads, const PagedKvView16& kv,
                              int64_t context_len, float scale, int64_t head_begin,
                              int64_t head_end, float* scratch, float* out,
                              const AttentionOptions& options) {
  auto attend = [&](const auto& reader) {
    AttendHeads(q, heads, kv.k_blocks, kv.v_blocks, kv.block_tokens, kv.kv_heads, kv.head_dim,
                context_len, scale, head_begin, head_end, scratch, out, options, reader, reader);
  };
  if (kv.half == KvHalf::kBf16) {
    attend(HalfReader<hwy::bfloat16_t>{});
  } else {
    attend(HalfReader<hwy::float16_t>{});
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace tessera::kernels::cpu::fast
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace tessera::kernels::cpu::fast {

HWY_EXPORT(FastPagedAttentionImpl);
HWY_EXPORT(FastPagedAttentionFp8Impl);
HWY_EXPORT(FastPagedAttention16Impl);

void FastPagedAttention(const float* q, int64_t heads, const PagedKvView& kv, int64_t context_len,
                        float scale, int64_t head_begin, int64_t head_end, float* scratch,
                        float* out, const AttentionOptions& options) {
  AttentionOptions o = options;
  o.first_position = std::max<int64_t>(o.first_position, 0);  // a window before position 0
  if (context_len <= o.first_position || head_begin >= head_end) return;
  HWY_DYNAMIC_DISPATCH(FastPagedAttentionImpl)
  (q, heads, kv, context_len, scale, head_begin, head_end, scratch, out, o);
}

void FastPagedAttentionFp8(const float* q, int64_t heads, const PagedKvViewFp8& kv,
                           int64_t context_len, float scale, int64_t head_begin, int64_t head_end,
                           float* scratch, float* out, const AttentionOptions& options) {
  AttentionOptions o = options;
  o.first_position = std::max<int64_t>(o.first_position, 0);  // a window before position 0
  if (context_len <= o.first_position || head_begin >= head_end) return;
  HWY_DYNAMIC_DISPATCH(FastPagedAttentionFp8Impl)
  (q, heads, kv, context_len, scale, head_begin, head_end, scratch, out, o);
}

void FastPagedAttention16(const float* q, int64_t heads, const PagedKvView16& kv,
                          int64_t context_len, float scale, int64_t head_begin, int64_t head_end,
                          float* scratch, float* out, const AttentionOptions& options) {
  AttentionOptions o = options;
  o.first_position = std::max<int64_t>(o.first_position, 0);  // a window before position 0
  if (context_len <= o.first_position || head_begin >= head_end) return;
  HWY_DYNAMIC_DISPATCH(FastPagedAttention16Impl)
  (q, heads, kv, context_len, scale, head_begin, head_end, scratch, out, o);
}

}  // namespace tessera::kernels::cpu::fast
#endif  // HWY_ONCE
