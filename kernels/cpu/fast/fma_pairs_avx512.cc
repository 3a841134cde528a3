// The K-pair panels in f32 FMA on zmm, for AVX-512 CPUs whose BF16 kernels do not run (Skylake-SP
// to Ice Lake servers, Cooper Lake for FP8, TESSERA_CPU_ISA=avx512-vnni; and bf16 weights with
// exact activations where AMX does not take them): Bf16PairsFmaMatmul (bf16_dot_matmul.h) and
// Fp8PanelFmaMatmul (fp8_panel_matmul.h), whose public entries, defined here outside the AVX-512
// region, pick these kernels or the AVX2 ones (avx2_panels.cc). One policy over both weight
// decodes, as avx2_panels.cc's PairPanels: a pair's weights (bf16: the dword shifted up 16 bits and
// its high half; FP8: a code in a word's high byte, shifted right one place arithmetically and
// masked with 0xBF80, is the f16 of code · 2^-8, widened exactly by `vcvtph2ps`; with K blocks
// times the block's scale · 2^8), k = 2t then 2t + 1 per lane, an odd K's last k in the epilogue,
// K = 1 one padded pair, and FP8 beyond 5 rows the shared decoded route (Fp8DecodedGemm): the
// AVX2 kernels' FMA sequence and epilogue operations, so their bits (tested bit for bit).
//
// Why: as such CPUs bf16 weights ran FastMatmul's row kernel (22-29 GB/s at batch 1, 107-173
// GFLOP/s at M = 128) and FP8 the Highway kernel (15-20 GB/s, 150-168 GFLOP/s); these read
// 50-58 / 224-226 and 28-35 / 208-215 (bench/README.md, twenty-second session).
#if defined(__GNUC__) && !defined(__clang__)
// GCC 12 reports a false "may be used uninitialized" inside its own avx512fintrin.h (the
// _mm512_undefined_* placeholders of its mask intrinsics) once they are inlined here.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include <algorithm>
#include <bit>
#include <cstring>
#include <vector>

#include "kernels/cpu/fast/avx2_panels.h"
#include "kernels/cpu/fast/bf16_dot_matmul.h"
#include "kernels/cpu/fast/column_panels.h"
#include "kernels/cpu/fast/fp8_panel_matmul.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#include "hwy/base.h"
#define TESSERA_FMA_PAIRS_X86 1
#endif

#if defined(TESSERA_FMA_PAIRS_X86)

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

// A K pair of one panel's 16 columns as f32: w[c, 2t] and w[c, 2t + 1].
struct PairZmm {
  __m512 even, odd;
};

// bf16 pair panels (RepackBf16Pairs): lane c of a step's 64 bytes holds (w[c, 2t], w[c, 2t + 1]).
struct Bf16Pairs {
  static constexpr int64_t kStepBytes = 64;
  static constexpr bool kScaled = false;
  HWY_INLINE PairZmm Load(const panels::TileJob& a, int j, int64_t t) const {
    const __m512i v = _mm512_load_si512(a.w + j * a.panel_bytes + kStepBytes * t);
    return {
        _mm512_castsi512_ps(_mm512_slli_epi32(v, 16)),
        _mm512_castsi512_ps(_mm512_and_si512(v, _mm512_set1_epi32(static_cast<int>(0xFFFF0000u))))};
  }
  Bf16Pairs Rows(int64_t) const { return {}; }
  void Finish(const panels::TileJob&, int, int, __m512) const {}
};

