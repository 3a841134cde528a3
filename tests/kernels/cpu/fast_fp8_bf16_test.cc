// The AVX-512 BF16 FP8 kernel (kernels/cpu/fast/fp8_bf16_matmul.h) against an exact sum and the
// scalar reference kernels (kernels/cpu/quant/fp8_matmul.h), on random data and odd shapes (K not
// a multiple of 64 or 32), per-tensor / per-row / 2-D block scales, W8A16 (f32 activations, the
// hi/lo bf16 split) and W8A8 (decoded E4M3 activation codes with the per-token epilogue).
// Accuracy: each output is checked against Σ x·e4m3·s computed exactly in double (x·e4m3·s has at
// most 24 + 4 + 24 significant bits) with the header's bound
//   (2^-16 [split only] + (K/4 + 8)·u)·Σ|x·w| + 3u·|y|,
// tight enough that dropping the lo half of the split fails it; and against the reference with
// the sum of both kernels' bounds. Decode: one-hot activations read back every non-NaN code at
// every K position exactly (subnormals, ±448, ±0). Batch invariance: every row alone vs. calls
// of 2..17 rows (GEMV ≤ 4 rows, tiled GEMM above), and every column split, bit for bit; and
// FastQuantMatmul dispatches to this kernel. Skipped on CPUs without AVX-512 BF16.
#include "kernels/cpu/fast/fp8_bf16_matmul.h"

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/cpu/fast/fast_quant_matmul.h"
#include "kernels/cpu/quant/fp8_matmul.h"
#include "kernels/numeric/fp8.h"

namespace tessera::kernels::cpu::fast {
namespace {

constexpr double kU = 1.0 / (1 << 24);

enum class Scales { kTensor, kRow, kBlock };

// One FP8 layer: codes, scales in the reference layout, and both kernels' descriptions.
struct Layer {
  int64_t n = 0, k = 0;
  Scales layout = Scales::kTensor;
  int64_t block_n = 16, block_k = 0;
  std::vector<uint8_t> q;
  std::vector<float> scales;
  float unit = 1.0f;

