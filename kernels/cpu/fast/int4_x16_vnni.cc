// AVX-512 VNNI kernel of int4_x16.h (Q4_0, per-group INT4, NVFP4, MXFP4, Q8_0, INT8, Q2_K, Q3_K,
// Q4_K, Q5_K, Q6_K, IQ4_NL, IQ4_XS and the grid types' tiles). Intrinsics under target attributes
// (Highway 1.0.3 has no vpdpbusd); called only after the CPUID check in q8_act_vnni.cc
// (internal::HasVnni).
//
// Per column group and block: 4 loads of 64 code bytes (4 K values x 2 nibbles x 16 columns each)
// are split into low and high nibbles once, then every activation row of the tile (up to 8, kept
// in registers) does 8 vpdpbusd with its 4-byte code groups broadcast, one int-to-float convert
// and two FMAs: the canonical order of the header, lane = column. Q8_0 tiles load 8 vectors of
// bytes per block and skip the split. Formats with an integer zero point (Q4_0, Q8_0, MXFP4,
// NVFP4, Q6_K, Q3_K, IQ4_NL, IQ4_XS, the grid types) start each block's int32 sums at −z·s
// (broadcast from memory: a load, no vector ALU work) instead of subtracting z·s in f32
// afterwards; both give the exact block integer Σ (u − z)·x as one f32 (|Σ| < 2^24), so the
// results are the same bits with one vector operation fewer per row and block of the
// compute-bound many-row tiles.
#if defined(__GNUC__) && !defined(__clang__)
// GCC 12's false "may be used uninitialized" inside avx512fintrin.h (see q8_act_vnni.cc).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
// And its plain "is used uninitialized" twin, reported inside avx512fintrin.h for the Q8_0 tile.
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "hwy/base.h"
#include "kernels/cpu/fast/int4_x16.h"
#include "kernels/cpu/ggml_iq_dequant.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))

// Plain C++ (no intrinsics), so its inline functions stay outside the target attributes below.
#include "kernels/cpu/fast/int4_x16_layout.h"

HWY_PUSH_ATTRIBUTES("avx512f,avx512vl,avx512dq,avx512bw,avx512vnni,avx2,fma,f16c")

#include "kernels/cpu/fast/avx512_decode.h"

