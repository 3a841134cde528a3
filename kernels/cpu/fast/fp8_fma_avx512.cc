// Fp8PanelFmaMatmul (fp8_panel_matmul.h) on AVX-512 CPUs without the BF16 FP8 kernel (no AVX-512
// BF16, DQ or VBMI: Skylake-SP to Ice Lake servers, Cooper Lake, or TESSERA_CPU_ISA=avx512-vnni): the FP8 pair panels multiplied
// in f32 FMA in zmm, where the AVX2 kernel (avx2_panels.cc) takes two ymm per panel. The same
// decode (a code in a word's high byte, shifted right one place arithmetically and masked with
// 0xBF80, is the f16 of code · 2^-8; `vcvtph2ps` widens it exactly), the same FMA sequence per
// lane, the same K-block scaling and epilogue operations, the same routes (up to 5 rows in
// registers; more decode four panels to f16 K panels, f32 with K blocks, then the float panel
// kernel and the epilogue): the AVX2 kernel's bits, tested bit for bit. Defines the public entry,
// outside the AVX-512 region, which picks this kernel or the AVX2 one.
//
// Why: there FP8 ran FastQuantMatmul's Highway kernel, 14-17 GB/s at batch 1 and 140-169 GFLOP/s
// at M = 128, where the AVX2 FMA panels read 25-27 GB/s and 192-202 in the same mode
// (bench/README.md, twenty-second session).
#if defined(__GNUC__) && !defined(__clang__)
// GCC 12 reports a false "may be used uninitialized" inside its own avx512fintrin.h (the
// _mm512_undefined_* placeholders of its mask intrinsics) once they are inlined here.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include <algorithm>
#include <bit>
#include <cstring>
#include <vector>

#include "hwy/aligned_allocator.h"
#include "kernels/cpu/fast/avx2_panels.h"
#include "kernels/cpu/fast/column_panels.h"
#include "kernels/cpu/fast/float_panel_matmul.h"
#include "kernels/cpu/fast/fp8_panel_matmul.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#include "hwy/base.h"
#define TESSERA_FP8_FMA_X86 1
#endif

#if defined(TESSERA_FP8_FMA_X86)

namespace tessera::kernels::cpu::fast {
namespace {

bool Avx512Fma() {
  static const bool has = TESSERA_HAS_AVX512_WITH("avx512f");
  return has;
}

}  // namespace
}  // namespace tessera::kernels::cpu::fast

HWY_PUSH_ATTRIBUTES("avx512f,avx512vl,avx512bw,avx2,fma,f16c")

#include "kernels/cpu/fast/panel_gemm.h"