  Fp8Weights Ref() const {
    Fp8Weights w;
    w.q = q.data();
    w.scales = scales.data();
    w.layout = layout == Scales::kTensor ? Fp8WeightScaleLayout::kPerTensor
               : layout == Scales::kRow  ? Fp8WeightScaleLayout::kPerRow
                                         : Fp8WeightScaleLayout::kBlock;
    w.block_n = block_n;
    w.block_k = block_k;
    return w;
  }
  int64_t BlocksK() const { return layout == Scales::kBlock ? (k + block_k - 1) / block_k : 1; }
  float Scale(int64_t col, int64_t i) const {
    switch (layout) {
      case Scales::kTensor: return scales[0];
      case Scales::kRow: return scales[col];
      case Scales::kBlock: return scales[(col / block_n) * BlocksK() + i / block_k];
    }
    return 0.0f;
  }
  // As QuantizedLinear::InitFast describes W8A16 weights.
  FastQuantWeights W8A16() const {
    FastQuantWeights f;
    f.decode = QuantDecode::kFp8;
    f.q = q.data();
    f.n = n;
    f.k = k;
    f.scales = scales.data();
    if (layout == Scales::kBlock) {
      f.scale_rows = block_n;
      f.scale_row_stride = BlocksK();
      f.scale_k = block_k;
    } else {
      f.scale_rows = layout == Scales::kRow ? 1 : n;
      f.scale_row_stride = layout == Scales::kRow ? 1 : 0;
      f.scale_k = k;
    }
    return f;
  }
  // W8A8: bare codes, weight scales in the epilogue, per-token activation scales `sa`.
  FastQuantWeights W8A8(const float* sa) const {
    FastQuantWeights f;
    f.decode = QuantDecode::kFp8;
    f.q = q.data();
    f.n = n;
    f.k = k;
    f.scales = &unit;
    f.scale_rows = n;
    f.scale_k = k;
    f.row_scale = sa;
    f.row_scale_stride = 1;
    f.col_scale = scales.data();
    f.col_scale_stride = layout == Scales::kRow ? 1 : 0;
    return f;
  }
};

// Random non-NaN codes; a third are drawn from the edge cases (±0, subnormals, ±448, ±2^-6).
uint8_t RandomCode(std::mt19937& rng) {
  static constexpr uint8_t kEdge[] = {0x00, 0x80, 0x01, 0x81, 0x02, 0x05, 0x87, 0x07,
                                      0x08, 0x88, 0x7E, 0xFE, 0x7D, 0xF8, 0x3F, 0xB9};
  if (rng() % 3 == 0) return kEdge[rng() % 16];
  uint8_t b;
  do b = static_cast<uint8_t>(rng()); while ((b & 0x7F) == 0x7F);
  return b;
}

Layer MakeLayer(int64_t n, int64_t k, Scales layout, int64_t block_k, uint32_t seed) {
  std::mt19937 rng(seed);
  Layer l;
  l.n = n;
  l.k = k;
  l.layout = layout;
  l.block_k = block_k;
  l.q.resize(n * k);
  for (auto& b : l.q) b = RandomCode(rng);
  const int64_t count = layout == Scales::kTensor ? 1
                        : layout == Scales::kRow  ? n
                                                  : ((n + 15) / 16) * l.BlocksK();
  std::uniform_real_distribution<float> s(1e-3f, 0.1f);
  for (int64_t i = 0; i < count; ++i) l.scales.push_back(s(rng));
  return l;
}

// f32 activations over a wide dynamic range (the split must hold for every magnitude).
std::vector<float> RandomX(int64_t rows, int64_t k, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-2.0f, 2.0f);
  std::vector<float> x(rows * k);
  for (auto& v : x) v = std::ldexp(u(rng), static_cast<int>(rng() % 41) - 20);
  if (rows > 1) x[k + 1] = 0.0f;
  return x;
}

struct Fp8Acts {
  std::vector<uint8_t> q;
  std::vector<float> x;  // decoded codes
  std::vector<float> sa;
};

Fp8Acts RandomActs(int64_t rows, int64_t k, uint32_t seed) {
  std::mt19937 rng(seed);
  Fp8Acts a;
  a.q.resize(rows * k);
  for (auto& b : a.q) b = RandomCode(rng);
  for (const uint8_t b : a.q) a.x.push_back(numeric::DecodeE4m3(b));
  std::uniform_real_distribution<float> s(1e-3f, 0.05f);
  for (int64_t r = 0; r < rows; ++r) a.sa.push_back(s(rng));
  return a;
}

std::vector<float> Multiply(const FastQuantWeights& f, const float* x, int64_t rows,
                       const float* bias) {
  std::vector<float> y(rows * f.n, -1.0f);
  Fp8Bf16Matmul(f, x, rows, bias, y.data(), 0, f.n);
  return y;
}

// |y − exact| within the header's bound, for every output. `x` are the activations the kernel
// sees, `rs` the epilogue row scales (W8A8; null for W8A16, whose scales are in Scale()).
void CheckAccuracy(const Layer& l, const FastQuantWeights& f, const std::vector<float>& x,
                   int64_t rows, const float* bias, const float* rs, bool split) {
  const std::vector<float> y = Multiply(f, x.data(), rows, bias);
  const int64_t k = l.k;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < l.n; ++c) {
      double exact = 0.0, sum_abs = 0.0;
      for (int64_t i = 0; i < k; ++i) {
        const double e = numeric::DecodeE4m3(l.q[c * k + i]);
        const double w = rs != nullptr ? e : e * l.Scale(c, i);  // exact in double
        exact += x[r * k + i] * w;
        sum_abs += std::fabs(x[r * k + i] * w);
      }
      if (rs != nullptr) {
        const double sc = static_cast<double>(rs[r]) * l.Scale(c, 0);
        exact *= sc;
        sum_abs *= std::fabs(sc);
      }
      if (bias != nullptr) exact += bias[c];
      const double got = y[r * l.n + c];
      const double tol = ((split ? std::ldexp(1.0, -16) : 0.0) + (k / 4.0 + 8.0) * kU +
                          k * std::ldexp(1.0, -52)) * sum_abs +
                         3.0 * kU * std::fabs(got) + 1e-37;
      ASSERT_NEAR(got, exact, tol) << "row " << r << " col " << c;
    }
  }
}

// Rows alone vs. together (2..17 rows) and column splits: bit-identical.
void CheckInvariance(const FastQuantWeights& f, const std::vector<float>& x, int64_t max_rows,
                     const float* bias) {
  const int64_t n = f.n, k = f.k;
  std::vector<float> alone(max_rows * n);
  for (int64_t r = 0; r < max_rows; ++r) {
    FastQuantWeights one = f;  // the row's own epilogue scale
    if (one.row_scale != nullptr) one.row_scale += r * one.row_scale_stride;
    Fp8Bf16Matmul(one, x.data() + r * k, 1, bias, alone.data() + r * n, 0, n);
  }
  for (int64_t rows = 2; rows <= max_rows; ++rows) {
    const std::vector<float> y = Multiply(f, x.data(), rows, bias);
    ASSERT_EQ(std::memcmp(y.data(), alone.data(), rows * n * sizeof(float)), 0) << rows << " rows";
  }
  for (const int64_t rows : {int64_t{1}, int64_t{3}, max_rows}) {
    for (const int64_t parts : {2, 3, 7}) {
      std::vector<float> y(rows * n);
      for (int64_t p = 0; p < parts; ++p) {
        Fp8Bf16Matmul(f, x.data(), rows, bias, y.data(), n * p / parts, n * (p + 1) / parts);
      }
      ASSERT_EQ(std::memcmp(y.data(), alone.data(), rows * n * sizeof(float)), 0)
          << rows << " rows, " << parts << " column ranges";
    }
  }
  // FastQuantMatmul takes this kernel.
  ASSERT_TRUE(FastQuantSupported(f));
  std::vector<float> y(max_rows * n);
  FastQuantMatmul(f, x.data(), max_rows, bias, y.data(), 0, n);
  ASSERT_EQ(std::memcmp(y.data(), alone.data(), y.size() * sizeof(float)), 0);
}