namespace tessera::kernels::cpu::fast::internal {
namespace {

constexpr int64_t kCols = 16;
// No software prefetch for one row: a tile is one sequential stream of records
// (int4_x16_layout.h), which the hardware prefetchers follow best on their own. Measured on the
// 2-core Zen 4 VM, M = 1, two threads, same process: the earlier layout (scales, then codes) with
// prefetcht1 16 KiB ahead 25-30 GB/s; records without prefetch 27-33; records with that prefetch
// 19-20 (bench/README.md).

// Batches do prefetch: with two or more rows the tiles compute long enough per record that the
// hardware prefetchers fell behind (1.1b gate_up Q4_0 at M = 16 streamed from DRAM at 0.7x its
// rate with the weights in L3). The first row tile of a group therefore prefetches each block's
// code bytes 2 KiB ahead (M = 16, two threads: Q4_0 gate_up 476 / 294 -> 575 / 593 GOP/s, down
// 496 / 464 -> 547 / 584; Q8_0 358-425 -> 395-439; 1, 2, 3, 4 and 8 KiB ahead tried, 2 best). A
// prefetch past the end of the tiles is harmless: prefetches never fault.
constexpr int64_t kBatchPrefetchAhead = 2048;

template <int64_t kBytes>
HWY_INLINE void PrefetchAhead(const uint8_t* codes, bool on) {
  if (!on) return;
  for (int64_t l = 0; l < kBytes; l += 64) {
    _mm_prefetch(reinterpret_cast<const char*>(codes) + kBatchPrefetchAhead + l, _MM_HINT_T0);
  }
}

// acc += w (unsigned bytes) · the 4 signed bytes at p broadcast to every lane. Written as inline
// asm so that the broadcast is the instruction's embedded {1to16} memory operand: GCC 12 emits a
// separate vpbroadcastd for _mm512_set1_epi32, one extra uop per vpdpbusd in the hottest loop.
inline __m512i DpbusdBcast(__m512i acc, __m512i w, const int8_t* p) {
#if defined(__GNUC__)
  __asm__("vpdpbusd %2%{1to16%}, %1, %0"
          : "+v"(acc)
          : "v"(w), "m"(*reinterpret_cast<const int32_t*>(p)));
  return acc;
#else
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm512_dpbusd_epi32(acc, w, _mm512_set1_epi32(v));
#endif
}

enum class Codes {
  kQ4_0, kU4, kQ8_0, kU8, kQ6K, kQ3K, kQ2K, kQ4K, kQ5K, kMxfp4, kIq4Nl, kIq4Xs, kIqGrid16, kIqGrid32
};

// Accumulators of rows [r0, r0 + MR) for one column group. kU4 / kU8: per-group f32 scales and
// zero points; kQ4K / kQ5K: GGUF's affine form (f16 d, dmin per super-block, 6-bit scales and mins
// per block; kQ5K adds a plane of fifth bits); kQ6K: f16 d and int8 scales per half block, zero
// point 32, low nibbles plus high bit pairs; kQ2K: the affine form per half block (f16 d, dmin per
// super-block, a byte of 4-bit scale and min per half), 2-bit codes; kMxfp4: E2M1 nibbles through
// the 2·e2m1 + 12 byte table, zero point 12, E8M0 scale bytes; kIq4Nl / kIq4Xs: nibbles through
// kvalues_iq4nl + 128, zero point 128, f16 block scales (kIq4Xs: f16 d times int8 scales per
// super-block); kIqGrid16 / kIqGrid32: Q6_K's halves / IQ4_XS's blocks under an f32 d and
// multipliers, nibbles through the grid type's table + 128 (zero point 128); else f16 block
// scales and zero point 8 (Q4_0 nibbles) or 128 (Q8_0 bytes). kQ8_0 / kU8 have a byte per code,
// the others nibbles.
// zs: −z·s per row, block (and half: [rows][blocks][halves]) for the integer zero points
// (ZeroPointOf, int4_x16.cc), else unused.
template <int MR, Codes kCodes>
void Tile(const uint8_t* group, const FastWeights& w, const Int4x16Acts& a, const int32_t* zs,
          int64_t r0, bool prefetch, __m512* out) {
  constexpr bool kGroupScales = kCodes == Codes::kU4 || kCodes == Codes::kU8;
  // Nibbles through a grid table under an f32 d: multipliers per half (kIqGrid16) or per block.
  constexpr bool kIqGrid = kCodes == Codes::kIqGrid16 || kCodes == Codes::kIqGrid32;
  constexpr bool kHalves =
      kCodes == Codes::kQ6K || kCodes == Codes::kQ3K || kCodes == Codes::kIqGrid16;
  constexpr bool kHighPairs = kCodes == Codes::kQ6K;  // kQ3K: 2-bit chunks and a third-bit plane
  constexpr bool kBytes = kCodes == Codes::kQ8_0 || kCodes == Codes::kU8;
  constexpr bool kFifth = kCodes == Codes::kQ5K;  // a plane of fifth bits after the nibbles
  constexpr bool kE2m1 = kCodes == Codes::kMxfp4;
  constexpr bool kIq4 = kCodes == Codes::kIq4Nl || kCodes == Codes::kIq4Xs;  // kv + 128 table
  constexpr bool kIq4Xs = kCodes == Codes::kIq4Xs;  // f16 d and int8 scales per super-block
  constexpr bool kTwoBit = kCodes == Codes::kQ2K;
  constexpr int64_t kBlockBytes = [] {
    if (kTwoBit) return 128;
    if (kCodes == Codes::kQ3K) return 192;
    if (kHighPairs) return 384;
    if (kFifth) return 320;
    return kBytes ? 512 : 256;
  }();
  // GGUF Q4_K / Q5_K: w = d·sc·u − dmin·m.
  constexpr bool kAffine = kCodes == Codes::kQ4K || kCodes == Codes::kQ5K;
  constexpr bool kIqGrid32 = kCodes == Codes::kIqGrid32;
  constexpr int64_t kScaleBytes = kGroupScales                      ? 128
                                  : (kIq4Xs || kIqGrid32)           ? 192
                                  : (kHalves || kAffine || kTwoBit) ? 320
                                                                    : 64;
  constexpr bool kIntZero =
      kCodes == Codes::kQ4_0 || kCodes == Codes::kQ8_0 || kE2m1 || kIq4 || kIqGrid32;
  // Nibbles read through the 16-byte table `lut` (E2M1, kvalues_iq4nl, a grid type's values).
  constexpr bool kTableNibbles = kE2m1 || kIq4 || kIqGrid;
  const int64_t k = w.k, blocks = k / 32;
  const X16Layout layout = X16Layout::Of(w.format, w.group_size);
  const int64_t per_record = layout.blocks_per_record, record_bytes = layout.record_bytes();
  // The walk below hard-codes the record geometry for speed; it must be the layout's.
  HWY_DASSERT(layout.scale_bytes == kScaleBytes && layout.code_bytes == kBlockBytes);
  const __m512i m4 = _mm512_set1_epi8(0x0F), m30 = _mm512_set1_epi8(0x30);
  const __m512i m3 = _mm512_set1_epi8(0x03);
  alignas(16) int8_t grid_table[16];
  if constexpr (kIqGrid) {
    for (int i = 0; i < 16; ++i) grid_table[i] = static_cast<int8_t>(IqGridTable(w.ggml)[i] + 128);
  }
  const void* table16 = kIq4 ? static_cast<const void*>(kIq4Plus128) : grid_table;
  const __m512i lut = kIq4 || kIqGrid ? _mm512_broadcast_i32x4(_mm_load_si128(
                                            static_cast<const __m128i*>(table16)))
                                      : TwiceE2m1Plus12Table();
  __m512 acc[MR];
  for (int r = 0; r < MR; ++r) acc[r] = _mm512_setzero_ps();
  const int8_t* xrow[MR];
  for (int r = 0; r < MR; ++r) xrow[r] = a.q + (r0 + r) * k;
  // kQ2K / kQ3K: isum[r] += half h of the block at `codes` times row r's activations: each 2-bit
  // operand of the half's chunk (kQ3K: + 4 where the third-bit plane's bit 4h + s is set).
  [[maybe_unused]] auto two_bit_half = [&](const uint8_t* codes, int64_t b, int h,
                                           __m512i* isum) {
    const __m512i v = _mm512_loadu_si512(codes + h * 64);
    // kQ2K's block ends at byte 128: no plane to read there.
    const __m512i plane =
        kCodes == Codes::kQ3K ? _mm512_loadu_si512(codes + 128) : _mm512_setzero_si512();
    for (int sh = 0; sh < 4; ++sh) {
      __m512i u = _mm512_and_si512(sh == 0 ? v : _mm512_srli_epi16(v, 2 * sh), m3);
      if constexpr (kCodes == Codes::kQ3K) {
        const __m512i bit = _mm512_set1_epi8(static_cast<char>(1 << (4 * h + sh)));
        u = _mm512_mask_add_epi8(u, _mm512_test_epi8_mask(plane, bit), u, _mm512_set1_epi8(4));
      }
      for (int r = 0; r < MR; ++r) {
        isum[r] = DpbusdBcast(isum[r], u, xrow[r] + b * 32 + 16 * h + 4 * sh);
      }
    }
  };
  const uint8_t* record = group;  // the record of block b; block b is its j-th
  for (int64_t b = 0, j = 0; b < blocks; ++b) {
    if constexpr (kTwoBit) {
      // Q2_K: per half of 16 K, one 64-byte chunk whose bit pairs 2s, 2s + 1 are the codes of
      // K = 16h + 4s .. 16h + 4s + 3 (int4_x16_layout.h Q2KCodeOffset), so each shift-and-mask
      // is one vpdpbusd operand; s = d·(sc & 15) and o = dmin·(sc >> 4) from the half's byte.
      const uint8_t* codes = record + kScaleBytes + j * kBlockBytes;
      PrefetchAhead<kBlockBytes>(codes, prefetch);
      const __m512 d_sb =
          _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(record)));
      const __m512 m_sb =
          _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(record + 32)));
      for (int h = 0; h < 2; ++h) {
        const __m512i sc = _mm512_cvtepu8_epi32(
            _mm_loadu_si128(reinterpret_cast<const __m128i*>(record + 64 + (j * 2 + h) * 16)));
        const __m512 sw = _mm512_mul_ps(
            d_sb, _mm512_cvtepi32_ps(_mm512_and_si512(sc, _mm512_set1_epi32(0xF))));
        const __m512 zv = _mm512_mul_ps(m_sb, _mm512_cvtepi32_ps(_mm512_srli_epi32(sc, 4)));
        __m512i isum[MR];
        for (int r = 0; r < MR; ++r) isum[r] = _mm512_setzero_si512();
        two_bit_half(codes, b, h, isum);
        const float* xs = h == 0 ? a.s : a.s2;
        for (int r = 0; r < MR; ++r) {
          const int64_t off = (r0 + r) * blocks + b;
          const __m512 p = _mm512_mul_ps(sw, _mm512_cvtepi32_ps(isum[r]));
          const __m512 t = _mm512_fnmadd_ps(zv, _mm512_set1_ps(xs[off]), p);
          acc[r] = _mm512_fmadd_ps(t, _mm512_set1_ps(a.d[off]), acc[r]);
        }
      }
      if (++j == per_record) {
        j = 0;
        record += record_bytes;
      }
      continue;
    }
    if constexpr (kHalves) {
      // Q6_K: two halves of 16 K (nibble chunks 0-1 and 2-3), each with its own scale d·sc and
      // code sum; the codes are the low nibbles with their high bit pairs ORed back in. kQ3K: each
      // half's 2-bit chunk (Q2_K's), + 4 where the plane's bit 4h + s is set. kIqGrid: the nibbles
      // through the grid table, under an f32 d and multipliers 2·ls + 1.
      const uint8_t* codes = record + kScaleBytes + j * kBlockBytes;
      PrefetchAhead<kBlockBytes>(codes, prefetch);
      const __m512 d_sb =
          kIqGrid ? _mm512_loadu_ps(reinterpret_cast<const float*>(record))
                  : _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(record)));
      const int64_t mults = kIqGrid ? 64 : 32;  // the int8 scales after d
      for (int h = 0; h < 2; ++h) {
        const __m512 sw = _mm512_mul_ps(
            d_sb, _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(
                      reinterpret_cast<const __m128i*>(record + mults + (j * 2 + h) * 16)))));
        const __m512i pairs =
            kHighPairs ? _mm512_loadu_si512(codes + 256 + h * 64) : _mm512_setzero_si512();
        __m512i isum[MR];
        for (int r = 0; r < MR; ++r) {
          isum[r] = _mm512_set1_epi32(zs[((r0 + r) * blocks + b) * 2 + h]);
        }
        if constexpr (kCodes == Codes::kQ3K) two_bit_half(codes, b, h, isum);
        for (int q = 2 * h; q < 2 * h + 2 && kCodes != Codes::kQ3K; ++q) {
          const __m512i v = _mm512_loadu_si512(codes + q * 64);
          __m512i lo = _mm512_and_si512(v, m4);
          __m512i hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), m4);
          if constexpr (kTableNibbles) {
            lo = _mm512_shuffle_epi8(lut, lo);
            hi = _mm512_shuffle_epi8(lut, hi);
          }
          if constexpr (kHighPairs) {
            const __m512i hp = q % 2 == 0 ? pairs : _mm512_srli_epi16(pairs, 4);
            lo = _mm512_or_si512(lo, _mm512_and_si512(_mm512_slli_epi16(hp, 4), m30));
            hi = _mm512_or_si512(hi, _mm512_and_si512(_mm512_slli_epi16(hp, 2), m30));
          }
          for (int r = 0; r < MR; ++r) {
            const int8_t* x = xrow[r] + b * 32 + 8 * q;
            isum[r] = DpbusdBcast(isum[r], lo, x);
            isum[r] = DpbusdBcast(isum[r], hi, x + 4);
          }
        }
        for (int r = 0; r < MR; ++r) {
          const int64_t off = (r0 + r) * blocks + b;
          acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum[r]),
                                   _mm512_mul_ps(sw, _mm512_set1_ps(a.d[off])), acc[r]);
        }
      }
      if (++j == per_record) {
        j = 0;
        record += record_bytes;
      }
      continue;
    }
    // kAffine: s = d·sc and o = dmin·m (exact); kGroupScales: scale and zero point; else the scale
    // (the zero point is in the sums' start, kIntZero).
    __m512 sw, zv = _mm512_setzero_ps();
    if constexpr (kGroupScales) {
      sw = _mm512_loadu_ps(reinterpret_cast<const float*>(record));
      zv = _mm512_loadu_ps(reinterpret_cast<const float*>(record + 64));
    } else if constexpr (kAffine) {
      auto bytes = [&](int64_t at) {
        return _mm512_cvtepi32_ps(
            _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(record + at))));
      };
      auto halves = [&](int64_t at) {
        return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(record + at)));
      };
      sw = _mm512_mul_ps(halves(0), bytes(64 + j * 16));
      zv = _mm512_mul_ps(halves(32), bytes(192 + j * 16));
    } else if constexpr (kE2m1) {
      // numeric::DecodeE8m0 (e << 23; e = 0 the subnormal 2^-127) times 0.5, as the portable loop.
      const __m512i e = _mm512_cvtepu8_epi32(
          _mm_loadu_si128(reinterpret_cast<const __m128i*>(record + j * kCols)));
      const __m512i bits = _mm512_mask_mov_epi32(_mm512_slli_epi32(e, 23),
                                                 _mm512_cmpeq_epi32_mask(e, _mm512_setzero_si512()),
                                                 _mm512_set1_epi32(0x00400000));
      sw = _mm512_mul_ps(_mm512_castsi512_ps(bits), _mm512_set1_ps(0.5f));
    } else if constexpr (kIqGrid32) {  // d·mult, exact
      sw = _mm512_mul_ps(_mm512_loadu_ps(reinterpret_cast<const float*>(record)),
                         _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(
                             reinterpret_cast<const __m128i*>(record + 64 + j * 16)))));
    } else if constexpr (kIq4Xs) {  // d·(ls − 32), exact
      sw = _mm512_mul_ps(
          _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(record))),
          _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(
              _mm_loadu_si128(reinterpret_cast<const __m128i*>(record + 32 + j * 16)))));
    } else {
      sw = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(record + j * 32)));
    }
    const uint8_t* codes = record + kScaleBytes + j * kBlockBytes;
    PrefetchAhead<kBlockBytes>(codes, prefetch);
    if (++j == per_record) {
      j = 0;
      record += record_bytes;
    }
    __m512i isum[MR];
    for (int r = 0; r < MR; ++r) {
      isum[r] = kIntZero ? _mm512_set1_epi32(zs[(r0 + r) * blocks + b]) : _mm512_setzero_si512();
    }
    for (int q = 0; kBytes && q < 8; ++q) {
      const __m512i v = _mm512_loadu_si512(codes + q * 64);
      for (int r = 0; r < MR; ++r) isum[r] = DpbusdBcast(isum[r], v, xrow[r] + b * 32 + 4 * q);
    }
    const __m512i fifth = kFifth ? _mm512_loadu_si512(codes + 256) : _mm512_setzero_si512();
    for (int q = 0; !kBytes && q < 4; ++q) {
      const __m512i v = _mm512_loadu_si512(codes + q * 64);
      __m512i lo = _mm512_and_si512(v, m4);
      __m512i hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), m4);
      if constexpr (kTableNibbles) {
        lo = _mm512_shuffle_epi8(lut, lo);
        hi = _mm512_shuffle_epi8(lut, hi);
      }
      if constexpr (kFifth) {  // bits 2q and 2q + 1 of the plane: + 16 where set
        const __m512i c16 = _mm512_set1_epi8(16);
        lo = _mm512_mask_add_epi8(lo, _mm512_test_epi8_mask(fifth, _mm512_set1_epi8(1 << (2 * q))),
                                  lo, c16);
        hi = _mm512_mask_add_epi8(
            hi, _mm512_test_epi8_mask(fifth, _mm512_set1_epi8(static_cast<char>(2 << (2 * q)))), hi,
            c16);
      }
      for (int r = 0; r < MR; ++r) {
        const int8_t* x = xrow[r] + b * 32 + 8 * q;
        isum[r] = DpbusdBcast(isum[r], lo, x);
        isum[r] = DpbusdBcast(isum[r], hi, x + 4);
      }
    }
    for (int r = 0; r < MR; ++r) {
      const int64_t off = (r0 + r) * blocks + b;
      if constexpr (kAffine) {
        const __m512 p = _mm512_mul_ps(sw, _mm512_cvtepi32_ps(isum[r]));
        const __m512 t = _mm512_fnmadd_ps(zv, _mm512_set1_ps(a.s[off]), p);
        acc[r] = _mm512_fmadd_ps(t, _mm512_set1_ps(a.d[off]), acc[r]);
      } else {
        const __m512 t = kIntZero ? _mm512_cvtepi32_ps(isum[r])
                                  : _mm512_fnmadd_ps(zv, _mm512_set1_ps(a.s[off]),
                                                     _mm512_cvtepi32_ps(isum[r]));
        acc[r] = _mm512_fmadd_ps(t, _mm512_mul_ps(sw, _mm512_set1_ps(a.d[off])), acc[r]);
      }
    }
  }
  for (int r = 0; r < MR; ++r) out[r] = acc[r];
}

