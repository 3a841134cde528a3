// AVX2 kernels of avx2_panels.h: policies for the shared tile driver (panel_gemm.h) whose
// accumulator is one panel's 16 lanes as two ymm, compiled for AVX2 + FMA + F16C only (this
// translation unit's region), so nothing here needs AVX-512.
#include "kernels/cpu/fast/avx2_panels.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <vector>

#include "hwy/aligned_allocator.h"

#include "kernels/cpu/fast/bf16_dot_matmul.h"
#include "kernels/cpu/fast/column_panels.h"
#include "kernels/cpu/fast/float_panel_matmul.h"
#include "kernels/cpu/fast/fp8_bf16_matmul.h"
#include "kernels/cpu/fast/fp8_panel_matmul.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#include "hwy/base.h"
#define TESSERA_AVX2_PANELS_X86 1
#endif

namespace tessera::kernels::cpu::fast::internal {

bool HasAvx2Fma();  // q8_act_vnni.cc: AVX2, FMA and F16C, what the int8 tiles' AVX2 kernel needs

bool Avx2PanelsAvailable() { return HasAvx2Fma(); }

bool Avx2PanelsInUse() {
  static const bool in_use = !TESSERA_HAS_AVX512_WITH("avx512f") && Avx2PanelsAvailable();
  return in_use;
}

}  // namespace tessera::kernels::cpu::fast::internal

namespace tessera::kernels::cpu::fast {

// AVX-512 CPUs without AVX-512 BF16 run the same panels in zmm (fma_pairs_avx512.cc).
bool Bf16PairsFmaAvailable() { return internal::Avx2PanelsAvailable() && !Bf16DotAvailable(); }
bool Fp8PanelFmaAvailable() { return internal::Avx2PanelsAvailable() && !Fp8Bf16Available(); }

}  // namespace tessera::kernels::cpu::fast

#if defined(TESSERA_AVX2_PANELS_X86)

HWY_PUSH_ATTRIBUTES("avx2,fma,f16c")

#define TESSERA_PANEL_GEMM_AVX2_ONLY 1
#include "kernels/cpu/fast/avx2_lane_mask.h"
#include "kernels/cpu/fast/panel_gemm.h"

namespace tessera::kernels::cpu::fast::internal {
namespace {

// One panel's 16 f32 lanes: columns 0-7 and 8-15.
struct Ymm16 {
  __m256 lo, hi;
};

// The f32 accumulators and epilogue (panel_gemm.h's FloatAccumulators on two ymm): output (m, n)
// = acc + bias[n], masked stores. Six rows of one panel: 12 accumulators, two weight halves and
// a broadcast activation fill 15 of the 16 ymm.
struct Avx2Accumulators {
  static constexpr int kRows = 6;
  static constexpr int kVecs = 1;
  using Acc = Ymm16;
  static Acc Zero() { return {_mm256_setzero_ps(), _mm256_setzero_ps()}; }
  static Acc Load(const float* p) { return {_mm256_loadu_ps(p), _mm256_loadu_ps(p + 8)}; }
  static void Store(float* p, Acc v) {
    _mm256_storeu_ps(p, v.lo);
    _mm256_storeu_ps(p + 8, v.hi);
  }
  template <int MR, int NV>
  void Finish(const panels::TileJob& a, Acc (&acc)[MR][NV]) const {
    for (int j = 0; j < NV; ++j) {
      const __m256i m_lo = LaneMask(a.store[j] & 0xFFu), m_hi = LaneMask(a.store[j] >> 8);
      const bool bias = a.bias != nullptr;
      const __m256 b_lo = bias ? _mm256_maskload_ps(a.bias + 16 * j, m_lo) : _mm256_setzero_ps();
      const __m256 b_hi =
          bias ? _mm256_maskload_ps(a.bias + 16 * j + 8, m_hi) : _mm256_setzero_ps();
      for (int i = 0; i < MR; ++i) {
        float* out = a.y + i * a.y_stride + 16 * j;
        _mm256_maskstore_ps(out, m_lo, bias ? _mm256_add_ps(acc[i][j].lo, b_lo) : acc[i][j].lo);
        _mm256_maskstore_ps(out + 8, m_hi, bias ? _mm256_add_ps(acc[i][j].hi, b_hi) : acc[i][j].hi);
      }
    }
  }
};

// f16 (kF16: 32 bytes, two vcvtph2ps) or f32 (64 bytes) K panels, one broadcast activation per
// row and k: float_panel_matmul.cc's FloatPanels on ymm halves.
template <bool kF16>
struct FloatPanels : Avx2Accumulators {
  using WVec = Ymm16;
  static constexpr int64_t kStepBytes = kF16 ? 32 : 64;
  static constexpr int64_t kBlockSteps = kF16 ? 1024 : 512;
  const float* x;  // the tile's first row
  int64_t stride;  // elements between rows (k)
  HWY_INLINE static WVec LoadW(const uint8_t* p) {
    if constexpr (kF16) {
      return {_mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(p))),
              _mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(p + 16)))};
    } else {
      const float* f = reinterpret_cast<const float*>(p);
      return {_mm256_load_ps(f), _mm256_load_ps(f + 8)};
    }
  }
  FloatPanels Rows(int64_t m0) const { return {{}, x + m0 * stride, stride}; }
  template <int NV>
  HWY_INLINE void Madd(int i, int64_t t, const WVec* w, Acc* acc) const {
    const __m256 xv = _mm256_set1_ps(x[i * stride + t]);
    for (int j = 0; j < NV; ++j) {
      acc[j].lo = _mm256_fmadd_ps(xv, w[j].lo, acc[j].lo);
      acc[j].hi = _mm256_fmadd_ps(xv, w[j].hi, acc[j].hi);
    }
  }
};

