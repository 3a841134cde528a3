// Test helpers for the quantized-weight panel kernel (kernels/cpu/fast/quant_panel_matmul.h):
// random layers of each format in each form, their reference weights and the header's bound's
// per-product magnitude, and a call of the kernel as the engine makes it (activations converted
// per form), shared by the panel tests of the f32 and pair forms and of the int16 route.
#ifndef TESSERA_TESTS_KERNELS_CPU_QUANT_PANEL_TEST_UTIL_H_
#define TESSERA_TESTS_KERNELS_CPU_QUANT_PANEL_TEST_UTIL_H_

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "hwy/aligned_allocator.h"
#include "kernels/cpu/fast/bf16_dot_matmul.h"
#include "kernels/cpu/fast/column_panels.h"
#include "kernels/cpu/fast/int16_act_quant.h"
#include "kernels/cpu/fast/quant_panel_matmul.h"
#include "kernels/cpu/quant/int_weight_only_matmul.h"
#include "kernels/numeric/e8m0.h"
#include "kernels/numeric/fp4.h"
#include "kernels/numeric/fp8.h"
#include "kernels/numeric/half.h"

namespace tessera::kernels::cpu::fast::panel_test {

// The kernel form and activations a test runs: f32 panels and x, bf16 pairs with the split
// (exact x) or hi alone (bf16 activations), or the pair panels with int16 activations.
enum class Form { kF32, kSplit, kBf16, kInt16 };

// The panel form a test form runs on: f32, bf16 pairs, or the int16 route's pairs (which hold
// 8-bit byte codes too).
inline QuantPanelForm PanelFormOf(Form f) {
  return f == Form::kF32     ? QuantPanelForm::kF32
         : f == Form::kInt16 ? QuantPanelForm::kInt16Pairs
                             : QuantPanelForm::kBf16Pairs;
}

// The centre of the byte codes a test layer gets in `f`: 8-bit codes (128) where the form takes
// them, 6-bit ones (32) on the bf16 pairs.
inline int ByteCentre(Form f) { return f == Form::kSplit || f == Form::kBf16 ? 32 : 128; }

struct Layer {
  QuantDecode format;
  Form form;
  int64_t n, k, group;
  // codes one per byte [n, k]; q the checkpoint's form (nibble pairs, or codes for kInt8)
  std::vector<uint8_t> codes, q, block_scales;
  std::vector<float> scales, zeros, bias;
  std::vector<float> codebook;  // kCodebook4: bitsandbytes' NF4 values
  hwy::AlignedFreeUniquePtr<uint8_t[]> panels;
  FastQuantWeights w;

