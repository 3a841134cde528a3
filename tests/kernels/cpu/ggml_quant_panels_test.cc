// GGUF block weights on the quantized panels (kernels/cpu/fast/ggml_quant_panels.h), every type,
// on random blocks with an odd column count and K of several blocks:
//  * each output within the panels' bound of the exact double sum of x times
//    DequantizeGgmlBlocks's weights (llama.cpp's dequantize_row_*), in the form this CPU runs
//    in the f32 form, and in the bf16-pair form with the hi + lo split where this CPU takes it
//    (every type but Q8_0, on AVX-512 BF16);
//  * a row alone and among 9 rows bit-identical, under a column split at an odd place;
//  * the panels hold everything: the blocks overwritten after the repack change nothing;
//  * affine blocks and sub-blocks with a zero scale (weights of their offset alone) included;
//  * the symmetric types take headers of scales alone (f16 where they are the blocks' d: Q4_0 and
//    Q8_0 panels are the file's size), Q4_K / Q5_K the blocks' own scale bytes (bytes per panel),
//    and the blocks the panels cannot hold
//    (a non-finite affine scale or offset, MXFP4's 0xFF) are refused;
//  * the grid and ternary types (IQ1_* / IQ2_* / IQ3_*, TQ1_0 / TQ2_0) as byte codes of their
//    table values under f32 scales;
//  * Q4_0 / Q4_1 / MXFP4 on the AMX route of the 4-bit pair panels (tile model), no other type there.
#include "kernels/cpu/fast/ggml_quant_panels.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "gtest/gtest.h"
#include "hwy/aligned_allocator.h"
#include "kernels/cpu/fast/avx2_panels.h"
#include "kernels/cpu/fast/bf16_dot_matmul.h"
#include "kernels/cpu/fast/column_panels.h"
#include "kernels/cpu/fast/quant_panel_amx.h"
#include "kernels/cpu/ggml_dequant.h"
#include "kernels/cpu/ggml_iq_dequant.h"
#include "kernels/numeric/half.h"
#include "tests/kernels/cpu/amx_model.h"
#include "tests/kernels/cpu/iq_grid_test_util.h"

