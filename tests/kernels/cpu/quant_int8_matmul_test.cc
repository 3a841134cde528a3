// Tests of kernels/cpu/quant/int8_matmul.h: the azp correction vector, exact integer accumulation
// (bit-exact against an independently computed integer sum, including sums past 2^24 that an f32
// accumulation could not represent), every activation variant against a double-precision matmul
// of the dequantized operands, odd shapes, and batch invariance.
#include "kernels/cpu/quant/int8_matmul.h"

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
using testing::RandomActivations;
using testing::RandomFloats;
using testing::ReferenceMatmul;

std::vector<int8_t> RandomInt8(std::mt19937& rng, int64_t count, int lo, int hi) {
  std::uniform_int_distribution<int> dist(lo, hi);
  std::vector<int8_t> v(count);
  for (int8_t& b : v) b = static_cast<int8_t>(dist(rng));
  return v;
}

TEST(Int8MatmulTest, AzpAdjustmentIsRowSum) {
  const std::vector<int8_t> q = {1, -2, 3, 127, 127, 127, -128, -128, -128};
  std::vector<int32_t> adj(3);
  ComputeInt8AzpAdjustment(q.data(), 3, 3, adj.data());
  EXPECT_EQ(adj, (std::vector<int32_t>{2, 381, -384}));
}

TEST(Int8MatmulTest, IntegerAccumulationIsExact) {
  // K = 5003 products of magnitude ~10^4: |Σ| reaches ~10^7-10^8, beyond f32's 2^24 integer range,
  // so the only rounding allowed is the single conversion of the exact sum.
  std::mt19937 rng(21);
  const int64_t n_total = 3;
  const int64_t k = 5003;
  const int64_t rows = 2;
  std::vector<int8_t> qw = RandomInt8(rng, n_total * k, 90, 127);
  std::vector<int8_t> qa = RandomInt8(rng, rows * k, 90, 127);
  for (int64_t i = 0; i < k; i += 7) qa[i] = -128;
  std::vector<int32_t> adj(n_total);
  ComputeInt8AzpAdjustment(qw.data(), n_total, k, adj.data());
  const std::vector<float> sw = {1.0f, 0.5f, 0.0078125f};
  const std::vector<float> sa = {1.0f, 0.001f};
  const std::vector<int32_t> azp = {0, -37};
  Int8Weights w{qw.data(), sw.data(), true, adj.data()};
  Int8Activations a{qa.data(), sa.data(), azp.data(), true};
  std::vector<float> y(rows * n_total);
  ASSERT_TRUE(MatmulInt8W8A8(w, n_total, k, a, rows, nullptr, y.data(), 0, n_total));
  for (int64_t m = 0; m < rows; ++m) {
    for (int64_t n = 0; n < n_total; ++n) {
      int64_t acc = 0;
      int64_t wsum = 0;
      for (int64_t i = 0; i < k; ++i) {
        acc += int64_t{qa[m * k + i]} * qw[n * k + i];
        wsum += qw[n * k + i];
      }
      const int64_t corrected = acc - int64_t{azp[m]} * wsum;
      if (m == 0) {
        EXPECT_GT(corrected, int64_t{1} << 24);
      }
      const float want = sa[m] * (sw[n] * static_cast<float>(corrected));
      EXPECT_EQ(std::bit_cast<uint32_t>(y[m * n_total + n]), std::bit_cast<uint32_t>(want))
          << m << "," << n;
    }
  }
}

struct Shape {
  int64_t n;
  int64_t k;
  int64_t rows;
};

enum class ActKind { kPerTokenSymmetric, kPerTokenAsymmetric, kStaticSymmetric, kStaticAzp };