struct Case {
  int64_t n, k;
  Scales layout;
  int64_t block_k;
};

const Case kCases[] = {
    {37, 37, Scales::kTensor, 0}, {5, 256, Scales::kRow, 0},    {67, 96, Scales::kTensor, 0},
    {1, 16, Scales::kRow, 0},     {19, 200, Scales::kRow, 0},   {9, 64, Scales::kTensor, 0},
    {33, 300, Scales::kBlock, 128}, {40, 96, Scales::kBlock, 32}, {17, 129, Scales::kBlock, 64},
    {35, 448, Scales::kBlock, 128},
};

class Fp8Bf16Test : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!Fp8Bf16Available()) GTEST_SKIP() << "no AVX-512 BF16 on this CPU";
  }
};

TEST_F(Fp8Bf16Test, W8A16MatchesExactAndReference) {
  uint32_t seed = 1;
  for (const Case& c : kCases) {
    SCOPED_TRACE(testing::Message() << "n " << c.n << " k " << c.k << " block_k " << c.block_k);
    const Layer l = MakeLayer(c.n, c.k, c.layout, c.block_k, ++seed);
    const FastQuantWeights f = l.W8A16();
    ASSERT_TRUE(Fp8Bf16Supported(f));
    const int64_t rows = 17;
    const std::vector<float> x = RandomX(rows, c.k, ++seed);
    std::vector<float> bias(c.n);
    for (int64_t i = 0; i < c.n; ++i) bias[i] = 0.25f * static_cast<float>(i % 5) - 0.5f;
    for (const int64_t m : {int64_t{1}, int64_t{3}, rows}) {
      CheckAccuracy(l, f, x, m, nullptr, nullptr, /*split=*/true);
    }
    CheckAccuracy(l, f, x, rows, bias.data(), nullptr, /*split=*/true);

    // Against the reference kernel: both bounds added (its DotF32 is within (K + 8)·u, its
    // weights are rounded to f32, one more u).
    std::vector<float> ref(rows * c.n);
    ASSERT_TRUE(MatmulFp8W8A16(l.Ref(), c.n, c.k, x.data(), rows, bias.data(), ref.data(), 0, c.n));
    const std::vector<float> y = Multiply(f, x.data(), rows, bias.data());
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t col = 0; col < c.n; ++col) {
        double sum_abs = 0.0;
        for (int64_t i = 0; i < c.k; ++i) {
          sum_abs += std::fabs(x[r * c.k + i] * numeric::DecodeE4m3(l.q[col * c.k + i]) *
                               static_cast<double>(l.Scale(col, i)));
        }
        const double tol = (std::ldexp(1.0, -16) + (c.k / 4.0 + c.k + 18.0) * kU) * sum_abs +
                           6.0 * kU * std::fabs(ref[r * c.n + col]) + 1e-37;
        ASSERT_NEAR(y[r * c.n + col], ref[r * c.n + col], tol) << "row " << r << " col " << col;
      }
    }
    CheckInvariance(f, x, rows, bias.data());
  }
}

