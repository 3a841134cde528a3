// The quant pair panels' AMX route (kernels/cpu/fast/quant_panel_amx.h) on the software model of
// the tile instructions (amx_model.h), on any AVX-512 CPU:
//  * one-hot activations read back every weight exactly (FP4: code · block scale, NVFP4 times α,
//    MXFP4 exponents 2 and 252 at the route's edges included; INT4 with integer zero points:
//    (q − z) · s through the per-group fold), so the tile maker decodes each code, scale and K
//    position right and each group folds its own header;
//  * each output within the route's bound of the exact sum in double: MXFP4, NVFP4 (K = 16 mod
//    32 too; K = 16: a tile half padding, made into a NaN-filled buffer), INT4 in groups of 32 to
//    128, 96 (three tiles) and one per row (K = 40: a group ending mid-tile), with f32 headers and
//    fractional zero points, f16 headers, and symmetric ones; exact hi + lo split and bf16
//    activations;
//  * every row bit-identical alone and in calls of 1-53 rows (tiles made inside the walk up to
//    32 rows, decoded panels beyond), under column splits at odd places, each call writing its
//    own columns only, the walk's two tile buffers holding NaN before each call (the decoded
//    panels are made by the same maker, tile by tile);
//  * the route takes exactly the layers it can: FP4 with bf16-exact scale products, INT4 with
//    groups of whole tiles or one per row, pair panels only.
// Where a CPU grants AMX, QuantPanelPairMatmul takes the route with the real instructions, which
// the pair-form tests of quant_panel_matmul_test.cc then check (this test prints the route).
#include "kernels/cpu/fast/quant_panel_amx.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "gtest/gtest.h"
#include "tests/kernels/cpu/amx_model.h"
#include "tests/kernels/cpu/quant_panel_test_util.h"