TEST(Int8MatmulTest, MatchesDoubleReference) {
  std::mt19937 rng(22);
  const Shape shapes[] = {{1, 16, 1}, {7, 33, 3}, {7, 256, 17}, {64, 100, 3}};
  for (const Shape& s : shapes) {
    for (bool w_per_row : {false, true}) {
      for (ActKind kind : {ActKind::kPerTokenSymmetric, ActKind::kPerTokenAsymmetric,
                           ActKind::kStaticSymmetric, ActKind::kStaticAzp}) {
        SCOPED_TRACE(::testing::Message()
                     << "n=" << s.n << " k=" << s.k << " rows=" << s.rows
                     << " per_row=" << w_per_row << " act=" << static_cast<int>(kind));
        std::vector<int8_t> qw = RandomInt8(rng, s.n * s.k, -128, 127);
        std::vector<float> sw = RandomFloats(rng, w_per_row ? s.n : 1, 0.001f, 0.01f);
        std::vector<int32_t> adj(s.n);
        ComputeInt8AzpAdjustment(qw.data(), s.n, s.k, adj.data());
        const std::vector<float> x = RandomActivations(rng, s.rows * s.k);
        std::vector<int8_t> qa(s.rows * s.k);
        std::vector<float> sa(s.rows);
        std::vector<int32_t> azp(s.rows, 0);
        bool per_token = true;
        bool has_azp = false;
        switch (kind) {
          case ActKind::kPerTokenSymmetric:
            QuantizeInt8PerTokenSymmetric(x.data(), s.rows, s.k, qa.data(), sa.data());
            break;
          case ActKind::kPerTokenAsymmetric:
            QuantizeInt8PerTokenAsymmetric(x.data(), s.rows, s.k, qa.data(), sa.data(), azp.data());
            has_azp = true;
            break;
          case ActKind::kStaticSymmetric:
          case ActKind::kStaticAzp:
            per_token = false;
            has_azp = kind == ActKind::kStaticAzp;
            sa[0] = 0.25f;
            azp[0] = has_azp ? 5 : 0;
            QuantizeInt8Static(x.data(), s.rows * s.k, sa[0], azp[0], qa.data());
            break;
        }
        Int8Weights w{qw.data(), sw.data(), w_per_row, adj.data()};
        Int8Activations a{qa.data(), sa.data(), has_azp ? azp.data() : nullptr, per_token};
        const std::vector<float> bias = RandomFloats(rng, s.n, -1.0f, 1.0f);
        std::vector<float> y(s.rows * s.n);
        ASSERT_TRUE(MatmulInt8W8A8(w, s.n, s.k, a, s.rows, bias.data(), y.data(), 0, s.n));

        // Reference: W from the dequantize-row function, x = (qa − azp) · sa in double.
        std::vector<double> wd(s.n * s.k);
        std::vector<float> row(s.k);
        for (int64_t n = 0; n < s.n; ++n) {
          DequantizeInt8WeightRow(w, s.k, n, row.data());
          for (int64_t i = 0; i < s.k; ++i) wd[n * s.k + i] = row[i];
        }
        std::vector<double> xd(s.rows * s.k);
        for (int64_t m = 0; m < s.rows; ++m) {
          const int64_t r = per_token ? m : 0;
          for (int64_t i = 0; i < s.k; ++i) {
            xd[m * s.k + i] = (static_cast<double>(qa[m * s.k + i]) - azp[r]) * sa[r];
          }
        }
        ExpectCloseToReference(y, ReferenceMatmul(xd, wd, bias.data(), s.rows, s.n, s.k), s.k);
      }
    }
  }
}

TEST(Int8MatmulTest, RejectsAzpWithoutAdjustment) {
  const std::vector<int8_t> q(4, 1);
  const float s = 1.0f;
  const int32_t azp = 3;
  float y = 0.0f;
  Int8Weights w{q.data(), &s, false, nullptr};
  Int8Activations a{q.data(), &s, &azp, false};
  EXPECT_FALSE(MatmulInt8W8A8(w, 1, 4, a, 1, nullptr, &y, 0, 1));
  a.azp = nullptr;
  EXPECT_TRUE(MatmulInt8W8A8(w, 1, 4, a, 1, nullptr, &y, 0, 1));
  EXPECT_EQ(y, 4.0f);
}

TEST(Int8MatmulTest, BatchInvariant) {
  std::mt19937 rng(23);
  const int64_t n = 7;
  const int64_t k = 300;
  const int64_t rows = 17;
  std::vector<int8_t> qw = RandomInt8(rng, n * k, -128, 127);
  const std::vector<float> sw = RandomFloats(rng, n, 0.001f, 0.01f);
  std::vector<int32_t> adj(n);
  ComputeInt8AzpAdjustment(qw.data(), n, k, adj.data());
  const std::vector<float> x = RandomActivations(rng, rows * k);
  std::vector<int8_t> qa(rows * k);
  std::vector<float> sa(rows);
  std::vector<int32_t> azp(rows);
  QuantizeInt8PerTokenAsymmetric(x.data(), rows, k, qa.data(), sa.data(), azp.data());
  const std::vector<float> bias = RandomFloats(rng, n, -1.0f, 1.0f);
  Int8Weights w{qw.data(), sw.data(), true, adj.data()};
  ExpectBatchInvariant(
      [&](int64_t r0, int64_t r, int64_t nb, int64_t ne, float* y) {
        Int8Activations a{&qa[r0 * k], &sa[r0], &azp[r0], true};
        return MatmulInt8W8A8(w, n, k, a, r, bias.data(), y, nb, ne);
      },
      rows, n);
}

}  // namespace
}  // namespace tessera::kernels::cpu