// NVFP4 tiles: E2M1 nibbles through the 2·e2m1 + 12 byte table, chunks 0-1 and 2-3 summed
// apart (the two scale halves of a block), UE4M3 scales decoded per block for the 16 columns.
template <int MR>
void TileNvfp4(const uint8_t* group, const FastWeights& w, const Int4x16Acts& a, const int32_t* zs,
               int64_t r0, bool prefetch, __m512* out) {
  const int64_t k = w.k, blocks = k / 32;
  const X16Layout layout = X16Layout::Of(w.format, w.group_size);
  const __m512i m4 = _mm512_set1_epi8(0x0F), lut = TwiceE2m1Plus12Table();
  // sf · 2^-8 (exact) times alpha · 128 is one rounding of sf · alpha / 2: bit for bit the
  // portable loop's (sf · alpha) · 0.5, since scaling by powers of two commutes with rounding
  // (away from the f32 subnormal and overflow ranges, which UE4M3 scales times a global scale
  // never reach).
  const __m512 sw_factor = _mm512_set1_ps(w.alpha * 128.0f);
  __m512 acc[MR];
  for (int r = 0; r < MR; ++r) acc[r] = _mm512_setzero_ps();
  const int8_t* xrow[MR];
  for (int r = 0; r < MR; ++r) xrow[r] = a.q + (r0 + r) * k;
  for (int64_t b = 0; b < blocks; ++b) {
    const uint8_t* sf = group + layout.Scales(b);
    const uint8_t* codes = group + layout.Codes(b);
    PrefetchAhead<256>(codes, prefetch);
    __m512 sw[2];
    for (int h = 0; h < 2; ++h) {
      const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(sf + h * kCols));
      sw[h] = _mm512_mul_ps(Ue4m3TimesTwoToMinus8(bytes), sw_factor);
    }
    for (int h = 0; h < 2; ++h) {
      __m512i isum[MR];
      for (int r = 0; r < MR; ++r) isum[r] = _mm512_set1_epi32(zs[((r0 + r) * blocks + b) * 2 + h]);
      for (int q = 2 * h; q < 2 * h + 2; ++q) {
        const __m512i v = _mm512_loadu_si512(codes + q * 64);
        const __m512i lo = _mm512_shuffle_epi8(lut, _mm512_and_si512(v, m4));
        const __m512i hi = _mm512_shuffle_epi8(lut, _mm512_and_si512(_mm512_srli_epi16(v, 4), m4));
        for (int r = 0; r < MR; ++r) {
          const int8_t* x = xrow[r] + b * 32 + 8 * q;
          isum[r] = DpbusdBcast(isum[r], lo, x);
          isum[r] = DpbusdBcast(isum[r], hi, x + 4);
        }
      }
      const float* dx = h == 0 ? a.d : a.d2;
      for (int r = 0; r < MR; ++r) {
        const int64_t off = (r0 + r) * blocks + b;
        acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum[r]),
                                 _mm512_mul_ps(sw[h], _mm512_set1_ps(dx[off])), acc[r]);
      }
    }
  }
  for (int r = 0; r < MR; ++r) out[r] = acc[r];
}