namespace tessera::kernels::cpu::fast {
namespace {

using T = GgmlBlockType;

bool IsK(T t) { return t == T::kQ4_K || t == T::kQ5_K || t == T::kQ6_K; }
bool IsGrid(T t) { return IsTableCodeType(t); }
// Values per scale group on the panels: Q6_K's and the grid types' with a multiplier per 16.
int64_t GroupOf(T t) {
  return t == T::kQ6_K || t == T::kIq2Xs || t == T::kIq2S || t == T::kIq1M ? 16 : 32;
}
bool Affine(T t) { return t == T::kQ4_1 || t == T::kQ5_1 || t == T::kQ4_K || t == T::kQ5_K; }

void PutHalf(uint8_t* p, float v) {
  const uint16_t h = numeric::FloatToHalf(v);
  std::memcpy(p, &h, 2);
}

// Random but valid blocks (every code byte pattern decodes) with sane scales: f16 d (and m /
// dmin) of either sign, MXFP4 exponents 100-139.
std::vector<uint8_t> RandomBlocks(T t, int64_t n, int64_t k, std::mt19937& rng) {
  const GgmlBlockInfo info = GetGgmlBlockInfo(t);
  std::vector<uint8_t> bytes(n * (k / info.elements) * info.bytes);
  for (auto& b : bytes) b = static_cast<uint8_t>(rng());
  std::uniform_real_distribution<float> mag(0.5f, 2.0f);
  auto sign = [&rng] { return rng() % 2 ? 1.0f : -1.0f; };
  for (int64_t i = 0; i < n * (k / info.elements); ++i) {
    uint8_t* b = bytes.data() + i * info.bytes;
    switch (t) {
      case T::kMxfp4:
        b[0] = static_cast<uint8_t>(100 + rng() % 40);
        break;
      case T::kQ6_K:
        PutHalf(b + 208, sign() * 2e-4f * mag(rng));
        break;
      case T::kIq2Xxs: case T::kIq2Xs: case T::kIq2S: case T::kIq3Xxs: case T::kIq3S:
      case T::kIq1S: case T::kIq1M: case T::kTq1_0: case T::kTq2_0:
        cpu::testing::SetIqGridHalf(t, b, numeric::FloatToHalf(sign() * 2e-4f * mag(rng)));
        break;
      default:
        // Every 7th affine block with d = 0: weights of its offset alone (K types: random 6-bit
        // scales of 0 give such sub-blocks too).
        PutHalf(b, Affine(t) && i % 7 == 3 ? 0.0f : sign() * (IsK(t) ? 1e-3f : 2e-2f) * mag(rng));
        if (Affine(t)) PutHalf(b + 2, sign() * (IsK(t) ? 1e-3f : 2e-1f) * mag(rng));
    }
  }
  return bytes;
}

// Column c's reference weights, and per weight the bound's magnitude |w − a| + |a|, a the
// weight at the centre code (0 for symmetric types: |w|): |s|·(|q − c| + |z − c|).
void Reference(T t, const std::vector<uint8_t>& blocks, int64_t c, int64_t k,
               std::vector<float>* w, std::vector<double>* mag) {
  const GgmlBlockInfo info = GetGgmlBlockInfo(t);
  const int64_t nb = k / info.elements;
  const uint8_t* row = blocks.data() + c * nb * info.bytes;
  w->resize(k);
  mag->resize(k);
  DequantizeGgmlBlocks(t, row, nb, w->data());
  for (int64_t i = 0; i < k; ++i) {
    const uint8_t* b = row + (i / info.elements) * info.bytes;
    double a = 0;
    if (t == T::kQ4_1 || t == T::kQ5_1) {
      const double centre = t == T::kQ4_1 ? 8 : 16;
      uint16_t d, m;
      std::memcpy(&d, b, 2);
      std::memcpy(&m, b + 2, 2);
      a = numeric::HalfToFloat(m) + centre * numeric::HalfToFloat(d);
    } else if (t == T::kQ4_K || t == T::kQ5_K) {
      const double centre = t == T::kQ4_K ? 8 : 16;
      float s, o;
      KQuantScaleOffset(b, static_cast<int>(i % 256) / 32, &s, &o);
      a = centre * s - o;
    }
    (*mag)[i] = std::fabs((*w)[i] - a) + std::fabs(a);
  }
}

// y [rows, n] against the exact double sums of x times the reference weights, within
// (terms·u + split)·Σ|x|·mag + u·Σ|x·w| (plus 2^-140 of absolute slack), u = 2^-24.
void ExpectNearReference(T t, const std::vector<uint8_t>& blocks, const std::vector<float>& x,
                         int64_t n, int64_t k, int64_t rows, const std::vector<float>& y,
                         double terms, double split) {
  const double u = std::ldexp(1.0, -24);
  std::vector<float> w;
  std::vector<double> mag;
  for (int64_t c = 0; c < n; ++c) {
    Reference(t, blocks, c, k, &w, &mag);
    for (int64_t m = 0; m < rows; ++m) {
      double exact = 0, bound = 0, plain = 0;
      for (int64_t i = 0; i < k; ++i) {
        const double xv = x[m * k + i];
        exact += xv * w[i];
        bound += std::fabs(xv) * mag[i];
        plain += std::fabs(xv * w[i]);
      }
      const double tol = (terms * u + split) * bound + u * plain + std::ldexp(1.0, -140);
      ASSERT_NEAR(y[m * n + c], exact, tol) << "m " << m << " c " << c;
    }
  }
}

struct Panels {
  hwy::AlignedFreeUniquePtr<uint8_t[]> data;
  FastQuantWeights w;
};

Panels Repack(T t, const std::vector<uint8_t>& blocks, int64_t n, int64_t k,
              QuantPanelForm form) {
  Panels p;
  p.data = hwy::AllocateAligned<uint8_t>(GgmlQuantPanelsBytes(t, n, k));
  p.w = RepackGgmlQuantPanels(t, blocks.data(), n, k, p.data.get(), form);
  return p;
}

// y [rows, n] in the engine's way: the pair form on RoundActsToBf16's hi + lo split.
std::vector<float> RunPanels(const Panels& p, const float* x, int64_t rows, int64_t step) {
  const int64_t n = p.w.n, k = p.w.k, stride = Bf16DotActStride(k);
  std::vector<float> y(rows * n, -7.0f);
  std::vector<uint16_t> hi(rows * stride), lo(rows * stride);
  if (p.w.pair_panels) RoundActsToBf16(x, k, 0, rows, hi.data(), lo.data(), nullptr);
  for (int64_t b = 0; b < n; b += step) {
    const int64_t e = std::min(n, b + step);
    if (p.w.pair_panels) {
      QuantPanelPairMatmul(p.w, x, hi.data(), lo.data(), rows, nullptr, y.data(), b, e);
    } else {
      QuantPanelMatmul(p.w, x, rows, nullptr, y.data(), b, e);
    }
  }
  return y;
}

std::string Name(T t) {
  switch (t) {
    case T::kQ4_0: return "Q4_0";
    case T::kQ4_1: return "Q4_1";
    case T::kQ5_0: return "Q5_0";
    case T::kQ5_1: return "Q5_1";
    case T::kQ8_0: return "Q8_0";
    case T::kQ4_K: return "Q4_K";
    case T::kQ5_K: return "Q5_K";
    case T::kQ6_K: return "Q6_K";
    case T::kMxfp4: return "MXFP4";
    default: return cpu::testing::IqGridName(t);
  }
}

class GgmlQuantPanelsTest : public ::testing::TestWithParam<T> {};

TEST_P(GgmlQuantPanelsTest, FollowTheReferenceAndAreBatchInvariant) {
  const T t = GetParam();
  if (!QuantPanelAvailable()) GTEST_SKIP() << "no AVX2 or AVX-512 on this CPU";
  std::mt19937 rng(static_cast<uint32_t>(t) + 3);
  const int64_t n = 37, k = 768, rows = 9;
  std::vector<uint8_t> blocks = RandomBlocks(t, n, k, rng);
  ASSERT_TRUE(GgmlQuantPanelsSupported(t, blocks.data(), n, k));
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> x(rows * k);
  for (auto& v : x) v = nd(rng);
  // The f32 form everywhere; the pair form where this CPU takes it (every type but Q8_0 on
  // AVX-512 BF16).
  std::vector<QuantPanelForm> forms = {QuantPanelForm::kF32};
  if (GgmlQuantPanelForm(t) == QuantPanelForm::kBf16Pairs) {
    forms.push_back(QuantPanelForm::kBf16Pairs);
  }
  for (const QuantPanelForm form : forms) {
    const bool pairs = form == QuantPanelForm::kBf16Pairs;
    SCOPED_TRACE(Name(t) + (pairs ? " pairs" : " f32"));
    std::vector<uint8_t> src = blocks;
    const Panels p = Repack(t, src, n, k, form);
    ASSERT_EQ(p.w.pair_panels, pairs);
    const std::vector<float> all = RunPanels(p, x.data(), rows, n);
    const int64_t group = GroupOf(t);
    ExpectNearReference(t, blocks, x, n, k, rows, all, k + group + 3,
                        pairs ? std::ldexp(1.0, -16) : 0.0);
    if (HasFatalFailure()) return;
    // Each row alone (registers), and the batch under a split at an odd place, bit for bit.
    for (int64_t m = 0; m < rows; ++m) {
      const std::vector<float> one = RunPanels(p, x.data() + m * k, 1, 16);
      ASSERT_EQ(std::memcmp(one.data(), all.data() + m * n, n * 4), 0) << "row " << m;
    }
    EXPECT_EQ(RunPanels(p, x.data(), rows, 7), all);
    // 4 and 6 rows: the register path's 3-row tiles.
    for (const int64_t r : {4, 6}) {
      const std::vector<float> part = RunPanels(p, x.data(), r, 16);
      ASSERT_EQ(std::memcmp(part.data(), all.data(), r * n * 4), 0) << r << " rows";
    }
    // The f32 form's AVX2 kernel gives the AVX-512 kernel's bits (K-quant headers included),
    // with a bias, over all columns and from an odd one.
    if (!pairs && internal::Avx2PanelsAvailable() && !internal::Avx2PanelsInUse()) {
      std::vector<float> bias(n);
      for (auto& v : bias) v = nd(rng);
      for (const int64_t r : {1, 2, 3, 5, 6, 9}) {
        for (const int64_t b : {0, 3}) {
          std::vector<float> avx2(r * n, -7.0f), want(r * n, -7.0f);
          internal::QuantPanelMatmulAvx2(p.w, x.data(), r, bias.data(), avx2.data(), b, n, nullptr);
          QuantPanelMatmul(p.w, x.data(), r, bias.data(), want.data(), b, n);
          ASSERT_EQ(std::memcmp(avx2.data(), want.data(), r * n * 4), 0)
              << "AVX2, " << r << " rows from column " << b;
        }
      }
    }
    // The panels hold every scale and code: the blocks can go.
    std::fill(src.begin(), src.end(), 0xEE);
    EXPECT_EQ(RunPanels(p, x.data(), rows, n), all);
  }
}

TEST_P(GgmlQuantPanelsTest, SymmetricTypesTakeShortHeaders) {
  const T t = GetParam();
  const int64_t n = 20, k = 512, groups = k / GroupOf(t);
  const bool bytes = t == T::kQ5_0 || t == T::kQ5_1 || t == T::kQ5_K || t == T::kQ6_K ||
                     t == T::kQ8_0 || IsGrid(t);
  const int64_t group = GroupOf(t);
  const int64_t codes = bytes ? 16 * group : 8 * group;  // per group of 16 columns
  // Q4_0 / Q5_0 / Q8_0: 16 f16 scales (the blocks' d); Q6_K and the grid types: 16 f32 scales
  // (d·sc, d·mult); Q4_1 / Q5_1:
  // 16 f32 zero points and scales; Q4_K / Q5_K: 16 scale and 16 min bytes, and per super-block
  // (8 groups) 16 f16 d and 16 f16 dmin; MXFP4: 16 scale bytes.
  const bool half = t == T::kQ4_0 || t == T::kQ5_0 || t == T::kQ8_0;
  const bool kquant = t == T::kQ4_K || t == T::kQ5_K;
  const int64_t head = t == T::kMxfp4  ? 16
                       : kquant        ? 32 + 64 / 8
                       : Affine(t)     ? 128
                       : half          ? 32
                                       : 64;
  EXPECT_EQ(GgmlQuantPanelsBytes(t, n, k), 2 * groups * (head + codes)) << Name(t);
}

// The 4-bit pair panels' AMX route (quant_panel_amx.h) takes Q4_0 (symmetric, f16 d) and Q4_1
// (affine: an f32 zero point per block) as INT4 groups of 32, MXFP4 whose exponents keep every
// scaled weight a normal bf16 (one exponent of 1 keeps the layer off it), and no other type's
// panels (K-quant headers, byte codes); on the tile model it follows llama.cpp's weights within
// its bound, every row alone and in 40-row calls (tiles made in the walk, decoded panels) bit for
// bit, under an odd column split.
TEST(GgmlQuantPanelsAmxTest, FourBitRouteFollowsTheReferenceOnTheTileModel) {
  if (!QuantPanelPairsAvailable()) GTEST_SKIP() << "no AVX-512 BF16 on this CPU";
  const char* env = std::getenv("TESSERA_QUANT_PANEL_AMX");
  if (env != nullptr && std::string_view(env) == "0") GTEST_SKIP() << "route turned off";
  std::mt19937 rng(7);
  const int64_t n = 37, k = 768, rows = 40;
  for (const T t :
       {T::kQ4_0, T::kQ4_1, T::kQ5_0, T::kQ5_1, T::kQ4_K, T::kQ5_K, T::kQ6_K, T::kMxfp4}) {
    if (GgmlQuantPanelForm(t) != QuantPanelForm::kBf16Pairs) continue;
    SCOPED_TRACE(Name(t));
    const std::vector<uint8_t> blocks = RandomBlocks(t, n, k, rng);
    const Panels p = Repack(t, blocks, n, k, QuantPanelForm::kBf16Pairs);
    ASSERT_TRUE(p.w.pair_panels);
    const bool q4 = t == T::kQ4_0 || t == T::kQ4_1, mx = t == T::kMxfp4;
    ASSERT_EQ(QuantPanelAmxTakes(p.w), q4 || mx);
    if (mx) {  // one block of the last panel with exponent 1: the whole layer stays off
      std::vector<uint8_t> edge = blocks;
      edge[(n - 1) * (k / 32) * GetGgmlBlockInfo(t).bytes] = 1;
      EXPECT_FALSE(QuantPanelAmxTakes(Repack(t, edge, n, k, QuantPanelForm::kBf16Pairs).w));
    }
    if (!q4 && !mx) continue;
    std::normal_distribution<float> nd(0.0f, 1.0f);
    std::vector<float> x(rows * k);
    for (auto& v : x) v = nd(rng);
    const int64_t stride = Bf16DotActStride(k);
    std::vector<uint16_t> hi(rows * stride), lo(rows * stride);
    RoundActsToBf16(x.data(), k, 0, rows, hi.data(), lo.data(), nullptr);
    auto run = [&](int64_t m0, int64_t r, int64_t step) {
      std::vector<float> y(r * n, -7.0f);
      for (int64_t b = 0; b < n; b += step) {
        internal::QuantPanelAmxMatmul(p.w, x.data() + m0 * k, hi.data() + m0 * stride,
                                      lo.data() + m0 * stride, r, nullptr, y.data(), b,
                                      std::min(n, b + step), testing::kModelBf16Gemms);
      }
      return y;
    };
    const std::vector<float> all = run(0, rows, n);
    // The AMX route's bound: hi and lo products in one f32 sum (INT4: per group of 32, then the
    // folds; MXFP4: over K).
    ExpectNearReference(t, blocks, x, n, k, rows, all, mx ? 2 * k + 4 : k + 2 * 32 + 3,
                        std::ldexp(1.0, -16));
    if (HasFatalFailure()) return;
    for (int64_t m = 0; m < rows; ++m) {
      const std::vector<float> one = run(m, 1, 16);
      ASSERT_EQ(std::memcmp(one.data(), all.data() + m * n, n * 4), 0) << "row " << m;
    }
    EXPECT_EQ(run(0, rows, 7), all);
  }
}

INSTANTIATE_TEST_SUITE_P(Types, GgmlQuantPanelsTest,
                         ::testing::Values(T::kQ4_0, T::kQ4_1, T::kQ5_0, T::kQ5_1, T::kQ8_0,
                                           T::kQ4_K, T::kQ5_K, T::kQ6_K, T::kMxfp4, T::kIq2Xxs,
                                           T::kIq2Xs, T::kIq2S, T::kIq3Xxs, T::kIq3S, T::kIq1S,
                                           T::kIq1M, T::kTq1_0, T::kTq2_0),
                         [](const ::testing::TestParamInfo<T>& info) { return Name(info.param); });

TEST(GgmlQuantPanelsSupportTest, RefusesWhatThePanelsCannotHold) {
  if (!QuantPanelAvailable()) GTEST_SKIP() << "no AVX2 or AVX-512 on this CPU";
  std::mt19937 rng(1);
  std::vector<uint8_t> q41 = RandomBlocks(T::kQ4_1, 3, 64, rng);
  EXPECT_TRUE(GgmlQuantPanelsSupported(T::kQ4_1, q41.data(), 3, 64));
  EXPECT_FALSE(GgmlQuantPanelsSupported(T::kQ4_1, q41.data(), 3, 48));  // K not whole blocks
  PutHalf(q41.data() + 20 * 2, INFINITY);
  EXPECT_FALSE(GgmlQuantPanelsSupported(T::kQ4_1, q41.data(), 3, 64));
  std::vector<uint8_t> q4k = RandomBlocks(T::kQ4_K, 1, 256, rng);
  PutHalf(q4k.data() + 2, NAN);  // dmin
  EXPECT_FALSE(GgmlQuantPanelsSupported(T::kQ4_K, q4k.data(), 1, 256));
  std::vector<uint8_t> mx = RandomBlocks(T::kMxfp4, 2, 64, rng);
  EXPECT_TRUE(GgmlQuantPanelsSupported(T::kMxfp4, mx.data(), 2, 64));
  mx[17 * 3] = 0xFF;
  EXPECT_FALSE(GgmlQuantPanelsSupported(T::kMxfp4, mx.data(), 2, 64));
  // Symmetric types hold any block.
  std::vector<uint8_t> q40 = RandomBlocks(T::kQ4_0, 2, 64, rng);
  PutHalf(q40.data(), 0.0f);
  EXPECT_TRUE(GgmlQuantPanelsSupported(T::kQ4_0, q40.data(), 2, 64));
}

}  // namespace
}  // namespace tessera::kernels::cpu::fast