// A K pair of one panel's 16 columns as f32: w[c, 2t] (even) and w[c, 2t + 1] (odd), columns 0-7
// and 8-15.
struct PairWeights {
  __m256 even_lo, even_hi, odd_lo, odd_hi;
};

// K-pair panels (bf16: 64 bytes a pair, FP8: 32), one broadcast activation per row and k, k = 2t
// then 2t + 1: each lane's FMAs in K order, as the f32 panels'. Five rows: 10 accumulators, the
// pair's four weight vectors and two broadcasts. The driver walks the k / 2 whole pairs; an odd
// K's last k is one more FMA in Finish (its odd partner is padding, so x is read only inside its
// rows and needs no padded copy).
template <class Decode>
struct PairPanels : Avx2Accumulators {
  static constexpr int kRows = 5;
  using WVec = PairWeights;
  static constexpr int64_t kStepBytes = Decode::kStepBytes;
  static constexpr int64_t kBlockSteps = 32768 / Decode::kStepBytes;  // 32 KiB per panel
  const float* x;                                                     // the tile's first row
  int64_t k;  // elements per row (rows are k apart)
  Decode epilogue;
  HWY_INLINE static WVec LoadW(const uint8_t* p) { return Decode::Load(p); }
  // The driver's load (panel_gemm.h): K-block scales depend on the panel and the step.
  HWY_INLINE WVec LoadWAt(const panels::TileJob& a, int j, int64_t t) const {
    const uint8_t* p = a.w + j * a.panel_bytes + kStepBytes * t;
    if constexpr (Decode::kScalesAtDecode) {
      return epilogue.LoadScaled(p, a.col0 + panels::kCols * j, t);
    } else {
      return Decode::Load(p);
    }
  }
  PairPanels Rows(int64_t m0) const { return {{}, x + m0 * k, k, epilogue.Rows(m0)}; }
  template <int NV>
  HWY_INLINE void Madd(int i, int64_t t, const WVec* w, Acc* acc) const {
    const __m256 x0 = _mm256_set1_ps(x[i * k + 2 * t]);
    const __m256 x1 = _mm256_set1_ps(x[i * k + 2 * t + 1]);
    for (int j = 0; j < NV; ++j) {
      acc[j].lo = _mm256_fmadd_ps(x0, w[j].even_lo, acc[j].lo);
      acc[j].hi = _mm256_fmadd_ps(x0, w[j].even_hi, acc[j].hi);
      acc[j].lo = _mm256_fmadd_ps(x1, w[j].odd_lo, acc[j].lo);
      acc[j].hi = _mm256_fmadd_ps(x1, w[j].odd_hi, acc[j].hi);
    }
  }
  template <int MR, int NV>
  void Finish(const panels::TileJob& a, Acc (&acc)[MR][NV]) const {
    if (k % 2 != 0) {
      for (int j = 0; j < NV; ++j) {
        const WVec w = LoadWAt(a, j, k / 2);
        for (int i = 0; i < MR; ++i) {
          const __m256 x0 = _mm256_set1_ps(x[i * k + k - 1]);
          acc[i][j].lo = _mm256_fmadd_ps(x0, w.even_lo, acc[i][j].lo);
          acc[i][j].hi = _mm256_fmadd_ps(x0, w.even_hi, acc[i][j].hi);
        }
      }
    }
    if constexpr (Decode::kScaled) {
      for (int j = 0; j < NV; ++j) {
        for (int i = 0; i < MR; ++i) epilogue.Finish(a, i, j, acc[i][j]);
      }
    } else {
      Avx2Accumulators::Finish<MR, NV>(a, acc);
    }
  }
};

