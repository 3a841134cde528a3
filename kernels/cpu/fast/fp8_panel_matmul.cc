// AVX-512 BF16 kernel of fp8_panel_matmul.h: up to 24 rows through the shared tile driver
// (panel_gemm.h) with a policy that decodes each panel's 64 code bytes (two K pairs) in registers;
// more rows decode four panels at a time into bf16 pair panels and run bf16_dot_matmul's AVX-512
// tiles on them. Where AMX is granted, every row count runs the AMX tile walk instead (one 32-row
// block decoding tile by tile inside the walk, more rows over the decoded panels). All end in
// the same per-column epilogue (weight scale, W8A8 scales, bias).
#if defined(__GNUC__) && !defined(__clang__)
// GCC 12 reports false "used uninitialized" warnings inside its own avx512fintrin.h once its
// unpack and mask intrinsics are inlined here (see fp8_bf16_matmul.cc).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

#include "kernels/cpu/fast/fp8_panel_matmul.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <vector>

#include "kernels/cpu/fast/amx_panel_gemm.h"
#include "kernels/cpu/fast/bf16_dot_matmul.h"
#include "kernels/cpu/fast/column_panels.h"
#include "kernels/cpu/fast/fp8_bf16_matmul.h"
#include "kernels/numeric/fp8.h"
#include "kernels/numeric/half.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#include "hwy/aligned_allocator.h"
#include "hwy/base.h"
#define TESSERA_FP8_PANEL_X86 1
#endif

namespace tessera::kernels::cpu::fast {

namespace {

// Bytes of one panel: K pairs of 16 columns x 2 codes, in whole 64-byte steps of two pairs.
int64_t PanelBytes(int64_t k) { return (k + 3) / 4 * 64; }

}  // namespace

bool Fp8PanelSupported(const FastQuantWeights& w) {
  const bool per_tensor = w.scale_row_stride == 0 && w.scale_rows >= w.n;
  const bool per_row = w.scale_rows == 1 && w.scale_row_stride == 1;
  return Fp8Bf16Supported(w) && (per_tensor || per_row) && w.scale_k >= w.k && !w.act_block_scales;
}

bool Fp8PanelFmaSupported(const FastQuantWeights& w) {
  // TESSERA_FP8_BF16=0, the escape hatch to FastQuantMatmul's Highway kernel, covers this one too.
  static const bool enabled = [] {
    const char* e = std::getenv("TESSERA_FP8_BF16");
    return e == nullptr || std::string_view(e) != "0";
  }();
  if (!enabled || !Fp8PanelFmaAvailable() || w.decode != QuantDecode::kFp8 || w.q == nullptr ||
      w.scales == nullptr || w.n < 0 || w.k <= 0 || w.scale_k <= 0 || w.scale_rows <= 0 ||
      w.act_block_scales || (w.row_scale == nullptr && w.col_scale != nullptr)) {
    return false;
  }
  const bool per_tensor = w.scale_row_stride == 0 && w.scale_rows >= w.n && w.scale_k >= w.k;
  const bool per_row = w.scale_rows == 1 && w.scale_row_stride == 1 && w.scale_k >= w.k;
  // K blocks (scaled activations: no row or column scales): a power-of-two width of whole K
  // pairs, and row blocks of whole panels, so that one scale covers a panel's step.
  const int64_t k_blocks = (w.k + w.scale_k - 1) / w.scale_k;
  const bool blocks = w.scale_k < w.k && w.scale_k % 2 == 0 && (w.scale_k & (w.scale_k - 1)) == 0 &&
                      (w.scale_rows % panels::kCols == 0 || w.scale_rows >= w.n) &&
                      w.scale_row_stride == k_blocks && w.row_scale == nullptr;
  if (!per_tensor && !per_row && !blocks) return false;
  // The kernel multiplies each scale by 2^8 (its decoded codes are code · 2^-8): no overflow.
  const int64_t count = blocks    ? (w.n + w.scale_rows - 1) / w.scale_rows * k_blocks
                        : per_row ? w.n
                                  : 1;
  return std::all_of(w.scales, w.scales + count, [](float s) { return std::abs(s) < 0x1p100f; });
}

int64_t Fp8PairsBytes(int64_t n, int64_t k) { return panels::Count(n) * PanelBytes(k); }

FastQuantWeights RepackFp8Pairs(const FastQuantWeights& w, uint8_t* dst, ThreadPool* pool) {
  // Pair t of column c at byte 32t + 2c (E4M3 0x00, the padding, is +0).
  const int64_t bytes = PanelBytes(w.k);
  auto repack = [&](int64_t p0, int64_t p1) {
    const int64_t c0 = p0 * panels::kCols, c1 = std::min(w.n, p1 * panels::kCols);
    panels::RepackPanels<1>(w.q + c0 * w.k, w.k, c1 - c0, w.k, bytes, dst + p0 * bytes,
                            [](int64_t i, int64_t c) { return (i / 2) * 32 + c * 2 + (i % 2); });
  };
  ParallelForOrInline(pool, panels::Count(w.n), 1, repack);
  FastQuantWeights out = w;
  out.q = dst;
  return out;
}

#if defined(TESSERA_FP8_PANEL_X86)

}  // namespace tessera::kernels::cpu::fast

