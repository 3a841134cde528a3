// AVX-512 BF16 kernel of fp8_bf16_matmul.h (decode, numerics and batch invariance are described
// there). Intrinsics rather than Highway: Highway 1.0.3 has neither a bf16 dot-product op
// (`vdpbf16ps`) nor a two-table byte permute (`vpermi2b`), the two instructions this kernel is
// built on. Everything that uses them carries the AVX-512 target attributes and runs only after
// the CPUID check (Fp8Bf16Available), so the library still runs, on the Highway kernel, elsewhere.
//
// Structure, as in fast_quant_matmul.cc: one inner kernel (DotTile) computes MR rows × NC columns
// of dot products in the canonical order, fed either by the register decoder (GEMV, ≤ 4 rows) or
// by a tile of bf16 columns the same decoder wrote (GEMM). Activations are converted to bf16 once
// per call (per thread: each call covers one thread's column range) in 64-element chunks laid out
// as [unit a: hi (lo)] [unit b: hi (lo)], unit a holding K positions 0-31 of the chunk, b 32-63.
#if defined(__GNUC__) && !defined(__clang__)
// GCC 12 reports false "used uninitialized" warnings inside its own avx512fintrin.h (the
// _mm512_undefined_* placeholders of unpack/convert intrinsics) once they are inlined here.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

#include "kernels/cpu/fast/fp8_bf16_matmul.h"
#include "kernels/cpu/fast/isa_limit.h"
#include "kernels/cpu/fast/quant_epilogue.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "hwy/base.h"
#include "kernels/numeric/fp8.h"
#include "kernels/numeric/half.h"

namespace tessera::kernels::cpu::fast {

bool Fp8Bf16Available() {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  static const bool has = Avx512Allowed() && __builtin_cpu_supports("avx512f") &&
                          __builtin_cpu_supports("avx512bw") &&
                          __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
                          __builtin_cpu_supports("avx512vbmi") &&
                          __builtin_cpu_supports("avx512bf16") &&
                          Avx512ExtensionAllowed("avx512bf16");
  return has;
#else
  return false;
#endif
}

bool Fp8Bf16LayoutFits(const FastQuantWeights& w) {
  return Fp8Bf16Available() && w.decode == QuantDecode::kFp8 && w.q != nullptr &&
         w.scales != nullptr && w.n >= 0 && w.k > 0 && w.scale_rows > 0 && w.scale_k > 0 &&
         (w.scale_k >= w.k || w.scale_k % 32 == 0) &&
         !(w.row_scale == nullptr && w.col_scale != nullptr);
}

bool Fp8Bf16Supported(const FastQuantWeights& w) {
  if (!Fp8Bf16LayoutFits(w)) return false;
  // Any finite scale works (no rebias multiplier here, unlike the Highway decoder).
  const int64_t row_blocks = (w.n + w.scale_rows - 1) / w.scale_rows;
  const int64_t count =
      std::max<int64_t>(0, row_blocks - 1) * w.scale_row_stride + (w.k + w.scale_k - 1) / w.scale_k;
  for (int64_t i = 0; i < count; ++i) {
    if (!std::isfinite(w.scales[i])) return false;
  }
  return true;
}

}  // namespace tessera::kernels::cpu::fast

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))

HWY_PUSH_ATTRIBUTES("avx512f,avx512vl,avx512dq,avx512bw,avx512vbmi,avx512bf16,avx2,fma,f16c")

#include "kernels/cpu/fast/fp8_bf16_decode.h"