// bf16 pair panels (RepackBf16Pairs): lane c of the 64-byte vector holds (w[c, 2t], w[c, 2t + 1])
// as a dword, so the even weight is the dword shifted up 16 bits and the odd one its high half.
struct Bf16Pairs {
  static constexpr int64_t kStepBytes = 64;
  static constexpr bool kScaled = false;
  static constexpr bool kScalesAtDecode = false;
  HWY_INLINE static PairWeights Load(const uint8_t* p) {
    const __m256i a = _mm256_load_si256(reinterpret_cast<const __m256i*>(p));
    const __m256i b = _mm256_load_si256(reinterpret_cast<const __m256i*>(p + 32));
    const __m256i high = _mm256_set1_epi32(static_cast<int>(0xFFFF0000u));
    return {_mm256_castsi256_ps(_mm256_slli_epi32(a, 16)),
            _mm256_castsi256_ps(_mm256_slli_epi32(b, 16)),
            _mm256_castsi256_ps(_mm256_and_si256(a, high)),
            _mm256_castsi256_ps(_mm256_and_si256(b, high))};
  }
  Bf16Pairs Rows(int64_t) const { return {}; }
  void Finish(const panels::TileJob&, int, int, Ymm16) const {}
};

// One K pair of FP8 pair panels (RepackFp8Pairs: column c's codes of pair t at bytes 32t + 2c
// and 32t + 2c + 1, i.e. word c holds (even, odd) codes) as the f16 bits of code · 2^-8: the 16
// columns' even codes and their odd ones, each column in its word. A code in a word's high byte,
// shifted right one place arithmetically, has its sign at bit 15 (and 14) and its 7 exponent and
// mantissa bits at 13-7: f16 puts one more exponent bit above E4M3's (bias 15 against 7), so with
// bit 14 and the bits below the code cleared that is code · 2^-8 exactly, subnormal codes as f16
// subnormals; the NaN codes (0x7F, 0xFF) never reach the panels.
HWY_INLINE void Fp8PairToHalfBits(const uint8_t* p, __m256i* even, __m256i* odd) {
  const __m256i words = _mm256_load_si256(reinterpret_cast<const __m256i*>(p));
  const __m256i keep = _mm256_set1_epi16(static_cast<int16_t>(0xBF80));
  *even = _mm256_and_si256(_mm256_srai_epi16(_mm256_slli_epi16(words, 8), 1), keep);
  *odd = _mm256_and_si256(_mm256_srai_epi16(words, 1), keep);
}

// fp8_panel_matmul.cc's epilogue on ymm halves, for row m's 16 columns from col (lanes in
// `bits`): v = s(n) · acc (s carrying the decode's 2^8), for W8A8 row_scale(m) · (col_scale(n) ·
// v), then + bias (bias_at_col: bias + col, or null).
HWY_INLINE void Fp8Epilogue(const FastQuantWeights& w, int64_t m, int64_t col, unsigned bits,
                            Ymm16 acc, const float* bias_at_col, float* dst, bool scale_folded) {
  const __m256i masks[2] = {LaneMask(bits & 0xFFu), LaneMask(bits >> 8)};
  const __m256 halves[2] = {acc.lo, acc.hi};
  for (int h = 0; h < 2; ++h) {
    const int64_t c = col + 8 * h;
    // K-block scales were folded into the decoded weights (Fp8BlockPairs), and their layout has
    // no per-column scale to read (w.scales + c would run past the block scales).
    __m256 v = halves[h];
    if (!scale_folded) {
      const __m256 sw = w.scale_row_stride == 0 ? _mm256_set1_ps(w.scales[0])
                                                : _mm256_maskload_ps(w.scales + c, masks[h]);
      v = _mm256_mul_ps(_mm256_mul_ps(sw, _mm256_set1_ps(256.0f)), v);
    }
    if (w.row_scale != nullptr) {
      if (w.col_scale != nullptr) {
        const __m256 cs = w.col_scale_stride == 0 ? _mm256_set1_ps(w.col_scale[0])
                                                  : _mm256_maskload_ps(w.col_scale + c, masks[h]);
        v = _mm256_mul_ps(cs, v);
      }
      v = _mm256_mul_ps(_mm256_set1_ps(w.row_scale[m * w.row_scale_stride]), v);
    }
    if (bias_at_col != nullptr) {
      v = _mm256_add_ps(v, _mm256_maskload_ps(bias_at_col + 8 * h, masks[h]));
    }
    _mm256_maskstore_ps(dst + 8 * h, masks[h], v);
  }
}

