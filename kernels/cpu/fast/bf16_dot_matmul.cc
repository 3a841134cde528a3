// AVX-512 BF16 kernel of bf16_dot_matmul.h: the K-pair panels run through the shared tile driver
// (panel_gemm.h) with a policy that broadcasts one activation pair (hi, then lo in the split form)
// per row and K pair into `vdpbf16ps` against each panel's 64-byte pair vector.
#if defined(__GNUC__) && !defined(__clang__)
// GCC 12 reports a false "may be used uninitialized" inside its own avx512fintrin.h (the
// _mm512_undefined_* placeholders of its mask intrinsics) once they are inlined here.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include "kernels/cpu/fast/bf16_dot_matmul.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "kernels/cpu/fast/amx.h"
#include "kernels/cpu/fast/amx_panel_gemm.h"
#include "kernels/cpu/fast/column_panels.h"
#include "kernels/numeric/half.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#include "hwy/aligned_allocator.h"
#include "hwy/base.h"
#define TESSERA_BF16_DOT_X86 1
#endif

namespace tessera::kernels::cpu::fast {

bool Bf16DotAvailable() {
  static const bool has = TESSERA_HAS_AVX512_WITH("avx512bf16");
  return has;
}

void RoundActsToBf16(const float* x, int64_t k, int64_t r0, int64_t r1, uint16_t* hi,
                     uint16_t* lo, float* x_rounded) {
  const int64_t stride = Bf16DotActStride(k);
  for (int64_t r = r0; r < r1; ++r) {
    const float* src = x + r * k;
    uint16_t* h = hi + r * stride;
    for (int64_t i = 0; i < k; ++i) h[i] = numeric::FloatToBf16(src[i]);
    std::fill(h + k, h + stride, uint16_t{0});
    if (lo != nullptr) {
      uint16_t* l = lo + r * stride;
      for (int64_t i = 0; i < k; ++i) l[i] = numeric::FloatToBf16(src[i] - numeric::Bf16ToFloat(h[i]));
      std::fill(l + k, l + stride, uint16_t{0});
    }
    if (x_rounded != nullptr) {
      for (int64_t i = 0; i < k; ++i) x_rounded[r * k + i] = numeric::Bf16ToFloat(h[i]);
    }
  }
}

int64_t Bf16PairsBytes(int64_t n, int64_t k) {
  return panels::Count(n) * Bf16PanelKTiles(k) * amx::kTileBytes;
}

FastWeights RepackBf16Pairs(const FastWeights& src, uint8_t* dst) {
  return panels::RepackFloatPanels<2>(src, FastFormat::kBf16Pairs,
                                      Bf16PanelKTiles(src.k) * amx::kTileBytes, dst,
                                      [](int64_t i, int64_t c) {
                                        // the pair (w[c, 2t], w[c, 2t + 1]) in lane c
                                        return (i / 2) * 32 + c * 2 + (i % 2);
                                      });
}

#if defined(TESSERA_BF16_DOT_X86)

}  // namespace tessera::kernels::cpu::fast

HWY_PUSH_ATTRIBUTES("avx512f,avx512vl,avx512bw,avx512bf16,avx2,fma")

#include "kernels/cpu/fast/panel_gemm.h"

