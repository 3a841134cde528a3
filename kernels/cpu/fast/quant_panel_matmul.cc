// AVX-512 kernel of quant_panel_matmul.h: one tile template (up to 6 rows x 4 panels of
// accumulators, a group at a time, each group's sum folded into running totals with its scales)
// fed either by an in-register decoder of the code chunks (≤ 6 rows) or by a block of four panels
// decoded once (more rows), to f32 code values (f32 form, FMA), to bf16 pairs (`vdpbf16ps`) or to
// int16 pairs (`vpdpwssd`, int16 activations).
#if defined(__GNUC__) && !defined(__clang__)
// GCC 12 reports a false "may be used uninitialized" inside its own avx512fintrin.h (the
// _mm512_undefined_* placeholders of its mask intrinsics) once they are inlined here.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include "kernels/cpu/fast/quant_panel_matmul.h"

#include <algorithm>
#include <bit>  // quant_panel_decode-inl.h: outside the AVX-512 region
#include <cstring>
#include <vector>

#include "kernels/cpu/fast/avx2_panels.h"
#include "kernels/cpu/fast/bf16_dot_matmul.h"
#include "kernels/cpu/fast/column_panels.h"
#include "kernels/cpu/fast/int16_act_quant.h"
#include "kernels/cpu/fast/quant_panel_amx.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#include "hwy/aligned_allocator.h"
#include "hwy/base.h"
#define TESSERA_QUANT_PANEL_X86 1
#endif

namespace tessera::kernels::cpu::fast {

#if defined(TESSERA_QUANT_PANEL_X86)

}  // namespace tessera::kernels::cpu::fast

HWY_PUSH_ATTRIBUTES("avx512f,avx512vl,avx512bw,avx512bf16,avx512vnni,avx2,fma")

#include "kernels/cpu/fast/panel_gemm.h"
#include "kernels/cpu/fast/quant_panel_decode-inl.h"
#include "kernels/cpu/fast/quant_panel_dots-inl.h"