// FP8 pair panels decoded in registers. Without K blocks the epilogue's weight scale carries the
// decode's 2^8. With them (kBlocks: DeepSeek / Qwen3-FP8 128 x 128 blocks; activations already
// scaled per block, as FastQuantMatmul's Highway kernel takes them) each step's decoded weights
// are multiplied by their block's scale (· 2^8), so w = fl(code · s) exactly as that kernel
// dequantizes, and the epilogue has no weight scale. A panel's 16 columns share a row block and
// a step's pair a K block (Fp8PanelFmaSupported); K blocks are 2^shift steps.
template <bool kBlocks>
struct Fp8PairsOf {
  static constexpr int64_t kStepBytes = 32;
  static constexpr bool kScaled = true;
  static constexpr bool kScalesAtDecode = kBlocks;
  const FastQuantWeights* w;
  int64_t m0;     // the tile's first row
  int shift = 0;  // kBlocks: log2(steps per K block)
  HWY_INLINE static PairWeights Load(const uint8_t* p) {
    __m256i even, odd;
    Fp8PairToHalfBits(p, &even, &odd);
    return {_mm256_cvtph_ps(_mm256_castsi256_si128(even)),
            _mm256_cvtph_ps(_mm256_extracti128_si256(even, 1)),
            _mm256_cvtph_ps(_mm256_castsi256_si128(odd)),
            _mm256_cvtph_ps(_mm256_extracti128_si256(odd, 1))};
  }
  Fp8PairsOf Rows(int64_t m) const { return {w, m0 + m, shift}; }
  // kBlocks: the K-block scales of the row block holding column col.
  HWY_INLINE const float* RowScales(int64_t col) const {
    return w->scales + (col / w->scale_rows) * w->scale_row_stride;
  }
  // kBlocks: step t's weights times s · 2^8 (s from row_scales).
  HWY_INLINE PairWeights LoadScaledFrom(const uint8_t* p, const float* row_scales,
                                        int64_t t) const {
    PairWeights v = Load(p);
    const __m256 s = _mm256_set1_ps(row_scales[t >> shift] * 256.0f);
    return {_mm256_mul_ps(v.even_lo, s), _mm256_mul_ps(v.even_hi, s), _mm256_mul_ps(v.odd_lo, s),
            _mm256_mul_ps(v.odd_hi, s)};
  }
  HWY_INLINE PairWeights LoadScaled(const uint8_t* p, int64_t col, int64_t t) const {
    return LoadScaledFrom(p, RowScales(col), t);
  }
  HWY_INLINE void Finish(const panels::TileJob& a, int i, int j, Ymm16 acc) const {
    Fp8Epilogue(*w, m0 + i, a.col0 + 16 * j, a.store[j], acc,
                a.bias != nullptr ? a.bias + 16 * j : nullptr, a.y + i * a.y_stride + 16 * j,
                kBlocks);
  }
};
using Fp8Pairs = Fp8PairsOf<false>;
using Fp8BlockPairs = Fp8PairsOf<true>;

// `Policy` with another tile shape, R rows × V panels (each lane's FMA sequence is the same in
// every shape, so results are too).
template <class Policy, int R, int V>
struct Shaped : Policy {
  static constexpr int kRows = R;
  static constexpr int kVecs = V;
  Shaped Rows(int64_t m0) const { return {Policy::Rows(m0)}; }
};

