// The FP4 pair panels' AMX route (kernels/cpu/fast/quant_panel_amx.h) on the software model of
// the tile instructions (amx_model.h), on any AVX-512 CPU:
//  * one-hot activations read back every weight (code · block scale, NVFP4 times α) exactly,
//    MXFP4 exponents 2 and 252 at the route's edges included, so the tile maker decodes each
//    code, scale and K position right;
//  * each output within the route's bound of the exact sum in double, MXFP4 and NVFP4 (K = 16
//    mod 32 too; K = 16: a tile half padding, made into a NaN-filled buffer), exact hi + lo split
//    and bf16 activations;
//  * every row bit-identical alone and in calls of 1-53 rows (tiles made inside the walk up to
//    32 rows, decoded panels beyond), under column splits at odd places, each call writing its
//    own columns only, the walk's two tile buffers holding NaN before each call (the decoded
//    panels are made by the same maker, tile by tile);
//  * MXFP4 layers with an exponent outside [2, 252] are refused.
// Where a CPU grants AMX, QuantPanelPairMatmul takes the route with the real instructions, which
// the pair-form tests of quant_panel_matmul_test.cc then check (this test prints the route).
#include "kernels/cpu/fast/quant_panel_amx.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iostream>
#include <tuple>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "tests/kernels/cpu/amx_model.h"
#include "tests/kernels/cpu/quant_panel_test_util.h"