namespace tessera::kernels::cpu::fast {
namespace {

using panel_test::Form;
using panel_test::Layer;

// The CPU runs the route's tile maker (AVX-512: QuantPanelAvailable alone is true on AVX2 too,
// for the f32 form), and TESSERA_QUANT_PANEL_AMX=0 does not turn it off.
bool RouteRunsHere() {
  const char* e = std::getenv("TESSERA_QUANT_PANEL_AMX");
  return QuantPanelAvailable() && std::string_view(QuantPanelTargetName()) == "avx512" &&
         (e == nullptr || std::string_view(e) != "0");
}

// INT4 headers: f32 with fractional zero points, f32 with integer ones (scales off the f16 grid),
// f16 with integer ones, f16 symmetric.
enum class Header { kF32, kF32Integer, kF16, kSymmetric };

// A pair-panel layer of `format`: MXFP4 exponents `exps` in turn (NVFP4 as Make draws its scales:
// subnormal, normal, negative); INT4 groups of `group` with `header`'s values.
Layer AmxLayer(QuantDecode format, int64_t n, int64_t k, int64_t group, uint32_t seed, Form form,
               const std::vector<uint8_t>& exps, Header header = Header::kF32) {
  Layer l = panel_test::Make(format, n, k, group, seed, form);
  if (format == QuantDecode::kMxfp4) {
    for (size_t i = 0; i < l.block_scales.size(); ++i) {
      l.block_scales[i] = exps[(i * 7 + seed) % exps.size()];
    }
  } else if (format == QuantDecode::kInt4 && header != Header::kF32) {
    const bool half = header == Header::kF16 || header == Header::kSymmetric;
    for (auto& v : l.scales) {
      v = half ? numeric::HalfToFloat(numeric::FloatToHalf(v)) : v * (1.0f + 0x1p-20f);
    }
    for (auto& z : l.zeros) z = header == Header::kSymmetric ? 8.0f : std::round(z);
  }
  panel_test::Repack(l);
  if (format == QuantDecode::kInt4) {
    EXPECT_EQ(l.w.half_panel_headers, header == Header::kF16 || header == Header::kSymmetric);
    EXPECT_EQ(l.w.symmetric_panels, header == Header::kSymmetric);
  }
  return l;
}

// y [rows, n] of the route on the model, columns split into pieces of `step`, each piece into a
// fresh buffer (a call may write its own columns only).
// caller_sums: the group sums given, as the engine computes them once per call.
std::vector<float> RunModel(const Layer& l, const float* x, int64_t rows, int64_t step,
                            bool caller_sums = false) {
  const int64_t stride = Bf16DotActStride(l.k);
  std::vector<uint16_t> hi(rows * stride), lo(rows * stride);
  RoundActsToBf16(x, l.k, 0, rows, hi.data(), lo.data(), nullptr);
  const uint16_t* lo_or_null = l.form == Form::kSplit ? lo.data() : nullptr;
  std::vector<float> sums(caller_sums ? QuantPanelGroupSumsCount(l.w, rows) : 0);
  if (!sums.empty()) QuantPanelGroupSums(l.w, x, 0, rows, sums.data());
  std::vector<float> y(rows * l.n, -7.0f);
  for (int64_t b = 0; b < l.n; b += step) {
    const int64_t e = std::min(l.n, b + step);
    std::vector<float> piece(rows * l.n, -7.0f);
    internal::QuantPanelAmxMatmul(l.w, x, hi.data(), lo_or_null, rows, l.bias.data(), piece.data(),
                                  b, e, testing::kModelBf16Gemms,
                                  sums.empty() ? nullptr : sums.data());
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

TEST(QuantPanelAmxTest, RouteTakesWhatItCanFold) {
  if (!RouteRunsHere()) GTEST_SKIP() << "no AVX-512 on this CPU, or TESSERA_QUANT_PANEL_AMX=0";
  std::cout << "quant pair panel route: "
            << (AmxBf16Usable() ? "amx-tiles" : "avx512 (no AMX granted)") << "\n";
  const auto takes = [](QuantDecode f, int64_t k, int64_t group, Form form,
                        std::vector<uint8_t> exps) {
    return QuantPanelAmxTakes(AmxLayer(f, 16, k, group, 1, form, exps).w);
  };
  EXPECT_TRUE(takes(QuantDecode::kNvfp4, 32, 0, Form::kSplit, {}));
  EXPECT_TRUE(takes(QuantDecode::kMxfp4, 64, 0, Form::kSplit, {2, 252}));
  for (uint8_t e : {0, 1, 253, 254}) {
    EXPECT_FALSE(takes(QuantDecode::kMxfp4, 64, 0, Form::kSplit, {120, e})) << int{e};
  }
  for (int64_t group : {32, 64, 96, 128}) {
    EXPECT_TRUE(takes(QuantDecode::kInt4, 384, group, Form::kSplit, {})) << group;
  }
  EXPECT_TRUE(takes(QuantDecode::kInt4, 40, 40, Form::kBf16, {}));  // one group per row
  EXPECT_FALSE(takes(QuantDecode::kInt4, 64, 16, Form::kSplit, {}));
  EXPECT_FALSE(takes(QuantDecode::kInt4, 80, 40, Form::kSplit, {}));
  // Not the f32 form.
  EXPECT_FALSE(takes(QuantDecode::kNvfp4, 32, 0, Form::kF32, {}));
  EXPECT_FALSE(takes(QuantDecode::kInt4, 128, 32, Form::kF32, {}));
}

// Row m one-hot at k = m: y[m, c] is column c's weight m, exact (bias 0).
TEST(QuantPanelAmxTest, OneHotRowsReadEveryWeightExactly) {
  if (!RouteRunsHere()) GTEST_SKIP() << "no AVX-512 on this CPU, or TESSERA_QUANT_PANEL_AMX=0";
  struct Case {
    QuantDecode f;
    int64_t n, k, group;
  };
  for (const Case& t : {Case{QuantDecode::kMxfp4, 37, 96, 0}, Case{QuantDecode::kMxfp4, 3, 32, 0},
                        Case{QuantDecode::kNvfp4, 16, 48, 0}, Case{QuantDecode::kNvfp4, 18, 16, 0},
                        Case{QuantDecode::kInt4, 37, 128, 32}, Case{QuantDecode::kInt4, 20, 96, 96},
                        Case{QuantDecode::kInt4, 17, 40, 40}}) {
    for (const Header header : {Header::kF32Integer, Header::kF16, Header::kSymmetric}) {
      if (t.f != QuantDecode::kInt4 && header != Header::kF16) continue;
      Layer l = AmxLayer(t.f, t.n, t.k, t.group, static_cast<uint32_t>(t.n + t.k), Form::kSplit,
                         {2, 3, 127, 251, 252}, header);
      std::fill(l.bias.begin(), l.bias.end(), 0.0f);
      std::vector<float> x(t.k * t.k, 0.0f);
      for (int64_t m = 0; m < t.k; ++m) x[m * t.k + m] = 1.0f;
      for (int64_t rows : {t.k, int64_t{1}}) {  // decoded panels (k > 32), tiles made in the walk
        for (int64_t m0 = 0; m0 < t.k; m0 += rows) {
          const std::vector<float> y = RunModel(l, x.data() + m0 * t.k, rows, 16);
          for (int64_t m = 0; m < rows; ++m) {
            for (int64_t c = 0; c < t.n; ++c) {
              ASSERT_EQ(y[m * t.n + c], static_cast<float>(l.Weight(c, m0 + m)))
                  << panel_test::Name(t.f) << " n " << t.n << " k " << t.k << " column " << c
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
  if (!RouteRunsHere()) GTEST_SKIP() << "no AVX-512 on this CPU, or TESSERA_QUANT_PANEL_AMX=0";
  const auto [format, form] = GetParam();
  struct Shape {
    int64_t n, k, group;  // group: INT4 only
  };
  const bool int4 = format == QuantDecode::kInt4;
  const std::vector<Shape> shapes =
      int4 ? std::vector<Shape>{{37, 256, 128},  {70, 96, 96}, {16, 1024, 64},
                                {5, 1536, 1536}, {21, 40, 40}, {19, 64, 32}}
           : std::vector<Shape>{{37, 64, 0}, {16, 32, 0},   {70, 160, 0}, {5, 2048, 0},
                                {33, 48, 0}, {21, 1040, 0}, {19, 16, 0}};
  int variant = 0;
  for (const Shape& s : shapes) {
    if (format == QuantDecode::kMxfp4 && s.k % 32 != 0) continue;
    const Header header = static_cast<Header>(int4 ? variant++ % 4 : 0);
    SCOPED_TRACE(panel_test::Name(format) + " n " + std::to_string(s.n) + " k " +
                 std::to_string(s.k) + " header " + std::to_string(static_cast<int>(header)));
    const int64_t rows = 53;
    Layer l = AmxLayer(format, s.n, s.k, s.group, static_cast<uint32_t>(s.n * 131 + s.k), form,
                       {110, 118, 121, 126, 127, 130, 133}, header);
    ASSERT_TRUE(QuantPanelAmxTakes(l.w));
    std::vector<float> x = panel_test::Activations(rows, s.k, static_cast<uint32_t>(s.k));
    if (form == Form::kBf16) x = panel_test::RoundedToBf16(x);
    const std::vector<float> all = RunModel(l, x.data(), rows, s.n);
    for (int64_t m = 0; m < rows; ++m) {
      for (int64_t c = 0; c < s.n; ++c) {
        double exact = l.bias[c], mag = 0;
        for (int64_t i = 0; i < s.k; ++i) {
          const double xv = x[m * s.k + i];
          exact += xv * l.Weight(c, i);
          mag += std::fabs(xv) * l.Magnitude(c, i);
        }
        // Split: lo's 2^-16 relative; the f32 tile sums, hi and lo products in one (FP4: over K;
        // INT4: over each group, then the folds); α and the bias.
        const int64_t terms = int4 ? s.k + 2 * l.group + 4 : 2 * s.k + 4;
        const double tol =
            (std::ldexp(1.0, -16) * (form == Form::kSplit) + terms * std::ldexp(1.0, -24)) * mag +
            std::ldexp(1.0, -22) * std::fabs(exact) + 1e-30;
        ASSERT_NEAR(all[m * s.n + c], exact, tol) << "m " << m << " c " << c;
      }
    }
    const std::vector<float> split = RunModel(l, x.data(), rows, 7, /*caller_sums=*/true);
    ASSERT_EQ(std::memcmp(split.data(), all.data(), rows * s.n * 4), 0);
    for (int64_t r : {1, 2, 5, 16, 17, 32, 33}) {
      for (int64_t m0 = 0; m0 + r <= rows; m0 += r) {
        const std::vector<float> part = RunModel(l, x.data() + m0 * s.k, r, r % 2 == 0 ? 16 : 7);
        ASSERT_EQ(std::memcmp(part.data(), all.data() + m0 * s.n, r * s.n * 4), 0)
            << "rows " << r << " from " << m0;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Formats, QuantPanelAmxFormTest,
                         ::testing::Combine(::testing::Values(QuantDecode::kMxfp4,
                                                              QuantDecode::kNvfp4,
                                                              QuantDecode::kInt4),
                                            ::testing::Values(Form::kSplit, Form::kBf16)),
                         [](const ::testing::TestParamInfo<std::tuple<QuantDecode, Form>>& info) {
                           return panel_test::Name(std::get<0>(info.param)) + "_" +
                                  panel_test::Name(std::get<1>(info.param));
                         });

}  // namespace
}  // namespace tessera::kernels::cpu::fast