// panels::PanelMatmul with `policy`, or for one row (decode) with GemvVecs panels per tile: a
// 6 x 1 or 5 x 1 tile gives one row two FMA chains (a pair panel's step two FMAs deep each),
// latency-bound below the weights' stream rate; more panels give it more chains.
template <int GemvVecs, class Policy>
void RunPanels(const Policy& policy, const uint8_t* data, int64_t panel_bytes, int64_t steps,
               int64_t n, int64_t rows, const float* bias, float* y, int64_t n_begin,
               int64_t n_end) {
  if (rows == 1) {
    return panels::PanelMatmul(Shaped<Policy, 1, GemvVecs>{policy}, data, panel_bytes, steps, n,
                               rows, bias, y, n_begin, n_end);
  }
  panels::PanelMatmul(policy, data, panel_bytes, steps, n, rows, bias, y, n_begin, n_end);
}

// Panels per one-row tile: f32 / f16 (one FMA per step and lane, the weights loaded as used) and
// K pairs (two, the pair's four decoded vectors per panel held).
constexpr int kFloatGemvVecs = 4;
constexpr int kPairGemvVecs = 2;

// A PairPanels policy over its k / 2 whole pairs (RunPanels). K = 1 has none, and the driver runs
// no Finish without a step: that row is padded to one pair instead (2 floats a row; its zero
// partner adds a +0 product, the one case where one is added).
template <class Policy>
void RunPairPanels(const Policy& policy, const uint8_t* data, int64_t panel_bytes, int64_t n,
                   int64_t rows, const float* bias, float* y, int64_t n_begin, int64_t n_end) {
  if (policy.k > 1) {
    return RunPanels<kPairGemvVecs>(policy, data, panel_bytes, policy.k / 2, n, rows, bias, y,
                                    n_begin, n_end);
  }
  std::vector<float> padded(2 * rows, 0.0f);
  for (int64_t m = 0; m < rows; ++m) padded[2 * m] = policy.x[m];
  Policy one = policy;
  one.x = padded.data();
  one.k = 2;
  RunPanels<kPairGemvVecs>(one, data, panel_bytes, 1, n, rows, bias, y, n_begin, n_end);
}

// Up to one tile of rows decodes the codes in registers; more rows decode kDecodePanels panels
// at a time to f16 K panels first, each code once rather than once per 5-row tile.
constexpr int64_t kRegisterRows = PairPanels<Fp8Pairs>::kRows;
constexpr int64_t kDecodePanels = 4;

}  // namespace

// More rows: four panels at a time decoded to f16 K panels (float_panel_matmul.h's layout, code ·
// 2^-8 exactly), or with K-block scales (shift >= 0: K blocks of 2^shift steps) to f32 K panels
// of code · s, the float panel kernel over them with no bias (y = the raw sums: the register
// path's weights and FMAs in the same K order, an odd K's last k included and its padding not,
// so a row's bits do not depend on the route), then the epilogue over y. The float panels run in
// zmm on AVX-512 CPUs (the same bits), where the decode and the epilogue are a small share.
void Fp8DecodedGemm(const FastQuantWeights& w, const float* x, int64_t rows, const float* bias,
                    float* y, int64_t n_begin, int64_t n_end, int shift) {
  const bool blocks = shift >= 0;
  const int64_t code_bytes = Fp8PairsBytes(panels::kCols, w.k), pairs = (w.k + 1) / 2;
  const int64_t panel_bytes = pairs * (blocks ? 128 : 64);  // f32 or f16 K panels, whole pairs
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
      const Fp8BlockPairs scaled{&w, 0, shift};
      const float* row_scales = blocks ? scaled.RowScales((p0 + p) * panels::kCols) : nullptr;
      for (int64_t t = 0; t < pairs; ++t) {
        if (blocks) {
          const PairWeights v = scaled.LoadScaledFrom(codes + 32 * t, row_scales, t);
          float* f = reinterpret_cast<float*>(out + 128 * t);
          _mm256_store_ps(f, v.even_lo);
          _mm256_store_ps(f + 8, v.even_hi);
          _mm256_store_ps(f + 16, v.odd_lo);
          _mm256_store_ps(f + 24, v.odd_hi);
          continue;
        }
        __m256i even, odd;
        Fp8PairToHalfBits(codes + 32 * t, &even, &odd);
        _mm256_store_si256(reinterpret_cast<__m256i*>(out + 64 * t), even);
        _mm256_store_si256(reinterpret_cast<__m256i*>(out + 64 * t + 32), odd);
      }
    }
    // The decoded panels as a matrix whose column 0 is column 16·p0 (y shifted to match; its
    // row stride stays w.n).
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
        const unsigned bits = panels::StoreMask(p, c0, c1);
        float* row = y + m * w.n + p * panels::kCols;
        const Ymm16 acc{_mm256_maskload_ps(row, LaneMask(bits & 0xFFu)),
                        _mm256_maskload_ps(row + 8, LaneMask(bits >> 8))};
        Fp8Epilogue(w, m, p * panels::kCols, bits, acc,
                    bias != nullptr ? bias + p * panels::kCols : nullptr, row, blocks);
      }
    }
  }
}

