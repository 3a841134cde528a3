// AVX-512 kernel of quant_panel_matmul.h: one tile template (up to 6 rows x 4 panels of
// accumulators, a group at a time, each group's sum folded into running totals with its scales)
// fed either by an in-register decoder of the code chunks (≤ 6 rows) or by a block of four panels
// decoded once to f32 code values (more rows).
#if defined(__GNUC__) && !defined(__clang__)
// GCC 12 reports a false "may be used uninitialized" inside its own avx512fintrin.h (the
// _mm512_undefined_* placeholders of its mask intrinsics) once they are inlined here.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include "kernels/cpu/fast/quant_panel_matmul.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "kernels/cpu/fast/column_panels.h"
#include "kernels/numeric/e8m0.h"
#include "kernels/numeric/fp8.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#include "hwy/aligned_allocator.h"
#include "hwy/base.h"
#define TESSERA_QUANT_PANEL_X86 1
#endif

namespace tessera::kernels::cpu::fast {

namespace {

// The group geometry of a format: G codes per group of `bits` each (4, or 8 for byte codes), a
// header of `head` bytes before its chunks (integer codes: 16 centred zero points and 16 scales,
// f32; FP4: the 16 columns' scale bytes).
struct Geometry {
  int64_t group, head, bits;
  int64_t GroupBytes() const { return head + group * 2 * bits; }
};

Geometry GeometryOf(const FastQuantWeights& w) {
  switch (w.decode) {
    case QuantDecode::kMxfp4:
      return {32, 16, 4};
    case QuantDecode::kNvfp4:
      return {16, 16, 4};
    case QuantDecode::kInt8:  // one group per row when scale_k >= k
      return {std::min(w.scale_k, w.k), 128, 8};
    default:
      return {w.scale_k, 128, 4};
  }
}

// Byte codes (INT8, INT3 / INT2 unpacked) are stored minus a centre, 2^(bits − 1) for the bit
// length of the largest code (INT8: 128), so that they fit a signed byte and the zero-point
// correction subtracts a small (z − centre) · Σx. INT4's centre is 8 (its code table).
int ByteCodeCentre(const FastQuantWeights& w) {
  const uint8_t top = w.n * w.k > 0 ? *std::max_element(w.q, w.q + w.n * w.k) : 0;
  int bits = 1;
  while (bits < 8 && (top >> bits) != 0) ++bits;
  return 1 << (bits - 1);
}

}  // namespace

bool QuantPanelAvailable() {
  static const bool has = TESSERA_HAS_AVX512_WITH("avx512f");
  return has;
}

bool QuantPanelSupported(const FastQuantWeights& w) {
  if (!QuantPanelAvailable() || w.q == nullptr || w.n <= 0 || w.k <= 0 ||
      w.row_scale != nullptr || w.col_scale != nullptr || w.act_block_scales) {
    return false;
  }
  switch (w.decode) {
    case QuantDecode::kInt4:
      return w.scales != nullptr && w.zeros != nullptr && w.scale_k > 0 && w.scale_k % 8 == 0 &&
             w.k % w.scale_k == 0 && w.scale_rows == 1 && w.scale_row_stride == w.k / w.scale_k;
    case QuantDecode::kInt8: {
      const int64_t group = std::min(w.scale_k, w.k);
      return w.scales != nullptr && w.zeros != nullptr && group > 0 && group % 4 == 0 &&
             w.k % group == 0 && w.scale_rows == 1 && w.scale_row_stride == w.k / group;
    }
    case QuantDecode::kMxfp4:
    case QuantDecode::kNvfp4: {
      const bool mx = w.decode == QuantDecode::kMxfp4;
      const int64_t group = mx ? 32 : 16;
      if (w.block_scales == nullptr || w.k % group != 0) return false;
      return std::none_of(w.block_scales, w.block_scales + w.n * (w.k / group), [mx](uint8_t b) {
        return mx ? b == numeric::kE8m0NanCode : (b & 0x7F) == numeric::kE4m3NanCode;
      });
    }
    default:
      return false;
  }
}

int64_t QuantPanelsBytes(const FastQuantWeights& w) {
  const Geometry geo = GeometryOf(w);
  return panels::Count(w.n) * (w.k / geo.group) * geo.GroupBytes();
}

FastQuantWeights RepackQuantPanels(const FastQuantWeights& w, uint8_t* dst) {
  const Geometry geo = GeometryOf(w);
  const int64_t groups = w.k / geo.group, gb = geo.GroupBytes();
  const bool fp4 = w.decode == QuantDecode::kMxfp4 || w.decode == QuantDecode::kNvfp4;
  const bool bytes = w.decode == QuantDecode::kInt8;
  const int centre = bytes ? ByteCodeCentre(w) : 8;
  for (int64_t p = 0; p < panels::Count(w.n); ++p) {
    uint8_t* panel = dst + p * groups * gb;
    std::memset(panel, 0, groups * gb);
    for (int64_t c = 0; c < panels::kCols && p * panels::kCols + c < w.n; ++c) {
      const int64_t col = p * panels::kCols + c;
      for (int64_t g = 0; g < groups; ++g) {
        uint8_t* head = panel + g * gb;
        if (fp4) {
          head[c] = w.block_scales[col * groups + g];
        } else {
          const float centred = w.zeros[col * groups + g] - static_cast<float>(centre);
          std::memcpy(head + 4 * c, &centred, 4);
          std::memcpy(head + 64 + 4 * c, &w.scales[col * groups + g], 4);
        }
        // Chunk t's lane c: the row's 4 bytes of codes from k = (32 / bits) · t of the group.
        const int64_t row_bytes = w.k * geo.bits / 8, group_bytes = geo.group * geo.bits / 8;
        const uint8_t* codes = w.q + col * row_bytes + g * group_bytes;
        for (int64_t t = 0; t < group_bytes / 4; ++t) {
          uint8_t lane[4];
          for (int b = 0; b < 4; ++b) {
            lane[b] = bytes ? static_cast<uint8_t>(codes[4 * t + b] - centre) : codes[4 * t + b];
          }
          std::memcpy(head + geo.head + t * 64 + 4 * c, lane, 4);
        }
      }
    }
  }
  FastQuantWeights out = w;
  out.q = dst;
  return out;
}

#if defined(TESSERA_QUANT_PANEL_X86)

}  // namespace tessera::kernels::cpu::fast