  // The reference's dequantized weight (column c, element i), α included.
  double Weight(int64_t c, int64_t i) const {
    const int64_t g = c * (k / group) + i / group;
    const uint8_t q = codes[c * k + i];
    switch (format) {
      case QuantDecode::kInt4:
      case QuantDecode::kInt8:
        return (static_cast<float>(q) - zeros[g]) * scales[g];
      case QuantDecode::kMxfp4:
        return numeric::DecodeE2m1(q) * numeric::DecodeE8m0(block_scales[g]);
      case QuantDecode::kCodebook4:
        return codebook[q] * scales[g];  // one f32 product, as bitsandbytes computes it
      default:
        return (numeric::DecodeE2m1(q) * numeric::DecodeUe4m3(block_scales[g])) * w.alpha;
    }
  }
  bool Integer() const { return format == QuantDecode::kInt4 || format == QuantDecode::kInt8; }
  // The header's bound's per-product magnitude: |x| times this.
  double Magnitude(int64_t c, int64_t i) const {
    if (!Integer()) return std::fabs(Weight(c, i));
    const int64_t g = c * (k / group) + i / group;
    const double centre = format != QuantDecode::kInt8 ? 8.0 : ByteCentre(form);
    return scales[g] * (std::fabs(codes[c * k + i] - centre) + std::fabs(zeros[g] - centre));
  }
};

inline void Repack(Layer& l) {
  l.w.q = l.q.data();
  l.w.scales = l.scales.data();
  l.w.zeros = l.zeros.data();
  l.w.block_scales = l.block_scales.data();
  l.w.codebook = l.codebook.empty() ? nullptr : l.codebook.data();
  l.panels = hwy::AllocateAligned<uint8_t>(QuantPanelsBytes(l.w));
  l.w = RepackQuantPanels(l.w, l.panels.get(), PanelFormOf(l.form));
}

// bitsandbytes' NF4 code values (functional.py get_4bit_type("nf4"), as f32).
inline constexpr float kNf4Values[16] = {
    -1.0f, -0.6961928009986877f, -0.5250730514526367f, -0.39491748809814453f,
    -0.28444138169288635f, -0.18477343022823334f, -0.09105003625154495f, 0.0f,
    0.07958029955625534f, 0.16093020141124725f, 0.24611230194568634f, 0.33791524171829224f,
    0.44070982933044434f, 0.5626170039176941f, 0.7229568362236023f, 1.0f};

// int_group: the group size of the integer formats (kInt4; kInt8 with 8-bit codes) and of
// codebook layers (kCodebook4, NF4 values with positive absmax scales).
inline Layer Make(QuantDecode format, int64_t n, int64_t k, int64_t int_group, uint32_t seed,
                  Form form = Form::kF32) {
  const bool integer = format == QuantDecode::kInt4 || format == QuantDecode::kInt8;
  const bool codebook = format == QuantDecode::kCodebook4;
  const int64_t group =
      integer || codebook ? int_group : format == QuantDecode::kMxfp4 ? 32 : 16;
  Layer l{format, form, n, k, group, {}, {}, {}, {}, {}, {}, {}, nullptr, {}};
  std::mt19937 rng(seed);
  // Byte codes: 8-bit in the f32 and int16 forms, 6-bit (the bf16 pair form's largest, centre
  // 32) in the bf16 pair forms.
  const uint32_t levels = format != QuantDecode::kInt8 ? 16 : ByteCentre(form) == 128 ? 256 : 64;
  l.codes.resize(n * k);
  for (auto& c : l.codes) c = static_cast<uint8_t>(rng() % levels);
  if (format == QuantDecode::kInt8) {
    l.codes[0] = static_cast<uint8_t>(levels - 1);  // the largest code sets the centre (128, 32)
    l.q = l.codes;
  } else {
    l.q.resize(n * k / 2);
    for (int64_t r = 0; r < n; ++r) PackU4Pairs(l.codes.data() + r * k, k, l.q.data() + r * k / 2);
  }
  const float top = static_cast<float>(levels - 1);
  std::uniform_real_distribution<float> scale(1e-3f, 5e-2f), zero(0.0f, top);
  FastQuantWeights& w = l.w;
  w.decode = format;
  w.n = n;
  w.k = k;
  const int64_t groups = n * (k / group);
  if (integer) {
    for (int64_t i = 0; i < groups; ++i) {
      l.scales.push_back(scale(rng) * 16.0f / static_cast<float>(levels));
      // Integer zero points (GPTQ, AWQ) and fractional ones.
      l.zeros.push_back(i % 3 == 0 ? static_cast<float>(rng() % levels) : zero(rng));
    }
    w.scale_rows = 1;
    w.scale_row_stride = k / group;
    w.scale_k = group;
  } else if (codebook) {
    // The pair forms read a bf16 table: NF4 rounded to bf16 there (as the engine does for bf16
    // activations), exact in the f32 form.
    for (const float v : kNf4Values) {
      l.codebook.push_back(form == Form::kF32 ? v
                                              : numeric::Bf16ToFloat(numeric::FloatToBf16(v)));
    }
    // A zero absmax now and then (an all-zero block), the rest positive.
    for (int64_t i = 0; i < groups; ++i) l.scales.push_back(i % 11 == 4 ? 0.0f : scale(rng) * 20);
    w.scale_rows = 1;
    w.scale_row_stride = k / group;
    w.scale_k = group;
  } else {
    for (int64_t i = 0; i < groups; ++i) {
      uint8_t b;
      if (format == QuantDecode::kMxfp4) {
        // 0: the subnormal 2^-127, in every group of column 1 (whose outputs are then ~1e-37:
        // the tolerance has no absolute slack above the f32 subnormal step) and now and then.
        const bool tiny = i % 7 == 0 || (n > 1 && i / (k / group) == 1);
        b = static_cast<uint8_t>(tiny ? 0 : 100 + rng() % 40);
      } else {
        do b = static_cast<uint8_t>(rng());  // subnormal, normal and negative (bit 7) scales
        while ((b & 0x7F) == numeric::kE4m3NanCode);
      }
      l.block_scales.push_back(b);
    }
    w.alpha = format == QuantDecode::kNvfp4 ? 3.7e-3f : 1.0f;
  }
  for (int64_t i = 0; i < n; ++i) l.bias.push_back(scale(rng) * 30);
  Repack(l);
  return l;
}

inline std::vector<float> Activations(int64_t rows, int64_t k, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> x(rows * k);
  for (auto& v : x) v = nd(rng);
  if (rows > 1) x[k + 1] = 0.0f;
  // Outlier channels (300x) in every fourth row, as LLM hidden states have them: the int16
  // route's error then follows the outlier's group maximum, which its bound must cover.
  for (int64_t m = 3; m < rows; m += 4) {
    for (int64_t i = 5; i < k; i += 97) x[m * k + i] *= 300.0f;
  }
  return x;
}

// x rounded to bf16, as the engine passes bf16 activations.
inline std::vector<float> RoundedToBf16(const std::vector<float>& x) {
  std::vector<float> r(x.size());
  for (size_t i = 0; i < x.size(); ++i) r[i] = numeric::Bf16ToFloat(numeric::FloatToBf16(x[i]));
  return r;
}

// y for rows [0, rows) of x, columns split into [b, e) pieces of `step`; the pair form converts
// x as the engine does (RoundActsToBf16: hi and lo, or hi alone, x then being bf16 values;
// QuantizeActsInt16 in the layer's group).
inline std::vector<float> RunPanels(const Layer& l, const float* x, int64_t rows, int64_t step,
                                    bool bias) {
  std::vector<float> y(rows * l.n, -7.0f);
  const int64_t stride = Bf16DotActStride(l.k);
  std::vector<uint16_t> hi(rows * stride), lo(rows * stride);
  if (l.form == Form::kSplit || l.form == Form::kBf16) {
    RoundActsToBf16(x, l.k, 0, rows, hi.data(), lo.data(), nullptr);
  }
  const int64_t group = l.form == Form::kInt16 ? QuantPanelInt16Group(l.w) : 0;
  std::vector<int16_t> q(rows * stride);
  std::vector<float> d(group > 0 ? rows * (l.k / group) : 0), sums(d.size());
  if (group > 0) QuantizeActsInt16(x, l.k, group, 0, rows, q.data(), d.data(), sums.data());
  for (int64_t b = 0; b < l.n; b += step) {
    const float* bp = bias ? l.bias.data() : nullptr;
    const int64_t e = std::min(l.n, b + step);
    if (l.form == Form::kF32) {
      QuantPanelMatmul(l.w, x, rows, bp, y.data(), b, e);
    } else if (l.form == Form::kInt16) {
      QuantPanelInt16Matmul(l.w, Int16Acts{q.data(), d.data(), sums.data()}, rows, bp, y.data(), b,
                            e);
    } else {
      QuantPanelPairMatmul(l.w, x, hi.data(), l.form == Form::kSplit ? lo.data() : nullptr, rows,
                           bp, y.data(), b, e);
    }
  }
  return y;
}

inline bool Runs(const Layer& l) {
  if (l.form == Form::kInt16) return QuantPanelInt16Available();
  return l.form == Form::kF32 ? QuantPanelAvailable() : QuantPanelPairsAvailable();
}

inline std::string Name(QuantDecode f) {
  switch (f) {
    case QuantDecode::kInt4:
      return "int4";
    case QuantDecode::kInt8:
      return "int8";
    case QuantDecode::kMxfp4:
      return "mxfp4";
    case QuantDecode::kCodebook4:
      return "codebook4";
    default:
      return "nvfp4";
  }
}

inline std::string Name(Form f) {
  switch (f) {
    case Form::kF32:
      return "f32";
    case Form::kSplit:
      return "split";
    case Form::kInt16:
      return "int16";
    default:
      return "bf16";
  }
}

}  // namespace tessera::kernels::cpu::fast::panel_test

#endif  // TESSERA_TESTS_KERNELS_CPU_QUANT_PANEL_TEST_UTIL_H_