namespace tessera::kernels::cpu::fast {
namespace {

using panel_test::Form;
using panel_test::Layer;

// A pair-panel layer of `format` whose MXFP4 exponents are `exps` in turn (NVFP4 as Make draws
// its scales: subnormal, normal, negative).
Layer AmxLayer(QuantDecode format, int64_t n, int64_t k, uint32_t seed, Form form,
               const std::vector<uint8_t>& exps) {
  Layer l = panel_test::Make(format, n, k, 0, seed, form);
  if (format == QuantDecode::kMxfp4) {
    for (size_t i = 0; i < l.block_scales.size(); ++i) {
      l.block_scales[i] = exps[(i * 7 + seed) % exps.size()];
    }
    panel_test::Repack(l);
  }
  return l;
}

// y [rows, n] of the route on the model, columns split into pieces of `step`, each piece into a
// fresh buffer (a call may write its own columns only).
std::vector<float> RunModel(const Layer& l, const float* x, int64_t rows, int64_t step) {
  const int64_t stride = Bf16DotActStride(l.k);
  std::vector<uint16_t> hi(rows * stride), lo(rows * stride);
  RoundActsToBf16(x, l.k, 0, rows, hi.data(), lo.data(), nullptr);
  const uint16_t* lo_or_null = l.form == Form::kSplit ? lo.data() : nullptr;
  std::vector<float> y(rows * l.n, -7.0f);
  for (int64_t b = 0; b < l.n; b += step) {
    const int64_t e = std::min(l.n, b + step);
    std::vector<float> piece(rows * l.n, -7.0f);
    internal::QuantPanelAmxMatmul(l.w, hi.data(), lo_or_null, rows, l.bias.data(), piece.data(), b,
                                  e, testing::kModelBf16Gemms);
    for (int64_t m = 0; m < rows; ++m) {
      for (int64_t c = 0; c < l.n; ++c) {
        if (c >= b && c < e) {
          y[m * l.n + c] = piece[m * l.n + c];
        } else {
          EXPECT_EQ(piece[m * l.n + c], -7.0f) << "column " << c << " written, row " << m;
        }
      }
    }
  }
  return y;
}

bool AvailableHere() { return QuantPanelAvailable(); }

TEST(QuantPanelAmxTest, RouteTakesFp4PairPanelsWithBf16Products) {
  if (!AvailableHere()) GTEST_SKIP() << "no AVX-512 on this CPU";
  std::cout << "FP4 pair panel route: "
            << (AmxBf16Usable() ? "amx-tiles" : "avx512 (no AMX granted)") << "\n";
  EXPECT_TRUE(QuantPanelAmxTakes(AmxLayer(QuantDecode::kNvfp4, 16, 32, 1, Form::kSplit, {}).w));
  EXPECT_TRUE(
      QuantPanelAmxTakes(AmxLayer(QuantDecode::kMxfp4, 16, 64, 1, Form::kSplit, {2, 252}).w));
  for (uint8_t e : {0, 1, 253, 254}) {
    EXPECT_FALSE(
        QuantPanelAmxTakes(AmxLayer(QuantDecode::kMxfp4, 16, 64, 1, Form::kSplit, {120, e}).w))
        << int{e};
  }
  // Not the f32 form, not integer codes.
  EXPECT_FALSE(QuantPanelAmxTakes(AmxLayer(QuantDecode::kNvfp4, 16, 32, 1, Form::kF32, {}).w));
  EXPECT_FALSE(
      QuantPanelAmxTakes(panel_test::Make(QuantDecode::kInt4, 16, 128, 32, 1, Form::kSplit).w));
}

// Row m one-hot at k = m: y[m, c] is column c's weight m, exact (bias 0).
TEST(QuantPanelAmxTest, OneHotRowsReadEveryWeightExactly) {
  if (!AvailableHere()) GTEST_SKIP() << "no AVX-512 on this CPU";
  for (const QuantDecode f : {QuantDecode::kMxfp4, QuantDecode::kNvfp4}) {
    for (const auto& [n, k] : {std::pair<int64_t, int64_t>{37, 96}, {16, 48}, {3, 32}, {18, 16}}) {
      if (f == QuantDecode::kMxfp4 && k % 32 != 0) continue;
      Layer l =
          AmxLayer(f, n, k, static_cast<uint32_t>(n + k), Form::kSplit, {2, 3, 127, 251, 252});
      std::fill(l.bias.begin(), l.bias.end(), 0.0f);
      std::vector<float> x(k * k, 0.0f);
      for (int64_t m = 0; m < k; ++m) x[m * k + m] = 1.0f;
      for (int64_t rows : {k, int64_t{1}}) {  // decoded panels, then tiles made in the walk
        for (int64_t m0 = 0; m0 < k; m0 += rows) {
          const std::vector<float> y = RunModel(l, x.data() + m0 * k, rows, 16);
          for (int64_t m = 0; m < rows; ++m) {
            for (int64_t c = 0; c < n; ++c) {
              ASSERT_EQ(y[m * n + c], static_cast<float>(l.Weight(c, m0 + m)))
                  << panel_test::Name(f) << " n " << n << " k " << k << " column " << c
                  << " weight " << m0 + m;
            }
          }
        }
      }
    }
  }
}

class QuantPanelAmxFormTest : public ::testing::TestWithParam<std::tuple<QuantDecode, Form>> {};

TEST_P(QuantPanelAmxFormTest, AccurateAndInvariantOnTheModel) {
  if (!AvailableHere()) GTEST_SKIP() << "no AVX-512 on this CPU";
  const auto [format, form] = GetParam();
  for (const auto& [n, k] : {std::pair<int64_t, int64_t>{37, 64},
                             {16, 32},
                             {70, 160},
                             {5, 2048},
                             {33, 48},
                             {21, 1040},
                             {19, 16}}) {
    if (format == QuantDecode::kMxfp4 && k % 32 != 0) continue;
    const int64_t rows = 53;
    Layer l = AmxLayer(format, n, k, static_cast<uint32_t>(n * 131 + k), form,
                       {110, 118, 121, 126, 127, 130, 133});
    ASSERT_TRUE(QuantPanelAmxTakes(l.w));
    std::vector<float> x = panel_test::Activations(rows, k, static_cast<uint32_t>(k));
    if (form == Form::kBf16) x = panel_test::RoundedToBf16(x);
    const std::vector<float> all = RunModel(l, x.data(), rows, n);
    for (int64_t m = 0; m < rows; ++m) {
      for (int64_t c = 0; c < n; ++c) {
        double exact = 0, mag = 0;
        for (int64_t i = 0; i < k; ++i) {
          const double p = static_cast<double>(x[m * k + i]) * l.Weight(c, i);
          exact += p;
          mag += std::fabs(p);
        }
        exact += l.bias[c];
        // Split: lo's 2^-16 relative; the f32 tile sums over K pairs; α and the bias.
        const double tol =
            (std::ldexp(1.0, -16) * (form == Form::kSplit) + (k + 4) * std::ldexp(1.0, -24)) * mag +
            std::ldexp(1.0, -22) * std::fabs(exact) + 1e-30;
        ASSERT_NEAR(all[m * n + c], exact, tol)
            << panel_test::Name(format) << " n " << n << " k " << k << " m " << m << " c " << c;
      }
    }
    const std::vector<float> split = RunModel(l, x.data(), rows, 7);
    ASSERT_EQ(std::memcmp(split.data(), all.data(), rows * n * 4), 0) << "n " << n << " k " << k;
    for (int64_t r : {1, 2, 5, 16, 17, 32, 33}) {
      for (int64_t m0 = 0; m0 + r <= rows; m0 += r) {
        const std::vector<float> part = RunModel(l, x.data() + m0 * k, r, r % 2 == 0 ? 16 : 7);
        ASSERT_EQ(std::memcmp(part.data(), all.data() + m0 * n, r * n * 4), 0)
            << "rows " << r << " from " << m0 << " n " << n << " k " << k;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Formats, QuantPanelAmxFormTest,
                         ::testing::Combine(::testing::Values(QuantDecode::kMxfp4,
                                                              QuantDecode::kNvfp4),
                                            ::testing::Values(Form::kSplit, Form::kBf16)),
                         [](const ::testing::TestParamInfo<std::tuple<QuantDecode, Form>>& info) {
                           return panel_test::Name(std::get<0>(info.param)) + "_" +
                                  panel_test::Name(std::get<1>(info.param));
                         });

}  // namespace
}  // namespace tessera::kernels::cpu::fast
