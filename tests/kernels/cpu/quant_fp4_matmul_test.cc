// Tests of kernels/cpu/quant/fp4_matmul.h: NVFP4 and MXFP4 dequantize-row functions against the
// spec formulas with independent E2M1/E4M3/E8M0 decoders (bit for bit), W4A16 and W4A4 (static
// and per-row global scales) against a double-precision matmul of the dequantized operands, the
// exactness of the W4A4 block terms, odd shapes (N = 1, N = 7, K = one block), and batch
// invariance.
#include "kernels/cpu/quant/fp4_matmul.h"

#include <bit>
#include <cmath>
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
using testing::OracleDecodeE2m1;
using testing::OracleDecodeE4m3;
using testing::OracleDecodeE8m0;
using testing::RandomActivations;
using testing::RandomBytes;
using testing::RandomFloats;
using testing::ReferenceMatmul;

uint8_t Nibble(const uint8_t* packed, int64_t i) {
  return static_cast<uint8_t>((packed[i / 2] >> (4 * (i % 2))) & 0xF);
}

struct Nvfp4Data {
  std::vector<uint8_t> packed;
  std::vector<uint8_t> sf;
  Nvfp4Weights view;
};

Nvfp4Data MakeNvfp4(std::mt19937& rng, int64_t n, int64_t k, float alpha_w) {
  Nvfp4Data d;
  d.packed = RandomBytes(rng, n * k / 2, 0, 255);
  d.sf = RandomBytes(rng, n * k / 16, 0, 0x7E);  // every finite UE4M3 code, 0 included
  d.view = {d.packed.data(), d.sf.data(), alpha_w};
  return d;
}

struct Mxfp4Data {
  std::vector<uint8_t> packed;
  std::vector<uint8_t> e;
  Mxfp4Weights view;
};

Mxfp4Data MakeMxfp4(std::mt19937& rng, int64_t n, int64_t k, int e_lo, int e_hi) {
  Mxfp4Data d;
  d.packed = RandomBytes(rng, n * k / 2, 0, 255);
  d.e = RandomBytes(rng, n * k / 32, e_lo, e_hi);
  d.view = {d.packed.data(), d.e.data()};
  return d;
}

template <typename Dequantize>
std::vector<double> DequantizedWeights(Dequantize dequantize, int64_t n_total, int64_t k) {
  std::vector<float> row(k);
  std::vector<double> out(n_total * k);
  for (int64_t n = 0; n < n_total; ++n) {
    dequantize(n, row.data());
    for (int64_t i = 0; i < k; ++i) out[n * k + i] = row[i];
  }
  return out;
}

TEST(Fp4DequantizeTest, Nvfp4RowIsCodeTimesBlockScaleTimesGlobal) {
  std::mt19937 rng(41);
  const int64_t n_total = 3;
  const int64_t k = 64;
  Nvfp4Data d = MakeNvfp4(rng, n_total, k, 0.0123f);
  std::vector<float> row(k);
  for (int64_t n = 0; n < n_total; ++n) {
    DequantizeNvfp4WeightRow(d.view, k, n, row.data());
    for (int64_t i = 0; i < k; ++i) {
      // e2m1 · sf is exact in double and in float; then one f32 product with α_w.
      const float exact = static_cast<float>(OracleDecodeE2m1(Nibble(&d.packed[n * k / 2], i)) *
                                             OracleDecodeE4m3(d.sf[n * k / 16 + i / 16]));
      const float want = exact * 0.0123f;
      ASSERT_EQ(std::bit_cast<uint32_t>(row[i]), std::bit_cast<uint32_t>(want)) << n << "," << i;
    }
  }
}

TEST(Fp4DequantizeTest, Mxfp4RowIsExactCodeTimesPowerOfTwo) {
  std::mt19937 rng(42);
  const int64_t n_total = 4;
  const int64_t k = 256;
  Mxfp4Data d = MakeMxfp4(rng, n_total, k, 0, 255);  // the whole E8M0 range, NaN included
  std::vector<float> row(k);
  for (int64_t n = 0; n < n_total; ++n) {
    DequantizeMxfp4WeightRow(d.view, k, n, row.data());
    for (int64_t i = 0; i < k; ++i) {
      // Both factors are exact in f32 (2^-127 as a subnormal); so is their product unless it
      // overflows to inf (6 · 2^127), which IEEE f32 multiplication defines.
      const float want = static_cast<float>(OracleDecodeE2m1(Nibble(&d.packed[n * k / 2], i))) *
                         static_cast<float>(OracleDecodeE8m0(d.e[n * k / 32 + i / 32]));
      if (std::isnan(want)) {
        ASSERT_TRUE(std::isnan(row[i]));
      } else {
        ASSERT_EQ(std::bit_cast<uint32_t>(row[i]), std::bit_cast<uint32_t>(want)) << n << "," << i;
      }
    }
  }
}

