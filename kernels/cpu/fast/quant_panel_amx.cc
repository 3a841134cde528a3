// The quant pair panels' AMX route (quant_panel_amx.h): a tile maker that decodes 32 k of a
// panel's codes into one bf16 B tile (FP4: the block scales folded in; INT4: q − 8), the walks over
// such tiles for one row block, four decoded panels per pass for more rows, INT4's per-group fold
// and the epilogues.
#if defined(__GNUC__) && !defined(__clang__)
// GCC 12 reports false "used uninitialized" warnings inside its own avx512fintrin.h once its
// mask intrinsics are inlined here (see fp8_bf16_matmul.cc).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include "kernels/cpu/fast/quant_panel_amx.h"

#include <algorithm>
#include <bit>  // quant_panel_decode-inl.h: outside the AVX-512 region
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <vector>

#include "kernels/cpu/fast/amx_panel_gemm.h"
#include "kernels/cpu/fast/bf16_dot_matmul.h"
#include "kernels/cpu/fast/column_panels.h"
#include "kernels/cpu/fast/quant_panel_matmul.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#include "hwy/aligned_allocator.h"
#include "hwy/base.h"
#define TESSERA_QUANT_PANEL_AMX_X86 1
#endif

namespace tessera::kernels::cpu::fast {

bool QuantPanelAmxTakes(const FastQuantWeights& w) {
  // TESSERA_QUANT_PANEL_AMX=0 keeps these layers on the AVX-512 pair kernel (the route's speed on
  // hardware is not measured yet), read once so that every call of the process agrees.
  static const bool enabled = [] {
    const char* e = std::getenv("TESSERA_QUANT_PANEL_AMX");
    return e == nullptr || std::string_view(e) != "0";
  }();
  if (!enabled || !w.pair_panels) return false;
  switch (w.decode) {
    case QuantDecode::kMxfp4:
    case QuantDecode::kNvfp4:
      return w.fp4_bf16_products;
    case QuantDecode::kInt4: {
      // Groups of whole K tiles, or one group per row (per-channel); not K-quant headers.
      const int64_t group = internal::QuantPanelGeometryOf(w).group;
      return !w.kquant_panel_headers && group > 0 && (group % 32 == 0 || group == w.k);
    }
    default:
      return false;
  }
}

#if defined(TESSERA_QUANT_PANEL_AMX_X86)

}  // namespace tessera::kernels::cpu::fast

HWY_PUSH_ATTRIBUTES("avx512f,avx512vl,avx512bw,avx2,fma")

#include "kernels/cpu/fast/quant_panel_decode-inl.h"