namespace tessera::kernels::cpu::fast {
namespace {

// One K pair of 16 columns as f16 bits of code · 2^-8 (RepackFp8Pairs: word c holds column c's
// even and odd codes), as avx2_panels.cc's Fp8PairToHalfBits.
HWY_INLINE void HalfBits(const uint8_t* p, __m256i* even, __m256i* odd) {
  const __m256i words = _mm256_load_si256(reinterpret_cast<const __m256i*>(p));
  const __m256i keep = _mm256_set1_epi16(static_cast<int16_t>(0xBF80));
  *even = _mm256_and_si256(_mm256_srai_epi16(_mm256_slli_epi16(words, 8), 1), keep);
  *odd = _mm256_and_si256(_mm256_srai_epi16(words, 1), keep);
}

struct PairZmm {
  __m512 even, odd;
};

HWY_INLINE PairZmm DecodePair(const uint8_t* p) {
  __m256i even, odd;
  HalfBits(p, &even, &odd);
  return {_mm512_cvtph_ps(even), _mm512_cvtph_ps(odd)};
}

// K blocks: the scales of the row block holding column `col`.
HWY_INLINE const float* RowScales(const FastQuantWeights& w, int64_t col) {
  return w.scales + (col / w.scale_rows) * w.scale_row_stride;
}

// A pair's weights times its K block's scale · 2^8 (w = fl(code · s)).
HWY_INLINE PairZmm Scaled(PairZmm v, const float* row_scales, int64_t t, int shift) {
  const __m512 s = _mm512_set1_ps(row_scales[t >> shift] * 256.0f);
  return {_mm512_mul_ps(v.even, s), _mm512_mul_ps(v.odd, s)};
}

// avx2_panels.cc's Fp8Epilogue on 16 lanes: v = s(n) · 2^8 · acc unless the K-block scales were
// folded into the weights, for W8A8 row_scale(m) · (col_scale(n) · v), then + bias.
HWY_INLINE void Epilogue(const FastQuantWeights& w, int64_t m, int64_t col, __mmask16 mask,
                         __m512 v, const float* bias_at_col, float* dst, bool scale_folded) {
  if (!scale_folded) {
    const __m512 sw = w.scale_row_stride == 0 ? _mm512_set1_ps(w.scales[0])
                                              : _mm512_maskz_loadu_ps(mask, w.scales + col);
    v = _mm512_mul_ps(_mm512_mul_ps(sw, _mm512_set1_ps(256.0f)), v);
  }
  if (w.row_scale != nullptr) {
    if (w.col_scale != nullptr) {
      const __m512 cs = w.col_scale_stride == 0 ? _mm512_set1_ps(w.col_scale[0])
                                                : _mm512_maskz_loadu_ps(mask, w.col_scale + col);
      v = _mm512_mul_ps(cs, v);
    }
    v = _mm512_mul_ps(_mm512_set1_ps(w.row_scale[m * w.row_scale_stride]), v);
  }
  if (bias_at_col != nullptr) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(mask, bias_at_col));
  _mm512_mask_storeu_ps(dst, mask, v);
}

// The register route's policy (panel_gemm.h): five rows of 4 panels (20 accumulators, a step's 8
// weight vectors, two broadcasts), k = 2t then 2t + 1 per lane, an odd K's last k in Finish.
template <bool kBlocks>
struct Fp8FmaPairs : panels::FloatAccumulators {
  static constexpr int kRows = 5;
  using WVec = PairZmm;
  static constexpr int64_t kStepBytes = 32;
  static constexpr int64_t kBlockSteps = 1024;  // 32 KiB per panel
  const float* x;                               // the tile's first row
  int64_t k;                                    // elements per row (rows are k apart)
  const FastQuantWeights* w;
  int64_t m0;  // the tile's first row
  int shift;   // kBlocks: log2(steps per K block)
  HWY_INLINE WVec LoadWAt(const panels::TileJob& a, int j, int64_t t) const {
    const PairZmm v = DecodePair(a.w + j * a.panel_bytes + kStepBytes * t);
    if constexpr (kBlocks) return Scaled(v, RowScales(*w, a.col0 + panels::kCols * j), t, shift);
    return v;
  }
  Fp8FmaPairs Rows(int64_t m) const { return {{}, x + m * k, k, w, m0 + m, shift}; }
  template <int NV>
  HWY_INLINE void Madd(int i, int64_t t, const WVec* wv, Acc* acc) const {
    const __m512 x0 = _mm512_set1_ps(x[i * k + 2 * t]);
    const __m512 x1 = _mm512_set1_ps(x[i * k + 2 * t + 1]);
    for (int j = 0; j < NV; ++j) {
      acc[j] = _mm512_fmadd_ps(x0, wv[j].even, acc[j]);
      acc[j] = _mm512_fmadd_ps(x1, wv[j].odd, acc[j]);
    }
  }
  template <int MR, int NV>
  void Finish(const panels::TileJob& a, Acc (&acc)[MR][NV]) const {
    if (k % 2 != 0) {
      for (int j = 0; j < NV; ++j) {
        const WVec wv = LoadWAt(a, j, k / 2);
        for (int i = 0; i < MR; ++i) {
          acc[i][j] = _mm512_fmadd_ps(_mm512_set1_ps(x[i * k + k - 1]), wv.even, acc[i][j]);
        }
      }
    }
    for (int j = 0; j < NV; ++j) {
      for (int i = 0; i < MR; ++i) {
        Epilogue(*w, m0 + i, a.col0 + 16 * j, a.store[j], acc[i][j],
                 a.bias != nullptr ? a.bias + 16 * j : nullptr, a.y + i * a.y_stride + 16 * j,
                 kBlocks);
      }
    }
  }
};

constexpr int64_t kRegisterRows = Fp8FmaPairs<false>::kRows;
constexpr int64_t kDecodePanels = 4;

template <bool kBlocks>
void RegisterRoute(const FastQuantWeights& w, const float* x, int64_t rows, const float* bias,
                   float* y, int64_t n_begin, int64_t n_end, int shift) {
  const int64_t panel_bytes = Fp8PairsBytes(panels::kCols, w.k);
  if (w.k > 1) {
    return panels::PanelMatmul(Fp8FmaPairs<kBlocks>{{}, x, w.k, &w, 0, shift}, w.q, panel_bytes,
                               w.k / 2, w.n, rows, bias, y, n_begin, n_end);
  }
  // K = 1 has no whole pair: one padded pair per row, as the AVX2 kernel does.
  std::vector<float> padded(2 * rows, 0.0f);
  for (int64_t m = 0; m < rows; ++m) padded[2 * m] = x[m];
  panels::PanelMatmul(Fp8FmaPairs<kBlocks>{{}, padded.data(), 2, &w, 0, shift}, w.q, panel_bytes, 1,
                      w.n, rows, bias, y, n_begin, n_end);
}

// More rows: four panels at a time decoded to f16 K panels (f32 of code · s with K blocks), the
// float panel kernel over them with no bias (the raw sums, in the register route's K order), then
// the epilogue over y: avx2_panels.cc's Fp8DecodedGemm.
void DecodedRoute(const FastQuantWeights& w, const float* x, int64_t rows, const float* bias,
                  float* y, int64_t n_begin, int64_t n_end, int shift) {
  const bool blocks = shift >= 0;
  const int64_t code_bytes = Fp8PairsBytes(panels::kCols, w.k), pairs = (w.k + 1) / 2;
  const int64_t panel_bytes = pairs * (blocks ? 128 : 64);
  thread_local hwy::AlignedFreeUniquePtr<uint8_t[]> buf;
  thread_local int64_t capacity = 0;
  if (capacity < kDecodePanels * panel_bytes) {
    capacity = kDecodePanels * panel_bytes;
    buf = hwy::AllocateAligned<uint8_t>(capacity);
  }
  for (int64_t p0 = n_begin / panels::kCols; p0 * panels::kCols < n_end; p0 += kDecodePanels) {
    const int64_t np = std::min(kDecodePanels, panels::Count(n_end) - p0);
    for (int64_t p = 0; p < np; ++p) {
      const uint8_t* codes = w.q + (p0 + p) * code_bytes;
      uint8_t* out = buf.get() + p * panel_bytes;
      const float* row_scales = blocks ? RowScales(w, (p0 + p) * panels::kCols) : nullptr;
      for (int64_t t = 0; t < pairs; ++t) {
        if (blocks) {
          const PairZmm v = Scaled(DecodePair(codes + 32 * t), row_scales, t, shift);
          float* f = reinterpret_cast<float*>(out + 128 * t);
          _mm512_store_ps(f, v.even);
          _mm512_store_ps(f + 16, v.odd);
          continue;
        }
        __m256i even, odd;
        HalfBits(codes + 32 * t, &even, &odd);
        _mm256_store_si256(reinterpret_cast<__m256i*>(out + 64 * t), even);
        _mm256_store_si256(reinterpret_cast<__m256i*>(out + 64 * t + 32), odd);
      }
    }
    // The decoded panels as a matrix whose column 0 is column 16·p0 (y shifted to match).
    const int64_t c0 = std::max(n_begin, p0 * panels::kCols);
    const int64_t c1 = std::min(n_end, (p0 + np) * panels::kCols);
    const int64_t col0 = p0 * panels::kCols;
    FastWeights decoded;
    decoded.format = blocks ? FastFormat::kF32Panels : FastFormat::kF16Panels;
    decoded.data = buf.get();
    decoded.n = w.n;
    decoded.k = w.k;
    decoded.row_stride = panel_bytes;
    if (blocks) {
      F32PanelMatmul(decoded, x, rows, nullptr, y + col0, c0 - col0, c1 - col0);
    } else {
      F16PanelMatmul(decoded, x, rows, nullptr, y + col0, c0 - col0, c1 - col0);
    }
    for (int64_t m = 0; m < rows; ++m) {
      for (int64_t p = c0 / panels::kCols; p * panels::kCols < c1; ++p) {
        const __mmask16 mask = panels::StoreMask(p, c0, c1);
        float* row = y + m * w.n + p * panels::kCols;
        Epilogue(w, m, p * panels::kCols, mask, _mm512_maskz_loadu_ps(mask, row),
                 bias != nullptr ? bias + p * panels::kCols : nullptr, row, blocks);
      }
    }
  }
}

void Fp8FmaMatmulAvx512(const FastQuantWeights& w, const float* x, int64_t rows, const float* bias,
                        float* y, int64_t n_begin, int64_t n_end) {
  // K-block scales (Fp8PanelFmaSupported: a power-of-two number of steps per block).
  const int shift = w.scale_k < w.k ? std::countr_zero(static_cast<uint64_t>(w.scale_k / 2)) : -1;
  if (rows > kRegisterRows && w.k > 1) {
    return DecodedRoute(w, x, rows, bias, y, n_begin, n_end, shift);
  }
  if (shift >= 0) return RegisterRoute<true>(w, x, rows, bias, y, n_begin, n_end, shift);
  RegisterRoute<false>(w, x, rows, bias, y, n_begin, n_end, shift);
}

}  // namespace
}  // namespace tessera::kernels::cpu::fast

HWY_POP_ATTRIBUTES

namespace tessera::kernels::cpu::fast {

// Outside the AVX-512 region: AVX2-only CPUs enter here too.
void Fp8PanelFmaMatmul(const FastQuantWeights& w, const float* x, int64_t rows, const float* bias,
                       float* y, int64_t n_begin, int64_t n_end) {
  if (rows <= 0 || n_begin >= n_end) return;
  if (!Avx512Fma()) return internal::Fp8PanelFmaMatmulAvx2(w, x, rows, bias, y, n_begin, n_end);
  Fp8FmaMatmulAvx512(w, x, rows, bias, y, n_begin, n_end);
}

}  // namespace tessera::kernels::cpu::fast

#else  // not x86-64 GCC/Clang: never called (Fp8PanelFmaAvailable() is false), for the link.

namespace tessera::kernels::cpu::fast {
void Fp8PanelFmaMatmul(const FastQuantWeights&, const float*, int64_t, const float*, float*,
                       int64_t, int64_t) {}
}  // namespace tessera::kernels::cpu::fast

#endif
