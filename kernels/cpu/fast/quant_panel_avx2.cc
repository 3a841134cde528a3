// AVX2 kernel of quant_panel_matmul.h's f32 form, for CPUs without AVX-512 (QuantPanelMatmul
// dispatches here there): the f32-form panels the AVX-512 kernel reads, each panel as two 8-column
// halves, compiled for AVX2 + FMA + F16C only (this translation unit's region).
//
// Numerics: the AVX-512 f32 form's operations lane for lane: per group a = Σ x · v by FMA in
// ascending k from +0 (v the exact code value), the same fold into the running total, the same
// epilogue, and the group sums Σx of GroupSumsRows, which both kernels share. So each output has
// the AVX-512 kernel's bits, whatever the tile shape, row count or column split.
//
// Tiles: a tile is MR rows × NH halves of 8 columns. Up to 6 rows decode the codes in registers
// (one row over 4 halves, 2-4 rows over 2, 5-6 rows over 1: at most 8 accumulators and NH code
// vectors beside the decoded weight and a broadcast activation in the 16 ymm); more rows decode a K
// block of four panels to f32 values once, which 6-row tiles then read from L2 as the f32 panels of
// avx2_panels.cc do.
//
// Decode per 8 weights: INT4 codes XORed with 8 once per chunk, each nibble shifted to the top and
// arithmetically back (its two's complement value is q − 8), then converted; byte codes the same
// on bytes; E2M1 a `vpermps` of the magnitude from the code's low 3 bits and its sign bit moved to
// bit 31 (8 entries is all AVX2's permute indexes); a codebook (bitsandbytes NF4 / FP4) a
// `vpermps` into each half of its 16 values and a blend on the code's bit 3. AVX-512 takes one
// `vpermps` of 16 entries.
#include <algorithm>
#include <cstring>
#include <utility>
#include <vector>

#include "hwy/aligned_allocator.h"
#include "kernels/cpu/fast/avx2_panels.h"
#include "kernels/cpu/fast/column_panels.h"
#include "kernels/cpu/fast/quant_panel_matmul.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#include "hwy/base.h"
#define TESSERA_QUANT_PANEL_AVX2_X86 1
#endif

#if defined(TESSERA_QUANT_PANEL_AVX2_X86)

HWY_PUSH_ATTRIBUTES("avx2,fma,f16c")

#include "kernels/cpu/fast/avx2_lane_mask.h"