void F16PanelMatmulAvx2(const FastWeights& w, const float* x, int64_t rows, const float* bias,
                        float* y, int64_t n_begin, int64_t n_end) {
  RunPanels<kFloatGemvVecs>(FloatPanels<true>{{}, x, w.k}, w.data, w.row_stride, w.k, w.n, rows,
                            bias, y, n_begin, n_end);
}

void F32PanelMatmulAvx2(const FastWeights& w, const float* x, int64_t rows, const float* bias,
                        float* y, int64_t n_begin, int64_t n_end) {
  RunPanels<kFloatGemvVecs>(FloatPanels<false>{{}, x, w.k}, w.data, w.row_stride, w.k, w.n, rows,
                            bias, y, n_begin, n_end);
}

}  // namespace tessera::kernels::cpu::fast::internal

namespace tessera::kernels::cpu::fast {

void internal::Bf16PairsFmaMatmulAvx2(const FastWeights& w, const float* x, int64_t rows,
                                      const float* bias, float* y, int64_t n_begin, int64_t n_end) {
  internal::RunPairPanels(internal::PairPanels<internal::Bf16Pairs>{{}, x, w.k, {}}, w.data,
                          w.row_stride, w.n, rows, bias, y, n_begin, n_end);
}

void internal::Fp8PanelFmaMatmulAvx2(const FastQuantWeights& w, const float* x, int64_t rows,
                                     const float* bias, float* y, int64_t n_begin, int64_t n_end) {
  if (rows <= 0 || n_begin >= n_end) return;
  // K-block scales (Fp8PanelFmaSupported: a power-of-two number of steps per block).
  const int shift = w.scale_k < w.k ? std::countr_zero(static_cast<uint64_t>(w.scale_k / 2)) : -1;
  // (K = 1 has no whole pair for the decoded route's kernel to match: registers for any rows.)
  if (rows > internal::kRegisterRows && w.k > 1) {
    return internal::Fp8DecodedGemm(w, x, rows, bias, y, n_begin, n_end, shift);
  }
  const int64_t panel_bytes = Fp8PairsBytes(panels::kCols, w.k);
  if (shift >= 0) {
    return internal::RunPairPanels(
        internal::PairPanels<internal::Fp8BlockPairs>{{}, x, w.k, {&w, 0, shift}}, w.q, panel_bytes,
        w.n, rows, bias, y, n_begin, n_end);
  }
  internal::RunPairPanels(internal::PairPanels<internal::Fp8Pairs>{{}, x, w.k, {&w, 0}}, w.q,
                          panel_bytes, w.n, rows, bias, y, n_begin, n_end);
}

}  // namespace tessera::kernels::cpu::fast

HWY_POP_ATTRIBUTES

#else  // not x86-64 GCC/Clang: never called (Avx2PanelsAvailable() is false), defined for the
       // link.

namespace tessera::kernels::cpu::fast::internal {

void F16PanelMatmulAvx2(const FastWeights&, const float*, int64_t, const float*, float*, int64_t,
                        int64_t) {}
void F32PanelMatmulAvx2(const FastWeights&, const float*, int64_t, const float*, float*, int64_t,
                        int64_t) {}
void Fp8DecodedGemm(const FastQuantWeights&, const float*, int64_t, const float*, float*, int64_t,
                    int64_t, int) {}

}  // namespace tessera::kernels::cpu::fast::internal

namespace tessera::kernels::cpu::fast {

void internal::Bf16PairsFmaMatmulAvx2(const FastWeights&, const float*, int64_t, const float*,
                                      float*, int64_t, int64_t) {}
void internal::Fp8PanelFmaMatmulAvx2(const FastQuantWeights&, const float*, int64_t, const float*,
                                     float*, int64_t, int64_t) {}

}  // namespace tessera::kernels::cpu::fast

#endif