HWY_PUSH_ATTRIBUTES("avx512f,avx512vl,avx512dq,avx512bw,avx512vbmi,avx512bf16,avx2,fma,f16c")

#include "kernels/cpu/fast/fp8_bf16_decode.h"
#include "kernels/cpu/fast/panel_gemm.h"

namespace tessera::kernels::cpu::fast {

namespace {

// Row m's outputs of 16 columns from col (lanes under `mask`): v = s(n) · acc, for W8A8
// row_scale(m) · (col_scale(n) · v), then + bias.
HWY_INLINE void Epilogue(const FastQuantWeights& w, int64_t m, int64_t col, __mmask16 mask,
                         __m512 acc, const float* bias, float* dst) {
  const __m512 sw = w.scale_row_stride == 0 ? _mm512_set1_ps(w.scales[0])
                                            : _mm512_maskz_loadu_ps(mask, w.scales + col);
  __m512 v = _mm512_mul_ps(sw, acc);
  if (w.row_scale != nullptr) {
    if (w.col_scale != nullptr) {
      const __m512 cs = w.col_scale_stride == 0 ? _mm512_set1_ps(w.col_scale[0])
                                                : _mm512_maskz_loadu_ps(mask, w.col_scale + col);
      v = _mm512_mul_ps(cs, v);
    }
    v = _mm512_mul_ps(_mm512_set1_ps(w.row_scale[m * w.row_scale_stride]), v);
  }
  if (bias != nullptr) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(mask, bias + col));
  _mm512_mask_storeu_ps(dst, mask, v);
}

// Two K pairs of one panel, decoded: bf16_dot_matmul's pair vectors for pairs 2t and 2t + 1.
struct TwoPairs {
  __m512i a, b;
};

// The in-register policy (≤ kRegisterRows rows, in tiles of 6 rows with K blocks of 256 steps).
template <bool kSplit>
struct Fp8Pairs {
  using Acc = __m512;
  using WVec = TwoPairs;
  static constexpr int64_t kStepBytes = 64;
  static constexpr int64_t kBlockSteps = 256;  // 16 KiB of codes per panel and block
  const int32_t* hi;  // the tile's first row, as K pairs
  const int32_t* lo;  // split form only
  int64_t stride;     // pairs between rows
  const FastQuantWeights* w;
  int64_t m0;  // the tile's first row
  static Acc Zero() { return _mm512_setzero_ps(); }
  static Acc Load(const float* p) { return _mm512_loadu_ps(p); }
  static void Store(float* p, Acc v) { _mm512_storeu_ps(p, v); }
  static WVec LoadW(const uint8_t* p) {
    const internal::Decoder dec = internal::Decoder::Make();
    TwoPairs v;
    dec.Decode(_mm512_load_si512(p), &v.a, &v.b);
    return v;
  }
  Fp8Pairs Rows(int64_t m) const {
    return {hi + m * stride, kSplit ? lo + m * stride : nullptr, stride, w, m0 + m};
  }
  template <int NV>
  HWY_INLINE void Madd(int i, int64_t t, const WVec* wv, Acc* acc) const {
    for (int h = 0; h < 2; ++h) {  // pair 2t, then 2t + 1: hi then lo each, as Bf16Pairs
      const __m512bh xv = (__m512bh)_mm512_set1_epi32(hi[i * stride + 2 * t + h]);
      for (int j = 0; j < NV; ++j) {
        acc[j] = _mm512_dpbf16_ps(acc[j], xv, (__m512bh)(h == 0 ? wv[j].a : wv[j].b));
      }
      if constexpr (kSplit) {
        const __m512bh lv = (__m512bh)_mm512_set1_epi32(lo[i * stride + 2 * t + h]);
        for (int j = 0; j < NV; ++j) {
          acc[j] = _mm512_dpbf16_ps(acc[j], lv, (__m512bh)(h == 0 ? wv[j].a : wv[j].b));
        }
      }
    }
  }
  template <int MR, int NV>
  void Finish(const panels::TileJob& a, Acc (&acc)[MR][NV]) const {
    for (int j = 0; j < NV; ++j) {
      for (int i = 0; i < MR; ++i) {
        Epilogue(*w, m0 + i, a.col0 + 16 * j, a.store[j], acc[i][j],
                 a.bias != nullptr ? a.bias - a.col0 : nullptr,
                 a.y + i * a.y_stride + 16 * j);
      }
    }
  }
};

// Up to this many rows decode in registers, once per 6-row tile. At 16 rows that beat decoding
// four panels to bf16 in L2 first (whose code reads from DRAM stall, see DecodedGemm): M = 16,
// best of two runs, FP8 W8A8 4096x4096 241 -> 360, 14336x4096 295 -> 348, 1.1b_qo 240 -> 340
// GFLOP/s, W8A16 152-176 -> 178-199; at 24-32 rows about even, at 128 the bf16 panels win
// (W8A8 385-400 against 350-364).
constexpr int64_t kRegisterRows = 24;
constexpr int64_t kDecodePanels = 4;  // panels decoded per pass of the GEMM path
constexpr int64_t kPrefetchRows = 24;  // rows of tiles between prefetches of the next pass
// The AMX walk's block of two 16-row tiles: the made-tile route's most rows, the decoded route's
// rows between prefetches.
constexpr int64_t kAmxBlockRows = 2 * amx::kTileRows;

// The epilogue over raw sums in y, rows [0, rows) x columns [c0, c1).
void EpilogueOver(const FastQuantWeights& w, int64_t rows, const float* bias, float* y, int64_t c0,
                  int64_t c1) {
  for (int64_t m = 0; m < rows; ++m) {
    for (int64_t p = c0 / panels::kCols; p * panels::kCols < c1; ++p) {
      const __mmask16 mask = panels::StoreMask(p, c0, c1);
      if (mask == 0) continue;
      float* row = y + m * w.n + p * panels::kCols;
      Epilogue(w, m, p * panels::kCols, mask, _mm512_maskz_loadu_ps(mask, row), bias, row);
    }
  }
}

// More rows, or every row count on AMX: four panels at a time decoded to bf16 pair panels (the
// bf16 kernel's layout, every pair of the panel, zero-padded like the codes and on to whole 1 KiB
// K tiles), run through `gemm` with no bias (y = the raw sums), then the epilogue over y.
void DecodedGemm(const FastQuantWeights& w, const uint16_t* hi, const uint16_t* lo, int64_t rows,
                 const float* bias, float* y, int64_t n_begin, int64_t n_end,
                 internal::Bf16PanelGemmFn gemm, int64_t chunk_rows) {
  const int64_t code_bytes = PanelBytes(w.k), steps = code_bytes / 64;
  const int64_t used_bytes = steps * 128;  // two 64-byte pair vectors per step
  const int64_t bf16_bytes = Bf16PanelKTiles(4 * steps) * amx::kTileBytes;
  thread_local hwy::AlignedFreeUniquePtr<uint8_t[]> buf;
  thread_local int64_t capacity = 0;
  if (capacity < kDecodePanels * bf16_bytes) {
    capacity = kDecodePanels * bf16_bytes;
    buf = hwy::AllocateAligned<uint8_t>(capacity);
  }
  const internal::Decoder dec = internal::Decoder::Make();
  for (int64_t p0 = n_begin / panels::kCols; p0 * panels::kCols < n_end; p0 += kDecodePanels) {
    const int64_t np = std::min(kDecodePanels, panels::Count(n_end) - p0);  // only this range's
    for (int64_t p = 0; p < np; ++p) {
      const uint8_t* codes = w.q + (p0 + p) * code_bytes;
      uint8_t* out = buf.get() + p * bf16_bytes;
      for (int64_t s = 0; s < steps; ++s) {
        __m512i a, b;
        dec.Decode(_mm512_load_si512(codes + s * 64), &a, &b);
        _mm512_store_si512(out + s * 128, a);
        _mm512_store_si512(out + s * 128 + 64, b);
      }
      // AMX takes whole K tiles (zero products); the AVX-512 tiles stop at view.k.
      std::memset(out + used_bytes, 0, bf16_bytes - used_bytes);
    }
    // The decoded panels as a matrix whose column 0 is column 16·p0 (y shifted to match; its
    // row stride stays w.n), K padded to the codes' whole steps so that the bf16 tiles take the
    // very pairs the register path does (a trailing zero pair would turn a -0 sum into +0).
    FastWeights view;
    view.format = FastFormat::kBf16Pairs;
    view.data = buf.get();
    view.n = w.n;
    view.k = 4 * steps;
    view.row_stride = bf16_bytes;
    const int64_t c0 = std::max(n_begin, p0 * panels::kCols);
    const int64_t c1 = std::min(n_end, (p0 + np) * panels::kCols);
    const int64_t shift = p0 * panels::kCols;
    // The next pass's codes come from DRAM; decoding them unprefetched stalled on every load (56%
    // of the decode's samples on the vpermq that reads them). So the tiles run in chunks of rows,
    // each followed by prefetches of its share of those codes. Rows are independent, so the
    // chunks change no result.
    const int64_t next_p0 = p0 + kDecodePanels;
    const int64_t next_np =
        std::max<int64_t>(0, std::min(kDecodePanels, panels::Count(n_end) - next_p0));
    const char* next_codes =
        next_np > 0 ? reinterpret_cast<const char*>(w.q + next_p0 * code_bytes) : nullptr;
    const int64_t next_lines = next_np * code_bytes / 64;
    const int64_t chunks = (rows + chunk_rows - 1) / chunk_rows;
    const int64_t act_stride = Bf16DotActStride(w.k);
    int64_t line = 0;
    for (int64_t ci = 0; ci < chunks; ++ci) {
      const int64_t m0 = ci * chunk_rows, mr = std::min(chunk_rows, rows - m0);
      gemm(view, hi + m0 * act_stride, lo != nullptr ? lo + m0 * act_stride : nullptr, mr, nullptr,
           y + m0 * w.n + shift, c0 - shift, c1 - shift);
      for (const int64_t end = next_lines * (ci + 1) / chunks; line < end; ++line) {
        _mm_prefetch(next_codes + line * 64, _MM_HINT_T1);
      }
    }
    EpilogueOver(w, rows, bias, y, c0, c1);
  }
}

// Codes of one layer as MadeTiles' source: K tile kt of panel p is steps [8kt, 8kt + 8) of the
// panel's codes, decoded; steps past the codes are zero pairs (whole K tiles).
struct Fp8TileSource {
  const uint8_t* codes;
  int64_t code_bytes, steps;
};

void MakeFp8Tile(const void* ctx, int64_t p, int64_t kt, uint8_t* tile) {
  const auto& src = *static_cast<const Fp8TileSource*>(ctx);
  constexpr int64_t kTileSteps = 8;  // 512 code bytes, 1 KiB of bf16 pairs
  const uint8_t* codes = src.codes + p * src.code_bytes + kt * kTileSteps * 64;
  const int64_t steps = std::min(kTileSteps, src.steps - kt * kTileSteps);
  // The tile after the next one, while this one decodes (its panel's stream runs on): its
  // steps that exist.
  const int64_t ahead = std::min(kTileSteps, src.steps - (kt + 2) * kTileSteps);
  for (int64_t l = 0; l < ahead; ++l) {
    _mm_prefetch(codes + 2 * kTileSteps * 64 + l * 64, _MM_HINT_T0);
  }
  const internal::Decoder dec = internal::Decoder::Make();
  for (int64_t s = 0; s < steps; ++s) {
    __m512i a, b;
    dec.Decode(_mm512_load_si512(codes + s * 64), &a, &b);
    _mm512_store_si512(tile + s * 128, a);
    _mm512_store_si512(tile + s * 128 + 64, b);
  }
  std::memset(tile + steps * 128, 0, (kTileSteps - steps) * 128);
}

// The AMX route: one row block decodes tile by tile inside the walk; more rows decode four
// panels per pass (each tile then feeds every row block). Both run the same tile walk, so a row
// gets the same bits either way.
void AmxRoute(const FastQuantWeights& w, const uint16_t* hi, const uint16_t* lo, int64_t rows,
              const float* bias, float* y, int64_t n_begin, int64_t n_end,
              const internal::AmxBf16Gemms& gemms) {
  if (rows > kAmxBlockRows) {
    return DecodedGemm(w, hi, lo, rows, bias, y, n_begin, n_end, gemms.stored, kAmxBlockRows);
  }
  const int64_t code_bytes = PanelBytes(w.k);
  const Fp8TileSource src{w.q, code_bytes, code_bytes / 64};
  gemms.made(MakeFp8Tile, &src, w.n, w.k, hi, lo, rows, nullptr, y, n_begin, n_end);
  EpilogueOver(w, rows, bias, y, n_begin, n_end);
}

}  // namespace