namespace tessera::kernels::cpu::fast {

namespace {

using panel_decode::GroupScales;
using panel_decode::HeaderValues;
using panel_decode::PairTable;

constexpr int64_t kTileK = 2 * amx::kTileRows;  // k per B tile: 16 K pairs
constexpr int64_t kChunkK = 8;                  // k per 64-byte chunk: 4 pairs of 16 columns
// One walk block of two 16-row tiles: the most rows that decode tiles inside the walk, and the
// decoded route's rows between prefetches.
constexpr int64_t kBlockRows = 2 * amx::kTileRows;
constexpr int64_t kDecodePanels = 4;  // panels decoded per pass of the decoded route

struct TileSource {
  const uint8_t* panels;
  int64_t panel_bytes, group, group_bytes, head_bytes, k;
};

// K tile kt of panel p: chunk c covers k = 32kt + 8c ... + 7 (of one group: groups are whole
// tiles, or one per row), its lane j column j's codes in the pair order (quant_panel_matmul.h),
// so the i-th 4-bit shift and `vpermw` give tile row 4c + i, the pair (k0 + 2i, k0 + 2i + 1) of
// 16 columns: INT4 q − 8 as it is; FP4 each bf16 word times its column's scale in f32, exact and
// (fp4_bf16_products) normal, so its top 16 bits are the bf16 product. Rows past K are zero pairs.
template <QuantDecode F>
void MakeTile(const void* ctx, int64_t p, int64_t kt, uint8_t* tile) {
  const auto& src = *static_cast<const TileSource*>(ctx);
  const uint8_t* panel = src.panels + p * src.panel_bytes;
  // The tile after the next one, while this one decodes: its bytes (headers and chunks lie in
  // ascending k, a group's header first).
  const int64_t ahead_k = (kt + 2) * kTileK;
  if (ahead_k < src.k) {
    auto offset = [&src](int64_t k) {
      return k / src.group * src.group_bytes +
             (k % src.group == 0 ? 0 : src.head_bytes + k % src.group / kChunkK * 64);
    };
    const char* base = reinterpret_cast<const char*>(panel);
    const int64_t end = offset(std::min(ahead_k + kTileK, src.k));
    // From the line holding the first byte (headers make the offsets unaligned to lines).
    for (int64_t b = offset(ahead_k) & ~int64_t{63}; b < end; b += 64) {
      _mm_prefetch(base + b, _MM_HINT_T0);
    }
  }
  const auto table = PairTable<F>::Load();
  const __m512i high = _mm512_set1_epi32(static_cast<int32_t>(0xFFFF0000u));
  const __m512i magnitude = _mm512_set1_epi16(0x7FFF);
  // FP4: the group's scales, read at its first chunk (MXFP4: once per tile, NVFP4 twice).
  constexpr int64_t kFp4Group = F == QuantDecode::kMxfp4 ? 32 : 16;
  __m512 s = _mm512_setzero_ps();
  __m512i steps = _mm512_setzero_si512();
  for (int64_t c = 0; c < kTileK / kChunkK; ++c) {
    uint8_t* out = tile + c * 4 * 64;
    const int64_t k0 = kt * kTileK + c * kChunkK;
    if (k0 >= src.k) {
      std::memset(out, 0, 4 * 64);
      continue;
    }
    const uint8_t* head = panel + k0 / src.group * src.group_bytes;
    __m512i codes = _mm512_loadu_si512(head + src.head_bytes + k0 % src.group / kChunkK * 64);
    if constexpr (F == QuantDecode::kInt4) {
      for (int i = 0; i < 4; ++i, codes = _mm512_srli_epi32(codes, 4)) {
        _mm512_store_si512(out + i * 64, table.Decode(codes));
      }
    } else if constexpr (F == QuantDecode::kMxfp4) {
      // 2^(e − 127) as an exponent step added to each nonzero word: every e2m1 value is a normal
      // bf16, and fp4_bf16_products keeps every scaled weight normal and finite. Two operations per
      // 32 weights where the f32 multiply takes six (the decode alone, M = 1: bench/README.md,
      // twentieth session).
      if (k0 % kFp4Group == 0) {
        const __m512i e =
            _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(head)));
        const __m512i step = _mm512_slli_epi32(_mm512_sub_epi32(e, _mm512_set1_epi32(127)), 7);
        steps = _mm512_or_si512(_mm512_and_si512(step, _mm512_set1_epi32(0xFFFF)),
                                _mm512_slli_epi32(step, 16));
      }
      for (int i = 0; i < 4; ++i, codes = _mm512_srli_epi32(codes, 4)) {
        const __m512i v = table.Decode(codes);
        _mm512_store_si512(
            out + i * 64, _mm512_mask_add_epi16(v, _mm512_test_epi16_mask(v, magnitude), v, steps));
      }
    } else {
      // Each bf16 word times its column's UE4M3 scale in f32: the product is exact in bf16, so
      // the f32 product's low 16 bits are zero and its top 16 the bf16 product.
      if (k0 % kFp4Group == 0) s = GroupScales<F>(head);
      for (int i = 0; i < 4; ++i, codes = _mm512_srli_epi32(codes, 4)) {
        const __m512i v = table.Decode(codes);
        const __m512 even = _mm512_mul_ps(_mm512_castsi512_ps(_mm512_slli_epi32(v, 16)), s);
        const __m512 odd = _mm512_mul_ps(_mm512_castsi512_ps(_mm512_and_si512(v, high)), s);
        _mm512_store_si512(out + i * 64,
                           _mm512_or_si512(_mm512_srli_epi32(_mm512_castps_si512(even), 16),
                                           _mm512_castps_si512(odd)));
      }
    }
  }
}