template <int MR>
void Rows(const FastWeights& w, const Int4x16Acts& a, const int32_t* zs, const float* bias,
          float* y, int64_t g, int64_t c0, int64_t c1, int64_t r0) {
  __m512 acc[MR];
  const bool prefetch = r0 == 0 && a.rows > 1;
  if (w.format == FastFormat::kNvfp4x16) {
    TileNvfp4<MR>(w.data + g * w.row_stride, w, a, zs, r0, prefetch, acc);
  } else if (w.format == FastFormat::kU4x16) {
    Tile<MR, Codes::kU4>(w.data + g * w.row_stride, w, a, zs, r0, prefetch, acc);
  } else if (w.format == FastFormat::kU8x16) {
    Tile<MR, Codes::kU8>(w.data + g * w.row_stride, w, a, zs, r0, prefetch, acc);
  } else if (w.format == FastFormat::kQ8_0x16) {
    Tile<MR, Codes::kQ8_0>(w.data + g * w.row_stride, w, a, zs, r0, prefetch, acc);
  } else if (w.format == FastFormat::kQ6_Kx16) {
    Tile<MR, Codes::kQ6K>(w.data + g * w.row_stride, w, a, zs, r0, prefetch, acc);
  } else if (w.format == FastFormat::kQ3_Kx16) {
    Tile<MR, Codes::kQ3K>(w.data + g * w.row_stride, w, a, zs, r0, prefetch, acc);
  } else if (w.format == FastFormat::kQ2_Kx16) {
    Tile<MR, Codes::kQ2K>(w.data + g * w.row_stride, w, a, zs, r0, prefetch, acc);
  } else if (w.format == FastFormat::kQ4_Kx16) {
    Tile<MR, Codes::kQ4K>(w.data + g * w.row_stride, w, a, zs, r0, prefetch, acc);
  } else if (w.format == FastFormat::kQ5_Kx16) {
    Tile<MR, Codes::kQ5K>(w.data + g * w.row_stride, w, a, zs, r0, prefetch, acc);
  } else if (w.format == FastFormat::kMxfp4x16) {
    Tile<MR, Codes::kMxfp4>(w.data + g * w.row_stride, w, a, zs, r0, prefetch, acc);
  } else if (w.format == FastFormat::kIq4Nlx16) {
    Tile<MR, Codes::kIq4Nl>(w.data + g * w.row_stride, w, a, zs, r0, prefetch, acc);
  } else if (w.format == FastFormat::kIq4Xsx16) {
    Tile<MR, Codes::kIq4Xs>(w.data + g * w.row_stride, w, a, zs, r0, prefetch, acc);
  } else if (w.format == FastFormat::kIqGrid16x16) {
    Tile<MR, Codes::kIqGrid16>(w.data + g * w.row_stride, w, a, zs, r0, prefetch, acc);
  } else if (w.format == FastFormat::kIqGrid32x16) {
    Tile<MR, Codes::kIqGrid32>(w.data + g * w.row_stride, w, a, zs, r0, prefetch, acc);
  } else {
    Tile<MR, Codes::kQ4_0>(w.data + g * w.row_stride, w, a, zs, r0, prefetch, acc);
  }
  const __mmask16 m = static_cast<__mmask16>(((1u << (c1 - c0)) - 1) << c0);
  const int64_t n0 = g * kCols;
  for (int r = 0; r < MR; ++r) {
    __m512 v = acc[r];
    if (a.row_scale != nullptr) {  // fma(acc, α, bias), as the portable loop
      const __m512 rs = _mm512_set1_ps(a.row_scale[(r0 + r) * a.row_scale_stride]);
      v = bias != nullptr ? _mm512_fmadd_ps(v, rs, _mm512_maskz_loadu_ps(m, bias + n0))
                          : _mm512_mul_ps(v, rs);
    } else if (bias != nullptr) {
      v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(m, bias + n0));
    }
    _mm512_mask_storeu_ps(y + (r0 + r) * w.n + n0, m, v);
  }
}