void Fp8PanelMatmul(const FastQuantWeights& w, const uint16_t* hi, const uint16_t* lo,
                    int64_t rows, const float* bias, float* y, int64_t n_begin, int64_t n_end) {
  if (rows <= 0 || n_begin >= n_end) return;
  // On AMX every row count takes the tiles, so that a row's sums keep one order (batch
  // invariance); the AVX-512 register path below and AMX add in different orders.
  if (AmxBf16Usable()) {
    return AmxRoute(w, hi, lo, rows, bias, y, n_begin, n_end,
                    {internal::AmxBf16DotMatmul, internal::AmxBf16MadeTilesMatmul});
  }
  if (rows > kRegisterRows) {
    return DecodedGemm(w, hi, lo, rows, bias, y, n_begin, n_end, internal::Bf16DotMatmulAvx512,
                       kPrefetchRows);
  }
  const int64_t stride = Bf16DotActStride(w.k) / 2, steps = PanelBytes(w.k) / 64;
  const auto* hi32 = reinterpret_cast<const int32_t*>(hi);
  const auto* lo32 = reinterpret_cast<const int32_t*>(lo);
  if (lo != nullptr) {
    panels::PanelMatmul(Fp8Pairs<true>{hi32, lo32, stride, &w, 0}, w.q, PanelBytes(w.k), steps,
                        w.n, rows, bias, y, n_begin, n_end);
  } else {
    panels::PanelMatmul(Fp8Pairs<false>{hi32, nullptr, stride, &w, 0}, w.q, PanelBytes(w.k), steps,
                        w.n, rows, bias, y, n_begin, n_end);
  }
}

namespace internal {

void Fp8PanelMatmulAmx(const FastQuantWeights& w, const uint16_t* hi, const uint16_t* lo,
                       int64_t rows, const float* bias, float* y, int64_t n_begin, int64_t n_end,
                       const AmxBf16Gemms& gemms) {
  if (rows <= 0 || n_begin >= n_end) return;
  AmxRoute(w, hi, lo, rows, bias, y, n_begin, n_end, gemms);
}

}  // namespace internal

HWY_POP_ATTRIBUTES

#else  // not x86-64 GCC/Clang: never called (Fp8PanelSupported() is false), defined for the link.

void Fp8PanelMatmul(const FastQuantWeights&, const uint16_t*, const uint16_t*, int64_t,
                    const float*, float*, int64_t, int64_t) {}
namespace internal {
void Fp8PanelMatmulAmx(const FastQuantWeights&, const uint16_t*, const uint16_t*, int64_t,
                       const float*, float*, int64_t, int64_t, const AmxBf16Gemms&) {}
}  // namespace internal

#endif

}  // namespace tessera::kernels::cpu::fast