// FP4: y = α · acc (NVFP4), + bias, over rows [0, rows) x columns [c0, c1): the pair kernel's
// epilogue in its operations and order.
void Fp4Epilogue(const FastQuantWeights& w, int64_t rows, const float* bias, float* y, int64_t c0,
                 int64_t c1) {
  const bool alpha = w.decode == QuantDecode::kNvfp4;
  for (int64_t m = 0; m < rows; ++m) {
    float* row = y + m * w.n;
    for (int64_t c = c0; c < c1; ++c) {
      float v = row[c];
      if (alpha) v = w.alpha * v;
      if (bias != nullptr) v = v + bias[c];
      row[c] = v;
    }
  }
}

// INT4's fold of one group (amx::GroupFolder): tot = fma(s, a − (z − 8) · Σx, tot) with a the
// group's C-tile sums of x · (q − 8), as the pair kernel folds its group sums (symmetric: tot =
// fma(s, a, tot)), and its finish, y = tot + bias. The walk's panel p is panels' p + panel_shift,
// its row m sums' row m and y's, its column c bias's c + col_shift (the decoded route runs the
// walk on a window of panels and rows).
struct IntFold {
  const uint8_t* panels;
  int64_t panel_bytes, group_bytes, panel_shift;
  const float* sums;  // Σx [row][group] (asymmetric headers)
  int64_t groups;
  const float* bias;
  int64_t col_shift;
  float* y;
  int64_t y_stride;
};

template <bool kHalf, bool kSymmetric>
void FoldIntGroup(const void* ctx, int64_t m0, int rows, int64_t p0, int panels, int64_t g,
                  const float* c, float* tot) {
  const auto& f = *static_cast<const IntFold*>(ctx);
  constexpr int64_t kWidth = kHalf ? 2 : 4;
  for (int j = 0; j < panels; ++j) {
    const uint8_t* head = f.panels + (p0 + j + f.panel_shift) * f.panel_bytes + g * f.group_bytes;
    const __m512 z = kSymmetric ? _mm512_setzero_ps() : HeaderValues<kHalf>(head);
    const __m512 s = HeaderValues<kHalf>(kSymmetric ? head : head + 16 * kWidth);
    for (int i = 0; i < rows; ++i) {
      __m512 a = _mm512_load_ps(c + i * 2 * amx::kPanelCols + 16 * j);
      if constexpr (!kSymmetric) {
        a = _mm512_fnmadd_ps(z, _mm512_set1_ps(f.sums[(m0 + i) * f.groups + g]), a);
      }
      float* t = tot + i * 2 * amx::kPanelCols + 16 * j;
      _mm512_store_ps(t, _mm512_fmadd_ps(s, a, _mm512_load_ps(t)));
    }
  }
}

void FinishInt(const void* ctx, int64_t m0, int rows, int64_t col0, int64_t c_begin, int64_t c_end,
               const float* tot) {
  const auto& f = *static_cast<const IntFold*>(ctx);
  for (int i = 0; i < rows; ++i) {
    float* row = f.y + (m0 + i) * f.y_stride;
    for (int64_t col = c_begin; col < c_end; ++col) {
      float v = tot[i * 2 * amx::kPanelCols + (col - col0)];
      if (f.bias != nullptr) v = v + f.bias[col + f.col_shift];
      row[col] = v;
    }
  }
}

amx::GroupFolder IntFolder(const FastQuantWeights& w, const IntFold* ctx) {
  auto fold = w.symmetric_panels
                  ? (w.half_panel_headers ? FoldIntGroup<true, true> : FoldIntGroup<false, true>)
                  : (w.half_panel_headers ? FoldIntGroup<true, false> : FoldIntGroup<false, false>);
  return {fold, FinishInt, ctx};
}