// Rows<MR> for MR = 1..8 (a row tile of up to 8 activation rows kept in registers).
using RowTileFn = void (*)(const FastWeights&, const Int4x16Acts&, const int32_t*, const float*,
                           float*, int64_t, int64_t, int64_t, int64_t);
constexpr RowTileFn kRowTiles[8] = {Rows<1>, Rows<2>, Rows<3>, Rows<4>,
                                    Rows<5>, Rows<6>, Rows<7>, Rows<8>};

}  // namespace

// QuantizeRowQ8Block32 vectorized, bit-identical: amax ignores NaN as std::max does (vmaxps
// returns its second operand when the first is NaN), d = amax / 127 and id = 1 / d are the same
// IEEE operations, vroundscaleps rounds half to even as nearbyint does in the default mode, and
// NaN products become code 0.
void QuantizeActsInt4x16Avx512(const float* x, int64_t k, int64_t r0, int64_t r1, int8_t* q,
                               float* d, float* s, float* s2) {
  const int64_t blocks = k / 32;
  const __m512 lim = _mm512_set1_ps(127.0f), neg_lim = _mm512_set1_ps(-127.0f);
  const __m512 sign = _mm512_castsi512_ps(_mm512_set1_epi32(0x7FFFFFFF));
  for (int64_t r = r0; r < r1; ++r) {
    for (int64_t b = 0; b < blocks; ++b) {
      const float* xb = x + r * k + b * 32;
      const __m512 v0 = _mm512_loadu_ps(xb), v1 = _mm512_loadu_ps(xb + 16);
      __m512 amax = _mm512_max_ps(_mm512_and_ps(v0, sign), _mm512_setzero_ps());
      amax = _mm512_max_ps(_mm512_and_ps(v1, sign), amax);
      const float db = _mm512_reduce_max_ps(amax) / 127.0f;
      const float id = db != 0.0f ? 1.0f / db : 0.0f;
      const __m512 idv = _mm512_set1_ps(id);
      __m512i codes[2];
      const __m512 vs[2] = {v0, v1};
      for (int h = 0; h < 2; ++h) {
        __m512 t = _mm512_roundscale_ps(_mm512_mul_ps(vs[h], idv),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        const __mmask16 ordered = _mm512_cmp_ps_mask(t, t, _CMP_ORD_Q);
        t = _mm512_min_ps(_mm512_max_ps(t, neg_lim), lim);
        codes[h] = _mm512_maskz_cvtps_epi32(ordered, t);
      }
      _mm_storeu_si128(reinterpret_cast<__m128i*>(q + r * k + b * 32),
                       _mm512_cvtsepi32_epi8(codes[0]));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(q + r * k + b * 32 + 16),
                       _mm512_cvtsepi32_epi8(codes[1]));
      d[r * blocks + b] = db;
      if (s2 != nullptr) {
        s[r * blocks + b] = static_cast<float>(_mm512_reduce_add_epi32(codes[0]));
        s2[r * blocks + b] = static_cast<float>(_mm512_reduce_add_epi32(codes[1]));
      } else {
        s[r * blocks + b] =
            static_cast<float>(_mm512_reduce_add_epi32(_mm512_add_epi32(codes[0], codes[1])));
      }
    }
  }
}