namespace tessera::kernels::cpu::fast::internal {
namespace {

// A column tile: four panels (the engine's column split for more than 6 rows), eight halves.
constexpr int kTilePanels = 4;
constexpr int kHalves = 2 * kTilePanels;
// Rows decoded in registers; more rows decode blocks of this many k (whole groups, at least one):
// 128 KiB of f32 per four panels, read from L2 by every row tile.
constexpr int kRegisterRows = 6;
constexpr int64_t kBlockK = 512;
constexpr int kBlockRows = 6;

// Integer groups' header kind, as quant_panel_decode-inl.h's Header (a template parameter of the
// tiles for the same reason: a runtime branch costs the register allocation).
enum class Head { kF32, kF16, kKQuant };

constexpr bool IsInteger(QuantDecode f) {
  return f == QuantDecode::kInt4 || f == QuantDecode::kInt8;
}
template <QuantDecode F>
inline constexpr int kCodeBits = F == QuantDecode::kInt8 ? 8 : 4;
template <QuantDecode F>
inline constexpr int kCodesPerLane = 32 / kCodeBits<F>;

struct HalfJob {
  const uint8_t* panels;  // the column tile's first panel
  int64_t panel_bytes, group_bytes, head_bytes;
  int64_t super_bytes, super_head;  // K-quant panels: a super-block, and its header
  float centre;                     // K-quant panels: the codes' centre
  int64_t chunks;                   // 64-byte code chunks per group
  int64_t g0, g1;                   // the groups of this block
  const float* dec;                 // decoded block: half h's k i at dec + (h · dec_half + i) · 8
  int64_t dec_half;
  const float* dec_scales;  // FP4: the block's scales, 8 per (half h, group g): h · (g1 − g0) + g
  const float* x;           // row m0, k = 0
  int64_t x_stride;
  const float* sums;  // integer codes with zero points: Σx per group, row m0, group 0
  int64_t sums_stride;
  float* tot;  // running totals [row][kHalves][8]
  bool first, last, symmetric;
  float alpha;  // y = α · tot (NVFP4; 1 otherwise)
  const float* codebook;  // kCodebook4: the 16 code values
  float* y;     // y + m0 · y_stride + the tile's first column
  int64_t y_stride;
  const float* bias;        // bias + the tile's first column, or null
  unsigned store[kHalves];  // lanes of each half inside [n_begin, n_end)
};

HWY_INLINE int64_t GroupAt(const HalfJob& job, int64_t g) {
  return job.super_head != 0 ? g / 8 * job.super_bytes + job.super_head + g % 8 * job.group_bytes
                             : g * job.group_bytes;
}

// Half h's bytes of group g's header (part 0: columns 0-7 of the panel, 1: 8-15).
HWY_INLINE const uint8_t* HalfHead(const HalfJob& job, int h, int64_t g) {
  return job.panels + (h / 2) * job.panel_bytes + GroupAt(job, g);
}

// A codebook layer's 16 values as two 8-entry halves (`vpermps` indexes 8 entries), held in
// registers for the tile; empty for the other formats.
template <QuantDecode F>
struct CodeTable {
  static HWY_INLINE CodeTable Load(const float*) { return {}; }
};
template <>
struct CodeTable<QuantDecode::kCodebook4> {
  __m256 low, high;
  static HWY_INLINE CodeTable Load(const float* codebook) {
    return {_mm256_loadu_ps(codebook), _mm256_loadu_ps(codebook + 8)};
  }
};

// The code values of one 32-bit chunk lane per column, code C (k = 8t + C, or 4t + C for bytes).
template <QuantDecode F>
struct Codes {
  __m256i v;
  static HWY_INLINE Codes Load(const uint8_t* p) {
    __m256i c = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    // INT4: q XOR 8 read as a signed nibble is q − 8.
    if constexpr (F == QuantDecode::kInt4)
      c = _mm256_xor_si256(c, _mm256_set1_epi32(static_cast<int>(0x88888888u)));
    return {c};
  }
  template <int C>
  HWY_INLINE __m256 Value(const CodeTable<F>& table) const {
    if constexpr (IsInteger(F)) {
      constexpr int kTop = 32 - kCodeBits<F>;
      return _mm256_cvtepi32_ps(
          _mm256_srai_epi32(_mm256_slli_epi32(v, kTop - kCodeBits<F> * C), kTop));
    } else if constexpr (F == QuantDecode::kCodebook4) {
      // Both halves' entry for the low 3 bits, then bit 3 (moved to the sign bit) picks one.
      const __m256i index = _mm256_srli_epi32(v, 4 * C);
      const __m256 low = _mm256_permutevar8x32_ps(table.low, index);
      const __m256 high = _mm256_permutevar8x32_ps(table.high, index);
      return _mm256_blendv_ps(low, high, _mm256_castsi256_ps(_mm256_slli_epi32(v, 28 - 4 * C)));
    } else {
      const __m256 magnitudes = _mm256_setr_ps(0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f);
      const __m256 m = _mm256_permutevar8x32_ps(magnitudes, _mm256_srli_epi32(v, 4 * C));
      const __m256i sign =
          _mm256_and_si256(_mm256_slli_epi32(v, 28 - 4 * C), _mm256_set1_epi32(INT32_MIN));
      return _mm256_xor_ps(m, _mm256_castsi256_ps(sign));
    }
  }
};

// Formats whose group headers hold f32 / f16 scales (integers also centred zero points).
constexpr bool HasScaleHeader(QuantDecode f) { return IsInteger(f) || f == QuantDecode::kCodebook4; }

// Body(std::integral_constant<int, C>) for C = 0 .. N − 1, unrolled (shift counts as immediates).
template <int N, class Body>
HWY_INLINE void ForCodes(Body&& body) {
  [&]<int... C>(std::integer_sequence<int, C...>) { (body(std::integral_constant<int, C>{}), ...); }
  (std::make_integer_sequence<int, N>{});
}

// An FP4 half's 8 scales from its header bytes, as quant_panel_decode-inl.h's GroupScales.
template <QuantDecode F>
HWY_INLINE __m256 HalfScales(const uint8_t* p) {
  const __m128i bytes = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p));
  if constexpr (F == QuantDecode::kNvfp4) {
    const __m256i v = _mm256_slli_epi32(_mm256_cvtepi8_epi32(bytes), 20);
    const __m256i bits = _mm256_and_si256(v, _mm256_set1_epi32(static_cast<int32_t>(0x87F00000u)));
    return _mm256_mul_ps(_mm256_castsi256_ps(bits), _mm256_set1_ps(1.329227995784916e36f));
  } else {
    const __m256i e = _mm256_cvtepu8_epi32(bytes);
    const __m256i zero = _mm256_cmpeq_epi32(e, _mm256_setzero_si256());
    return _mm256_castsi256_ps(
        _mm256_blendv_epi8(_mm256_slli_epi32(e, 23), _mm256_set1_epi32(0x00400000), zero));
  }
}

