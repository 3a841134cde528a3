// Tests of kernels/cpu/quant/fp8_matmul.h: the dequantize-row function against the spec's
// W = fp32(q) · s with an independent E4M3 decoder, W8A16 and every W8A8 scale combination against
// a double-precision matmul of the dequantized operands (tolerance in quant_test_util.h), odd
// shapes (N = 1, N = 7, K equal to one block, partial blocks), and batch invariance.
#include "kernels/cpu/quant/fp8_matmul.h"

#include <bit>
#include <cstdint>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "kernels/cpu/quant/activation_quant.h"
#include "tests/kernels/cpu/quant_test_util.h"

namespace tessera::kernels::cpu {
namespace {

using testing::ExpectBatchInvariant;
using testing::ExpectCloseToReference;
using testing::OracleDecodeE4m3;
using testing::RandomActivations;
using testing::RandomE4m3Codes;
using testing::RandomFloats;
using testing::ReferenceMatmul;

struct Shape {
  int64_t n;
  int64_t k;
  int64_t rows;
};

// N = 1 and N = 7 (odd, below one row block), K = one block, several blocks, a partial block.
constexpr Shape kShapes[] = {{1, 128, 1},   {7, 128, 3},  {7, 300, 17},
                             {130, 256, 3}, {1, 384, 17}, {9, 64, 3}};

struct WeightData {
  std::vector<uint8_t> q;
  std::vector<float> scales;
  Fp8Weights view;
};

WeightData MakeWeights(std::mt19937& rng, Fp8WeightScaleLayout layout, int64_t n, int64_t k) {
  WeightData d;
  d.q = RandomE4m3Codes(rng, n * k);
  int64_t count = 1;
  if (layout == Fp8WeightScaleLayout::kPerRow) count = n;
  if (layout == Fp8WeightScaleLayout::kBlock) count = NumGroups(n, 128) * NumGroups(k, 128);
  d.scales = RandomFloats(rng, count, 1.0f / 512.0f, 1.0f / 64.0f);
  d.view.q = d.q.data();
  d.view.layout = layout;
  d.view.scales = d.scales.data();
  d.view.block_n = 128;
  d.view.block_k = 128;
  return d;
}

// The dequantized weight matrix via the dequantize-row function, widened to double.
std::vector<double> DequantizedWeights(const Fp8Weights& w, int64_t n_total, int64_t k) {
  std::vector<float> row(k);
  std::vector<double> out(n_total * k);
  for (int64_t n = 0; n < n_total; ++n) {
    DequantizeFp8WeightRow(w, k, n, row.data());
    for (int64_t i = 0; i < k; ++i) out[n * k + i] = row[i];
  }
  return out;
}

constexpr Fp8WeightScaleLayout kWeightLayouts[] = {
    Fp8WeightScaleLayout::kPerTensor, Fp8WeightScaleLayout::kPerRow, Fp8WeightScaleLayout::kBlock};

TEST(Fp8DequantizeTest, RowIsDecodeTimesScaleOfItsBlock) {
  std::mt19937 rng(11);
  const int64_t n_total = 130;
  const int64_t k = 300;
  for (Fp8WeightScaleLayout layout : kWeightLayouts) {
    WeightData w = MakeWeights(rng, layout, n_total, k);
    std::vector<float> row(k);
    for (int64_t n : {0, 1, 127, 128, 129}) {
      DequantizeFp8WeightRow(w.view, k, n, row.data());
      for (int64_t i = 0; i < k; ++i) {
        float s = w.scales[0];
        if (layout == Fp8WeightScaleLayout::kPerRow) s = w.scales[n];
        if (layout == Fp8WeightScaleLayout::kBlock) s = w.scales[(n / 128) * 3 + i / 128];
        const float want = static_cast<float>(OracleDecodeE4m3(w.q[n * k + i])) * s;
        ASSERT_EQ(std::bit_cast<uint32_t>(row[i]), std::bit_cast<uint32_t>(want)) << n << "," << i;
      }
    }
  }
}

TEST(Fp8W8A16Test, MatchesDoubleReference) {
  std::mt19937 rng(12);
  for (const Shape& s : kShapes) {
    for (Fp8WeightScaleLayout layout : kWeightLayouts) {
      SCOPED_TRACE(::testing::Message() << "n=" << s.n << " k=" << s.k << " rows=" << s.rows
                                        << " layout=" << static_cast<int>(layout));
      WeightData w = MakeWeights(rng, layout, s.n, s.k);
      const std::vector<float> x = RandomActivations(rng, s.rows * s.k);
      const std::vector<float> bias = RandomFloats(rng, s.n, -1.0f, 1.0f);
      std::vector<float> y(s.rows * s.n);
      ASSERT_TRUE(
          MatmulFp8W8A16(w.view, s.n, s.k, x.data(), s.rows, bias.data(), y.data(), 0, s.n));
      const std::vector<double> xd(x.begin(), x.end());
      ExpectCloseToReference(
          y,
          ReferenceMatmul(xd, DequantizedWeights(w.view, s.n, s.k), bias.data(), s.rows, s.n, s.k),
          s.k);
    }
  }
}

// Quantized activations with owned storage.
struct ActData {
  std::vector<uint8_t> q;
  std::vector<float> scales;
  Fp8Activations view;
};

ActData QuantizeActivations(const std::vector<float>& x, int64_t rows, int64_t k,
                            Fp8ActScaleLayout layout) {
  ActData a;
  a.q.resize(rows * k);
  a.view.layout = layout;
  a.view.group_size = 128;
  switch (layout) {
    case Fp8ActScaleLayout::kPerTensor:
      a.scales = {0.05f};
      QuantizeFp8Static(x.data(), rows * k, a.scales[0], Fp8ScaleOp::kDivide, a.q.data());
      break;
    case Fp8ActScaleLayout::kPerToken:
      a.scales.resize(rows);
      QuantizeFp8PerToken(x.data(), rows, k, nullptr, kFp8PerTokenMinScale, a.q.data(),
                          a.scales.data());
      break;
    case Fp8ActScaleLayout::kPerTokenGroup:
      a.scales.resize(rows * NumGroups(k, 128));
      QuantizeFp8PerTokenGroup(x.data(), rows, k, 128, kFp8PerTokenGroupEps, a.q.data(),
                               a.scales.data());
      break;
  }
  a.view.q = a.q.data();
  a.view.scales = a.scales.data();
  return a;
}

// decode(qa) · sa, exact in double.
std::vector<double> DequantizedActivations(const ActData& a, int64_t rows, int64_t k) {
  std::vector<double> out(rows * k);
  for (int64_t m = 0; m < rows; ++m) {
    for (int64_t i = 0; i < k; ++i) {
      double s = a.scales[0];
      if (a.view.layout == Fp8ActScaleLayout::kPerToken) s = a.scales[m];
      if (a.view.layout == Fp8ActScaleLayout::kPerTokenGroup) {
        s = a.scales[m * NumGroups(k, 128) + i / 128];
      }
      out[m * k + i] = OracleDecodeE4m3(a.q[m * k + i]) * s;
    }
  }
  return out;
}

constexpr Fp8ActScaleLayout kActLayouts[] = {
    Fp8ActScaleLayout::kPerTensor, Fp8ActScaleLayout::kPerToken, Fp8ActScaleLayout::kPerTokenGroup};

TEST(Fp8W8A8Test, EveryScaleCombinationMatchesDoubleReference) {
  std::mt19937 rng(13);
  for (const Shape& s : kShapes) {
    for (Fp8WeightScaleLayout wl : kWeightLayouts) {
      for (Fp8ActScaleLayout al : kActLayouts) {
        SCOPED_TRACE(::testing::Message()
                     << "n=" << s.n << " k=" << s.k << " rows=" << s.rows
                     << " w=" << static_cast<int>(wl) << " a=" << static_cast<int>(al));
        WeightData w = MakeWeights(rng, wl, s.n, s.k);
        const std::vector<float> x = RandomActivations(rng, s.rows * s.k);
        const ActData a = QuantizeActivations(x, s.rows, s.k, al);
        const bool with_bias = (s.n % 2) == 1;
        const std::vector<float> bias = RandomFloats(rng, s.n, -1.0f, 1.0f);
        const float* b = with_bias ? bias.data() : nullptr;
        std::vector<float> y(s.rows * s.n);
        ASSERT_TRUE(MatmulFp8W8A8(w.view, s.n, s.k, a.view, s.rows, b, y.data(), 0, s.n));
        ExpectCloseToReference(
            y,
            ReferenceMatmul(DequantizedActivations(a, s.rows, s.k),
                            DequantizedWeights(w.view, s.n, s.k), b, s.rows, s.n, s.k),
            s.k);
      }
    }
  }
}

TEST(Fp8W8A8Test, BlockScalesApplyPerKBlockExactlyAsSpecified) {
  // One row, one column, two K-blocks: y = (dot_0 · sa_0) · sw_0 + (dot_1 · sa_1) · sw_1, where
  // each partial dot is exact here (small integers), so the result is fully determined.
  const int64_t k = 256;
  std::vector<uint8_t> qw(k, 0x38);  // 1.0
  std::vector<uint8_t> qa(k, 0x40);  // 2.0
  const std::vector<float> sw = {0.25f, 3.0f};
  const std::vector<float> sa = {0.5f, 0.125f};
  Fp8Weights w{qw.data(), Fp8WeightScaleLayout::kBlock, sw.data(), 128, 128};
  Fp8Activations a{qa.data(), Fp8ActScaleLayout::kPerTokenGroup, sa.data(), 128};
  float y = 0.0f;
  ASSERT_TRUE(MatmulFp8W8A8(w, 1, k, a, 1, nullptr, &y, 0, 1));
  EXPECT_EQ(y, 256.0f * 0.5f * 0.25f + 256.0f * 0.125f * 3.0f);
}

TEST(Fp8W8A8Test, RejectsInconsistentDescriptions) {
  std::vector<uint8_t> q(256, 0);
  std::vector<float> s(4, 1.0f);
  float y[2];
  Fp8Weights w{q.data(), Fp8WeightScaleLayout::kBlock, s.data(), 128, 128};
  Fp8Activations a{q.data(), Fp8ActScaleLayout::kPerTokenGroup, s.data(), 64};
  EXPECT_FALSE(MatmulFp8W8A8(w, 1, 256, a, 1, nullptr, y, 0, 1));  // block_k != group
  a.group_size = 128;
  EXPECT_TRUE(MatmulFp8W8A8(w, 1, 256, a, 1, nullptr, y, 0, 1));
  EXPECT_FALSE(MatmulFp8W8A8(w, 1, 256, a, 1, nullptr, y, 0, 2));  // n_end > n_total
  w.block_n = 0;
  EXPECT_FALSE(MatmulFp8W8A8(w, 1, 256, a, 1, nullptr, y, 0, 1));
  EXPECT_FALSE(MatmulFp8W8A16(w, 1, 256, s.data(), 1, nullptr, y, 0, 1));
}

TEST(Fp8MatmulTest, BatchInvariant) {
  std::mt19937 rng(14);
  const int64_t n = 9;
  const int64_t k = 384;
  const int64_t rows = 17;
  const std::vector<float> x = RandomActivations(rng, rows * k);
  const std::vector<float> bias = RandomFloats(rng, n, -1.0f, 1.0f);
  for (Fp8WeightScaleLayout wl : kWeightLayouts) {
    WeightData w = MakeWeights(rng, wl, n, k);
    ExpectBatchInvariant(
        [&](int64_t r0, int64_t r, int64_t nb, int64_t ne, float* y) {
          return MatmulFp8W8A16(w.view, n, k, &x[r0 * k], r, bias.data(), y, nb, ne);
        },
        rows, n);
    for (Fp8ActScaleLayout al : kActLayouts) {
      const ActData a = QuantizeActivations(x, rows, k, al);
      ExpectBatchInvariant(
          [&](int64_t r0, int64_t r, int64_t nb, int64_t ne, float* y) {
            Fp8Activations view = a.view;
            view.q += r0 * k;
            if (al == Fp8ActScaleLayout::kPerToken) view.scales += r0;
            if (al == Fp8ActScaleLayout::kPerTokenGroup) view.scales += r0 * NumGroups(k, 128);
            return MatmulFp8W8A8(w.view, n, k, view, r, bias.data(), y, nb, ne);
          },
          rows, n);
    }
  }
}

}  // namespace
}  // namespace tessera::kernels::cpu
