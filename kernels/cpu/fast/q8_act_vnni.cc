// AVX-512 VNNI kernel of Q8ActMatmul (q8_act_matmul.h). Written with intrinsics rather than
// Highway because Highway 1.0.3 has no u8 x i8 dot-accumulate op (vpdpbusd), which is the whole
// point here: one instruction does 64 multiply-adds. The functions carry the AVX-512 VNNI target
// attribute and run only after a CPUID check (HasVnni), so the library still runs on older CPUs.
//
// Integer part (exact): vpdpbusd multiplies unsigned by signed bytes.
//  * Q4_0: nibbles u in [0, 15] are the unsigned operand; Σ (u − 8)·x = Σ u·x − 8·Σx, with Σx per
//    block precomputed by the quantizer (Q8Acts::sums).
//  * Q8_0: |w| is the unsigned operand (|−128| = 0x80 reads as 128) and x takes w's sign
//    (masked negate; x is in [−127, 127] so −x does not overflow): |w|·sign(w)·x = w·x.
// Each int32 lane holds a partial sum of 4 products; a 128-bit lane of 4 int32 belongs to one
// block after the Q8_0 pair fold, and Reduce4 transposes 4 such vectors into one vector of 16
// block totals, lane 4j + i = block 4i + j (Q8ActLanePerm). The float part then follows the
// canonical order with per-lane FMAs and a sequential final sum, exactly as the scalar path.
#if defined(__GNUC__) && !defined(__clang__)
// GCC 12 reports a false "may be used uninitialized" inside its own avx512fintrin.h (the
// _mm512_undefined_* placeholders of unpack/shuffle intrinsics) once they are inlined here.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include <immintrin.h>
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#endif

#include <algorithm>
#include <vector>

#include "hwy/base.h"
#include "kernels/cpu/fast/column_panels.h"
#include "kernels/cpu/fast/isa_limit.h"
#include "kernels/cpu/fast/q8_act_matmul.h"

namespace tessera::kernels::cpu::fast::internal {

bool HasAvx512Bw() {
  static const bool has = TESSERA_HAS_AVX512_WITH("avx512bw");
  return has;
}

bool HasVnni() {
  static const bool has = TESSERA_HAS_AVX512_WITH("avx512vnni");
  return has;
}

// AVX-VNNI (the VEX-encoded 256-bit vpdpbusd of Intel cores from Alder Lake): CPUID leaf 7
// sub-leaf 1, EAX bit 4, with the OS saving the ymm state (as for AVX2). Off under
// TESSERA_CPU_ISA=avx2 too: an AVX2-only CPU is the point of that switch.
bool HasAvxVnni() {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  static const bool has = [] {
    if (!Avx512Allowed() || !Avx512ExtensionAllowed("avxvnni") || !__builtin_cpu_supports("avx2")) {
      return false;
    }
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    if (!__get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx)) return false;
    return (eax & (1u << 4)) != 0;
  }();
  return has;
#else
  return false;
#endif
}

// What int4_x16_avx2.cc needs (vpmaddubsw, FMA, vcvtph2ps).
bool HasAvx2Fma() {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  static const bool has = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
                          __builtin_cpu_supports("f16c");
  return has;
#else
  return false;
#endif
}

}  // namespace tessera::kernels::cpu::fast::internal

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))

HWY_PUSH_ATTRIBUTES("avx512f,avx512vl,avx512dq,avx512bw,avx512vnni,avx2,fma,f16c")

