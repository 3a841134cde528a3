// The quantized-weight panel kernel (kernels/cpu/fast/quant_panel_matmul.h) on random codes and
// odd shapes, for INT4 and INT8 weight-only (fractional and integer zero points, groups of 8 to
// K), MXFP4 and NVFP4 W4A16, in the f32 form and (4-bit codes, 6-bit byte codes) the bf16-pair
// form with split, bf16 and int16 activations (the int16 route on groups of up to 128 k):
//  * each output within the header's bound of the exact sum in double of x (bf16 activations:
//    bf16(x); int16: plus its quantization bound per group) times the reference's dequantized
//    weights: INT4 / INT8 (float(q) − z) · s as kernels/cpu/quant decodes them; MXFP4 e2m1 · 2^(e −
//    127); NVFP4 (e2m1 · sf) · α, with subnormal and negative scale bytes;
//  * every row bit-identical alone (the register path) and in calls of 2-20 rows (row tiles
//    over decoded K blocks: 6 rows in the f32 form, 3 in the pair form), under column splits at
//    odd places and panel boundaries;
//  * the split really carries each activation's low half (a case where hi alone is far off);
//  * int16 activations: rows with 300x outlier channels within the bound, a NaN or inf activation
//    making exactly its row NaN;
//  * the repack puts each code, scale and zero point where the header says (byte codes of up to
//    6 bits in the pair form too); NaN scale codes are refused;
//  * layers whose zero points all sit at the centre store scales alone, and layers whose values
//    are all f16 store f16 headers, with the same results.
#include "kernels/cpu/fast/quant_panel_matmul.h"

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "gtest/gtest.h"
#include "hwy/aligned_allocator.h"
#include "kernels/cpu/fast/bf16_dot_matmul.h"
#include "kernels/cpu/fast/column_panels.h"
#include "kernels/cpu/quant/int_weight_only_matmul.h"
#include "kernels/numeric/e8m0.h"
#include "kernels/numeric/fp4.h"
#include "kernels/numeric/fp8.h"
#include "kernels/numeric/half.h"
#include "tests/kernels/cpu/quant_panel_test_util.h"