namespace tessera::kernels::cpu::fast {
namespace {

// Bytes ahead of the GEMM tile decode that are prefetched (measured: ~10% at batch 16).
constexpr int64_t kDecodePrefetch = 2048;
constexpr int kMaxFusedRows = 4;
constexpr int kTileCols = 4;

inline __m512bh AsBh(__m512i v) { return (__m512bh)v; }

// K geometry of one call, the same for every (row, column).
struct Shape {
  int64_t k;
  int64_t full;    // whole 64-code chunks
  int tail;        // codes in the last partial chunk (0 if none)
  int64_t chunks;  // full + (tail != 0)
  int upb;         // 32-wide units per scale block (blocked layouts only)
};

using internal::Decoder;

inline __mmask64 TailMask(int tail) { return (uint64_t{1} << tail) - 1; }

// GEMV weights: column j's codes decoded in registers as they stream past.
struct CodeSrc {
  const uint8_t* q;  // column 0 of the group
  int64_t stride;    // bytes between columns (k)
  Decoder dec;
  int64_t nc;        // columns in the group
  HWY_INLINE void Chunk(int j, int64_t c, __m512i* a, __m512i* b) const {
    // The group's nc columns are one contiguous block of nc · k bytes, read as nc streams; the
    // next group's block is prefetched sequentially, one line per line consumed, so DRAM sees a
    // long sequential stream well ahead of use (the hardware prefetcher alone restarts on every
    // short column stream: ~30 GB/s instead of ~40-60 on this machine). Into L2, not L1: an L1
    // prefetch holds one of the core's few L1 miss buffers until its line arrives (one thread,
    // M = 1, 1.1b_gate_up from DRAM: T0 16 GB/s, T1 26.6; two threads 26-31 -> 35-37 GB/s).
    _mm_prefetch(reinterpret_cast<const char*>(q + nc * stride + (c * nc + j) * 64), _MM_HINT_T1);
    dec.Decode(_mm512_loadu_si512(q + j * stride + c * 64), a, b);
  }
  HWY_INLINE void Tail(int j, int64_t c, int tail, __m512i* a, __m512i* b) const {
    dec.Decode(_mm512_maskz_loadu_epi8(TailMask(tail), q + j * stride + c * 64), a, b);
  }
};

// GEMM weights: columns already decoded to bf16 (zero-padded to whole chunks).
struct TileSrc {
  const uint16_t* t;  // column 0 of the group
  int64_t stride;     // elements between columns (64 · chunks)
  HWY_INLINE void Chunk(int j, int64_t c, __m512i* a, __m512i* b) const {
    const uint16_t* p = t + j * stride + c * 64;
    *a = _mm512_loadu_si512(p);
    *b = _mm512_loadu_si512(p + 32);
  }
  HWY_INLINE void Tail(int j, int64_t c, int, __m512i* a, __m512i* b) const { Chunk(j, c, a, b); }
};

// One 32-wide unit u of every (row, column), w[j] column j's weights: P = 1 (exact bf16 x) or 2
// (hi, then lo). Each x vector is loaded once and meets all NC columns.
template <int MR, int NC, int P>
HWY_INLINE void Unit(const uint16_t* x, int64_t xs, int64_t u, const __m512i* w,
                     __m512 (&acc)[MR][NC]) {
  _Pragma("GCC unroll 16")
  for (int p = 0; p < P; ++p) {
    _Pragma("GCC unroll 16")
    for (int r = 0; r < MR; ++r) {
      const __m512i xv = _mm512_loadu_si512(x + r * xs + (u * P + p) * 32);
      _Pragma("GCC unroll 16")
      for (int j = 0; j < NC; ++j) acc[r][j] = _mm512_dpbf16_ps(acc[r][j], AsBh(xv), AsBh(w[j]));
    }
  }
}

// Activation scales per (row, K-block) of one row tile (FastQuantWeights::act_block_scale from
// the tile's first row); p == nullptr when the layer has none.
struct ActBlocks {
  const float* p = nullptr;
  int64_t row_stride = 0;
  int64_t block_stride = 0;
};

// Column j: tot += scale(block) · acc, then acc = 0 (one scale block folded in); with activation
// block scales the multiplier is scale(block) · act(r, block), one rounding.
template <int MR, int NC>
HWY_INLINE void Fold(const float* const* sc, const ActBlocks& ab, int j, int64_t blk,
                     __m512 (&acc)[MR][NC], __m512 (&tot)[MR][NC]) {
  const float ws = sc[j][blk];
  _Pragma("GCC unroll 16")
  for (int r = 0; r < MR; ++r) {
    const __m512 s = _mm512_set1_ps(
        ab.p == nullptr ? ws : ws * ab.p[r * ab.row_stride + blk * ab.block_stride]);
    tot[r][j] = _mm512_fmadd_ps(s, acc[r][j], tot[r][j]);
    acc[r][j] = _mm512_setzero_ps();
  }
}

// out[r][j] = Σ_b scale(j, b) · Σ_{k∈b} x[r, k] · e4m3(q[j, k]) in the canonical order: per
// output, units in K order (hi then lo within a unit), each block folded after its last unit,
// then the lanes summed. Each output is one dependency chain of `vdpbf16ps`, whose latency is
// ~12 times its reciprocal throughput on Zen 5 (measured), so a tile wants ≥ 12 outputs: 4 × 4,
// and 1 × 8 for a single row (memory-bound there anyway; 1 × 4 was ~25% slower in cache).
template <int MR, int NC, int P, bool kBlocked, class Src>
HWY_INLINE void DotTile(const Src& src, const uint16_t* x, int64_t xs, const float* const* sc,
                        const ActBlocks& ab, const Shape& sh, float* out) {
  __m512 acc[MR][NC], tot[MR][NC];
  _Pragma("GCC unroll 16")
  for (int r = 0; r < MR; ++r) {
    _Pragma("GCC unroll 16")
    for (int j = 0; j < NC; ++j) acc[r][j] = tot[r][j] = _mm512_setzero_ps();
  }
  int left = sh.upb;
  int64_t blk = 0;
  // Block bookkeeping of one unit: whether a block ends with it, and which.
  auto end_unit = [&](int64_t* folded) {
    if constexpr (kBlocked) {
      if (--left == 0) {
        left = sh.upb;
        *folded = blk++;
        return true;
      }
    }
    return false;
  };
  const int64_t chunks = sh.chunks;
  for (int64_t c = 0; c < chunks; ++c) {
    const bool tail = c == sh.full;
    const bool has_b = !tail || sh.tail > 32;
    int64_t blk_a = 0, blk_b = 0;
    const bool fold_a = end_unit(&blk_a);
    const bool fold_b = has_b && end_unit(&blk_b);
    __m512i wa[NC], wb[NC];
    _Pragma("GCC unroll 16")
    for (int j = 0; j < NC; ++j) {
      if (tail) {
        src.Tail(j, c, sh.tail, &wa[j], &wb[j]);
      } else {
        src.Chunk(j, c, &wa[j], &wb[j]);
      }
    }
    Unit<MR, NC, P>(x, xs, 2 * c, wa, acc);
    if (fold_a) {
      _Pragma("GCC unroll 16")
      for (int j = 0; j < NC; ++j) Fold<MR, NC>(sc, ab, j, blk_a, acc, tot);
    }
    if (has_b) Unit<MR, NC, P>(x, xs, 2 * c + 1, wb, acc);
    if (fold_b) {
      _Pragma("GCC unroll 16")
      for (int j = 0; j < NC; ++j) Fold<MR, NC>(sc, ab, j, blk_b, acc, tot);
    }
  }
  if (!kBlocked || left != sh.upb) {
    _Pragma("GCC unroll 16")
    for (int j = 0; j < NC; ++j) Fold<MR, NC>(sc, ab, j, blk, acc, tot);
  }
  _Pragma("GCC unroll 16")
  for (int r = 0; r < MR; ++r) {
    _Pragma("GCC unroll 16")
    for (int j = 0; j < NC; ++j) out[r * NC + j] = _mm512_reduce_add_ps(tot[r][j]);
  }
}

template <int NC, int P, bool kBlocked, class Src>
HWY_INLINE void DotRows(int mr, const Src& src, const uint16_t* x, int64_t xs,
                        const float* const* sc, const ActBlocks& ab, const Shape& sh, float* out) {
  switch (mr) {
    case 4: return DotTile<4, NC, P, kBlocked>(src, x, xs, sc, ab, sh, out);
    case 3: return DotTile<3, NC, P, kBlocked>(src, x, xs, sc, ab, sh, out);
    case 2: return DotTile<2, NC, P, kBlocked>(src, x, xs, sc, ab, sh, out);
    default: return DotTile<1, NC, P, kBlocked>(src, x, xs, sc, ab, sh, out);
  }
}

// The activation block scales of rows m0.. (none unless the layer has them).
ActBlocks RowBlocks(const FastQuantWeights& w, int64_t m0) {
  if (!w.act_block_scales) return {};
  return {w.act_block_scale + m0 * w.act_block_row_stride, w.act_block_row_stride,
          w.act_block_stride};
}


template <int NC>
void ColumnScales(const FastQuantWeights& w, int64_t col, const float** sc) {
  // No divisions in the common layouts (one per output costs ~10% of a batch-16 tile).
  if (w.scale_row_stride == 0) {
    for (int j = 0; j < NC; ++j) sc[j] = w.scales;
  } else if (w.scale_rows == 1) {
    for (int j = 0; j < NC; ++j) sc[j] = w.scales + (col + j) * w.scale_row_stride;
  } else {
    for (int j = 0; j < NC; ++j) sc[j] = w.scales + ((col + j) / w.scale_rows) * w.scale_row_stride;
  }
}

// Columns in groups of NC (then one at a time), rows ≤ 4, weights decoded in registers.
template <int NC, int P, bool kBlocked>
void Gemv(const FastQuantWeights& w, const uint16_t* x, int64_t xs, int64_t rows, const Shape& sh,
          const float* bias, float* y, int64_t nb, int64_t ne) {
  const Decoder dec = Decoder::Make();
  const int mr = static_cast<int>(rows);
  float out[kMaxFusedRows * NC];
  const float* sc[NC];
  const ActBlocks ab = RowBlocks(w, 0);
  int64_t col = nb;
  for (; col + NC <= ne; col += NC) {
    ColumnScales<NC>(w, col, sc);
    const CodeSrc src{w.q + col * w.k, w.k, dec, NC};
    if constexpr (NC > kTileCols) {  // one row only: MR · NC accumulators must fit
      DotTile<1, NC, P, kBlocked>(src, x, xs, sc, ab, sh, out);
    } else {
      DotRows<NC, P, kBlocked>(mr, src, x, xs, sc, ab, sh, out);
    }
    StoreQuantEpilogue(w, out, NC, 0, mr, col, bias, y);
  }
  for (; col < ne; ++col) {
    ColumnScales<1>(w, col, sc);
    DotRows<1, P, kBlocked>(mr, CodeSrc{w.q + col * w.k, w.k, dec, 1}, x, xs, sc, ab, sh, out);
    StoreQuantEpilogue(w, out, 1, 0, mr, col, bias, y);
  }
}

// Column `col` decoded into dst (64 · chunks bf16, zeros past k).
void DecodeColumn(const FastQuantWeights& w, int64_t col, const Shape& sh, const Decoder& dec,
                  uint16_t* dst) {
  const uint8_t* q = w.q + col * w.k;
  __m512i a, b;
  for (int64_t c = 0; c < sh.full; ++c) {
    _mm_prefetch(reinterpret_cast<const char*>(q + c * 64 + kDecodePrefetch), _MM_HINT_T0);
    dec.Decode(_mm512_loadu_si512(q + c * 64), &a, &b);
    _mm512_storeu_si512(dst + c * 64, a);
    _mm512_storeu_si512(dst + c * 64 + 32, b);
  }
  if (sh.tail != 0) {
    dec.Decode(_mm512_maskz_loadu_epi8(TailMask(sh.tail), q + sh.full * 64), &a, &b);
    _mm512_storeu_si512(dst + sh.full * 64, a);
    _mm512_storeu_si512(dst + sh.full * 64 + 32, b);
  }
}

// More than 4 rows: tiles of ~128 KiB of decoded columns (L2-resident), decoded once per call
// and swept by blocks of 4 activation rows (L1-resident while they meet every tile column).
template <int P, bool kBlocked>
void Gemm(const FastQuantWeights& w, const uint16_t* x, int64_t xs, int64_t rows, const Shape& sh,
          const float* bias, float* y, int64_t nb, int64_t ne) {
  const Decoder dec = Decoder::Make();
  const int64_t cs = sh.chunks * 64;
  const int64_t tile_cols =
      std::clamp<int64_t>((int64_t{1} << 16) / cs / kTileCols * kTileCols, kTileCols, 64);
  thread_local std::vector<uint16_t> tile;
  tile.resize(tile_cols * cs);
  float out[kMaxFusedRows * kTileCols];
  const float* sc[kTileCols];
  for (int64_t t0 = nb; t0 < ne; t0 += tile_cols) {
    const int64_t t1 = std::min(ne, t0 + tile_cols);
    for (int64_t col = t0; col < t1; ++col) DecodeColumn(w, col, sh, dec, &tile[(col - t0) * cs]);
    for (int64_t m0 = 0; m0 < rows; m0 += kMaxFusedRows) {
      const int mr = static_cast<int>(std::min<int64_t>(kMaxFusedRows, rows - m0));
      const uint16_t* xr = x + m0 * xs;
      const ActBlocks ab = RowBlocks(w, m0);
      int64_t col = t0;
      for (; col + kTileCols <= t1; col += kTileCols) {
        ColumnScales<kTileCols>(w, col, sc);
        DotRows<kTileCols, P, kBlocked>(mr, TileSrc{&tile[(col - t0) * cs], cs}, xr, xs, sc, ab,
                                        sh, out);
        StoreQuantEpilogue(w, out, kTileCols, m0, mr, col, bias, y);
      }
      for (; col < t1; ++col) {
        ColumnScales<1>(w, col, sc);
        DotRows<1, P, kBlocked>(mr, TileSrc{&tile[(col - t0) * cs], cs}, xr, xs, sc, ab, sh, out);
        StoreQuantEpilogue(w, out, 1, m0, mr, col, bias, y);
      }
    }
  }
}

// x [rows, k] -> bf16 chunks (see the top of the file), P parts per unit; returns false (for
// P = 1) when some x is not exactly a bf16, i.e. the split is needed.
bool ConvertActivations(const float* x, int64_t rows, int64_t k, int64_t chunks, int p,
                        uint16_t* out) {
  const int64_t xs = chunks * 64 * p;
  __mmask16 inexact = 0;
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * k;
    uint16_t* o = out + r * xs;
    for (int64_t g = 0; g < chunks * 4; ++g) {  // 16 floats at a time
      const int64_t i = g * 16;
      const __mmask16 m = i + 16 <= k ? __mmask16{0xFFFF}
                          : i >= k    ? __mmask16{0}
                                      : static_cast<__mmask16>((1u << (k - i)) - 1);
      const __m512 v = _mm512_maskz_loadu_ps(m, xr + i);
      const __m256i hi = (__m256i)_mm512_cvtneps_pbh(v);
      const __m512 hi_f = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(hi), 16));
      const __m512 rest = _mm512_sub_ps(v, hi_f);  // exact
      uint16_t* d = o + (g / 2) * p * 32 + (g % 2) * 16;
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(d), hi);
      if (p == 2) {
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + 32), (__m256i)_mm512_cvtneps_pbh(rest));
      } else {
        inexact |= _mm512_cmp_ps_mask(rest, _mm512_setzero_ps(), _CMP_NEQ_UQ);
        // The caller redoes an inexact call in split form: stop converting at once.
        if (inexact != 0) return false;
      }
    }
  }
  return inexact == 0;
}