namespace tessera::kernels::cpu::fast::internal {
namespace {

// 4 vectors whose 128-bit lane j holds 4 partials of block 4i + j (vector i) -> one vector whose
// lane 4j + i is the total of block 4i + j.
inline __m512i Reduce4(__m512i a0, __m512i a1, __m512i a2, __m512i a3) {
  const __m512i t0 = _mm512_add_epi32(_mm512_unpacklo_epi32(a0, a1), _mm512_unpackhi_epi32(a0, a1));
  const __m512i t1 = _mm512_add_epi32(_mm512_unpacklo_epi32(a2, a3), _mm512_unpackhi_epi32(a2, a3));
  return _mm512_add_epi32(_mm512_unpacklo_epi64(t0, t1), _mm512_unpackhi_epi64(t0, t1));
}

// A repacked row's f16 block scales as f32 in lane order, zero beyond the last block (the
// repacked scale area is zero-padded to 64 bytes, which covers every 32-byte load here).
void RowScales(const uint8_t* row, int64_t pb, float* out) {
  const __m512i perm = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
  for (int64_t g0 = 0; g0 < pb; g0 += 16) {
    const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + 2 * g0));
    _mm512_storeu_ps(out + g0, _mm512_permutexvar_ps(perm, _mm512_cvtph_ps(h)));
  }
}

inline __m512i Load(const void* p) { return _mm512_loadu_si512(p); }

// Block totals of one group of 16 Q4_0 blocks, U units of 4 blocks present (1..4).
template <int MR, int U>
inline void Q4Group(const uint8_t* wq, const int8_t* const* x, __m512i* out) {
  const __m512i m4 = _mm512_set1_epi8(0x0F);
  __m512i ia[MR][4];
  for (int r = 0; r < MR; ++r)
    for (int u = 0; u < 4; ++u) ia[r][u] = _mm512_setzero_si512();
  for (int u = 0; u < U; ++u) {
    const __m512i v = Load(wq + 64 * u);
    const __m512i lo = _mm512_and_si512(v, m4);
    const __m512i hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), m4);
    for (int r = 0; r < MR; ++r) {
      ia[r][u] = _mm512_dpbusd_epi32(ia[r][u], lo, Load(x[r] + 128 * u));
      ia[r][u] = _mm512_dpbusd_epi32(ia[r][u], hi, Load(x[r] + 128 * u + 64));
    }
  }
  for (int r = 0; r < MR; ++r) out[r] = Reduce4(ia[r][0], ia[r][1], ia[r][2], ia[r][3]);
}

// Block totals of one group of 16 Q8_0 blocks, U units of 2 blocks present (1..8).
template <int MR, int U>
inline void Q8Group(const uint8_t* wq, const int8_t* const* x, __m512i* out) {
  __m512i acc[MR][4];
  for (int p = 0; p < 4; ++p) {
    __m512i half[2][MR];
    for (int h = 0; h < 2; ++h) {
      for (int r = 0; r < MR; ++r) half[h][r] = _mm512_setzero_si512();
      const int u = 2 * p + h;
      if (u >= U) continue;
      const __m512i v = Load(wq + 64 * u);
      const __m512i av = _mm512_abs_epi8(v);
      const __mmask64 neg = _mm512_movepi8_mask(v);
      for (int r = 0; r < MR; ++r) {
        const __m512i xv = Load(x[r] + 64 * u);
        const __m512i xs = _mm512_mask_sub_epi8(xv, neg, _mm512_setzero_si512(), xv);
        half[h][r] = _mm512_dpbusd_epi32(half[h][r], av, xs);
      }
    }
    // Fold the two 128-bit halves of each block: lanes [P0 P2 Q0 Q2] + [P1 P3 Q1 Q3].
    for (int r = 0; r < MR; ++r) {
      acc[r][p] = _mm512_add_epi32(_mm512_shuffle_i32x4(half[0][r], half[1][r], 0x88),
                                   _mm512_shuffle_i32x4(half[0][r], half[1][r], 0xDD));
    }
  }
  for (int r = 0; r < MR; ++r) out[r] = Reduce4(acc[r][0], acc[r][1], acc[r][2], acc[r][3]);
}