namespace tessera::kernels::cpu::fast {

namespace {

using panel_decode::ByteValues;
using panel_decode::CodeTable;
using panel_decode::DecodeCode;
using panel_decode::GroupScales;
using panel_decode::Header;
using panel_decode::HasScaleHeader;
using panel_decode::HeaderValues;
using panel_decode::IsInteger;
using panel_decode::kCodeBits;
using panel_decode::kCodesPerLane;
using panel_decode::kPairsPerChunk;
using panel_decode::LoadPairTable;
using panel_dots::Acc;
using panel_dots::Acts;
using panel_dots::PairMadd;
using panel_dots::ZeroAcc;

// The shared panel tile shape, which ColumnSplitUnit (and so the engine's column split) follows.
using panels::kTileRows;
using panels::kTileVecs;
// More rows than one tile decode this many k of four panels at a time (whole groups, at least
// one): 128 KiB of f32 (64 KiB of bf16 pairs), which every row tile then reads from L2. A group
// longer than this (per-channel INT4, G = K) is one block: K · 256 bytes (pairs: K · 128), from
// L3 beyond K ≈ 4096 (8192).
constexpr int64_t kBlockK = 512;

// A call's activations in every form: x (f32 form; pair forms: the integer formats' group sums),
// hi / lo (bf16 pairs), or the int16 codes with their per-group scales and Σx̂.
struct CallActs {
  const float* x = nullptr;
  const uint16_t* hi = nullptr;
  const uint16_t* lo = nullptr;
  const float* scales = nullptr;
  const float* sums = nullptr;
};

struct Job {
  const uint8_t* panels;  // the tile's first panel
  int64_t panel_bytes, group_bytes, head_bytes;
  int64_t super_bytes, super_head;  // K-quant panels: a super-block, and its header
  float centre;                     // K-quant panels: the codes' centre
  int64_t chunks;         // 64-byte code chunks per group (G / kCodesPerLane)
  int64_t g0, g1;         // the groups of this block
  const float* dec;       // decoded block: vector j · dec_panel + i (f32 form: block k i; pair
  int64_t dec_panel;      // form: block pair i, 16 bf16 pairs) of panel j, 16 floats apart
  const float* dec_scales;  // FP4: the block's scales, 16 per (panel j, group g): j · (g1 − g0) + g
  const float* x;         // row m0, k = 0 (f32 form)
  int64_t x_stride;
  const int32_t* hi;      // pair form: row m0's bf16 pairs (hi; lo when split), k = 0
  const int32_t* lo;
  int64_t pair_stride;    // pairs between rows
  const float* sums;      // integer codes: Σ x over each group, row m0, group 0 (GroupSums;
  int64_t sums_stride;    // int16 activations: Σx̂)
  const float* act_scales;  // int16 activations: d of each group, row m0, group 0 (sums_stride)
  float* tot;             // running totals [row][kTileVecs][16]
  bool first, last;       // first / last block of K
  bool symmetric;         // integer codes: headers of scales alone, no zero-point fold
  float alpha;            // y = α · tot (NVFP4; 1 otherwise)
  const float* codebook;  // kCodebook4: the 16 code values
  const uint16_t* codebook_words;  // ... as the pair form's 32-entry bf16 table
  float* y;               // y + m0 · y_stride + col0
  int64_t y_stride;
  const float* bias;      // bias + col0, or null
  __mmask16 store[kTileVecs];
};

// The pair form keeps two partial sums per output, a and b, added at the group's end: split,
// a takes the hi products and b the lo ones; bf16 and int16 activations, a the even pairs and b
// the odd ones (int16: int32 sums, exact in any order). One chain of `vdpbf16ps` (6 cycles each)
// per output and panel held batch 1 to the f32 form's rate; two chains per output let 4 panels keep
// 8 in flight. Rows then come in tiles of kPairRows, so that 2 · 3 · 4 accumulators fit the 32
// registers.
constexpr int kPairRows = 3;

// Group g's offset in a panel: QuantPanelGeometry::GroupOffset from the job's own fields (a
// geometry held in the job, read through it, cost the K-quant tiles 15-20% at M = 128: their
// register allocation moved again).
HWY_INLINE int64_t GroupAt(const Job& job, int64_t g) {
  return job.super_head != 0 ? g / 8 * job.super_bytes + job.super_head + g % 8 * job.group_bytes
                             : g * job.group_bytes;
}

// H: integer codes' header (the f32 header for FP4).
template <int MR, int NV, bool kDecoded, QuantDecode F, Acts A, Header H>
void GroupTile(const Job& job) {
  constexpr bool kPairs = A != Acts::kF32;
  // int16 activations over decoded blocks (3-row tiles): one int32 sum per output (3 · 4 chains
  // keep `vpdpwssd` busy) and the running totals in registers, not reloaded and stored at every
  // group's fold (NVFP4's groups of 16: 8 dot products per fold). The same integer sums and the
  // same fold operations as the register path's a + b and memory totals: the same bits.
  constexpr bool kRegTotals = A == Acts::kInt16 && kDecoded;
  constexpr bool kTwoSums = kPairs && !kRegTotals;
  __m512 totals[MR][NV];  // kRegTotals
  for (int i = 0; i < MR; ++i) {
    for (int j = 0; j < NV; ++j) {
      float* t = job.tot + (i * kTileVecs + j) * 16;
      if constexpr (kRegTotals) {
        totals[i][j] = job.first ? _mm512_setzero_ps() : _mm512_loadu_ps(t);
      } else if (job.first) {
        _mm512_storeu_ps(t, _mm512_setzero_ps());
      }
    }
  }
  const int64_t group = kCodesPerLane<F> * job.chunks;
  for (int64_t g = job.g0; g < job.g1; ++g) {
    Acc<A> acc[MR][NV], acc_b[kPairs ? MR : 1][NV];  // the pair form's a and b
    for (int i = 0; i < MR; ++i) {
      for (int j = 0; j < NV; ++j) acc[i][j] = ZeroAcc<A>();
    }
    if constexpr (kTwoSums) {
      for (int i = 0; i < MR; ++i) {
        for (int j = 0; j < NV; ++j) acc_b[i][j] = ZeroAcc<A>();
      }
    }
    const uint8_t* head =
        job.panels + (H == Header::kKQuant ? GroupAt(job, g) : g * job.group_bytes);
    // Per accumulator: k (or pairs of k) ascending, in both loop nests of each form.
    if constexpr (kPairs) {
      const int32_t* hg = job.hi + g * group / 2;
      const int32_t* lg = A == Acts::kSplit ? job.lo + g * group / 2 : nullptr;
      const int64_t ps = job.pair_stride;
      if constexpr (kDecoded) {
        const float* dg = job.dec + (g - job.g0) * group / 2 * 16;
        // Pairs two at a time (a group has a multiple of 4), for their parities; one pair's NV
        // weight vectors live at a time, so that 2 · 3 · 4 accumulators, 4 weights and the
        // broadcasts fit the 32 registers (with both pairs' 8 weights live GCC spilled
        // accumulators to the stack every step; without, M = 128 ran 1-3% faster, within this
        // VM's noise). Each accumulator still takes pp, then pp + 1.
        for (int64_t pp = 0; pp < group / 2; pp += 2) {
          __m512i w[NV];
          for (int j = 0; j < NV; ++j) {
            w[j] = _mm512_loadu_si512(dg + (j * job.dec_panel + pp) * 16);
          }
          for (int i = 0; i < MR; ++i) {
            const int64_t at = i * ps + pp;
            PairMadd<A, NV, false>(hg + at, lg ? lg + at : nullptr, w, acc[i],
                                   kTwoSums ? acc_b[i] : acc[i]);
          }
          for (int j = 0; j < NV; ++j) {
            w[j] = _mm512_loadu_si512(dg + (j * job.dec_panel + pp + 1) * 16);
          }
          for (int i = 0; i < MR; ++i) {
            const int64_t at = i * ps + pp + 1;
            PairMadd<A, NV, true>(hg + at, lg ? lg + at : nullptr, w, acc[i],
                                  kTwoSums ? acc_b[i] : acc[i]);
          }
        }
      } else {
        const auto table = LoadPairTable<F, A == Acts::kInt16>(job.codebook_words);
        for (int64_t t = 0; t < job.chunks; ++t) {
          for (int j = 0; j < NV; ++j) {
            const uint8_t* chunk = head + j * job.panel_bytes + job.head_bytes + 64 * t;
            __m512i codes = _mm512_loadu_si512(chunk);
            for (int p = 0; p < kPairsPerChunk<F>; p += 2) {
              const __m512i w = table.Decode(codes);
              codes = _mm512_srli_epi32(codes, kCodeBits<F>);
              const __m512i w1 = table.Decode(codes);
              codes = _mm512_srli_epi32(codes, kCodeBits<F>);
              for (int i = 0; i < MR; ++i) {
                const int64_t at = i * ps + kPairsPerChunk<F> * t + p;
                PairMadd<A, 1, false>(hg + at, lg ? lg + at : nullptr, &w, &acc[i][j],
                                      &acc_b[i][j]);
                PairMadd<A, 1, true>(hg + at + 1, lg ? lg + at + 1 : nullptr, &w1, &acc[i][j],
                                     &acc_b[i][j]);
              }
            }
          }
        }
      }
    } else if constexpr (kDecoded) {
      const float* xg = job.x + g * group;
      const float* dg = job.dec + (g - job.g0) * group * 16;
      for (int64_t kk = 0; kk < group; ++kk) {
        __m512 w[NV];
        for (int j = 0; j < NV; ++j) w[j] = _mm512_loadu_ps(dg + (j * job.dec_panel + kk) * 16);
        for (int i = 0; i < MR; ++i) {
          const __m512 xv = _mm512_set1_ps(xg[i * job.x_stride + kk]);
          for (int j = 0; j < NV; ++j) acc[i][j] = _mm512_fmadd_ps(xv, w[j], acc[i][j]);
        }
      }
    } else {
      const float* xg = job.x + g * group;
      const __m512 table = CodeTable<F>(job.codebook);
      for (int64_t t = 0; t < job.chunks; ++t) {
        for (int j = 0; j < NV; ++j) {
          __m512i codes = _mm512_loadu_si512(head + j * job.panel_bytes + job.head_bytes + 64 * t);
          const float* xt = xg + kCodesPerLane<F> * t;
          for (int c = 0; c < kCodesPerLane<F>;
               ++c, codes = _mm512_srli_epi32(codes, kCodeBits<F>)) {
            const __m512 w = DecodeCode<F>(codes, table);
            for (int i = 0; i < MR; ++i) {
              acc[i][j] = _mm512_fmadd_ps(_mm512_set1_ps(xt[i * job.x_stride + c]), w, acc[i][j]);
            }
          }
        }
      }
    }
    // The group's sum into the totals: FP4 tot += s · a; integer codes tot += s · (a − (z − c) ·
    // Σx) with c their centre, the group's Σ (q − z) · x.
    for (int j = 0; j < NV; ++j) {
      const uint8_t* hj = head + j * job.panel_bytes;
      __m512 s, zc = _mm512_setzero_ps();
      if constexpr (IsInteger(F) && H == Header::kKQuant) {
        // s = d·sc and o = dmin·m exactly (11-bit by 6-bit products); zc here is the weight at
        // the centre code, s·c − o, so that w = s·(q − c) + zc.
        const uint8_t* sb = job.panels + j * job.panel_bytes + g / 8 * job.super_bytes;
        s = _mm512_mul_ps(HeaderValues<true>(sb), ByteValues(hj));
        const __m512 o = _mm512_mul_ps(HeaderValues<true>(sb + 32), ByteValues(hj + 16));
        zc = _mm512_fmsub_ps(_mm512_set1_ps(job.centre), s, o);
      } else if constexpr (HasScaleHeader(F)) {
        constexpr bool kHalf = H == Header::kF16;
        if (job.symmetric) {
          s = HeaderValues<kHalf>(hj);
        } else {
          zc = HeaderValues<kHalf>(hj);
          s = HeaderValues<kHalf>(hj + (kHalf ? 32 : 64));
        }
      } else if constexpr (kDecoded) {
        s = _mm512_loadu_ps(job.dec_scales + (j * (job.g1 - job.g0) + (g - job.g0)) * 16);
      } else {
        s = GroupScales<F>(head + j * job.panel_bytes);
      }
      // int16 activations multiply FP4 codes as 2 · e2m1: half the scale (exact).
      if constexpr (A == Acts::kInt16 && !IsInteger(F)) s = _mm512_mul_ps(s, _mm512_set1_ps(0.5f));
      for (int i = 0; i < MR; ++i) {
        __m512 c;
        if constexpr (A == Acts::kInt16) {
          // a + b exactly in int32 (or the one sum), then d · that sum: Σ v · x̂ over the group.
          __v16si sum = acc[i][j];
          if constexpr (kTwoSums) sum += acc_b[i][j];
          c = _mm512_mul_ps(_mm512_cvtepi32_ps((__m512i)sum),
                            _mm512_set1_ps(job.act_scales[i * job.sums_stride + g]));
        } else if constexpr (kPairs) {
          c = _mm512_add_ps(acc[i][j], acc_b[i][j]);
        } else {
          c = acc[i][j];
        }
        float* t = job.tot + (i * kTileVecs + j) * 16;
        __m512 before, after;
        if constexpr (kRegTotals) {
          before = totals[i][j];
        } else {
          before = _mm512_loadu_ps(t);
        }
        if constexpr (H == Header::kKQuant) {
          const __m512 sum = _mm512_set1_ps(job.sums[i * job.sums_stride + g]);
          after = _mm512_fmadd_ps(zc, sum, _mm512_fmadd_ps(s, c, before));
        } else {
          if (IsInteger(F) && !job.symmetric) {
            c = _mm512_fnmadd_ps(zc, _mm512_set1_ps(job.sums[i * job.sums_stride + g]), c);
          }
          after = _mm512_fmadd_ps(s, c, before);
        }
        if constexpr (kRegTotals) {
          totals[i][j] = after;
        } else {
          _mm512_storeu_ps(t, after);
        }
      }
    }
  }
  if constexpr (kRegTotals) {
    for (int i = 0; i < MR; ++i) {
      for (int j = 0; j < NV; ++j)
        _mm512_storeu_ps(job.tot + (i * kTileVecs + j) * 16, totals[i][j]);
    }
  }
  if (!job.last) return;
  for (int j = 0; j < NV; ++j) {
    const __m512 b = job.bias != nullptr ? _mm512_maskz_loadu_ps(job.store[j], job.bias + 16 * j)
                                       : _mm512_setzero_ps();
    for (int i = 0; i < MR; ++i) {
      __m512 v = _mm512_loadu_ps(job.tot + (i * kTileVecs + j) * 16);
      if constexpr (F == QuantDecode::kNvfp4) v = _mm512_mul_ps(_mm512_set1_ps(job.alpha), v);
      if (job.bias != nullptr) v = _mm512_add_ps(v, b);
      _mm512_mask_storeu_ps(job.y + i * job.y_stride + 16 * j, job.store[j], v);
    }
  }
}

using TileFn = void (*)(const Job&);

template <int MR, bool kDecoded, QuantDecode F, Acts A, Header H>
constexpr TileFn ForVecs(int nv) {
  switch (nv) {
    case 1:
      return &GroupTile<MR, 1, kDecoded, F, A, H>;
    case 2:
      return &GroupTile<MR, 2, kDecoded, F, A, H>;
    case 3:
      return &GroupTile<MR, 3, kDecoded, F, A, H>;
    default:
      return &GroupTile<MR, 4, kDecoded, F, A, H>;
  }
}

template <bool kDecoded, QuantDecode F, Acts A, Header H>
TileFn PickTile(int mr, int nv) {
  static_assert(kTileRows == 6 && kTileVecs == 4 && kPairRows == 3, "PickTile: 6 (3) x 4 tiles");
  if constexpr (A != Acts::kF32) {  // tiles of kPairRows rows
    return mr == 1   ? ForVecs<1, kDecoded, F, A, H>(nv)
           : mr == 2 ? ForVecs<2, kDecoded, F, A, H>(nv)
                     : ForVecs<3, kDecoded, F, A, H>(nv);
  } else {
    switch (mr) {
      case 1:
        return ForVecs<1, kDecoded, F, A, H>(nv);
      case 2:
        return ForVecs<2, kDecoded, F, A, H>(nv);
      case 3:
        return ForVecs<3, kDecoded, F, A, H>(nv);
      case 4:
        return ForVecs<4, kDecoded, F, A, H>(nv);
      case 5:
        return ForVecs<5, kDecoded, F, A, H>(nv);
      default:
        return ForVecs<6, kDecoded, F, A, H>(nv);
    }
  }
}

// Panels [0, nv) of the job's tile, groups [g0, g1), decoded to job.dec's layout: f32 code
// values, or (pair form) the bf16 pair vectors the register path builds, in the same order.
template <QuantDecode F, bool kPairs, bool kInt16>
void DecodeBlock(const Job& job, int nv, float* dec, float* dec_scales) {
  const int64_t group = kCodesPerLane<F> * job.chunks;
  for (int j = 0; j < nv; ++j) {
    for (int64_t g = job.g0; g < job.g1; ++g) {
      const uint8_t* head = job.panels + j * job.panel_bytes + GroupAt(job, g);
      if constexpr (!HasScaleHeader(F)) {
        _mm512_storeu_ps(dec_scales + (j * (job.g1 - job.g0) + (g - job.g0)) * 16,
                         GroupScales<F>(head));
      }
      const int64_t vecs = kPairs ? group / 2 : group;  // vectors per group
      float* out = dec + (j * job.dec_panel + (g - job.g0) * vecs) * 16;
      for (int64_t t = 0; t < job.chunks; ++t) {
        __m512i codes = _mm512_loadu_si512(head + job.head_bytes + 64 * t);
        if constexpr (kPairs) {
          const auto table = LoadPairTable<F, kInt16>(job.codebook_words);
          for (int p = 0; p < kPairsPerChunk<F>;
               ++p, codes = _mm512_srli_epi32(codes, kCodeBits<F>)) {
            _mm512_storeu_si512(out + (kPairsPerChunk<F> * t + p) * 16, table.Decode(codes));
          }
        } else {
          const __m512 table = CodeTable<F>(job.codebook);
          for (int c = 0; c < kCodesPerLane<F>;
               ++c, codes = _mm512_srli_epi32(codes, kCodeBits<F>)) {
            _mm512_storeu_ps(out + (kCodesPerLane<F> * t + c) * 16, DecodeCode<F>(codes, table));
          }
        }
      }
    }
  }
}

// Any form, with the call's activations in that form.
template <QuantDecode F, Acts A, Header H>
void Run(const FastQuantWeights& w, const CallActs& a, int64_t rows, const float* bias, float* y,
         int64_t n_begin, int64_t n_end) {
  constexpr bool kPairs = A != Acts::kF32;
  const internal::QuantPanelGeometry geo = internal::QuantPanelGeometryOf(w);
  const int64_t group = geo.group, groups = w.k / group;
  const bool decoded = rows > kTileRows;
  const int64_t block_groups = decoded ? std::max<int64_t>(1, kBlockK / group) : groups;
  const int64_t block_vecs = block_groups * (kPairs ? group / 2 : group);  // per panel
  thread_local hwy::AlignedFreeUniquePtr<float[]> dec, tot;
  thread_local std::vector<float> dec_scales;
  thread_local std::vector<float> sums;
  thread_local int64_t dec_capacity = 0, tot_capacity = 0;
  const int64_t dec_size = decoded ? kTileVecs * block_vecs * 16 : 0;
  const int64_t tot_size = rows * kTileVecs * 16;
  if (dec_capacity < dec_size) {
    dec = hwy::AllocateAligned<float>(dec_size);
    dec_capacity = dec_size;
  }
  if (tot_capacity < tot_size) {
    tot = hwy::AllocateAligned<float>(tot_size);
    tot_capacity = tot_size;
  }
  dec_scales.resize(decoded ? kTileVecs * block_groups * 16 : 0);
  const bool zero_folds = IsInteger(F) && !w.symmetric_panels;
  const float* group_sums = a.sums;  // int16 activations: Σx̂ from the quantizer
  if (zero_folds && A != Acts::kInt16 && a.sums == nullptr) {
    sums.resize(rows * groups);
    internal::GroupSumsRows(a.x, rows, w.k, group, sums.data());
    group_sums = sums.data();
  }
  Job job;
  job.group_bytes = geo.GroupBytes();
  job.head_bytes = geo.head;
  job.panel_bytes = geo.PanelBytes(groups);
  job.super_bytes = geo.SuperBytes();
  job.super_head = geo.super_head;
  job.centre = static_cast<float>(w.panel_centre);
  job.chunks = group / kCodesPerLane<F>;
  job.dec = dec.get();
  job.dec_panel = block_vecs;
  job.dec_scales = dec_scales.data();
  job.x_stride = w.k;
  job.pair_stride = kPairs ? Bf16DotActStride(w.k) / 2 : 0;
  job.sums_stride = groups;
  job.symmetric = !zero_folds;
  job.alpha = F == QuantDecode::kNvfp4 ? w.alpha : 1.0f;
  job.codebook = w.codebook;
  alignas(64) uint16_t codebook_words[32] = {};
  if constexpr (F == QuantDecode::kCodebook4 && kPairs) {
    for (int i = 0; i < 32; ++i) codebook_words[i] = panel_decode::Bf16Bits(w.codebook[i % 16]);
  }
  job.codebook_words = codebook_words;
  job.y_stride = w.n;
  const int64_t p_begin = n_begin / panels::kCols, p_end = panels::Count(n_end);
  for (int64_t p0 = p_begin; p0 < p_end; p0 += kTileVecs) {
    const int nv = static_cast<int>(std::min<int64_t>(kTileVecs, p_end - p0));
    for (int j = 0; j < kTileVecs; ++j) job.store[j] = panels::StoreMask(p0 + j, n_begin, n_end);
    job.panels = w.q + p0 * job.panel_bytes;
    const int64_t col0 = p0 * panels::kCols;
    job.bias = bias != nullptr ? bias + col0 : nullptr;
    for (int64_t g0 = 0; g0 < groups; g0 += block_groups) {
      job.g0 = g0;
      job.g1 = std::min(groups, g0 + block_groups);
      job.first = g0 == 0;
      job.last = job.g1 == groups;
      if (decoded) {
        DecodeBlock<F, kPairs, A == Acts::kInt16>(job, nv, dec.get(), dec_scales.data());
      }
      constexpr int64_t kRows = kPairs ? kPairRows : kTileRows;
      for (int64_t m0 = 0; m0 < rows; m0 += kRows) {
        const int mr = static_cast<int>(std::min<int64_t>(kRows, rows - m0));
        if constexpr (kPairs) {
          job.hi = reinterpret_cast<const int32_t*>(a.hi) + m0 * job.pair_stride;
          job.lo = a.lo != nullptr ? reinterpret_cast<const int32_t*>(a.lo) + m0 * job.pair_stride
                                   : nullptr;
        } else {
          job.x = a.x + m0 * w.k;
        }
        job.sums = zero_folds ? group_sums + m0 * groups : nullptr;
        job.act_scales = A == Acts::kInt16 ? a.scales + m0 * groups : nullptr;
        job.tot = tot.get() + m0 * kTileVecs * 16;
        job.y = y + m0 * w.n + col0;
        const TileFn tile =
            decoded ? PickTile<true, F, A, H>(mr, nv) : PickTile<false, F, A, H>(mr, nv);
        tile(job);
      }
    }
  }
}

// Run for integer codes or codebook layers (never K-quant headers) with w's header.
template <QuantDecode F, Acts A>
void RunInteger(const FastQuantWeights& w, const CallActs& a, int64_t rows, const float* bias,
                float* y, int64_t n_begin, int64_t n_end) {
  if constexpr (F != QuantDecode::kCodebook4) {
    if (w.kquant_panel_headers)
      return Run<F, A, Header::kKQuant>(w, a, rows, bias, y, n_begin, n_end);
  }
  if (w.half_panel_headers) return Run<F, A, Header::kF16>(w, a, rows, bias, y, n_begin, n_end);
  Run<F, A, Header::kF32>(w, a, rows, bias, y, n_begin, n_end);
}

// Run for w's format.
template <Acts A>
void Dispatch(const FastQuantWeights& w, const CallActs& a, int64_t rows, const float* bias,
              float* y, int64_t n_begin, int64_t n_end) {
  if (rows <= 0 || n_begin >= n_end) return;
  switch (w.decode) {
    case QuantDecode::kInt4:
      return RunInteger<QuantDecode::kInt4, A>(w, a, rows, bias, y, n_begin, n_end);
    case QuantDecode::kInt8:
      return RunInteger<QuantDecode::kInt8, A>(w, a, rows, bias, y, n_begin, n_end);
    case QuantDecode::kMxfp4:
      return Run<QuantDecode::kMxfp4, A, Header::kF32>(w, a, rows, bias, y, n_begin, n_end);
    case QuantDecode::kNvfp4:
      return Run<QuantDecode::kNvfp4, A, Header::kF32>(w, a, rows, bias, y, n_begin, n_end);
    case QuantDecode::kCodebook4:  // no int16 route (codebook values are not int16 ones)
      if constexpr (A != Acts::kInt16) {
        return RunInteger<QuantDecode::kCodebook4, A>(w, a, rows, bias, y, n_begin, n_end);
      }
      return;
    default:
      return;
  }
}

// The f32 form on AVX-512 (QuantPanelMatmul, below the region, picks it).
void F32FormAvx512(const FastQuantWeights& w, const float* x, int64_t rows, const float* bias,
                   float* y, int64_t n_begin, int64_t n_end, const float* group_sums) {
  Dispatch<Acts::kF32>(w, CallActs{.x = x, .sums = group_sums}, rows, bias, y, n_begin, n_end);
}

}  // namespace

void QuantPanelPairMatmul(const FastQuantWeights& w, const float* x, const uint16_t* hi,
                          const uint16_t* lo, int64_t rows, const float* bias, float* y,
                          int64_t n_begin, int64_t n_end, const float* group_sums) {
  // Pair panels of 8-bit byte codes (kInt16Pairs) hold values no bf16 pair table covers, and
  // kInt16Pairs panels exist on CPUs without AVX-512 BF16 too.
  if (!w.pair_panels || (w.decode == QuantDecode::kInt8 && w.panel_centre > 32) ||
      !QuantPanelPairsAvailable()) {
    return;
  }
  // On AMX the layers its route takes run every row count there (one order for every row).
  if (QuantPanelAmxTakes(w) && AmxBf16Usable()) {
    return internal::QuantPanelAmxMatmul(
        w, x, hi, lo, rows, bias, y, n_begin, n_end,
        {internal::AmxBf16DotMatmul, internal::AmxBf16MadeTilesMatmul,
         internal::AmxBf16GroupMatmul},
        group_sums);
  }
  const CallActs a{.x = x, .hi = hi, .lo = lo, .sums = group_sums};
  if (lo != nullptr) return Dispatch<Acts::kSplit>(w, a, rows, bias, y, n_begin, n_end);
  Dispatch<Acts::kBf16>(w, a, rows, bias, y, n_begin, n_end);
}

void QuantPanelInt16Matmul(const FastQuantWeights& w, const Int16Acts& acts, int64_t rows,
                           const float* bias, float* y, int64_t n_begin, int64_t n_end) {
  if (QuantPanelInt16Group(w) == 0) return;
  const CallActs a{
      .hi = reinterpret_cast<const uint16_t*>(acts.q), .scales = acts.scales, .sums = acts.sums};
  Dispatch<Acts::kInt16>(w, a, rows, bias, y, n_begin, n_end);
}

HWY_POP_ATTRIBUTES

// Outside the AVX-512 region: AVX2 CPUs enter here (the f32 form's AVX2 kernel, avx2_panels.h).
void QuantPanelMatmul(const FastQuantWeights& w, const float* x, int64_t rows, const float* bias,
                      float* y, int64_t n_begin, int64_t n_end, const float* group_sums) {
  if (w.pair_panels) return;
  if (internal::Avx2PanelsInUse()) {
    return internal::QuantPanelMatmulAvx2(w, x, rows, bias, y, n_begin, n_end, group_sums);
  }
  F32FormAvx512(w, x, rows, bias, y, n_begin, n_end, group_sums);
}

void QuantPanelGroupSums(const FastQuantWeights& w, const float* x, int64_t r0, int64_t r1,
                         float* sums) {
  if (QuantPanelGroupSumsCount(w, 1) == 0 || r1 <= r0) return;
  const int64_t group = internal::QuantPanelGeometryOf(w).group, groups = w.k / group;
  internal::GroupSumsRows(x + r0 * w.k, r1 - r0, w.k, group, sums + r0 * groups);
}

#else  // not x86-64 GCC/Clang: never called (QuantPanelAvailable() is false), for the link.

void QuantPanelMatmul(const FastQuantWeights&, const float*, int64_t, const float*, float*, int64_t,
                      int64_t, const float*) {}
void QuantPanelPairMatmul(const FastQuantWeights&, const float*, const uint16_t*, const uint16_t*,
                          int64_t, const float*, float*, int64_t, int64_t, const float*) {}
void QuantPanelGroupSums(const FastQuantWeights&, const float*, int64_t, int64_t, float*) {}
void QuantPanelInt16Matmul(const FastQuantWeights&, const Int16Acts&, int64_t, const float*, float*,
                           int64_t, int64_t) {}

#endif

}  // namespace tessera::kernels::cpu::fast