TEST_F(Fp8Bf16Test, W8A8MatchesExactAndReference) {
  uint32_t seed = 100;
  for (const Case& c : kCases) {
    if (c.layout == Scales::kBlock) continue;  // block W8A8 stays on the reference kernels
    SCOPED_TRACE(testing::Message() << "n " << c.n << " k " << c.k);
    const Layer l = MakeLayer(c.n, c.k, c.layout, 0, ++seed);
    const int64_t rows = 17;
    const Fp8Acts a = RandomActs(rows, c.k, ++seed);
    const FastQuantWeights f = l.W8A8(a.sa.data());
    ASSERT_TRUE(Fp8Bf16Supported(f));
    CheckAccuracy(l, f, a.x, rows, nullptr, a.sa.data(), /*split=*/false);
    CheckAccuracy(l, f, a.x, 2, nullptr, a.sa.data(), /*split=*/false);

    Fp8Activations fa;
    fa.q = a.q.data();
    fa.layout = Fp8ActScaleLayout::kPerToken;
    fa.scales = a.sa.data();
    std::vector<float> ref(rows * c.n);
    ASSERT_TRUE(MatmulFp8W8A8(l.Ref(), c.n, c.k, fa, rows, nullptr, ref.data(), 0, c.n));
    const std::vector<float> y = Multiply(f, a.x.data(), rows, nullptr);
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t col = 0; col < c.n; ++col) {
        double sum_abs = 0.0;
        for (int64_t i = 0; i < c.k; ++i) {
          sum_abs += std::fabs(static_cast<double>(a.x[r * c.k + i]) *
                               numeric::DecodeE4m3(l.q[col * c.k + i]));
        }
        sum_abs *= static_cast<double>(a.sa[r]) * l.Scale(col, 0);
        const double tol = (c.k / 4.0 + c.k + 16.0) * kU * sum_abs +
                           6.0 * kU * std::fabs(ref[r * c.n + col]) + 1e-37;
        ASSERT_NEAR(y[r * c.n + col], ref[r * c.n + col], tol) << "row " << r << " col " << col;
      }
    }
    CheckInvariance(f, a.x, rows, nullptr);
  }
}

// W8A8 callers must pass exact bf16 activations; if not, the call still takes the split and stays
// within the W8A16 bound.
TEST_F(Fp8Bf16Test, W8A8WithInexactActivationsFallsBackToSplit) {
  const Layer l = MakeLayer(21, 150, Scales::kRow, 0, 7);
  const std::vector<float> x = RandomX(6, 150, 8);
  const std::vector<float> sa(6, 1.0f);
  CheckAccuracy(l, l.W8A8(sa.data()), x, 6, nullptr, sa.data(), /*split=*/true);
}

// One-hot activations read every code back exactly at every K position (both halves of a
// 64-chunk, the masked tail), through the GEMV (1 row) and GEMM (k rows) paths, both modes.
TEST_F(Fp8Bf16Test, DecodesEveryCodeExactly) {
  const int64_t k = 100, n = 254;
  std::vector<uint8_t> codes;
  for (int c = 0; c < 256; ++c) {
    if ((c & 0x7F) != 0x7F) codes.push_back(static_cast<uint8_t>(c));
  }
  Layer l;
  l.n = n;
  l.k = k;
  l.q.resize(n * k);
  for (int64_t col = 0; col < n; ++col) {
    for (int64_t i = 0; i < k; ++i) l.q[col * k + i] = codes[(col + 3 * i) % n];
  }
  l.scales = {1.0f};
  std::vector<float> x(k * k, 0.0f);
  for (int64_t i = 0; i < k; ++i) x[i * k + i] = 1.0f;
  const std::vector<float> ones(k, 1.0f);
  for (const bool w8a8 : {false, true}) {
    const FastQuantWeights f = w8a8 ? l.W8A8(ones.data()) : l.W8A16();
    const std::vector<float> all = Multiply(f, x.data(), k, nullptr);
    for (int64_t i = 0; i < k; ++i) {
      const std::vector<float> one = Multiply(f, x.data() + i * k, 1, nullptr);
      for (int64_t col = 0; col < n; ++col) {
        const float want = numeric::DecodeE4m3(l.q[col * k + i]);
        ASSERT_EQ(one[col], want) << "k " << i << " code " << int{l.q[col * k + i]};
        ASSERT_EQ(all[i * n + col], want) << "k " << i << " code " << int{l.q[col * k + i]};
      }
    }
  }
}

TEST_F(Fp8Bf16Test, Support) {
  Layer l = MakeLayer(8, 96, Scales::kBlock, 32, 3);
  FastQuantWeights f = l.W8A16();
  EXPECT_TRUE(Fp8Bf16Supported(f));
  f.scale_k = 16;  // not a multiple of 32: the Highway kernel's case
  f.scale_row_stride = 6;
  EXPECT_FALSE(Fp8Bf16LayoutFits(f));
  l = MakeLayer(8, 96, Scales::kRow, 0, 4);
  l.scales[3] = 1000.0f;  // large but finite: fine here (the Highway decoder needs < 128)
  EXPECT_TRUE(Fp8Bf16Supported(l.W8A16()));
  l.scales[3] = INFINITY;
  EXPECT_FALSE(Fp8Bf16Supported(l.W8A16()));
  EXPECT_FALSE(FastQuantSupported(l.W8A16()));
}

}  // namespace
}  // namespace tessera::kernels::cpu::fast