// 8 header values, f32 or f16 converted exactly.
template <bool kHalf>
HWY_INLINE __m256 HeaderValues(const uint8_t* p) {
  if constexpr (kHalf) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  } else {
    return _mm256_loadu_ps(reinterpret_cast<const float*>(p));
  }
}

// 8 unsigned header bytes (K-quant scales or mins) as f32.
HWY_INLINE __m256 ByteValues(const uint8_t* p) {
  return _mm256_cvtepi32_ps(
      _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
}

// Halves [h0, h0 + NH) of the column tile, rows [0, MR) of the job, groups [g0, g1).
template <int MR, int NH, bool kDecoded, QuantDecode F, Head H>
void HalfTile(const HalfJob& job, int h0) {
  if (job.first) {
    for (int i = 0; i < MR; ++i) {
      for (int j = 0; j < NH; ++j) {
        _mm256_storeu_ps(job.tot + (i * kHalves + h0 + j) * 8, _mm256_setzero_ps());
      }
    }
  }
  constexpr int kPerLane = kCodesPerLane<F>;
  const int64_t group = kPerLane * job.chunks;
  for (int64_t g = job.g0; g < job.g1; ++g) {
    __m256 acc[MR][NH];
    for (int i = 0; i < MR; ++i) {
      for (int j = 0; j < NH; ++j) acc[i][j] = _mm256_setzero_ps();
    }
    const float* xg = job.x + g * group;
    if constexpr (kDecoded) {
      const float* dg = job.dec + (g - job.g0) * group * 8;
      for (int64_t kk = 0; kk < group; ++kk) {
        __m256 w[NH];
        for (int j = 0; j < NH; ++j)
          w[j] = _mm256_loadu_ps(dg + ((h0 + j) * job.dec_half + kk) * 8);
        for (int i = 0; i < MR; ++i) {
          const __m256 xv = _mm256_set1_ps(xg[i * job.x_stride + kk]);
          for (int j = 0; j < NH; ++j) acc[i][j] = _mm256_fmadd_ps(xv, w[j], acc[i][j]);
        }
      }
    } else {
      // Every half's chunk at once, then code by code: MR · NH independent FMA chains (a half's
      // codes one after another left one row's decode waiting on each FMA's latency).
      const CodeTable<F> table = CodeTable<F>::Load(job.codebook);
      for (int64_t t = 0; t < job.chunks; ++t) {
        Codes<F> codes[NH];
        for (int j = 0; j < NH; ++j) {
          const int h = h0 + j;
          codes[j] = Codes<F>::Load(HalfHead(job, h, g) + job.head_bytes + 64 * t + 32 * (h % 2));
        }
        const float* xt = xg + kPerLane * t;
        ForCodes<kPerLane>([&](auto c) {
          for (int j = 0; j < NH; ++j) {
            const __m256 w = codes[j].template Value<c.value>(table);
            for (int i = 0; i < MR; ++i) {
              acc[i][j] =
                  _mm256_fmadd_ps(_mm256_set1_ps(xt[i * job.x_stride + c.value]), w, acc[i][j]);
            }
          }
        });
      }
    }
    // The group's sum into the totals, as the AVX-512 kernel folds it.
    for (int j = 0; j < NH; ++j) {
      const int h = h0 + j, part = h % 2;
      const uint8_t* hj = HalfHead(job, h, g);
      __m256 s, zc = _mm256_setzero_ps();
      if constexpr (IsInteger(F) && H == Head::kKQuant) {
        const uint8_t* sb = job.panels + (h / 2) * job.panel_bytes + g / 8 * job.super_bytes;
        s = _mm256_mul_ps(HeaderValues<true>(sb + 16 * part), ByteValues(hj + 8 * part));
        const __m256 o =
            _mm256_mul_ps(HeaderValues<true>(sb + 32 + 16 * part), ByteValues(hj + 16 + 8 * part));
        zc = _mm256_fmsub_ps(_mm256_set1_ps(job.centre), s, o);
      } else if constexpr (HasScaleHeader(F)) {
        constexpr bool kHalf = H == Head::kF16;
        constexpr int kValue = kHalf ? 2 : 4;  // bytes per header value
        if (job.symmetric) {
          s = HeaderValues<kHalf>(hj + 8 * kValue * part);
        } else {
          zc = HeaderValues<kHalf>(hj + 8 * kValue * part);
          s = HeaderValues<kHalf>(hj + 16 * kValue + 8 * kValue * part);
        }
      } else if constexpr (kDecoded) {
        s = _mm256_loadu_ps(job.dec_scales + (h * (job.g1 - job.g0) + (g - job.g0)) * 8);
      } else {
        s = HalfScales<F>(hj + 8 * part);
      }
      for (int i = 0; i < MR; ++i) {
        float* t = job.tot + (i * kHalves + h) * 8;
        const __m256 before = _mm256_loadu_ps(t);
        __m256 c = acc[i][j], after;
        if constexpr (H == Head::kKQuant) {
          const __m256 sum = _mm256_set1_ps(job.sums[i * job.sums_stride + g]);
          after = _mm256_fmadd_ps(zc, sum, _mm256_fmadd_ps(s, c, before));
        } else {
          if (IsInteger(F) && !job.symmetric) {
            c = _mm256_fnmadd_ps(zc, _mm256_set1_ps(job.sums[i * job.sums_stride + g]), c);
          }
          after = _mm256_fmadd_ps(s, c, before);
        }
        _mm256_storeu_ps(t, after);
      }
    }
  }
  if (!job.last) return;
  for (int j = 0; j < NH; ++j) {
    const int h = h0 + j;
    const __m256i mask = LaneMask(job.store[h]);
    const __m256 b =
        job.bias != nullptr ? _mm256_maskload_ps(job.bias + 8 * h, mask) : _mm256_setzero_ps();
    for (int i = 0; i < MR; ++i) {
      __m256 v = _mm256_loadu_ps(job.tot + (i * kHalves + h) * 8);
      if constexpr (F == QuantDecode::kNvfp4) v = _mm256_mul_ps(_mm256_set1_ps(job.alpha), v);
      if (job.bias != nullptr) v = _mm256_add_ps(v, b);
      _mm256_maskstore_ps(job.y + i * job.y_stride + 8 * h, mask, v);
    }
  }
}

using TileFn = void (*)(const HalfJob&, int);

// The halves a register tile of `rows` rows spans: its chunks' codes (NH), MR · NH accumulators,
// a decoded weight, a broadcast and FP4's two constants within the 16 ymm.
constexpr int HalvesFor(int rows) { return rows == 1 ? 4 : rows <= 4 ? 2 : 1; }

template <int MR, bool kDecoded, QuantDecode F, Head H>
TileFn ForHalves(int nh) {
  if constexpr (kDecoded || HalvesFor(MR) == 2) {
    return &HalfTile<MR, 2, kDecoded, F, H>;
  } else if constexpr (HalvesFor(MR) == 1) {
    return &HalfTile<MR, 1, kDecoded, F, H>;
  } else {
    return nh >= 4 ? &HalfTile<MR, 4, kDecoded, F, H> : &HalfTile<MR, 2, kDecoded, F, H>;
  }
}

template <bool kDecoded, QuantDecode F, Head H>
TileFn PickTile(int mr, int nh) {
  switch (mr) {
    case 1:
      return ForHalves<1, kDecoded, F, H>(nh);
    case 2:
      return ForHalves<2, kDecoded, F, H>(nh);
    case 3:
      return ForHalves<3, kDecoded, F, H>(nh);
    case 4:
      return ForHalves<4, kDecoded, F, H>(nh);
    case 5:
      return ForHalves<5, kDecoded, F, H>(nh);
    default:
      return ForHalves<6, kDecoded, F, H>(nh);
  }
}

// Halves [0, nh) of the job's column tile, groups [g0, g1), decoded to f32 code values (and FP4
// scales), in the order the register path decodes them.
template <QuantDecode F>
void DecodeBlock(const HalfJob& job, int nh, float* dec, float* dec_scales) {
  constexpr int kPerLane = kCodesPerLane<F>;
  const int64_t group = kPerLane * job.chunks;
  for (int h = 0; h < nh; ++h) {
    for (int64_t g = job.g0; g < job.g1; ++g) {
      const uint8_t* head = HalfHead(job, h, g);
      if constexpr (!HasScaleHeader(F)) {
        _mm256_storeu_ps(dec_scales + (h * (job.g1 - job.g0) + (g - job.g0)) * 8,
                         HalfScales<F>(head + 8 * (h % 2)));
      }
      float* out = dec + (h * job.dec_half + (g - job.g0) * group) * 8;
      const CodeTable<F> table = CodeTable<F>::Load(job.codebook);
      for (int64_t t = 0; t < job.chunks; ++t) {
        const Codes<F> codes = Codes<F>::Load(head + job.head_bytes + 64 * t + 32 * (h % 2));
        ForCodes<kPerLane>([&](auto c) {
          _mm256_storeu_ps(out + (kPerLane * t + c.value) * 8,
                           codes.template Value<c.value>(table));
        });
      }
    }
  }
}

template <QuantDecode F, Head H>
void Run(const FastQuantWeights& w, const float* x, int64_t rows, const float* bias, float* y,
         int64_t n_begin, int64_t n_end, const float* given_sums) {
  const QuantPanelGeometry geo = QuantPanelGeometryOf(w);
  const int64_t group = geo.group, groups = w.k / group;
  const bool decoded = rows > kRegisterRows;
  const int64_t block_groups = decoded ? std::max<int64_t>(1, kBlockK / group) : groups;
  const int64_t block_k = block_groups * group;
  thread_local hwy::AlignedFreeUniquePtr<float[]> dec, tot;
  thread_local std::vector<float> dec_scales, sums;
  thread_local int64_t dec_capacity = 0, tot_capacity = 0;
  const int64_t dec_size = decoded ? kHalves * block_k * 8 : 0;
  const int64_t tot_size = rows * kHalves * 8;
  if (dec_capacity < dec_size) {
    dec = hwy::AllocateAligned<float>(dec_size);
    dec_capacity = dec_size;
  }
  if (tot_capacity < tot_size) {
    tot = hwy::AllocateAligned<float>(tot_size);
    tot_capacity = tot_size;
  }
  dec_scales.resize(decoded ? kHalves * block_groups * 8 : 0);
  const bool zero_folds = IsInteger(F) && !w.symmetric_panels;
  const float* group_sums = given_sums;
  if (zero_folds && group_sums == nullptr) {
    sums.resize(rows * groups);
    GroupSumsRows(x, rows, w.k, group, sums.data());
    group_sums = sums.data();
  }
  HalfJob job;
  job.group_bytes = geo.GroupBytes();
  job.head_bytes = geo.head;
  job.panel_bytes = geo.PanelBytes(groups);
  job.super_bytes = geo.SuperBytes();
  job.super_head = geo.super_head;
  job.centre = static_cast<float>(w.panel_centre);
  job.chunks = group / kCodesPerLane<F>;
  job.dec = dec.get();
  job.dec_half = block_k;
  job.dec_scales = dec_scales.data();
  job.x_stride = w.k;
  job.sums_stride = groups;
  job.symmetric = !zero_folds;
  job.alpha = F == QuantDecode::kNvfp4 ? w.alpha : 1.0f;
  job.codebook = w.codebook;
  job.y_stride = w.n;
  const int64_t p_begin = n_begin / panels::kCols, p_end = panels::Count(n_end);
  for (int64_t p0 = p_begin; p0 < p_end; p0 += kTilePanels) {
    const int nh = 2 * static_cast<int>(std::min<int64_t>(kTilePanels, p_end - p0));
    for (int j = 0; j < kTilePanels; ++j) {
      const unsigned mask = panels::StoreMask(p0 + j, n_begin, n_end);
      job.store[2 * j] = mask & 0xFFu;
      job.store[2 * j + 1] = mask >> 8;
    }
    job.panels = w.q + p0 * job.panel_bytes;
    const int64_t col0 = p0 * panels::kCols;
    job.bias = bias != nullptr ? bias + col0 : nullptr;
    for (int64_t g0 = 0; g0 < groups; g0 += block_groups) {
      job.g0 = g0;
      job.g1 = std::min(groups, g0 + block_groups);
      job.first = g0 == 0;
      job.last = job.g1 == groups;
      if (decoded) DecodeBlock<F>(job, nh, dec.get(), dec_scales.data());
      const int64_t tile_rows = decoded ? kBlockRows : rows;
      for (int64_t m0 = 0; m0 < rows; m0 += tile_rows) {
        const int mr = static_cast<int>(std::min<int64_t>(tile_rows, rows - m0));
        job.x = x + m0 * w.k;
        job.sums = zero_folds ? group_sums + m0 * groups : nullptr;
        job.tot = tot.get() + m0 * kHalves * 8;
        job.y = y + m0 * w.n + col0;
        const int step = decoded ? 2 : HalvesFor(mr);
        for (int h0 = 0; h0 < nh; h0 += step) {
          const TileFn tile =
              decoded ? PickTile<true, F, H>(mr, nh - h0) : PickTile<false, F, H>(mr, nh - h0);
          tile(job, h0);
        }
      }
    }
  }
}

template <QuantDecode F>
void RunInteger(const FastQuantWeights& w, const float* x, int64_t rows, const float* bias,
                float* y, int64_t n_begin, int64_t n_end, const float* sums) {
  if (w.kquant_panel_headers)
    return Run<F, Head::kKQuant>(w, x, rows, bias, y, n_begin, n_end, sums);
  if (w.half_panel_headers) return Run<F, Head::kF16>(w, x, rows, bias, y, n_begin, n_end, sums);
  Run<F, Head::kF32>(w, x, rows, bias, y, n_begin, n_end, sums);
}

}  // namespace

