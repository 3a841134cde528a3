// The FP4 pair panels' AMX route (quant_panel_amx.h): a tile maker that decodes 32 k of a panel's
// codes into one bf16 B tile with the block scales folded in, the walk over such tiles for one
// row block, four decoded panels per pass for more rows, and the epilogue.
#if defined(__GNUC__) && !defined(__clang__)
// GCC 12 reports false "used uninitialized" warnings inside its own avx512fintrin.h once its
// mask intrinsics are inlined here (see fp8_bf16_matmul.cc).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include "kernels/cpu/fast/quant_panel_amx.h"

#include <algorithm>
#include <bit>  // quant_panel_decode-inl.h: outside the AVX-512 region
#include <cstring>

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
  return w.pair_panels && w.fp4_bf16_products &&
         (w.decode == QuantDecode::kMxfp4 || w.decode == QuantDecode::kNvfp4);
}

#if defined(TESSERA_QUANT_PANEL_AMX_X86)

}  // namespace tessera::kernels::cpu::fast

HWY_PUSH_ATTRIBUTES("avx512f,avx512vl,avx512bw,avx2,fma")

#include "kernels/cpu/fast/quant_panel_decode-inl.h"

namespace tessera::kernels::cpu::fast {

namespace {

using panel_decode::GroupScales;
using panel_decode::PairTable;

constexpr int64_t kTileK = 2 * amx::kTileRows;  // k per B tile: 16 K pairs
constexpr int64_t kChunkK = 8;                  // k per 64-byte chunk: 4 pairs of 16 columns
constexpr int64_t kHeadBytes = 16;              // an FP4 group's 16 scale bytes
// One walk block of two 16-row tiles: the most rows that decode tiles inside the walk, and the
// decoded route's rows between prefetches.
constexpr int64_t kBlockRows = 2 * amx::kTileRows;
constexpr int64_t kDecodePanels = 4;  // panels decoded per pass of the decoded route

struct Fp4TileSource {
  const uint8_t* panels;
  int64_t panel_bytes, group_bytes, k;
};

// K tile kt of panel p: chunk c covers k = 32kt + 8c ... + 7, its lane j column j's codes in the
// pair order (quant_panel_matmul.h), so the i-th 4-bit shift and `vpermw` give tile row 4c + i,
// the pair (k0 + 2i, k0 + 2i + 1) of 16 columns. Each bf16 pair word times its column's scale in
// f32 is exact and (fp4_bf16_products) normal, so its top 16 bits are the bf16 product. Rows past
// K (NVFP4 with k % 32 == 16) are zero pairs.
template <QuantDecode F>
void MakeFp4Tile(const void* ctx, int64_t p, int64_t kt, uint8_t* tile) {
  const auto& src = *static_cast<const Fp4TileSource*>(ctx);
  constexpr int64_t kGroup = F == QuantDecode::kMxfp4 ? 32 : 16;
  const uint8_t* panel = src.panels + p * src.panel_bytes;
  // The tile after the next one, while this one decodes: its groups that exist.
  const int64_t ahead_k = (kt + 2) * kTileK;
  if (ahead_k < src.k) {
    const char* ahead = reinterpret_cast<const char*>(panel + ahead_k / kGroup * src.group_bytes);
    const int64_t bytes = std::min(kTileK, src.k - ahead_k) / kGroup * src.group_bytes;
    for (int64_t b = 0; b < bytes; b += 64) _mm_prefetch(ahead + b, _MM_HINT_T0);
  }
  const auto table = PairTable<F>::Load();
  const __m512i high = _mm512_set1_epi32(static_cast<int32_t>(0xFFFF0000u));
  for (int64_t c = 0; c < kTileK / kChunkK; ++c) {
    uint8_t* out = tile + c * 4 * 64;
    const int64_t k0 = kt * kTileK + c * kChunkK;
    if (k0 >= src.k) {
      std::memset(out, 0, 4 * 64);
      continue;
    }
    const uint8_t* head = panel + k0 / kGroup * src.group_bytes;
    const __m512 s = GroupScales<F>(head);
    __m512i codes = _mm512_loadu_si512(head + kHeadBytes + k0 % kGroup / kChunkK * 64);
    for (int i = 0; i < 4; ++i, codes = _mm512_srli_epi32(codes, 4)) {
      const __m512i v = table.Decode(codes);
      const __m512 even = _mm512_mul_ps(_mm512_castsi512_ps(_mm512_slli_epi32(v, 16)), s);
      const __m512 odd = _mm512_mul_ps(_mm512_castsi512_ps(_mm512_and_si512(v, high)), s);
      _mm512_store_si512(out + i * 64,
                         _mm512_or_si512(_mm512_srli_epi32(_mm512_castps_si512(even), 16),
                                         _mm512_and_si512(_mm512_castps_si512(odd), high)));
    }
  }
}

// y = α · acc (NVFP4), + bias, over rows [0, rows) x columns [c0, c1): the pair kernel's epilogue
// in its operations and order.
void Epilogue(const FastQuantWeights& w, int64_t rows, const float* bias, float* y, int64_t c0,
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

// More than one row block: four panels at a time decoded whole into bf16 pair panels (the
// stored tiles' layout), then the walk over them in blocks of rows, each followed by prefetches
// of its share of the next pass's codes (from DRAM, as in fp8_panel_matmul.cc). The same tiles
// as the made-tile walk, so the same bits.
void DecodedRoute(const FastQuantWeights& w, amx::Bf16TileMaker make, const Fp4TileSource& src,
                  const uint16_t* hi, const uint16_t* lo, int64_t rows, float* y, int64_t n_begin,
                  int64_t n_end, internal::Bf16PanelGemmFn gemm) {
  const int64_t ktiles = Bf16PanelKTiles(w.k), bf16_bytes = ktiles * amx::kTileBytes;
  thread_local hwy::AlignedFreeUniquePtr<uint8_t[]> buf;
  thread_local int64_t capacity = 0;
  if (capacity < kDecodePanels * bf16_bytes) {
    capacity = kDecodePanels * bf16_bytes;
    buf = hwy::AllocateAligned<uint8_t>(capacity);
  }
  const int64_t act_stride = Bf16DotActStride(w.k);
  for (int64_t p0 = n_begin / panels::kCols; p0 * panels::kCols < n_end; p0 += kDecodePanels) {
    const int64_t np = std::min(kDecodePanels, panels::Count(n_end) - p0);
    for (int64_t p = 0; p < np; ++p) {
      for (int64_t kt = 0; kt < ktiles; ++kt) {
        make(&src, p0 + p, kt, buf.get() + p * bf16_bytes + kt * amx::kTileBytes);
      }
    }
    // The decoded panels as a matrix whose column 0 is column 16·p0 (y shifted to match).
    FastWeights view;
    view.format = FastFormat::kBf16Pairs;
    view.data = buf.get();
    view.n = w.n;
    view.k = w.k;
    view.row_stride = bf16_bytes;
    const int64_t c0 = std::max(n_begin, p0 * panels::kCols);
    const int64_t c1 = std::min(n_end, (p0 + np) * panels::kCols);
    const int64_t shift = p0 * panels::kCols;
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
      const int64_t m0 = b * kBlockRows, mr = std::min(kBlockRows, rows - m0);
      gemm(view, hi + m0 * act_stride, lo != nullptr ? lo + m0 * act_stride : nullptr, mr, nullptr,
           y + m0 * w.n + shift, c0 - shift, c1 - shift);
      for (const int64_t end = next_lines * (b + 1) / blocks; line < end; ++line) {
        _mm_prefetch(next + line * 64, _MM_HINT_T1);
      }
    }
  }
}

template <QuantDecode F>
void Route(const FastQuantWeights& w, const uint16_t* hi, const uint16_t* lo, int64_t rows,
           const float* bias, float* y, int64_t n_begin, int64_t n_end,
           const internal::AmxBf16Gemms& gemms) {
  const internal::QuantPanelGeometry geo = internal::QuantPanelGeometryOf(w);
  const int64_t groups = w.k / geo.group;
  const Fp4TileSource src{w.q, geo.PanelBytes(groups), geo.GroupBytes(), w.k};
  if (rows > kBlockRows) {
    DecodedRoute(w, MakeFp4Tile<F>, src, hi, lo, rows, y, n_begin, n_end, gemms.stored);
  } else {
    gemms.made(MakeFp4Tile<F>, &src, w.n, w.k, hi, lo, rows, nullptr, y, n_begin, n_end);
  }
  Epilogue(w, rows, bias, y, n_begin, n_end);
}

}  // namespace

namespace internal {

void QuantPanelAmxMatmul(const FastQuantWeights& w, const uint16_t* hi, const uint16_t* lo,
                         int64_t rows, const float* bias, float* y, int64_t n_begin, int64_t n_end,
                         const AmxBf16Gemms& gemms) {
  if (rows <= 0 || n_begin >= n_end || !QuantPanelAmxTakes(w)) return;
  if (w.decode == QuantDecode::kMxfp4) {
    return Route<QuantDecode::kMxfp4>(w, hi, lo, rows, bias, y, n_begin, n_end, gemms);
  }
  Route<QuantDecode::kNvfp4>(w, hi, lo, rows, bias, y, n_begin, n_end, gemms);
}

}  // namespace internal

HWY_POP_ATTRIBUTES

#else  // not x86-64 GCC/Clang: never called (no pair panels there), defined for the link.

namespace internal {
void QuantPanelAmxMatmul(const FastQuantWeights&, const uint16_t*, const uint16_t*, int64_t,
                         const float*, float*, int64_t, int64_t, const AmxBf16Gemms&) {}
}  // namespace internal

#endif

}  // namespace tessera::kernels::cpu::fast