// avx2_panels.cc's Fp8Epilogue on 16 lanes: v = s(n) · 2^8 · acc unless the K-block scales were
// folded into the weights, for W8A8 row_scale(m) · (col_scale(n) · v), then + bias.
HWY_INLINE void Fp8Epilogue(const FastQuantWeights& w, int64_t m, int64_t col, __mmask16 mask,
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

// FP8 pair panels (RepackFp8Pairs: word c of a step's 32 bytes holds column c's even and odd
// codes); kBlocks: K blocks of 2^shift steps whose scales multiply the decoded weights, as the
// AVX2 kernel's Fp8PairsOf.
template <bool kBlocks>
struct Fp8Pairs {
  static constexpr int64_t kStepBytes = 32;
  static constexpr bool kScaled = true;
  const FastQuantWeights* w;
  int64_t m0;  // the tile's first row
  int shift;
  HWY_INLINE PairZmm Load(const panels::TileJob& a, int j, int64_t t) const {
    const __m256i words = _mm256_load_si256(
        reinterpret_cast<const __m256i*>(a.w + j * a.panel_bytes + kStepBytes * t));
    const __m256i keep = _mm256_set1_epi16(static_cast<int16_t>(0xBF80));
    PairZmm v{
        _mm512_cvtph_ps(_mm256_and_si256(_mm256_srai_epi16(_mm256_slli_epi16(words, 8), 1), keep)),
        _mm512_cvtph_ps(_mm256_and_si256(_mm256_srai_epi16(words, 1), keep))};
    if constexpr (kBlocks) {
      const int64_t col = a.col0 + panels::kCols * j;
      const float* row_scales = w->scales + (col / w->scale_rows) * w->scale_row_stride;
      const __m512 s = _mm512_set1_ps(row_scales[t >> shift] * 256.0f);
      v = {_mm512_mul_ps(v.even, s), _mm512_mul_ps(v.odd, s)};
    }
    return v;
  }
  Fp8Pairs Rows(int64_t m) const { return {w, m0 + m, shift}; }
  HWY_INLINE void Finish(const panels::TileJob& a, int i, int j, __m512 acc) const {
    Fp8Epilogue(*w, m0 + i, a.col0 + 16 * j, a.store[j], acc,
                a.bias != nullptr ? a.bias + 16 * j : nullptr, a.y + i * a.y_stride + 16 * j,
                kBlocks);
  }
};

// The tile driver's policy (panel_gemm.h): five rows of 4 panels (20 accumulators, a step's 8
// weight vectors, two broadcasts in the 32 zmm).
template <class Decode>
struct FmaPairs : panels::FloatAccumulators {
  static constexpr int kRows = 5;
  using WVec = PairZmm;
  static constexpr int64_t kStepBytes = Decode::kStepBytes;
  static constexpr int64_t kBlockSteps = 32768 / Decode::kStepBytes;  // 32 KiB per panel
  const float* x;                                                     // the tile's first row
  int64_t k;  // elements per row (rows are k apart)
  Decode decode;
  HWY_INLINE WVec LoadWAt(const panels::TileJob& a, int j, int64_t t) const {
    return decode.Load(a, j, t);
  }
  FmaPairs Rows(int64_t m0) const { return {{}, x + m0 * k, k, decode.Rows(m0)}; }
  template <int NV>
  HWY_INLINE void Madd(int i, int64_t t, const WVec* w, Acc* acc) const {
    const __m512 x0 = _mm512_set1_ps(x[i * k + 2 * t]);
    const __m512 x1 = _mm512_set1_ps(x[i * k + 2 * t + 1]);
    for (int j = 0; j < NV; ++j) {
      acc[j] = _mm512_fmadd_ps(x0, w[j].even, acc[j]);
      acc[j] = _mm512_fmadd_ps(x1, w[j].odd, acc[j]);
    }
  }
  template <int MR, int NV>
  void Finish(const panels::TileJob& a, Acc (&acc)[MR][NV]) const {
    if (k % 2 != 0) {  // the last k: its partner is padding, so x is read only inside its rows
      for (int j = 0; j < NV; ++j) {
        const WVec w = LoadWAt(a, j, k / 2);
        for (int i = 0; i < MR; ++i) {
          acc[i][j] = _mm512_fmadd_ps(_mm512_set1_ps(x[i * k + k - 1]), w.even, acc[i][j]);
        }
      }
    }
    if constexpr (Decode::kScaled) {
      for (int j = 0; j < NV; ++j) {
        for (int i = 0; i < MR; ++i) decode.Finish(a, i, j, acc[i][j]);
      }
    } else {
      FloatAccumulators::Finish<MR, NV>(a, acc);
    }
  }
};

// The policy over k / 2 whole pairs; K = 1 has none (the driver runs no Finish without a step):
// one padded pair per row instead, as the AVX2 kernels do (its zero partner adds a +0 product).
template <class Decode>
void RunFmaPairs(const FmaPairs<Decode>& policy, const uint8_t* data, int64_t panel_bytes,
                 int64_t n, int64_t rows, const float* bias, float* y, int64_t n_begin,
                 int64_t n_end) {
  if (policy.k > 1) {
    return panels::PanelMatmul(policy, data, panel_bytes, policy.k / 2, n, rows, bias, y, n_begin,
                               n_end);
  }
  std::vector<float> padded(2 * rows, 0.0f);
  for (int64_t m = 0; m < rows; ++m) padded[2 * m] = policy.x[m];
  FmaPairs<Decode> one = policy;
  one.x = padded.data();
  one.k = 2;
  panels::PanelMatmul(one, data, panel_bytes, 1, n, rows, bias, y, n_begin, n_end);
}

void Bf16FmaAvx512(const FastWeights& w, const float* x, int64_t rows, const float* bias, float* y,
                   int64_t n_begin, int64_t n_end) {
  RunFmaPairs(FmaPairs<Bf16Pairs>{{}, x, w.k, {}}, w.data, w.row_stride, w.n, rows, bias, y,
              n_begin, n_end);
}

void Fp8FmaAvx512(const FastQuantWeights& w, const float* x, int64_t rows, const float* bias,
                  float* y, int64_t n_begin, int64_t n_end) {
  // K-block scales (Fp8PanelFmaSupported: a power-of-two number of steps per block).
  const int shift = w.scale_k < w.k ? std::countr_zero(static_cast<uint64_t>(w.scale_k / 2)) : -1;
  if (rows > FmaPairs<Fp8Pairs<false>>::kRows && w.k > 1) {
    return internal::Fp8DecodedGemm(w, x, rows, bias, y, n_begin, n_end, shift);
  }
  const int64_t panel_bytes = Fp8PairsBytes(panels::kCols, w.k);
  if (shift >= 0) {
    return RunFmaPairs(FmaPairs<Fp8Pairs<true>>{{}, x, w.k, {&w, 0, shift}}, w.q, panel_bytes, w.n,
                       rows, bias, y, n_begin, n_end);
  }
  RunFmaPairs(FmaPairs<Fp8Pairs<false>>{{}, x, w.k, {&w, 0, shift}}, w.q, panel_bytes, w.n, rows,
              bias, y, n_begin, n_end);
}

}  // namespace
}  // namespace tessera::kernels::cpu::fast