template <bool kQ4, int MR>
inline void GroupSums(const uint8_t* wq, const int8_t* const* x, int64_t left, __m512i* out) {
  if constexpr (kQ4) {
    switch (std::min<int64_t>(4, (left + 3) / 4)) {
      case 1: return Q4Group<MR, 1>(wq, x, out);
      case 2: return Q4Group<MR, 2>(wq, x, out);
      case 3: return Q4Group<MR, 3>(wq, x, out);
      default: return Q4Group<MR, 4>(wq, x, out);
    }
  } else {
    switch (std::min<int64_t>(8, (left + 1) / 2)) {
      case 1: return Q8Group<MR, 1>(wq, x, out);
      case 2: return Q8Group<MR, 2>(wq, x, out);
      case 3: return Q8Group<MR, 3>(wq, x, out);
      case 4: return Q8Group<MR, 4>(wq, x, out);
      case 5: return Q8Group<MR, 5>(wq, x, out);
      case 6: return Q8Group<MR, 6>(wq, x, out);
      case 7: return Q8Group<MR, 7>(wq, x, out);
      default: return Q8Group<MR, 8>(wq, x, out);
    }
  }
}

// One group (blocks g0 .. g0+15) of output column `quants` for activation rows [r0, r0 + MR):
// acc[r] = fma(float(isum), d_w · d_x, acc[r]). Shared by the GEMV and GEMM loops so that both
// execute the same operations on every (row, column).
template <bool kQ4, int MR>
HWY_INLINE void GroupStep(const uint8_t* quants, const Q8Acts& a, int64_t r0, int64_t g0,
                          int64_t blocks, const float* wd, __m512* acc) {
  const int64_t pb = a.padded_blocks;
  const int8_t* x[MR];
  for (int r = 0; r < MR; ++r) x[r] = a.q + (r0 + r) * pb * 32 + g0 * 32;
  __m512i isum[MR];
  GroupSums<kQ4, MR>(quants + g0 * (kQ4 ? 16 : 32), x, blocks - g0, isum);
  const __m512 wdv = _mm512_loadu_ps(wd + g0);
  for (int r = 0; r < MR; ++r) {
    const int64_t off = (r0 + r) * pb + g0;
    if constexpr (kQ4) {
      isum[r] = _mm512_sub_epi32(isum[r], _mm512_slli_epi32(Load(a.sums + off), 3));
    }
    const __m512 s = _mm512_mul_ps(wdv, _mm512_loadu_ps(a.d + off));
    acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum[r]), s, acc[r]);
  }
}

// The canonical final sum of one accumulator: lanes added in order 0..15, then the bias.
inline float Finish(__m512 acc, const float* bias, int64_t n) {
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, acc);
  float v = lanes[0];
  for (int l = 1; l < 16; ++l) v += lanes[l];
  if (bias != nullptr) v += bias[n];
  return v;
}

// GEMV: output column n for activation rows [r0, r0 + MR), accumulators in registers.
template <bool kQ4, int MR>
void Column(const FastWeights& w, const Q8Acts& a, int64_t n, int64_t r0, const float* wd,
            const float* bias, float* y) {
  const int64_t blocks = w.k / 32;
  const uint8_t* quants = w.data + n * w.row_stride + w.quant_offset;
  __m512 acc[MR];
  for (int r = 0; r < MR; ++r) acc[r] = _mm512_setzero_ps();
  for (int64_t g0 = 0; g0 < a.padded_blocks; g0 += 16) {
    GroupStep<kQ4, MR>(quants, a, r0, g0, blocks, wd, acc);
  }
  for (int r = 0; r < MR; ++r) y[(r0 + r) * w.n + n] = Finish(acc[r], bias, n);
}