void GroupSumsRows(const float* x, int64_t rows, int64_t k, int64_t group, float* sums) {
  const int64_t groups = k / group;
  for (int64_t m = 0; m < rows; ++m) {
    for (int64_t g = 0; g < groups; ++g) {
      const float* p = x + m * k + g * group;
      float s;
      if (group % 16 == 0) {
        // 16 lanes as two halves, then the fixed reduction: (8-15) + (0-7), its upper 4 + lower 4,
        // then lanes (0 + 2) + (1 + 3).
        __m256 lo = _mm256_loadu_ps(p), hi = _mm256_loadu_ps(p + 8);
        for (int64_t i = 16; i < group; i += 16) {
          lo = _mm256_add_ps(lo, _mm256_loadu_ps(p + i));
          hi = _mm256_add_ps(hi, _mm256_loadu_ps(p + i + 8));
        }
        const __m256 t3 = _mm256_add_ps(hi, lo);
        const __m128 t6 = _mm_add_ps(_mm256_extractf128_ps(t3, 1), _mm256_castps256_ps128(t3));
        const __m128 t8 = _mm_add_ps(t6, _mm_shuffle_ps(t6, t6, _MM_SHUFFLE(1, 0, 3, 2)));
        s = _mm_cvtss_f32(t8) + _mm_cvtss_f32(_mm_shuffle_ps(t8, t8, 1));
      } else {
        s = 0.0f;
        for (int64_t i = 0; i < group; ++i) s += p[i];
      }
      sums[m * groups + g] = s;
    }
  }
}