struct Shape {
  int64_t n;
  int64_t k;
  int64_t rows;
};

TEST(Fp4W4A16Test, Nvfp4AndMxfp4MatchDoubleReference) {
  std::mt19937 rng(43);
  const Shape shapes[] = {{1, 32, 1}, {7, 32, 3}, {7, 96, 17}, {40, 256, 3}, {1, 512, 17}};
  for (const Shape& s : shapes) {
    SCOPED_TRACE(::testing::Message() << "n=" << s.n << " k=" << s.k << " rows=" << s.rows);
    const std::vector<float> x = RandomActivations(rng, s.rows * s.k);
    const std::vector<double> xd(x.begin(), x.end());
    const std::vector<float> bias = RandomFloats(rng, s.n, -1.0f, 1.0f);
    std::vector<float> y(s.rows * s.n);

    Nvfp4Data nv = MakeNvfp4(rng, s.n, s.k, 0.003f);
    ASSERT_TRUE(
        MatmulNvfp4W4A16(nv.view, s.n, s.k, x.data(), s.rows, bias.data(), y.data(), 0, s.n));
    const auto nv_w = DequantizedWeights(
        [&](int64_t n, float* out) { DequantizeNvfp4WeightRow(nv.view, s.k, n, out); }, s.n, s.k);
    ExpectCloseToReference(y, ReferenceMatmul(xd, nv_w, bias.data(), s.rows, s.n, s.k), s.k);

    Mxfp4Data mx = MakeMxfp4(rng, s.n, s.k, 115, 130);
    ASSERT_TRUE(MatmulMxfp4W4A16(mx.view, s.n, s.k, x.data(), s.rows, nullptr, y.data(), 0, s.n));
    const auto mx_w = DequantizedWeights(
        [&](int64_t n, float* out) { DequantizeMxfp4WeightRow(mx.view, s.k, n, out); }, s.n, s.k);
    ExpectCloseToReference(y, ReferenceMatmul(xd, mx_w, nullptr, s.rows, s.n, s.k), s.k);
  }
}

// Activations NVFP4-quantized with global scale(s) g and the α that goes with them.
struct ActData {
  std::vector<uint8_t> packed;
  std::vector<uint8_t> sf;
  std::vector<float> g;
  std::vector<float> alpha;
  Nvfp4Activations view;
};

ActData QuantizeActivations(const std::vector<float>& x, int64_t rows, int64_t k, bool per_row,
                            float alpha_w) {
  ActData a;
  a.packed.resize(rows * k / 2);
  a.sf.resize(rows * k / 16);
  if (per_row) {
    a.g.resize(rows);
    Nvfp4DynamicGlobalScalePerRow(x.data(), rows, k, a.g.data());
  } else {
    a.g = {2688.0f / 40.0f};  // a static input_global_scale for amax_x = 40
  }
  EXPECT_TRUE(
      QuantizeNvfp4(x.data(), rows, k, a.g.data(), per_row ? 1 : 0, a.packed.data(), a.sf.data()));
  for (float g : a.g) a.alpha.push_back(Nvfp4Alpha(alpha_w, g));
  a.view = {a.packed.data(), a.sf.data(), a.alpha.data(), per_row ? 1 : 0};
  return a;
}

TEST(Fp4W4A4Test, MatchesDoubleReference) {
  std::mt19937 rng(44);
  const Shape shapes[] = {{1, 16, 1}, {7, 16, 3}, {7, 48, 17}, {33, 256, 3}, {1, 1024, 17}};
  for (const Shape& s : shapes) {
    for (bool per_row : {false, true}) {
      SCOPED_TRACE(::testing::Message()
                   << "n=" << s.n << " k=" << s.k << " rows=" << s.rows << " per_row=" << per_row);
      const float alpha_w = 0.002f;
      Nvfp4Data w = MakeNvfp4(rng, s.n, s.k, alpha_w);
      const std::vector<float> x = RandomActivations(rng, s.rows * s.k);
      const ActData a = QuantizeActivations(x, s.rows, s.k, per_row, alpha_w);
      const std::vector<float> bias = RandomFloats(rng, s.n, -1.0f, 1.0f);
      std::vector<float> y(s.rows * s.n);
      ASSERT_TRUE(MatmulNvfp4W4A4(w.view, s.n, s.k, a.view, s.rows, bias.data(), y.data(), 0, s.n));
      // x ≈ e2m1(qa) · sf_a / g, in double; W from the dequantize-row function.
      std::vector<double> xd(s.rows * s.k);
      for (int64_t m = 0; m < s.rows; ++m) {
        const double g = a.g[per_row ? m : 0];
        for (int64_t i = 0; i < s.k; ++i) {
          xd[m * s.k + i] = OracleDecodeE2m1(Nibble(a.packed.data(), m * s.k + i)) *
                            OracleDecodeE4m3(a.sf[(m * s.k + i) / 16]) / g;
        }
      }
      const auto wd = DequantizedWeights(
          [&](int64_t n, float* out) { DequantizeNvfp4WeightRow(w.view, s.k, n, out); }, s.n, s.k);
      ExpectCloseToReference(y, ReferenceMatmul(xd, wd, bias.data(), s.rows, s.n, s.k), s.k);
    }
  }
}