namespace tessera::kernels::cpu::fast {
namespace {

using panel_test::Activations;
using panel_test::ByteCentre;
using panel_test::Form;
using panel_test::Layer;
using panel_test::Make;
using panel_test::Name;
using panel_test::PanelFormOf;
using panel_test::Repack;
using panel_test::RoundedToBf16;
using panel_test::RunPanels;
using panel_test::Runs;

class QuantPanelTest : public ::testing::TestWithParam<std::tuple<QuantDecode, Form>> {
 protected:
  QuantDecode Format() const { return std::get<0>(GetParam()); }
  Form KernelForm() const { return std::get<1>(GetParam()); }
};

TEST_P(QuantPanelTest, AccurateAndBatchInvariantOnOddShapes) {
  const QuantDecode format = Format();
  const Form form = KernelForm();
  struct Shape {
    int64_t n, k, group;  // group: INT4 only
  };
  // {33, 1280, 128}: decoded K blocks of 4 + 4 + 2 groups (INT4), 16 + 16 + 8 (MXFP4), 32 + 32
  // + 16 (NVFP4): a partial last block after full ones.
  for (const Shape& s : {Shape{1, 32, 8}, Shape{17, 64, 32}, Shape{37, 256, 128}, Shape{70, 96, 96},
                         Shape{16, 1024, 64}, Shape{33, 2048, 128}, Shape{5, 1536, 1536},
                         Shape{67, 160, 16}, Shape{33, 1280, 128}}) {
    SCOPED_TRACE(Name(format) + " n " + std::to_string(s.n) + " k " + std::to_string(s.k));
    const int64_t rows = 40;
    const Layer l = Make(format, s.n, s.k, s.group, static_cast<uint32_t>(s.n * 131 + s.k), form);
    if (!Runs(l)) GTEST_SKIP() << "no AVX-512 (BF16, VNNI) on this CPU";
    FastQuantWeights src = l.w;  // the checkpoint's codes (l.w.q points at the panels)
    src.q = l.q.data();
    ASSERT_TRUE(form == Form::kF32     ? QuantPanelSupported(src)
                : form == Form::kInt16 ? QuantPanelSupported(src)
                                       : QuantPanelPairsSupported(src));
    if (form == Form::kInt16) {
      ASSERT_EQ(QuantPanelInt16Takes(src), QuantPanelInt16Group(l.w) != 0);
      // 8-bit byte codes: the int16 route's pairs only; the bf16 pair kernel leaves y alone.
      ASSERT_TRUE(format != QuantDecode::kInt8 || !QuantPanelPairsSupported(src));
    }
    if (form == Form::kInt16 && QuantPanelInt16Group(l.w) != l.group) {
      // The int16 route takes groups of whole 16-float vectors up to 128 k, and only those.
      ASSERT_TRUE(l.group % 16 != 0 || l.group > 128) << QuantPanelInt16Group(l.w);
      ASSERT_EQ(QuantPanelInt16Group(l.w), 0);
      continue;
    }
    const std::vector<float> x = Activations(rows, s.k, static_cast<uint32_t>(s.k));
    // What the kernel is given and multiplies: x, or bf16(x) for bf16 activations (as the engine
    // rounds them, so that the integer formats' Σx is of the same values).
    const std::vector<float> xm = form == Form::kBf16 ? RoundedToBf16(x) : x;
    // The split's activation error, 2^-16·|x| per product (bf16_dot_matmul.h).
    const double split = form == Form::kSplit ? std::ldexp(1.0, -16) : 0.0;
    std::vector<double> amax(rows * (s.k / l.group));  // per row and group
    for (int64_t i = 0; i < rows * s.k; ++i) {
      double& a = amax[i / l.group];
      a = std::max(a, std::fabs(1.0 * xm[i]));
    }
    for (const bool bias : {true, false}) {
      const std::vector<float> all = RunPanels(l, xm.data(), rows, s.n, bias);
      for (int64_t m = 0; m < rows; ++m) {
        for (int64_t c = 0; c < s.n; ++c) {
          double exact = bias ? l.bias[c] : 0.0, mag = 0, int16 = 0;
          for (int64_t i = 0; i < s.k; ++i) {
            const double xv = xm[m * s.k + i];
            exact += xv * l.Weight(c, i);
            mag += std::fabs(xv) * l.Magnitude(c, i);
            if (form == Form::kInt16) {
              // int16_act_quant.h: |x − x̂| ≤ 1.005 · 2^-16 · the largest |x| of the group.
              int16 += std::fabs(l.Weight(c, i)) * 1.005 *
                       std::ldexp(amax[m * (s.k / l.group) + i / l.group], -16);
            }
          }
          // Absolute slack: a few f32 subnormal steps (products of MXFP4's 2^-127 scale).
          const double tol = ((s.k + l.group + 3) * std::ldexp(1.0, -24) + split) * mag + int16 +
                             std::ldexp(1.0, -23) * std::fabs(exact) + std::ldexp(1.0, -140);
          ASSERT_NEAR(all[m * s.n + c], exact, tol) << "m " << m << " c " << c;
        }
      }
      // Each row alone (register path) and in calls of other sizes (either path), split anyhow.
      for (int64_t r : {1, 2, 5, 6, 7, 9, 13, 20}) {
        for (int64_t m0 = 0; m0 + r <= rows; m0 += r) {
          const std::vector<float> part =
              RunPanels(l, xm.data() + m0 * s.k, r, r % 2 == 0 ? 16 : 7, bias);
          ASSERT_EQ(std::memcmp(part.data(), all.data() + m0 * s.n, r * s.n * 4), 0)
              << "rows " << r << " from " << m0;
        }
      }
    }
  }
}

// Activations 1 + 2^-10 (hi 1, lo 2^-10) against positive weights (codes 9-15, zero point 8): hi
// alone would miss 2^-10 of every output, over 16x the split's bound here, on both paths (1 and 9
// rows).
// Group sums a caller computes once per call (QuantPanelGroupSums, rows in two ranges) give the
// bits of the kernel's own, in both forms; layers that fold none (symmetric, FP4) need none.
TEST(QuantPanelGroupSumsTest, CallerSumsGiveTheKernelsBits) {
  if (!QuantPanelAvailable()) GTEST_SKIP() << "no AVX2 or AVX-512 on this CPU";
  for (const QuantDecode format : {QuantDecode::kInt4, QuantDecode::kInt8}) {
    for (const Form form : {Form::kF32, Form::kSplit}) {
      if (form == Form::kSplit && !QuantPanelPairsAvailable()) continue;
      SCOPED_TRACE(Name(format) + " " + Name(form));
      const Layer l = Make(format, 37, 256, 64, 31, form);
      const int64_t rows = 9, count = QuantPanelGroupSumsCount(l.w, rows);
      ASSERT_EQ(count, rows * (256 / 64));
      const std::vector<float> x = Activations(rows, 256, 8);
      std::vector<float> sums(count, NAN);
      QuantPanelGroupSums(l.w, x.data(), 0, 4, sums.data());
      QuantPanelGroupSums(l.w, x.data(), 4, rows, sums.data());
      const int64_t stride = Bf16DotActStride(256);
      std::vector<uint16_t> hi(rows * stride), lo(rows * stride);
      RoundActsToBf16(x.data(), 256, 0, rows, hi.data(), lo.data(), nullptr);
      std::vector<float> own(rows * 37, -7.0f), given(rows * 37, -7.0f);
      if (form == Form::kF32) {
        QuantPanelMatmul(l.w, x.data(), rows, l.bias.data(), own.data(), 0, 37);
        QuantPanelMatmul(l.w, x.data(), rows, l.bias.data(), given.data(), 0, 37, sums.data());
      } else {
        QuantPanelPairMatmul(l.w, x.data(), hi.data(), lo.data(), rows, l.bias.data(), own.data(),
                             0, 37);
        QuantPanelPairMatmul(l.w, x.data(), hi.data(), lo.data(), rows, l.bias.data(), given.data(),
                             0, 37, sums.data());
      }
      EXPECT_EQ(own, given);
      // Wrong sums change the result: the kernel reads them.
      for (auto& v : sums) v += 1.0f;
      if (form == Form::kF32) {
        QuantPanelMatmul(l.w, x.data(), rows, l.bias.data(), given.data(), 0, 37, sums.data());
      } else {
        QuantPanelPairMatmul(l.w, x.data(), hi.data(), lo.data(), rows, l.bias.data(), given.data(),
                             0, 37, sums.data());
      }
      EXPECT_NE(own, given);
    }
  }
  Layer sym = Make(QuantDecode::kInt4, 16, 128, 32, 3, Form::kF32);
  for (auto& z : sym.zeros) z = 8.0f;
  Repack(sym);
  EXPECT_EQ(QuantPanelGroupSumsCount(sym.w, 5), 0);
  EXPECT_EQ(QuantPanelGroupSumsCount(Make(QuantDecode::kMxfp4, 16, 64, 0, 3, Form::kF32).w, 5), 0);
}

TEST(QuantPanelPairTest, SplitCarriesTheLowHalfOfEachActivation) {
  Layer l = Make(QuantDecode::kInt4, 32, 256, 128, 11, Form::kSplit);
  if (!Runs(l)) GTEST_SKIP() << "no AVX-512 BF16 on this CPU";
  for (size_t i = 0; i < l.codes.size(); ++i) l.codes[i] = static_cast<uint8_t>(9 + i % 7);
  for (auto& z : l.zeros) z = 8.0f;
  for (int64_t r = 0; r < l.n; ++r) {
    PackU4Pairs(l.codes.data() + r * l.k, l.k, l.q.data() + r * l.k / 2);
  }
  Repack(l);
  for (const int64_t rows : {1, 9}) {
    const std::vector<float> x(rows * l.k, 1.0f + 0x1p-10f);
    const std::vector<float> y = RunPanels(l, x.data(), rows, l.n, false);
    for (int64_t m = 0; m < rows; ++m) {
      for (int64_t c = 0; c < l.n; ++c) {
        double exact = 0, mag = 0;
        for (int64_t i = 0; i < l.k; ++i) {
          exact += x[i] * l.Weight(c, i);
          mag += x[i] * l.Magnitude(c, i);
        }
        const double u = std::ldexp(1.0, -24);
        const double tol = ((l.k + l.group + 3) * u + std::ldexp(1.0, -16)) * mag;
        ASSERT_LT(tol, std::ldexp(1.0, -14) * exact);  // hi alone: 2^-10 · exact off
        ASSERT_NEAR(y[m * l.n + c], exact, tol) << rows << " rows, m " << m << " c " << c;
      }
    }
  }
}

// int16 activations: a NaN or inf activation gives its group a NaN scale, so every output of its
// row is NaN (as the split's are), and the other rows of the batch stay finite.
TEST(QuantPanelInt16Test, NonFiniteActivationMakesItsRowNan) {
  for (const QuantDecode format : {QuantDecode::kInt4, QuantDecode::kNvfp4}) {
    Layer l = Make(format, 20, 256, 128, 21, Form::kInt16);
    if (!Runs(l)) GTEST_SKIP() << "no AVX-512 VNNI / BF16 on this CPU";
    for (const float bad : {NAN, INFINITY}) {
      std::vector<float> x = Activations(9, 256, 5);
      x[4 * 256 + 130] = bad;  // row 4, second group
      const std::vector<float> y = RunPanels(l, x.data(), 9, l.n, false);
      for (int64_t m = 0; m < 9; ++m) {
        for (int64_t c = 0; c < l.n; ++c) {
          EXPECT_EQ(std::isnan(y[m * l.n + c]), m == 4) << Name(format) << " " << m << " " << c;
        }
      }
    }
  }
}

// A non-finite scale (or INT4 zero point) reaches only its own column, alone and in a batch.
TEST_P(QuantPanelTest, NonFiniteScalesStayInTheirColumn) {
  const QuantDecode format = Format();
  Layer l = Make(format, 20, 64, 32, 9, KernelForm());
  if (!Runs(l)) GTEST_SKIP() << "no AVX-512 (BF16) on this CPU";
  const int64_t groups = 64 / l.group;
  if (l.Integer()) {
    l.scales[3 * groups + 1] = INFINITY;  // column 3, group 1
    l.zeros[17 * groups] = NAN;           // column 17, group 0
  } else if (format == QuantDecode::kCodebook4) {
    l.scales[3 * groups + 1] = INFINITY;
    l.scales[17 * groups] = NAN;
  } else {
    // The largest finite scales times 6 · |x| overflow: E8M0 2^127, UE4M3 448 with α = 2^127.
    l.block_scales[3 * groups + 1] = format == QuantDecode::kMxfp4 ? 254 : 0x7E;
    l.block_scales[17 * groups] = format == QuantDecode::kMxfp4 ? 254 : 0x7E;
    if (format == QuantDecode::kNvfp4) l.w.alpha = 0x1p127f;
    for (int64_t c = 0; c < 20; ++c) {
      for (int64_t g = 0; g < groups; ++g) {
        if (c != 3 && c != 17 && format == QuantDecode::kNvfp4) {
          l.block_scales[c * groups + g] = 0;
        }
      }
    }
  }
  Repack(l);
  std::vector<float> x = Activations(8, 64, 3);
  for (auto& v : x) v *= 1e30f;
  for (const int64_t rows : {1, 8}) {
    const std::vector<float> y = RunPanels(l, x.data(), rows, 20, false);
    for (int64_t m = 0; m < rows; ++m) {
      for (int64_t c = 0; c < 20; ++c) {
        EXPECT_EQ(std::isfinite(y[m * 20 + c]), c != 3 && c != 17) << m << " " << c;
      }
    }
  }
}

std::string ParamName(const ::testing::TestParamInfo<std::tuple<QuantDecode, Form>>& info) {
  return Name(std::get<0>(info.param)) + "_" + Name(std::get<1>(info.param));
}

INSTANTIATE_TEST_SUITE_P(Formats, QuantPanelTest,
                         ::testing::Combine(::testing::Values(QuantDecode::kInt4,
                                                              QuantDecode::kInt8,
                                                              QuantDecode::kMxfp4,
                                                              QuantDecode::kNvfp4,
                                                              QuantDecode::kCodebook4),
                                            ::testing::Values(Form::kF32)),
                         ParamName);
// The bf16-pair form takes the 4-bit codes and byte codes of up to 6 bits.
INSTANTIATE_TEST_SUITE_P(
    PairForm, QuantPanelTest,
    ::testing::Combine(::testing::Values(QuantDecode::kInt4, QuantDecode::kInt8,
                                         QuantDecode::kMxfp4, QuantDecode::kNvfp4),
                       ::testing::Values(Form::kSplit, Form::kBf16, Form::kInt16)),
    ParamName);
// Codebook layers whose values are bf16 ones take the pair form too (no int16 route).
INSTANTIATE_TEST_SUITE_P(CodebookPairForm, QuantPanelTest,
                         ::testing::Combine(::testing::Values(QuantDecode::kCodebook4),
                                            ::testing::Values(Form::kSplit, Form::kBf16)),
                         ParamName);

TEST(QuantPanelLayoutTest, RepackPutsEveryCodeScaleAndZeroInItsSlot) {
  // INT4, groups of 8: a 128-byte header, then one 64-byte chunk whose 32-bit lane c holds
  // column c's code i in bits 4i-4i+3.
  const Layer l = Make(QuantDecode::kInt4, 19, 24, 8, 3);
  const int64_t group_bytes = 128 + 64, panel_bytes = 3 * group_bytes;
  ASSERT_EQ(QuantPanelsBytes(l.w), 2 * panel_bytes);
  for (int64_t c = 0; c < 32; ++c) {
    for (int64_t g = 0; g < 3; ++g) {
      const uint8_t* head = l.panels.get() + (c / 16) * panel_bytes + g * group_bytes;
      float z, s;
      uint32_t lane;
      std::memcpy(&z, head + 4 * (c % 16), 4);
      std::memcpy(&s, head + 64 + 4 * (c % 16), 4);
      std::memcpy(&lane, head + 128 + 4 * (c % 16), 4);
      EXPECT_EQ(z, c < 19 ? l.zeros[c * 3 + g] - 8.0f : 0.0f);  // centred
      EXPECT_EQ(s, c < 19 ? l.scales[c * 3 + g] : 0.0f);
      for (int64_t i = 0; i < 8; ++i) {
        const uint32_t want = c < 19 ? l.codes[c * 24 + 8 * g + i] : 0u;
        EXPECT_EQ((lane >> (4 * i)) & 0xF, want) << c << " " << i;
      }
    }
  }
  // The bf16-pair form: the same header, and lane c holds column c's even k in bits 0-15 and its
  // odd k in bits 16-31 (k = 2i at bits 4i, 2i + 1 at bits 16 + 4i).
  const Layer pairs = Make(QuantDecode::kInt4, 19, 24, 8, 3, Form::kSplit);
  ASSERT_EQ(QuantPanelsBytes(pairs.w), 2 * panel_bytes);
  for (int64_t c = 0; c < 32; ++c) {
    for (int64_t g = 0; g < 3; ++g) {
      const uint8_t* head = pairs.panels.get() + (c / 16) * panel_bytes + g * group_bytes;
      EXPECT_EQ(std::memcmp(head, l.panels.get() + (c / 16) * panel_bytes + g * group_bytes, 128),
                0);
      uint32_t lane;
      std::memcpy(&lane, head + 128 + 4 * (c % 16), 4);
      for (int64_t i = 0; i < 8; ++i) {
        const uint32_t want = c < 19 ? pairs.codes[c * 24 + 8 * g + i] : 0u;
        EXPECT_EQ((lane >> (i % 2 == 0 ? 2 * i : 16 + 2 * (i - 1))) & 0xF, want) << c << " " << i;
      }
    }
  }
  // Byte codes, groups of 4: the 128-byte header (zero points centred on the layer's centre),
  // then one chunk whose lane c holds column c's four codes minus the centre, code i in byte
  // slot[i].
  const int64_t b8_group = 128 + 64, b8_panel = 2 * b8_group;
  auto expect_byte_layout = [&](const Layer& b, float centre, const int (&slot)[4]) {
    ASSERT_EQ(QuantPanelsBytes(b.w), 2 * b8_panel);
    for (int64_t c = 0; c < 18; ++c) {
      for (int64_t g = 0; g < 2; ++g) {
        const uint8_t* head = b.panels.get() + (c / 16) * b8_panel + g * b8_group;
        float z;
        std::memcpy(&z, head + 4 * (c % 16), 4);
        EXPECT_EQ(z, b.zeros[c * 2 + g] - centre);
        for (int64_t i = 0; i < 4; ++i) {
          const int want = b.codes[c * 8 + 4 * g + i] - static_cast<int>(centre);
          EXPECT_EQ(static_cast<int8_t>(head[128 + 4 * (c % 16) + slot[i]]), want)
              << c << " " << i;
        }
      }
    }
  };
  // 8-bit codes (the largest 255: centre 128) in the f32 form, in order.
  expect_byte_layout(Make(QuantDecode::kInt8, 18, 8, 4, 5), 128.0f, {0, 1, 2, 3});
  // 6-bit codes (centre 32) in the pair form: k = 0, 2 in the low half's bytes, k = 1, 3 in the
  // high half's.
  expect_byte_layout(Make(QuantDecode::kInt8, 18, 8, 4, 5, Form::kSplit), 32.0f, {0, 2, 1, 3});
  // NVFP4: a 16-byte header of scale bytes per group of 16, then two chunks.
  const Layer nv = Make(QuantDecode::kNvfp4, 17, 32, 0, 4);
  const int64_t nv_group = 16 + 16 * 8, nv_panel = 2 * nv_group;
  ASSERT_EQ(QuantPanelsBytes(nv.w), 2 * nv_panel);
  for (int64_t c = 0; c < 17; ++c) {
    for (int64_t g = 0; g < 2; ++g) {
      const uint8_t* head = nv.panels.get() + (c / 16) * nv_panel + g * nv_group;
      EXPECT_EQ(head[c % 16], nv.block_scales[c * 2 + g]);
      for (int64_t t = 0; t < 2; ++t) {
        for (int64_t b = 0; b < 4; ++b) {
          EXPECT_EQ(head[16 + 64 * t + 4 * (c % 16) + b], nv.q[c * 16 + g * 8 + 4 * t + b])
              << c << " " << t << " " << b;
        }
      }
    }
  }
}

// Every zero point at the centre (GPTQ sym=True, GGUF Q4_0 / Q8_0): headers of scales alone, 64
// bytes fewer per group, and outputs bit-identical to the same layer with its zero points stored
// (whose folds subtract 0 · Σx), alone and in a batch.
void ExpectSymmetricLayerStoresScalesAlone(QuantDecode format, Form form) {
  SCOPED_TRACE(Name(format) + " " + Name(form));
  const float centre = format != QuantDecode::kInt8 ? 8.0f : static_cast<float>(ByteCentre(form));
  const int64_t groups = panels::Count(37) * (256 / 64);
  const int64_t code_bytes = format == QuantDecode::kInt8 ? 1024 : 512;  // 16 columns x 64
  Layer l = Make(format, 37, 256, 64, 21, form);
  for (auto& z : l.zeros) z = centre;
  Repack(l);
  ASSERT_TRUE(l.w.symmetric_panels);
  FastQuantWeights src = l.w;
  src.q = l.q.data();
  src.symmetric_panels = false;
  ASSERT_EQ(QuantPanelsBytes(src), groups * (64 + code_bytes));
  // The same layer with its zero points stored.
  Layer stored = Make(format, 37, 256, 64, 21, form);
  for (auto& z : stored.zeros) z = centre;
  stored.panels = hwy::AllocateAligned<uint8_t>(groups * (128 + code_bytes));
  stored.w =
      internal::RepackQuantPanelsAs(src, stored.panels.get(), PanelFormOf(form),
                                    internal::QuantPanelCoding{static_cast<int>(centre), false});
  ASSERT_FALSE(stored.w.symmetric_panels);
  ASSERT_EQ(internal::QuantPanelGeometryOf(stored.w).head, 128);
  std::vector<float> x = Activations(9, 256, 5);
  if (form == Form::kBf16) x = RoundedToBf16(x);
  for (const int64_t rows : {1, 9}) {
    EXPECT_EQ(RunPanels(l, x.data(), rows, 37, true), RunPanels(stored, x.data(), rows, 37, true))
        << rows << " rows";
  }
}

TEST(QuantPanelLayoutTest, SymmetricLayersStoreScalesAlone) {
  if (!QuantPanelAvailable()) GTEST_SKIP() << "no AVX2 or AVX-512 on this CPU";
  ExpectSymmetricLayerStoresScalesAlone(QuantDecode::kInt4, Form::kF32);
  ExpectSymmetricLayerStoresScalesAlone(QuantDecode::kInt8, Form::kF32);
  if (!QuantPanelPairsAvailable()) return;
  ExpectSymmetricLayerStoresScalesAlone(QuantDecode::kInt4, Form::kSplit);
  ExpectSymmetricLayerStoresScalesAlone(QuantDecode::kInt4, Form::kBf16);
  ExpectSymmetricLayerStoresScalesAlone(QuantDecode::kInt8, Form::kSplit);
  if (!QuantPanelInt16Available()) return;
  ExpectSymmetricLayerStoresScalesAlone(QuantDecode::kInt4, Form::kInt16);
  ExpectSymmetricLayerStoresScalesAlone(QuantDecode::kInt8, Form::kInt16);
}

// Scales and centred zero points that are all exactly f16 values (GPTQ / AWQ f16 scales, integer
// zero points): headers of f16 values, half the header bytes, outputs bit-identical to the same
// layer with f32 headers; symmetric too. One scale off the f16 grid keeps f32 headers.
TEST(QuantPanelLayoutTest, HalfHeadersWhereEveryValueIsAnF16) {
  if (!QuantPanelAvailable()) GTEST_SKIP() << "no AVX2 or AVX-512 on this CPU";
  const int64_t n = 37, k = 256, group = 64, groups = panels::Count(n) * (k / group);
  std::vector<Form> forms = {Form::kF32};
  if (QuantPanelPairsAvailable()) {
    forms.push_back(Form::kSplit);
    forms.push_back(Form::kBf16);
  }
  if (QuantPanelInt16Available()) forms.push_back(Form::kInt16);
  for (const Form form : forms) {
    for (const bool symmetric : {false, true}) {
      SCOPED_TRACE(Name(form) + (symmetric ? " symmetric" : ""));
      Layer l = Make(QuantDecode::kInt4, n, k, group, 23, form);
      for (auto& v : l.scales) v = numeric::HalfToFloat(numeric::FloatToHalf(v));
      for (auto& z : l.zeros) z = symmetric ? 8.0f : std::round(z);
      Repack(l);
      ASSERT_TRUE(l.w.half_panel_headers);
      ASSERT_EQ(l.w.symmetric_panels, symmetric);
      const int64_t head = symmetric ? 32 : 64;
      FastQuantWeights src = l.w;
      src.q = l.q.data();
      ASSERT_EQ(QuantPanelsBytes(src), groups * (head + 512));
      // Lane c of the first group's header: column c's centred zero point, then its scale.
      uint16_t h;
      std::memcpy(&h, l.panels.get() + 2 * 5, 2);
      EXPECT_EQ(numeric::HalfToFloat(h), symmetric ? l.scales[5 * (k / group)]
                                                   : l.zeros[5 * (k / group)] - 8.0f);
      Layer f32 = Make(QuantDecode::kInt4, n, k, group, 23, form);
      f32.scales = l.scales;
      f32.zeros = l.zeros;
      f32.panels = hwy::AllocateAligned<uint8_t>(groups * (2 * head + 512));
      FastQuantWeights f32_src = src;
      f32_src.scales = f32.scales.data();
      f32_src.zeros = f32.zeros.data();
      f32.w = internal::RepackQuantPanelsAs(f32_src, f32.panels.get(), PanelFormOf(form),
                                            internal::QuantPanelCoding{8, symmetric, false});
      std::vector<float> x = Activations(9, k, 6);
      if (form == Form::kBf16) x = RoundedToBf16(x);
      for (const int64_t rows : {1, 9}) {
        EXPECT_EQ(RunPanels(l, x.data(), rows, n, true), RunPanels(f32, x.data(), rows, n, true))
            << rows << " rows";
      }
      // One scale off the f16 grid: f32 headers.
      l.scales[3] = std::nextafter(l.scales[3], 1.0f);
      Repack(l);
      EXPECT_FALSE(l.w.half_panel_headers);
    }
  }
}

TEST(QuantPanelLayoutTest, SupportedChecksTheLayout) {
  const Layer l = Make(QuantDecode::kInt4, 16, 64, 32, 1);
  const FastQuantWeights& w = l.w;
  if (!QuantPanelAvailable()) GTEST_SKIP() << "no AVX2 or AVX-512 on this CPU";
  EXPECT_TRUE(QuantPanelSupported(w));
  FastQuantWeights odd = w;  // groups of 4: consistent but not whole 8-code chunks
  odd.scale_k = 4;
  odd.scale_row_stride = 16;
  EXPECT_FALSE(QuantPanelSupported(odd));
  FastQuantWeights ragged = w;  // 48 does not divide K (the stride as if it did)
  ragged.scale_k = 48;
  ragged.scale_row_stride = 1;
  EXPECT_FALSE(QuantPanelSupported(ragged));
  FastQuantWeights fp8 = w;
  fp8.decode = QuantDecode::kFp8;
  EXPECT_FALSE(QuantPanelSupported(fp8));
  FastQuantWeights no_zeros = w;
  no_zeros.zeros = nullptr;
  EXPECT_FALSE(QuantPanelSupported(no_zeros));
  // Byte codes: groups of whole 4-code lanes, or one group per row (scale_k >= k).
  const Layer b8 = Make(QuantDecode::kInt8, 16, 64, 32, 1);
  EXPECT_TRUE(QuantPanelSupported(b8.w));
  FastQuantWeights b8_odd = b8.w;  // groups of 2
  b8_odd.scale_k = 2;
  b8_odd.scale_row_stride = 32;
  EXPECT_FALSE(QuantPanelSupported(b8_odd));
  FastQuantWeights b8_row = b8.w;  // one group per row
  b8_row.scale_k = 1 << 20;
  b8_row.scale_row_stride = 1;
  EXPECT_TRUE(QuantPanelSupported(b8_row));
  // The bf16-pair form, where the CPU has AVX-512 BF16: 4-bit codes, and byte codes up to 63.
  EXPECT_EQ(QuantPanelPairsSupported(w), QuantPanelPairsAvailable());
  EXPECT_FALSE(QuantPanelPairsSupported(odd));
  FastQuantWeights bytes = b8.w;  // the checkpoint's codes (b8.w.q points at its panels)
  bytes.q = b8.q.data();
  EXPECT_FALSE(QuantPanelPairsSupported(bytes));  // a code of 255
  std::vector<uint8_t> six = b8.q;
  for (auto& c : six) c &= 63;
  bytes.q = six.data();
  EXPECT_EQ(QuantPanelPairsSupported(bytes), QuantPanelPairsAvailable());
  six[77] = 64;
  EXPECT_FALSE(QuantPanelPairsSupported(bytes));
  // Codebook layers (bitsandbytes NF4 / FP4): groups of whole 8-code lanes, a codebook; the pair
  // form only for a codebook of bf16 values, never the int16 route.
  const Layer nf4 = Make(QuantDecode::kCodebook4, 16, 128, 64, 4);
  FastQuantWeights cb = nf4.w;
  cb.q = nf4.q.data();
  EXPECT_TRUE(QuantPanelSupported(cb));
  EXPECT_FALSE(QuantPanelPairsSupported(cb));  // NF4's values are not bf16 ones
  EXPECT_FALSE(QuantPanelInt16Takes(cb));
  std::vector<float> rounded(nf4.codebook);
  for (float& v : rounded) v = numeric::Bf16ToFloat(numeric::FloatToBf16(v));
  FastQuantWeights cb_bf16 = cb;
  cb_bf16.codebook = rounded.data();
  EXPECT_EQ(QuantPanelPairsSupported(cb_bf16), QuantPanelPairsAvailable());
  EXPECT_FALSE(QuantPanelInt16Takes(cb_bf16));
  EXPECT_FALSE(nf4.w.pair_panels);
  EXPECT_FALSE(FastQuantSupported(cb));  // no row kernel
  FastQuantWeights no_book = cb;
  no_book.codebook = nullptr;
  EXPECT_FALSE(QuantPanelSupported(no_book));
  FastQuantWeights cb_odd = cb;  // groups of 4
  cb_odd.scale_k = 4;
  cb_odd.scale_row_stride = 32;
  EXPECT_FALSE(QuantPanelSupported(cb_odd));
  // FP4 with a NaN scale code stays on the table decoder, which propagates it.
  for (const QuantDecode f : {QuantDecode::kMxfp4, QuantDecode::kNvfp4}) {
    Layer fp4 = Make(f, 16, 64, 0, 2);
    FastQuantWeights src = fp4.w;
    src.q = fp4.q.data();
    src.block_scales = fp4.block_scales.data();
    EXPECT_TRUE(QuantPanelSupported(src));
    FastQuantWeights short_k = src;  // K not whole scale blocks, every scale finite
    short_k.k = f == QuantDecode::kMxfp4 ? 48 : 40;
    EXPECT_FALSE(QuantPanelSupported(short_k)) << Name(f);
    fp4.block_scales[5] = f == QuantDecode::kMxfp4 ? numeric::kE8m0NanCode : 0xFF;
    EXPECT_FALSE(QuantPanelSupported(src)) << Name(f);
  }
}

}  // namespace
}  // namespace tessera::kernels::cpu::fast