// GEMM for more than 4 rows: column tiles of kTile; for each group, the group's activations of
// every row (rows x 512 bytes, L1-resident) meet each column of the tile, so an activation vector
// is loaded from L1 rather than L2 for every column. Accumulators live in memory between groups;
// storing and reloading them is exact, so every lane sees the GEMV path's operation sequence.
template <bool kQ4>
void Gemm(const FastWeights& w, const Q8Acts& a, const float* bias, float* y, int64_t nb,
          int64_t ne) {
  constexpr int kTile = 8;
  const int64_t pb = a.padded_blocks, blocks = w.k / 32, rows = a.rows;
  thread_local std::vector<float> wd;
  thread_local std::vector<float> accs;  // [rows][kTile][16]
  wd.resize(kTile * pb);
  accs.resize(rows * kTile * 16);
  for (int64_t n0 = nb; n0 < ne; n0 += kTile) {
    const int nc = static_cast<int>(std::min<int64_t>(kTile, ne - n0));
    for (int c = 0; c < nc; ++c) RowScales(w.data + (n0 + c) * w.row_stride, pb, &wd[c * pb]);
    std::fill(accs.begin(), accs.end(), 0.0f);
    for (int64_t g0 = 0; g0 < pb; g0 += 16) {
      for (int c = 0; c < nc; ++c) {
        const uint8_t* quants = w.data + (n0 + c) * w.row_stride + w.quant_offset;
        const float* wdc = &wd[c * pb];
        int64_t r0 = 0;
        for (; r0 + 4 <= rows; r0 += 4) {
          __m512 acc[4];
          for (int r = 0; r < 4; ++r) acc[r] = _mm512_loadu_ps(&accs[((r0 + r) * kTile + c) * 16]);
          GroupStep<kQ4, 4>(quants, a, r0, g0, blocks, wdc, acc);
          for (int r = 0; r < 4; ++r) _mm512_storeu_ps(&accs[((r0 + r) * kTile + c) * 16], acc[r]);
        }
        for (; r0 < rows; ++r0) {
          __m512 acc[1] = {_mm512_loadu_ps(&accs[(r0 * kTile + c) * 16])};
          GroupStep<kQ4, 1>(quants, a, r0, g0, blocks, wdc, acc);
          _mm512_storeu_ps(&accs[(r0 * kTile + c) * 16], acc[0]);
        }
      }
    }
    for (int64_t r = 0; r < rows; ++r) {
      for (int c = 0; c < nc; ++c) {
        y[r * w.n + n0 + c] = Finish(_mm512_loadu_ps(&accs[(r * kTile + c) * 16]), bias, n0 + c);
      }
    }
  }
}

template <bool kQ4>
void Run(const FastWeights& w, const Q8Acts& a, const float* bias, float* y, int64_t nb,
         int64_t ne) {
  if (a.rows > 4) return Gemm<kQ4>(w, a, bias, y, nb, ne);
  thread_local std::vector<float> wd;
  wd.resize(a.padded_blocks);
  for (int64_t n = nb; n < ne; ++n) {
    RowScales(w.data + n * w.row_stride, a.padded_blocks, wd.data());
    switch (a.rows) {
      case 4: Column<kQ4, 4>(w, a, n, 0, wd.data(), bias, y); break;
      case 3: Column<kQ4, 3>(w, a, n, 0, wd.data(), bias, y); break;
      case 2: Column<kQ4, 2>(w, a, n, 0, wd.data(), bias, y); break;
      default: Column<kQ4, 1>(w, a, n, 0, wd.data(), bias, y); break;
    }
  }
}

}  // namespace

void Q8ActMatmulVnni(const FastWeights& w, const Q8Acts& a, const float* bias, float* y,
                     int64_t n_begin, int64_t n_end) {
  if (w.format == FastFormat::kQ4_0) {
    Run<true>(w, a, bias, y, n_begin, n_end);
  } else {
    Run<false>(w, a, bias, y, n_begin, n_end);
  }
}

}  // namespace tessera::kernels::cpu::fast::internal

HWY_POP_ATTRIBUTES

#else  // not x86-64 GCC/Clang

namespace tessera::kernels::cpu::fast::internal {
void Q8ActMatmulVnni(const FastWeights&, const Q8Acts&, const float*, float*, int64_t, int64_t) {}
}  // namespace tessera::kernels::cpu::fast::internal

#endif