template <int P, bool kBlocked>
void Run(const FastQuantWeights& w, const uint16_t* x, int64_t xs, int64_t rows, const Shape& sh,
         const float* bias, float* y, int64_t nb, int64_t ne) {
  if (rows == 1) {
    // 8 columns: enough independent accumulator chains for one row (see DotTile).
    Gemv<8, P, kBlocked>(w, x, xs, rows, sh, bias, y, nb, ne);
  } else if (rows <= kMaxFusedRows) {
    Gemv<kTileCols, P, kBlocked>(w, x, xs, rows, sh, bias, y, nb, ne);
  } else {
    Gemm<P, kBlocked>(w, x, xs, rows, sh, bias, y, nb, ne);
  }
}

}  // namespace

namespace internal {

void Fp8Bf16MatmulAvx512(const FastQuantWeights& w, const float* x, int64_t rows,
                         const float* bias, float* y, int64_t nb, int64_t ne) {
  if (rows <= 0 || nb >= ne) return;
  Shape sh;
  sh.k = w.k;
  sh.full = w.k / 64;
  sh.tail = static_cast<int>(w.k % 64);
  sh.chunks = sh.full + (sh.tail != 0 ? 1 : 0);
  const bool blocked = w.scale_k < w.k;
  sh.upb = blocked ? static_cast<int>(w.scale_k / 32) : 0;
  // Activations that are all exact bf16 (W8A8's decoded E4M3 codes, W8A16 under bf16
  // activations) take one vdpbf16ps per weight vector; anything else is split. The split of an
  // exact x has lo = 0, which adds exact zeros: both forms give the same result.
  thread_local std::vector<uint16_t> xbuf;
  int p = 2;
  xbuf.resize(rows * sh.chunks * 64);
  if (ConvertActivations(x, rows, w.k, sh.chunks, 1, xbuf.data())) p = 1;
  if (p == 2) {
    xbuf.resize(rows * sh.chunks * 128);
    ConvertActivations(x, rows, w.k, sh.chunks, 2, xbuf.data());
  }
  const int64_t xs = sh.chunks * 64 * p;
  const uint16_t* xb = xbuf.data();
  if (p == 1) {
    blocked ? Run<1, true>(w, xb, xs, rows, sh, bias, y, nb, ne)
            : Run<1, false>(w, xb, xs, rows, sh, bias, y, nb, ne);
  } else {
    blocked ? Run<2, true>(w, xb, xs, rows, sh, bias, y, nb, ne)
            : Run<2, false>(w, xb, xs, rows, sh, bias, y, nb, ne);
  }
}

}  // namespace internal
}  // namespace tessera::kernels::cpu::fast

HWY_POP_ATTRIBUTES

#else  // not x86-64 GCC/Clang: Fp8Bf16Available() is false, so this is never called.

namespace tessera::kernels::cpu::fast::internal {
void Fp8Bf16MatmulAvx512(const FastQuantWeights&, const float*, int64_t, const float*, float*,
                         int64_t, int64_t) {}
}  // namespace tessera::kernels::cpu::fast::internal

#endif

namespace tessera::kernels::cpu::fast {

void Fp8Bf16Matmul(const FastQuantWeights& w, const float* x, int64_t rows, const float* bias,
                   float* y, int64_t n_begin, int64_t n_end) {
  internal::Fp8Bf16MatmulAvx512(w, x, rows, bias, y, n_begin, n_end);
}

}  // namespace tessera::kernels::cpu::fast