HWY_PUSH_ATTRIBUTES("avx512f,avx512vl,avx512bw,avx2,fma")

#include "kernels/cpu/fast/panel_gemm.h"

namespace tessera::kernels::cpu::fast {

namespace {

// The shared panel tile shape, which ColumnSplitUnit (and so the engine's column split) follows.
using panels::kTileRows;
using panels::kTileVecs;
// More rows than one tile decode this many k of four panels at a time (whole groups, at least
// one): 128 KiB of f32, which every row tile then reads from L2. A group longer than this
// (per-channel INT4, G = K) is one block: K · 256 bytes, from L3 beyond K ≈ 4096.
constexpr int64_t kBlockK = 512;

// The format's code values, one per 4-bit index: INT4 q − 8, FP4 E2M1 (bit 3 the sign).
template <QuantDecode F>
HWY_INLINE __m512 CodeValues() {
  if constexpr (F == QuantDecode::kInt4) {
    return _mm512_set_ps(7, 6, 5, 4, 3, 2, 1, 0, -1, -2, -3, -4, -5, -6, -7, -8);
  } else {
    return _mm512_set_ps(-6.0f, -4.0f, -3.0f, -2.0f, -1.5f, -1.0f, -0.5f, -0.0f, 6.0f, 4.0f, 3.0f,
                         2.0f, 1.5f, 1.0f, 0.5f, 0.0f);
  }
}

// An FP4 group's 16 scales from its header bytes, exactly: UE4M3 as fast_quant_matmul.cc decodes
// E4M3 (the byte sign-extended and shifted into an f32's fields, times 2^120; the NaN code is
// excluded by QuantPanelSupported), E8M0 as 2^(e − 127) (e = 0 is the subnormal 2^-127).
template <QuantDecode F>
HWY_INLINE __m512 GroupScales(const uint8_t* head) {
  const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(head));
  if constexpr (F == QuantDecode::kNvfp4) {
    const __m512i v = _mm512_slli_epi32(_mm512_cvtepi8_epi32(bytes), 20);
    const __m512i bits = _mm512_and_si512(v, _mm512_set1_epi32(static_cast<int32_t>(0x87F00000u)));
    return _mm512_mul_ps(_mm512_castsi512_ps(bits), _mm512_set1_ps(1.329227995784916e36f));
  } else {
    const __m512i e = _mm512_cvtepu8_epi32(bytes);
    const __m512i bits = _mm512_mask_mov_epi32(_mm512_slli_epi32(e, 23),
                                               _mm512_cmpeq_epi32_mask(e, _mm512_setzero_si512()),
                                               _mm512_set1_epi32(0x00400000));
    return _mm512_castsi512_ps(bits);
  }
}

// The code in bits 0-3 of each lane of `codes` (16 columns) as the format's code value:
// `vpermps` reads only the low 4 bits of each index. Lane c of a chunk holds column c's eight
// codes (k = 8t + i in bits 4i to 4i + 3), so shifting the chunk right by 4 after each code walks
// k: one load and shifts per 128 weights, where 16-byte lines widened by `vpmovzxbd` took one
// more shuffle per 32 (INT4 0-5%, FP4 5-10% slower at batch 1). Neither zero points nor scales
// apply here: subtracting each column's zero point (INT4) or multiplying by its scale (FP4) per
// weight cost 13-19% of the batch-1 rate (bench/README.md).
// Byte codes (kInt8): lane c holds column c's four codes minus the centre as signed bytes; the
// low byte, sign-extended in place, converts exactly, and each next code is 8 bits further.
template <QuantDecode F>
inline constexpr int kCodeBits = F == QuantDecode::kInt8 ? 8 : 4;
template <QuantDecode F>
inline constexpr int kCodesPerLane = 32 / kCodeBits<F>;
inline constexpr bool IsInteger(QuantDecode f) {
  return f == QuantDecode::kInt4 || f == QuantDecode::kInt8;
}

template <QuantDecode F>
HWY_INLINE __m512 DecodeCode(__m512i codes) {
  if constexpr (F == QuantDecode::kInt8) {
    return _mm512_cvtepi32_ps(_mm512_srai_epi32(_mm512_slli_epi32(codes, 24), 24));
  } else {
    return _mm512_permutexvar_ps(codes, CodeValues<F>());
  }
}

struct Job {
  const uint8_t* panels;  // the tile's first panel
  int64_t panel_bytes, group_bytes, head_bytes;
  int64_t chunks;         // 64-byte code chunks per group (G / kCodesPerLane)
  int64_t g0, g1;         // the groups of this block
  const float* dec;       // decoded block: k = 16 · (j · dec_panel + i) for panel j, block k i
  int64_t dec_panel;
  const float* dec_scales;  // FP4: the block's scales, 16 per (panel j, group g): j · (g1 − g0) + g
  const float* x;         // row m0, k = 0
  int64_t x_stride;
  const float* sums;      // integer codes: Σ x over each group, row m0, group 0 (GroupSums)
  int64_t sums_stride;
  float* tot;             // running totals [row][kTileVecs][16]
  bool first, last;       // first / last block of K
  float alpha;            // y = α · tot (NVFP4; 1 otherwise)
  float* y;               // y + m0 · y_stride + col0
  int64_t y_stride;
  const float* bias;      // bias + col0, or null
  __mmask16 store[kTileVecs];
};

template <int MR, int NV, bool kDecoded, QuantDecode F>
void GroupTile(const Job& job) {
  if (job.first) {
    for (int i = 0; i < MR; ++i) {
      for (int j = 0; j < NV; ++j) {
        _mm512_storeu_ps(job.tot + (i * kTileVecs + j) * 16, _mm512_setzero_ps());
      }
    }
  }
  const int64_t group = kCodesPerLane<F> * job.chunks;
  for (int64_t g = job.g0; g < job.g1; ++g) {
    __m512 acc[MR][NV];
    for (int i = 0; i < MR; ++i) {
      for (int j = 0; j < NV; ++j) acc[i][j] = _mm512_setzero_ps();
    }
    const uint8_t* head = job.panels + g * job.group_bytes;
    const float* xg = job.x + g * group;
    // Per accumulator: k ascending, in both loop nests.
    if constexpr (kDecoded) {
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
      for (int64_t t = 0; t < job.chunks; ++t) {
        for (int j = 0; j < NV; ++j) {
          __m512i codes = _mm512_loadu_si512(head + j * job.panel_bytes + job.head_bytes + 64 * t);
          const float* xt = xg + kCodesPerLane<F> * t;
          for (int c = 0; c < kCodesPerLane<F>;
               ++c, codes = _mm512_srli_epi32(codes, kCodeBits<F>)) {
            const __m512 w = DecodeCode<F>(codes);
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
      const float* hj = reinterpret_cast<const float*>(head + j * job.panel_bytes);
      __m512 s, zc = _mm512_setzero_ps();
      if constexpr (IsInteger(F)) {
        zc = _mm512_loadu_ps(hj);
        s = _mm512_loadu_ps(hj + 16);
      } else if constexpr (kDecoded) {
        s = _mm512_loadu_ps(job.dec_scales + (j * (job.g1 - job.g0) + (g - job.g0)) * 16);
      } else {
        s = GroupScales<F>(head + j * job.panel_bytes);
      }
      for (int i = 0; i < MR; ++i) {
        __m512 c = acc[i][j];
        if constexpr (IsInteger(F)) {
          c = _mm512_fnmadd_ps(zc, _mm512_set1_ps(job.sums[i * job.sums_stride + g]), c);
        }
        float* t = job.tot + (i * kTileVecs + j) * 16;
        _mm512_storeu_ps(t, _mm512_fmadd_ps(s, c, _mm512_loadu_ps(t)));
      }
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

template <int MR, bool kDecoded, QuantDecode F>
constexpr TileFn ForVecs(int nv) {
  switch (nv) {
    case 1:
      return &GroupTile<MR, 1, kDecoded, F>;
    case 2:
      return &GroupTile<MR, 2, kDecoded, F>;
    case 3:
      return &GroupTile<MR, 3, kDecoded, F>;
    default:
      return &GroupTile<MR, 4, kDecoded, F>;
  }
}

template <bool kDecoded, QuantDecode F>
TileFn PickTile(int mr, int nv) {
  static_assert(kTileRows == 6 && kTileVecs == 4, "PickTile covers 6 x 4 tiles");
  switch (mr) {
    case 1:
      return ForVecs<1, kDecoded, F>(nv);
    case 2:
      return ForVecs<2, kDecoded, F>(nv);
    case 3:
      return ForVecs<3, kDecoded, F>(nv);
    case 4:
      return ForVecs<4, kDecoded, F>(nv);
    case 5:
      return ForVecs<5, kDecoded, F>(nv);
    default:
      return ForVecs<6, kDecoded, F>(nv);
  }
}

// Panels [0, nv) of the job's tile, groups [g0, g1), decoded to job.dec's layout.
template <QuantDecode F>
void DecodeBlock(const Job& job, int nv, float* dec, float* dec_scales) {
  const int64_t group = kCodesPerLane<F> * job.chunks;
  for (int j = 0; j < nv; ++j) {
    for (int64_t g = job.g0; g < job.g1; ++g) {
      const uint8_t* head = job.panels + j * job.panel_bytes + g * job.group_bytes;
      if constexpr (!IsInteger(F)) {
        _mm512_storeu_ps(dec_scales + (j * (job.g1 - job.g0) + (g - job.g0)) * 16,
                         GroupScales<F>(head));
      }
      float* out = dec + (j * job.dec_panel + (g - job.g0) * group) * 16;
      for (int64_t t = 0; t < job.chunks; ++t) {
        __m512i codes = _mm512_loadu_si512(head + job.head_bytes + 64 * t);
        for (int c = 0; c < kCodesPerLane<F>; ++c, codes = _mm512_srli_epi32(codes, kCodeBits<F>)) {
          _mm512_storeu_ps(out + (kCodesPerLane<F> * t + c) * 16, DecodeCode<F>(codes));
        }
      }
    }
  }
}

// sums[m · groups + g] = Σ x[m, k] over group g's k, in one fixed order (16 lanes, k ascending in
// each, then the lanes' fixed reduction; a group size not a multiple of 16: k ascending), so that
// every row gets the same sums in any call.
void GroupSums(const float* x, int64_t rows, int64_t k, int64_t group, float* sums) {
  const int64_t groups = k / group;
  for (int64_t m = 0; m < rows; ++m) {
    for (int64_t g = 0; g < groups; ++g) {
      const float* p = x + m * k + g * group;
      float s;
      if (group % 16 == 0) {
        __m512 v = _mm512_loadu_ps(p);
        for (int64_t i = 16; i < group; i += 16) v = _mm512_add_ps(v, _mm512_loadu_ps(p + i));
        s = _mm512_reduce_add_ps(v);
      } else {
        s = 0.0f;
        for (int64_t i = 0; i < group; ++i) s += p[i];
      }
      sums[m * groups + g] = s;
    }
  }
}

template <QuantDecode F>
void Run(const FastQuantWeights& w, const float* x, int64_t rows, const float* bias, float* y,
         int64_t n_begin, int64_t n_end) {
  const Geometry geo = GeometryOf(w);
  const int64_t group = geo.group, groups = w.k / group;
  const bool decoded = rows > kTileRows;
  const int64_t block_groups = decoded ? std::max<int64_t>(1, kBlockK / group) : groups;
  thread_local hwy::AlignedFreeUniquePtr<float[]> dec, tot;
  thread_local std::vector<float> dec_scales;
  thread_local std::vector<float> sums;
  thread_local int64_t dec_capacity = 0, tot_capacity = 0;
  const int64_t dec_size = decoded ? kTileVecs * block_groups * group * 16 : 0;
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
  if constexpr (IsInteger(F)) {
    sums.resize(rows * groups);
    GroupSums(x, rows, w.k, group, sums.data());
  }
  Job job;
  job.group_bytes = geo.GroupBytes();
  job.head_bytes = geo.head;
  job.panel_bytes = groups * job.group_bytes;
  job.chunks = group / kCodesPerLane<F>;
  job.dec = dec.get();
  job.dec_panel = block_groups * group;
  job.dec_scales = dec_scales.data();
  job.x_stride = w.k;
  job.sums_stride = groups;
  job.alpha = F == QuantDecode::kNvfp4 ? w.alpha : 1.0f;
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
      if (decoded) DecodeBlock<F>(job, nv, dec.get(), dec_scales.data());
      for (int64_t m0 = 0; m0 < rows; m0 += kTileRows) {
        const int mr = static_cast<int>(std::min<int64_t>(kTileRows, rows - m0));
        job.x = x + m0 * w.k;
        job.sums = IsInteger(F) ? sums.data() + m0 * groups : nullptr;
        job.tot = tot.get() + m0 * kTileVecs * 16;
        job.y = y + m0 * w.n + col0;
        (decoded ? PickTile<true, F>(mr, nv) : PickTile<false, F>(mr, nv))(job);
      }
    }
  }
}

}  // namespace

void QuantPanelMatmul(const FastQuantWeights& w, const float* x, int64_t rows, const float* bias,
                        float* y, int64_t n_begin, int64_t n_end) {
  if (rows <= 0 || n_begin >= n_end) return;
  switch (w.decode) {
    case QuantDecode::kInt4:
      return Run<QuantDecode::kInt4>(w, x, rows, bias, y, n_begin, n_end);
    case QuantDecode::kInt8:
      return Run<QuantDecode::kInt8>(w, x, rows, bias, y, n_begin, n_end);
    case QuantDecode::kMxfp4:
      return Run<QuantDecode::kMxfp4>(w, x, rows, bias, y, n_begin, n_end);
    case QuantDecode::kNvfp4:
      return Run<QuantDecode::kNvfp4>(w, x, rows, bias, y, n_begin, n_end);
    default:
      return;
  }
}

HWY_POP_ATTRIBUTES

#else  // not x86-64 GCC/Clang: never called (QuantPanelAvailable() is false), for the link.

void QuantPanelMatmul(const FastQuantWeights&, const float*, int64_t, const float*, float*,
                        int64_t, int64_t) {}

#endif

}  // namespace tessera::kernels::cpu::fast