// This thread's buffer of decoded panels, at least `bytes` (one for every format's route).
uint8_t* DecodeBuffer(int64_t bytes) {
  thread_local hwy::AlignedFreeUniquePtr<uint8_t[]> buf;
  thread_local int64_t capacity = 0;
  if (capacity < bytes) {
    capacity = bytes;
    buf = hwy::AllocateAligned<uint8_t>(capacity);
  }
  return buf.get();
}

// More than one row block: four panels at a time decoded whole into bf16 pair panels (the
// stored tiles' layout), then run(view, p0, m0, mr, c0, c1) for each block of rows, each followed
// by prefetches of its share of the next pass's codes (from DRAM, as in fp8_panel_matmul.cc). The
// same tiles as the made-tile walk, so the same bits.
template <class RunBlock>
void DecodedRoute(const FastQuantWeights& w, amx::Bf16TileMaker make, const TileSource& src,
                  int64_t rows, int64_t n_begin, int64_t n_end, RunBlock run) {
  const int64_t ktiles = Bf16PanelKTiles(w.k), bf16_bytes = ktiles * amx::kTileBytes;
  uint8_t* const buf = DecodeBuffer(kDecodePanels * bf16_bytes);
  for (int64_t p0 = n_begin / panels::kCols; p0 * panels::kCols < n_end; p0 += kDecodePanels) {
    const int64_t np = std::min(kDecodePanels, panels::Count(n_end) - p0);
    for (int64_t p = 0; p < np; ++p) {
      for (int64_t kt = 0; kt < ktiles; ++kt) {
        make(&src, p0 + p, kt, buf + p * bf16_bytes + kt * amx::kTileBytes);
      }
    }
    // The decoded panels as a matrix whose column 0 is column 16·p0.
    FastWeights view;
    view.format = FastFormat::kBf16Pairs;
    view.data = buf;
    view.n = w.n;
    view.k = w.k;
    view.row_stride = bf16_bytes;
    const int64_t c0 = std::max(n_begin, p0 * panels::kCols);
    const int64_t c1 = std::min(n_end, (p0 + np) * panels::kCols);
    const int64_t next_p0 = p0 + kDecodePanels;
    const int64_t next_np =
        std::max<int64_t>(0, std::min(kDecodePanels, panels::Count(n_end) - next_p0));
    const char* next = next_np > 0
                           ? reinterpret_cast<const char*>(src.panels + next_p0 * src.panel_bytes)
                           : nullptr;
    const int64_t next_lines = next_np * src.panel_bytes / 64;
    const int64_t blocks = (rows + kBlockRows - 1) / kBlockRows;
    int64_t line = 0;
    for (int64_t b = 0; b < blocks; ++b) {
      const int64_t m0 = b * kBlockRows;
      run(view, p0, m0, std::min(kBlockRows, rows - m0), c0, c1);
      for (const int64_t end = next_lines * (b + 1) / blocks; line < end; ++line) {
        _mm_prefetch(next + line * 64, _MM_HINT_T1);
      }
    }
  }
}

template <QuantDecode F>
void Fp4Route(const FastQuantWeights& w, const TileSource& src, const uint16_t* hi,
              const uint16_t* lo, int64_t rows, const float* bias, float* y, int64_t n_begin,
              int64_t n_end, const internal::AmxBf16Gemms& gemms) {
  const int64_t stride = Bf16DotActStride(w.k);
  if (rows > kBlockRows) {
    DecodedRoute(
        w, MakeTile<F>, src, rows, n_begin, n_end,
        [&](const FastWeights& view, int64_t p0, int64_t m0, int64_t mr, int64_t c0, int64_t c1) {
          // y shifted to the view's column 0 (its row stride stays w.n).
          const int64_t shift = p0 * panels::kCols;
          gemms.stored(view, hi + m0 * stride, lo != nullptr ? lo + m0 * stride : nullptr, mr,
                       nullptr, y + m0 * w.n + shift, c0 - shift, c1 - shift);
        });
  } else {
    gemms.made(MakeTile<F>, &src, w.n, w.k, hi, lo, rows, nullptr, y, n_begin, n_end);
  }
  Fp4Epilogue(w, rows, bias, y, n_begin, n_end);
}