namespace tessera::kernels::cpu::fast {
namespace {

// One K pair of 16 columns is a 64-byte vector; a block of 512 pairs is 32 KiB per panel.
template <bool kSplit>
struct Bf16Pairs : panels::FloatAccumulators {
  using WVec = __m512bh;
  static constexpr int64_t kStepBytes = 64;
  static constexpr int64_t kBlockSteps = 512;
  const int32_t* hi;  // the tile's first row, as K pairs
  const int32_t* lo;  // split form only
  int64_t stride;     // pairs between rows
  static WVec LoadW(const uint8_t* p) { return (__m512bh)_mm512_load_si512(p); }
  Bf16Pairs Rows(int64_t m0) const {
    return {{}, hi + m0 * stride, kSplit ? lo + m0 * stride : nullptr, stride};
  }
  template <int NV>
  HWY_INLINE void Madd(int i, int64_t t, const WVec* w, Acc* acc) const {
    const __m512bh xv = (__m512bh)_mm512_set1_epi32(hi[i * stride + t]);
    for (int j = 0; j < NV; ++j) acc[j] = _mm512_dpbf16_ps(acc[j], xv, w[j]);
    if constexpr (kSplit) {
      const __m512bh lv = (__m512bh)_mm512_set1_epi32(lo[i * stride + t]);
      for (int j = 0; j < NV; ++j) acc[j] = _mm512_dpbf16_ps(acc[j], lv, w[j]);
    }
  }
};

}  // namespace

namespace internal {

void Bf16DotMatmulAvx512(const FastWeights& w, const uint16_t* xb, const uint16_t* lo,
                         int64_t rows, const float* bias, float* y, int64_t n_begin,
                         int64_t n_end) {
  const int64_t pairs = (w.k + 1) / 2, stride = Bf16DotActStride(w.k) / 2;
  const auto* hi32 = reinterpret_cast<const int32_t*>(xb);
  const auto* lo32 = reinterpret_cast<const int32_t*>(lo);
  if (lo != nullptr) {
    panels::PanelMatmul(Bf16Pairs<true>{{}, hi32, lo32, stride}, w.data, w.row_stride, pairs, w.n,
                        rows, bias, y, n_begin, n_end);
  } else {
    panels::PanelMatmul(Bf16Pairs<false>{{}, hi32, nullptr, stride}, w.data, w.row_stride, pairs,
                        w.n, rows, bias, y, n_begin, n_end);
  }
}

}  // namespace internal

HWY_POP_ATTRIBUTES

namespace {

// The AMX kernel against the AVX-512 one on a random 35 x 200 x 40 problem (two row tiles and a
// partial one, a partial K tile, a partial column pair), split form: within the f32 rounding
// bound of the two summation orders; and the made-tile and group walks bit for bit against the
// AMX kernel.
bool AmxBf16SelfCheck() {
  const int64_t n = 40, k = 200, rows = 35, stride = Bf16DotActStride(k);
  uint32_t state = 12345;
  auto next = [&] {
    state = state * 1664525u + 1013904223u;
    return static_cast<float>(static_cast<int32_t>(state >> 8) - (1 << 23)) / (1 << 23);
  };
  std::vector<uint16_t> wb(n * k);
  for (auto& v : wb) v = numeric::FloatToBf16(next());
  std::vector<float> x(rows * k), bias(n);
  for (auto& v : x) v = next() * 4.0f;
  for (auto& v : bias) v = next();
  FastWeights src;
  src.format = FastFormat::kBF16;
  src.data = reinterpret_cast<const uint8_t*>(wb.data());
  src.n = n;
  src.k = k;
  src.row_stride = 2 * k;
  const auto packed = hwy::AllocateAligned<uint8_t>(Bf16PairsBytes(n, k));
  const FastWeights w = RepackBf16Pairs(src, packed.get());
  std::vector<uint16_t> hi(rows * stride), lo(rows * stride);
  RoundActsToBf16(x.data(), k, 0, rows, hi.data(), lo.data(), nullptr);
  std::vector<float> want(rows * n), got(rows * n);
  internal::Bf16DotMatmulAvx512(w, hi.data(), lo.data(), rows, bias.data(), want.data(), 0, n);
  internal::AmxBf16DotMatmul(w, hi.data(), lo.data(), rows, bias.data(), got.data(), 0, n);
  // The made-tile walk (the FP8 panels' decode route) over copies of the same tiles: the same
  // instructions in the same order, so the same bits.
  const amx::Bf16TileMaker copy = [](const void* ctx, int64_t p, int64_t kt, uint8_t* tile) {
    const auto& pw = *static_cast<const FastWeights*>(ctx);
    std::memcpy(tile, pw.data + p * pw.row_stride + kt * amx::kTileBytes, amx::kTileBytes);
  };
  std::vector<float> made(rows * n);
  internal::AmxBf16MadeTilesMatmul(copy, &w, n, k, hi.data(), lo.data(), rows, bias.data(),
                                   made.data(), 0, n);
  if (std::memcmp(made.data(), got.data(), got.size() * sizeof(float)) != 0) return false;
  // The group walk (the INT4 panels' decode route) with one group and a copying fold, over the
  // stored and the made tiles: the same C tiles, so the same bits again.
  std::vector<float> grouped(rows * n);
  const amx::CopyFold fold{bias.data(), grouped.data(), n};
  for (const bool made_tiles : {false, true}) {
    std::fill(grouped.begin(), grouped.end(), -1.0f);
    internal::AmxBf16GroupMatmul(made_tiles ? copy : nullptr, &w, w.data, w.row_stride, n, k,
                                 Bf16PanelKTiles(k), hi.data(), lo.data(), rows, 0, n,
                                 fold.Folder());
    if (std::memcmp(grouped.data(), got.data(), got.size() * sizeof(float)) != 0) return false;
  }
  for (int64_t m = 0; m < rows; ++m) {
    for (int64_t c = 0; c < n; ++c) {
      double mag = std::fabs(bias[c]);
      for (int64_t i = 0; i < k; ++i) {
        mag += std::fabs(static_cast<double>(x[m * k + i]) * numeric::Bf16ToFloat(wb[c * k + i]));
      }
      if (!(std::fabs(got[m * n + c] - want[m * n + c]) <= 4.0 * (k + 2) * 0x1p-24 * mag)) {
        return false;
      }
    }
  }
  return true;
}

}  // namespace

bool AmxBf16Usable() {
  static const bool ok = Bf16DotAvailable() && AmxPassesSelfCheck(AmxBf16SelfCheck, "bf16");
  return ok;
}

void Bf16DotMatmul(const FastWeights& w, const uint16_t* xb, const uint16_t* lo, int64_t rows,
                   const float* bias, float* y, int64_t n_begin, int64_t n_end) {
  if (AmxBf16Usable()) return internal::AmxBf16DotMatmul(w, xb, lo, rows, bias, y, n_begin, n_end);
  internal::Bf16DotMatmulAvx512(w, xb, lo, rows, bias, y, n_begin, n_end);
}

#else  // not x86-64 GCC/Clang: never called (Bf16DotAvailable() is false), defined for the link.

bool AmxBf16Usable() { return false; }
void Bf16DotMatmul(const FastWeights&, const uint16_t*, const uint16_t*, int64_t, const float*,
                   float*, int64_t, int64_t) {}

#endif

}  // namespace tessera::kernels::cpu::fast