void QuantPanelMatmulAvx2(const FastQuantWeights& w, const float* x, int64_t rows,
                          const float* bias, float* y, int64_t n_begin, int64_t n_end,
                          const float* group_sums) {
  if (w.pair_panels || rows <= 0 || n_begin >= n_end) return;
  switch (w.decode) {
    case QuantDecode::kInt4:
      return RunInteger<QuantDecode::kInt4>(w, x, rows, bias, y, n_begin, n_end, group_sums);
    case QuantDecode::kInt8:
      return RunInteger<QuantDecode::kInt8>(w, x, rows, bias, y, n_begin, n_end, group_sums);
    case QuantDecode::kMxfp4:
      return Run<QuantDecode::kMxfp4, Head::kF32>(w, x, rows, bias, y, n_begin, n_end, nullptr);
    case QuantDecode::kNvfp4:
      return Run<QuantDecode::kNvfp4, Head::kF32>(w, x, rows, bias, y, n_begin, n_end, nullptr);
    case QuantDecode::kCodebook4:
      if (w.half_panel_headers) {
        return Run<QuantDecode::kCodebook4, Head::kF16>(w, x, rows, bias, y, n_begin, n_end,
                                                        nullptr);
      }
      return Run<QuantDecode::kCodebook4, Head::kF32>(w, x, rows, bias, y, n_begin, n_end, nullptr);
    default:
      return;
  }
}

}  // namespace tessera::kernels::cpu::fast::internal

HWY_POP_ATTRIBUTES

#else  // not x86-64 GCC/Clang: never called (Avx2PanelsAvailable() is false), for the link.

namespace tessera::kernels::cpu::fast::internal {
void GroupSumsRows(const float*, int64_t, int64_t, int64_t, float*) {}
void QuantPanelMatmulAvx2(const FastQuantWeights&, const float*, int64_t, const float*, float*,
                          int64_t, int64_t, const float*) {}
}  // namespace tessera::kernels::cpu::fast::internal

#endif