HWY_POP_ATTRIBUTES

namespace tessera::kernels::cpu::fast {

// Outside the AVX-512 region: AVX2-only CPUs enter here too.
void Bf16PairsFmaMatmul(const FastWeights& w, const float* x, int64_t rows, const float* bias,
                        float* y, int64_t n_begin, int64_t n_end) {
  if (rows <= 0 || n_begin >= n_end) return;
  if (!Avx512Fma()) return internal::Bf16PairsFmaMatmulAvx2(w, x, rows, bias, y, n_begin, n_end);
  Bf16FmaAvx512(w, x, rows, bias, y, n_begin, n_end);
}

void Fp8PanelFmaMatmul(const FastQuantWeights& w, const float* x, int64_t rows, const float* bias,
                       float* y, int64_t n_begin, int64_t n_end) {
  if (rows <= 0 || n_begin >= n_end) return;
  if (!Avx512Fma()) return internal::Fp8PanelFmaMatmulAvx2(w, x, rows, bias, y, n_begin, n_end);
  Fp8FmaAvx512(w, x, rows, bias, y, n_begin, n_end);
}

}  // namespace tessera::kernels::cpu::fast

#else  // not x86-64 GCC/Clang: never called (the kernels' Available() are false), for the link.

namespace tessera::kernels::cpu::fast {
void Bf16PairsFmaMatmul(const FastWeights&, const float*, int64_t, const float*, float*, int64_t,
                        int64_t) {}
void Fp8PanelFmaMatmul(const FastQuantWeights&, const float*, int64_t, const float*, float*,
                       int64_t, int64_t) {}
}  // namespace tessera::kernels::cpu::fast

#endif