TEST(Fp4W4A4Test, SingleBlockIsExactUpToTheAlphaProduct) {
  // With one block the sum over blocks has a single exact term, so y = fl(α · term).
  std::mt19937 rng(45);
  for (int trial = 0; trial < 200; ++trial) {
    Nvfp4Data w = MakeNvfp4(rng, 1, 16, 1.0f);
    const std::vector<uint8_t> qa = RandomBytes(rng, 8, 0, 255);
    const std::vector<uint8_t> sfa = RandomBytes(rng, 1, 0, 0x7E);
    const float alpha = RandomFloats(rng, 1, 1e-4f, 1.0f)[0];
    const Nvfp4Activations a{qa.data(), sfa.data(), &alpha, 0};
    float y = 0.0f;
    ASSERT_TRUE(MatmulNvfp4W4A4(w.view, 1, 16, a, 1, nullptr, &y, 0, 1));
    double dot = 0.0;
    for (int i = 0; i < 16; ++i) {
      dot += OracleDecodeE2m1(Nibble(qa.data(), i)) * OracleDecodeE2m1(Nibble(w.packed.data(), i));
    }
    const double term = OracleDecodeE4m3(sfa[0]) * OracleDecodeE4m3(w.sf[0]) * dot;
    ASSERT_EQ(static_cast<double>(static_cast<float>(term)), term);  // the term is exact in f32
    ASSERT_EQ(std::bit_cast<uint32_t>(y),
              std::bit_cast<uint32_t>(static_cast<float>(static_cast<double>(alpha) * term)));
  }
}

TEST(Fp4MatmulTest, RejectsBadShapes) {
  std::vector<uint8_t> b(64, 0);
  std::vector<float> x(48, 1.0f);
  float y[1];
  const float alpha = 1.0f;
  const Nvfp4Weights nv{b.data(), b.data(), 1.0f};
  const Mxfp4Weights mx{b.data(), b.data()};
  const Nvfp4Activations a{b.data(), b.data(), &alpha, 0};
  EXPECT_FALSE(MatmulNvfp4W4A16(nv, 1, 24, x.data(), 1, nullptr, y, 0, 1));
  EXPECT_FALSE(MatmulNvfp4W4A4(nv, 1, 24, a, 1, nullptr, y, 0, 1));
  EXPECT_FALSE(MatmulMxfp4W4A16(mx, 1, 48, x.data(), 1, nullptr, y, 0, 1));
  EXPECT_TRUE(MatmulMxfp4W4A16(mx, 1, 32, x.data(), 1, nullptr, y, 0, 1));
  EXPECT_FALSE(MatmulMxfp4W4A16(mx, 1, 32, x.data(), 1, nullptr, y, 1, 0));
}

TEST(Fp4MatmulTest, BatchInvariant) {
  std::mt19937 rng(46);
  const int64_t n = 7;
  const int64_t k = 128;
  const int64_t rows = 17;
  const std::vector<float> x = RandomActivations(rng, rows * k);
  const std::vector<float> bias = RandomFloats(rng, n, -1.0f, 1.0f);
  Nvfp4Data nv = MakeNvfp4(rng, n, k, 0.01f);
  Mxfp4Data mx = MakeMxfp4(rng, n, k, 118, 128);
  ExpectBatchInvariant(
      [&](int64_t r0, int64_t r, int64_t nb, int64_t ne, float* y) {
        return MatmulNvfp4W4A16(nv.view, n, k, &x[r0 * k], r, bias.data(), y, nb, ne);
      },
      rows, n);
  ExpectBatchInvariant(
      [&](int64_t r0, int64_t r, int64_t nb, int64_t ne, float* y) {
        return MatmulMxfp4W4A16(mx.view, n, k, &x[r0 * k], r, bias.data(), y, nb, ne);
      },
      rows, n);
  for (bool per_row : {false, true}) {
    const ActData a = QuantizeActivations(x, rows, k, per_row, 0.01f);
    ExpectBatchInvariant(
        [&](int64_t r0, int64_t r, int64_t nb, int64_t ne, float* y) {
          Nvfp4Activations view = a.view;
          view.packed += r0 * k / 2;
          view.block_scales += r0 * k / 16;
          view.alpha += r0 * view.alpha_row_stride;
          return MatmulNvfp4W4A4(nv.view, n, k, view, r, bias.data(), y, nb, ne);
        },
        rows, n);
  }
}

}  // namespace
}  // namespace tessera::kernels::cpu