void Int4x16MatmulVnni(const FastWeights& w, const Int4x16Acts& a, const int32_t* zero_sums,
                       const float* bias, float* y, int64_t n_begin, int64_t n_end) {
  for (int64_t g = n_begin / kCols; g * kCols < n_end; ++g) {
    // Columns of this group inside [n_begin, n_end) (the mask keeps other callers' columns and
    // the padding untouched; bias and y are only read / written under it).
    const int64_t c0 = std::max<int64_t>(n_begin - g * kCols, 0);
    const int64_t c1 = std::min<int64_t>(n_end - g * kCols, kCols);
    for (int64_t r0 = 0; r0 < a.rows; r0 += 8) {
      kRowTiles[std::min<int64_t>(8, a.rows - r0) - 1](w, a, zero_sums, bias, y, g, c0, c1, r0);
    }
  }
}

}  // namespace tessera::kernels::cpu::fast::internal

HWY_POP_ATTRIBUTES

#else  // not x86-64 GCC/Clang

namespace tessera::kernels::cpu::fast::internal {
void Int4x16MatmulVnni(const FastWeights&, const Int4x16Acts&, const int32_t*, const float*, float*,
                       int64_t, int64_t) {}
void QuantizeActsInt4x16Avx512(const float*, int64_t, int64_t, int64_t, int8_t*, float*, float*,
                               float*) {}
}  // namespace tessera::kernels::cpu::fast::internal

#endif