void Int4Route(const FastQuantWeights& w, const TileSource& src, const float* x, const uint16_t* hi,
               const uint16_t* lo, int64_t rows, const float* bias, float* y, int64_t n_begin,
               int64_t n_end, const internal::AmxBf16Gemms& gemms, const float* group_sums) {
  const int64_t groups = w.k / src.group, stride = Bf16DotActStride(w.k);
  const int64_t group_tiles = (src.group + kTileK - 1) / kTileK;
  thread_local std::vector<float> sums;
  const float* row_sums = group_sums;  // none read when symmetric
  if (!w.symmetric_panels && row_sums == nullptr) {
    sums.resize(rows * groups);
    QuantPanelGroupSums(w, x, 0, rows, sums.data());
    row_sums = sums.data();
  }
  IntFold fold{w.q, src.panel_bytes, src.group_bytes, 0, row_sums, groups, bias, 0, y, w.n};
  if (rows > kBlockRows) {
    DecodedRoute(
        w, MakeTile<QuantDecode::kInt4>, src, rows, n_begin, n_end,
        [&](const FastWeights& view, int64_t p0, int64_t m0, int64_t mr, int64_t c0, int64_t c1) {
          const int64_t shift = p0 * panels::kCols;
          IntFold block = fold;
          block.panel_shift = p0;
          block.sums = fold.sums != nullptr ? fold.sums + m0 * groups : nullptr;
          block.col_shift = shift;
          block.y = y + m0 * w.n + shift;
          gemms.group(nullptr, nullptr, view.data, view.row_stride, w.n, w.k, group_tiles,
                      hi + m0 * stride, lo != nullptr ? lo + m0 * stride : nullptr, mr, c0 - shift,
                      c1 - shift, IntFolder(w, &block));
        });
    return;
  }
  gemms.group(MakeTile<QuantDecode::kInt4>, &src, nullptr, 0, w.n, w.k, group_tiles, hi, lo, rows,
              n_begin, n_end, IntFolder(w, &fold));
}

}  // namespace

namespace internal {

void QuantPanelAmxMatmul(const FastQuantWeights& w, const float* x, const uint16_t* hi,
                         const uint16_t* lo, int64_t rows, const float* bias, float* y,
                         int64_t n_begin, int64_t n_end, const AmxBf16Gemms& gemms,
                         const float* group_sums) {
  if (rows <= 0 || n_begin >= n_end || !QuantPanelAmxTakes(w)) return;
  const QuantPanelGeometry geo = QuantPanelGeometryOf(w);
  const TileSource src{w.q, geo.PanelBytes(w.k / geo.group), geo.group, geo.GroupBytes(), geo.head,
                       w.k};
  switch (w.decode) {
    case QuantDecode::kMxfp4:
      return Fp4Route<QuantDecode::kMxfp4>(w, src, hi, lo, rows, bias, y, n_begin, n_end, gemms);
    case QuantDecode::kNvfp4:
      return Fp4Route<QuantDecode::kNvfp4>(w, src, hi, lo, rows, bias, y, n_begin, n_end, gemms);
    default:
      return Int4Route(w, src, x, hi, lo, rows, bias, y, n_begin, n_end, gemms, group_sums);
  }
}

}  // namespace internal

HWY_POP_ATTRIBUTES

#else  // not x86-64 GCC/Clang: never called (no pair panels there), defined for the link.

namespace internal {
void QuantPanelAmxMatmul(const FastQuantWeights&, const float*, const uint16_t*, const uint16_t*,
                         int64_t, const float*, float*, int64_t, int64_t, const AmxBf16Gemms&,
                         const float*) {}
}  // namespace internal

#endif

}  // namespace tessera::kernels::cpu::fast
