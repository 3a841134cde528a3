// The FMA pair-panel kernels (kernels/cpu/fast/avx2_panels.h): Bf16PairsFmaMatmul on
// RepackBf16Pairs panels and Fp8PanelFmaMatmul on RepackFp8Pairs panels (per-row, per-tensor,
// W8A8 and K-block scales), on any CPU with AVX2, FMA and F16C (in zmm on AVX-512 CPUs, this one
// included, and in ymm under TESSERA_CPU_ISA=avx2, the twin tests below comparing the two):
//  * every output within (K + 2)·u·Σ|x·w| (+ the scale products' roundings) of the exact sum in
//    double, on odd shapes: K = 1 (padded to a pair), odd K (the last k in the epilogue), K past
//    the kernels' 32 KiB K blocks with more rows than a 5-row tile, N not a multiple of 16, with
//    and without bias;
//  * every row bit-identical alone and in calls of 2-13 rows (one row: 1 x 2 panel tiles; up to
//    5: 5-row tiles; FP8 beyond: codes decoded to f16 panels, f32 with K blocks, first, then the
//    float kernel and the epilogue), and under column splits at odd places and at panel
//    boundaries;
//  * one-hot activations read every E4M3 code back exactly (y = fl(s · code), subnormal codes
//    included; with K blocks each block's scale) and every bf16 weight exactly;
//  * an odd K's padding is zero, not the next row's first activation (an Inf there gave NaN);
//  * the bf16 and FP8 kernels' zmm twins (AVX-512 CPUs without AVX-512 BF16) give their bits.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "hwy/aligned_allocator.h"
#include "kernels/cpu/fast/avx2_panels.h"
#include "kernels/cpu/fast/bf16_dot_matmul.h"
#include "kernels/cpu/fast/float_panel_matmul.h"
#include "kernels/cpu/fast/fp8_panel_matmul.h"
#include "kernels/numeric/fp8.h"
#include "kernels/numeric/half.h"

namespace tessera::kernels::cpu::fast {
namespace {

constexpr double kU = 1.0 / (1 << 24);

// One layer of either kind: weights as f32 values w(n, k) for the reference, the panels, and the
// kernel call.
struct Layer {
  bool fp8 = false;
  int64_t n = 0, k = 0;
  std::vector<uint16_t> bf16;  // [n, k]
  std::vector<uint8_t> codes;  // [n, k]
  std::vector<float> scales, col_scale, row_scale, bias;
  bool w8a8 = false;
  hwy::AlignedFreeUniquePtr<uint8_t[]> panels;
  FastWeights dense;       // bf16 panels
  FastQuantWeights quant;  // FP8 panels

  bool Blocks() const { return fp8 && quant.scale_k < k; }
  // The weight, with its K-block scale when there are K blocks.
  double W(int64_t col, int64_t i) const {
    if (!fp8) return numeric::Bf16ToFloat(bf16[col * k + i]);
    const double code = numeric::DecodeE4m3(codes[col * k + i]);
    if (!Blocks()) return code;
    return code * scales[(col / quant.scale_rows) * quant.scale_row_stride + i / quant.scale_k];
  }
  // The scale of output (m, n) over Σ x·w (1 for bf16 and K blocks).
  double Scale(int64_t m, int64_t col) const {
    if (!fp8 || Blocks()) return 1.0;
    double s = quant.scale_row_stride == 0 ? scales[0] : scales[col];
    if (w8a8) {
      s *= static_cast<double>(col_scale[quant.col_scale_stride * col]) *
           row_scale[quant.row_scale_stride * m];
    }
    return s;
  }
  // The panels of the weights as they are now (after Make, or after a test edits them).
  void Repack() {
    if (fp8) {
      quant.q = codes.data();
      quant = RepackFp8Pairs(quant, panels.get());
      return;
    }
    FastWeights src;
    src.format = FastFormat::kBF16;
    src.data = reinterpret_cast<const uint8_t*>(bf16.data());
    src.n = n;
    src.k = k;
    src.row_stride = 2 * k;
    dense = RepackBf16Pairs(src, panels.get());
  }
  void Run(const float* x, int64_t rows, const float* b, float* y, int64_t n_begin,
           int64_t n_end) const {
    if (fp8) {
      Fp8PanelFmaMatmul(quant, x, rows, b, y, n_begin, n_end);
    } else {
      Bf16PairsFmaMatmul(dense, x, rows, b, y, n_begin, n_end);
    }
  }
};

// kind: 0 bf16, 1 FP8 per-row W8A16, 2 FP8 per-tensor W8A16, 3 FP8 W8A8 (per-token row and
// per-column weight scales), 4 FP8 W8A8 with static per-tensor scales (strides 0), 5 FP8 with
// K-block and row-block weight scales (DeepSeek / Qwen3-FP8 layers, activations pre-scaled; K = 1
// and 2 have no block below K: one block).
Layer Make(int kind, int64_t n, int64_t k, int64_t rows, uint32_t seed) {
  Layer l;
  l.fp8 = kind != 0;
  l.n = n;
  l.k = k;
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::uniform_real_distribution<float> scale(1e-3f, 2e-2f);
  for (int64_t i = 0; i < n; ++i) l.bias.push_back(nd(rng));
  if (!l.fp8) {
    l.bf16.resize(n * k);
    for (auto& v : l.bf16) v = numeric::FloatToBf16(0.05f * nd(rng));
    l.panels = hwy::AllocateAligned<uint8_t>(Bf16PairsBytes(n, k));
    l.Repack();
    return l;
  }
  l.codes.resize(n * k);
  for (auto& c : l.codes) {
    c = static_cast<uint8_t>(rng());
    if ((c & 0x7F) == 0x7F) c ^= 1;  // no NaN codes (the loader refuses them)
  }
  const bool per_row = kind == 1;
  l.w8a8 = kind == 3 || kind == 4;
  // Kind 5: K blocks of the largest power of two below K up to 128 (DeepSeek's width); row
  // blocks of 32, or one row block of n + 3 rows (not a whole number of panels) for n <= 32.
  const int64_t block_k =
      kind == 5 && k > 2 ? std::min<int64_t>(128, std::bit_floor(static_cast<uint64_t>(k - 1))) : k;
  const bool blocks = block_k < k;  // else per tensor
  const int64_t block_n = n <= 32 ? n + 3 : 32;
  const int64_t k_blocks = (k + block_k - 1) / block_k, row_blocks = (n + block_n - 1) / block_n;
  const int64_t count = blocks ? row_blocks * k_blocks : per_row ? n : 1;
  for (int64_t i = 0; i < count; ++i) l.scales.push_back(scale(rng));
  for (int64_t i = 0; i < n; ++i) l.col_scale.push_back(scale(rng));
  for (int64_t i = 0; i < rows; ++i) l.row_scale.push_back(scale(rng));
  FastQuantWeights& w = l.quant;
  w.decode = QuantDecode::kFp8;
  w.q = l.codes.data();
  w.n = n;
  w.k = k;
  w.scale_k = block_k;
  w.scales = l.scales.data();
  w.scale_rows = per_row ? 1 : blocks ? block_n : n;
  w.scale_row_stride = per_row ? 1 : blocks ? k_blocks : 0;
  if (l.w8a8) {  // QuantizedLinear's W8A8 form: bare codes (unit scale), the scales in the epilogue
    l.scales.assign(1, 1.0f);
    w.scales = l.scales.data();
    w.col_scale = l.col_scale.data();
    w.col_scale_stride = kind == 3 ? 1 : 0;
    w.row_scale = l.row_scale.data();
    w.row_scale_stride = kind == 3 ? 1 : 0;
  }
  l.panels = hwy::AllocateAligned<uint8_t>(Fp8PairsBytes(n, k));
  l.Repack();
  return l;
}

std::vector<float> Acts(const Layer& l, int64_t rows, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> x(rows * l.k);
  for (auto& v : x) {
    v = 2.0f * nd(rng);
    // W8A8 multiplies E4M3 activation values.
    if (l.w8a8) v = numeric::DecodeE4m3(numeric::EncodeE4m3(v));
  }
  return x;
}

void ExpectAccurate(const Layer& l, const std::vector<float>& x, int64_t rows, const float* bias,
                    const std::vector<float>& y, const char* what) {
  for (int64_t m = 0; m < rows; ++m) {
    for (int64_t c = 0; c < l.n; ++c) {
      double sum = 0, mag = 0;
      for (int64_t i = 0; i < l.k; ++i) {
        const double p = static_cast<double>(x[m * l.k + i]) * l.W(c, i);
        sum += p;
        mag += std::abs(p);
      }
      const double s = l.Scale(m, c), b = bias != nullptr ? bias[c] : 0.0;
      const double exact = s * sum + b;
      // The sum's bound (K blocks: one more rounding per weight, code · s), then up to three
      // scale products and the bias add (u each).
      const double bound = ((l.k + 2) * kU * mag + 4 * kU * std::abs(sum)) * std::abs(s) +
                           kU * (std::abs(exact) + std::abs(b));
      ASSERT_LE(std::abs(y[m * l.n + c] - exact), bound)
          << what << " m " << m << " n " << c << " k " << l.k;
    }
  }
}

class FmaPairPanelsTest : public ::testing::TestWithParam<int> {};

TEST_P(FmaPairPanelsTest, AccurateOnOddShapes) {
  if (!internal::Avx2PanelsAvailable()) GTEST_SKIP() << "no AVX2 + FMA + F16C";
  for (auto [n, k, rows] : {std::tuple<int64_t, int64_t, int64_t>{1, 1, 1},
                            {5, 3, 2},
                            {17, 31, 6},
                            {37, 33, 7},
                            {16, 64, 11},
                            {21, 1025, 13},
                            {70, 2048, 5},
                            {9, 2500, 12}}) {
    const Layer l = Make(GetParam(), n, k, rows, static_cast<uint32_t>(n * 977 + k));
    const std::vector<float> x = Acts(l, rows, static_cast<uint32_t>(k));
    std::vector<float> y(rows * n, std::nanf(""));
    l.Run(x.data(), rows, l.bias.data(), y.data(), 0, n);
    ExpectAccurate(l, x, rows, l.bias.data(), y, "bias");
    std::fill(y.begin(), y.end(), std::nanf(""));
    l.Run(x.data(), rows, nullptr, y.data(), 0, n);
    ExpectAccurate(l, x, rows, nullptr, y, "no bias");
  }
}

// Every row alone (full range, and split into 5- and 16-column calls: a one-row tile starting
// mid-panel) against calls of 2-13 rows over the full range, from column 7 on (a tile starting
// mid-panel) and split at odd places and panel boundaries; n = 83 takes the decoded FP8 route's
// several four-panel passes in one call.
TEST_P(FmaPairPanelsTest, BatchAndColumnSplitInvariant) {
  if (!internal::Avx2PanelsAvailable()) GTEST_SKIP() << "no AVX2 + FMA + F16C";
  for (auto [n, k] : {std::pair<int64_t, int64_t>{83, 2100}, {20, 97}, {7, 545}, {70, 1}}) {
    const int64_t rows = 13;
    Layer l = Make(GetParam(), n, k, rows, static_cast<uint32_t>(k));
    const std::vector<float> x = Acts(l, rows, 3);
    const float* row_scale = l.quant.row_scale;
    auto run_split = [&](const float* xs, int64_t r, float* y, int64_t first, int64_t step) {
      if (first > 0) l.Run(xs, r, l.bias.data(), y, 0, std::min(n, first));
      for (int64_t b = first; b < n; b += step) {
        l.Run(xs, r, l.bias.data(), y, b, std::min(n, b + step));
      }
    };
    std::vector<float> alone(rows * n), split(n);
    for (int64_t m = 0; m < rows; ++m) {
      // Row m alone: a per-token W8A8 row scale of row m is the first of its call.
      if (l.w8a8 && l.quant.row_scale_stride != 0) l.quant.row_scale = row_scale + m;
      l.Run(x.data() + m * k, 1, l.bias.data(), alone.data() + m * n, 0, n);
      for (int64_t step : {5, 16}) {
        run_split(x.data() + m * k, 1, split.data(), 0, step);
        ASSERT_EQ(std::memcmp(split.data(), alone.data() + m * n, 4 * n), 0)
            << "row " << m << " alone, " << step << "-column calls";
      }
    }
    l.quant.row_scale = row_scale;
    for (int64_t r = 2; r <= rows; ++r) {
      for (auto [first, step] :
           {std::pair<int64_t, int64_t>{0, n}, {7, n}, {0, r % 2 == 0 ? 5 : 16}}) {
        std::vector<float> y(r * n);
        run_split(x.data(), r, y.data(), first, step);
        for (int64_t i = 0; i < r * n; ++i) {
          ASSERT_EQ(std::memcmp(&y[i], &alone[i], 4), 0)
              << "rows " << r << " from " << first << " step " << step << " element " << i;
        }
      }
    }
  }
}

// An odd K's last pair: the pad must be zero. Row 1 starts with an Inf; row 0 stays finite.
TEST_P(FmaPairPanelsTest, OddKPadsWithZeroNotTheNextRow) {
  if (!internal::Avx2PanelsAvailable()) GTEST_SKIP() << "no AVX2 + FMA + F16C";
  const int64_t n = 16, k = 7;
  const Layer l = Make(GetParam(), n, k, 2, 11);
  std::vector<float> x = Acts(l, 2, 5);
  x[k] = INFINITY;
  std::vector<float> y(2 * n);
  l.Run(x.data(), 2, nullptr, y.data(), 0, n);
  for (int64_t c = 0; c < n; ++c) EXPECT_TRUE(std::isfinite(y[c])) << c;
}

std::string KindName(const ::testing::TestParamInfo<int>& info) {
  constexpr const char* kNames[] = {"Bf16",    "Fp8PerRow",     "Fp8PerTensor",
                                    "Fp8W8A8", "Fp8W8A8Static", "Fp8Blocks"};
  return kNames[info.param];
}

INSTANTIATE_TEST_SUITE_P(Kinds, FmaPairPanelsTest, ::testing::Values(0, 1, 2, 3, 4, 5), KindName);

// One-hot rows: output c of row i is weight (c, i) times its scale, rounded once: every E4M3
// code (column c holds code 2c + parity, so 128 columns cover the 254 finite codes and the two
// NaN slots get 0) and every bf16 weight come back exactly, bit for bit (a zero weight as +0: the
// sum starts at +0, so code 0x80's -0 product does not survive).
TEST(FmaPairPanelsExactTest, OneHotRowsReadEveryWeightBack) {
  if (!internal::Avx2PanelsAvailable()) GTEST_SKIP() << "no AVX2 + FMA + F16C";
  const int64_t n = 128, k = 2;
  for (int kind : {0, 1}) {
    Layer l = Make(kind, n, k, k, 9);
    for (int64_t c = 0; c < n; ++c) {
      for (int64_t i = 0; i < k; ++i) {
        const uint8_t code = static_cast<uint8_t>(2 * c + i);
        if (kind == 1) {
          l.codes[c * k + i] = (code & 0x7F) == 0x7F ? 0 : code;
        } else {
          l.bf16[c * k + i] = static_cast<uint16_t>(0x3C00 + 0x101 * c + 7 * i);  // assorted
        }
      }
    }
    l.Repack();
    const std::vector<float> x = {1.0f, 0.0f, 0.0f, 1.0f};  // rows e_0, e_1
    std::vector<float> y(k * n);
    l.Run(x.data(), k, nullptr, y.data(), 0, n);
    for (int64_t i = 0; i < k; ++i) {
      for (int64_t c = 0; c < n; ++c) {
        float want = static_cast<float>(l.Scale(i, c)) * static_cast<float>(l.W(c, i));
        if (want == 0.0f) want = 0.0f;  // +0
        ASSERT_EQ(std::memcmp(&y[i * n + c], &want, 4), 0)
            << "kind " << kind << " row " << i << " col " << c << ": " << y[i * n + c];
      }
    }
  }
}

// Which FP8 layers the FMA panels take (where they are in use: no BF16 FP8 kernel, or under
// TESSERA_CPU_ISA=avx2 / avx512-vnni): per-tensor and per-row scales, K blocks of a power-of-two
// width and whole-panel row blocks, finite and below 2^100, no
// column scale without a row scale.
TEST(FmaPairPanelsExactTest, Fp8SupportedShapes) {
  if (!Fp8PanelFmaAvailable()) GTEST_SKIP() << "the FMA panels are not in use on this CPU";
  Layer l = Make(1, 20, 64, 1, 3);
  EXPECT_TRUE(Fp8PanelFmaSupported(l.quant));
  FastQuantWeights w = l.quant;
  l.scales[7] = std::nanf("");
  EXPECT_FALSE(Fp8PanelFmaSupported(w));
  l.scales[7] = 0x1p101f;
  EXPECT_FALSE(Fp8PanelFmaSupported(w));
  l.scales[7] = 0x1p99f;
  EXPECT_TRUE(Fp8PanelFmaSupported(w));
  w.scale_k = 32;  // K blocks, but per-row scales
  EXPECT_FALSE(Fp8PanelFmaSupported(w));
  // K blocks of whole pairs, a power of two, row blocks of whole panels: taken.
  Layer b = Make(5, 40, 64, 1, 3);
  EXPECT_TRUE(Fp8PanelFmaSupported(b.quant));
  w = b.quant;
  w.scale_k = 24;  // not a power of two
  w.scale_row_stride = 3;
  EXPECT_FALSE(Fp8PanelFmaSupported(w));
  w.scale_k = 1;  // odd: a pair would straddle two blocks
  w.scale_row_stride = 64;
  EXPECT_FALSE(Fp8PanelFmaSupported(w));
  w = b.quant;
  w.scale_row_stride += 1;  // not the blocks per row
  EXPECT_FALSE(Fp8PanelFmaSupported(w));
  w = b.quant;
  w.scale_rows = 8;  // row blocks inside a panel
  w.scale_row_stride = 4;
  EXPECT_FALSE(Fp8PanelFmaSupported(w));
  w = b.quant;
  w.row_scale = b.row_scale.data();  // row scales with K blocks: the epilogue has none
  EXPECT_FALSE(Fp8PanelFmaSupported(w));
  w = l.quant;
  w.scale_rows = 4;  // 2-D blocks of rows
  w.scale_row_stride = 2;
  EXPECT_FALSE(Fp8PanelFmaSupported(w));
  w = l.quant;
  w.col_scale = l.col_scale.data();  // a column scale without a row scale
  EXPECT_FALSE(Fp8PanelFmaSupported(w));
}

// K blocks: one-hot rows read each weight back as fl(code · s) of its block's scale, bit for bit
// (k = 4: blocks of 2, row blocks of 32 columns; every code in some column).
TEST(FmaPairPanelsExactTest, OneHotRowsReadBlockScaledWeights) {
  if (!internal::Avx2PanelsAvailable()) GTEST_SKIP() << "no AVX2 + FMA + F16C";
  const int64_t n = 128, k = 4;
  Layer l = Make(5, n, k, k, 13);
  ASSERT_TRUE(l.Blocks());
  for (int64_t c = 0; c < n; ++c) {
    for (int64_t i = 0; i < k; ++i) {
      const uint8_t code = static_cast<uint8_t>(2 * c + (i % 2));
      l.codes[c * k + i] = (code & 0x7F) == 0x7F ? 0 : code;
    }
  }
  l.Repack();
  std::vector<float> x(k * k, 0.0f);
  for (int64_t i = 0; i < k; ++i) x[i * k + i] = 1.0f;  // rows e_0 .. e_3
  for (int64_t rows : {int64_t{1}, k}) {  // one row (registers) and all four (registers too)
    std::vector<float> y(rows * n);
    l.Run(x.data(), rows, nullptr, y.data(), 0, n);
    for (int64_t i = 0; i < rows; ++i) {
      for (int64_t c = 0; c < n; ++c) {
        const float s =
            l.scales[(c / l.quant.scale_rows) * l.quant.scale_row_stride + i / l.quant.scale_k];
        float want = numeric::DecodeE4m3(l.codes[c * k + i]) * s;
        if (want == 0.0f) want = 0.0f;  // +0
        ASSERT_EQ(std::memcmp(&y[i * n + c], &want, 4), 0) << "row " << i << " col " << c;
      }
    }
  }
}

// On AVX-512 CPUs without AVX-512 BF16 Bf16PairsFmaMatmul runs the zmm twin (fma_pairs_avx512.cc):
// the AVX2 kernel's bits, at every row count (register tiles of 1-5 rows, K blocks), K = 1, odd K,
// with and without bias, and from a column inside a panel.
TEST(FmaPairPanelsExactTest, Bf16Avx512TwinGivesTheAvx2Bits) {
  if (!internal::Avx2PanelsAvailable() || std::string(FloatPanelTargetName()) != "avx512") {
    GTEST_SKIP() << "needs AVX-512 and AVX2 (not under TESSERA_CPU_ISA=avx2)";
  }
  for (const auto& [n, k] :
       {std::pair<int64_t, int64_t>{70, 2600}, {70, 2601}, {37, 1}, {37, 301}, {5, 64}}) {
    const Layer l = Make(0, n, k, 13, static_cast<uint32_t>(n + k));
    const std::vector<float> x = Acts(l, 13, 3);
    for (const int64_t rows : {1, 2, 4, 5, 6, 11, 13}) {
      for (const float* b : {static_cast<const float*>(l.bias.data()),
                             static_cast<const float*>(nullptr)}) {
        for (const auto& [begin, end] : {std::pair<int64_t, int64_t>{0, n}, {3, n - 2}}) {
          std::vector<float> zmm(rows * n, -7.0f), ymm(rows * n, -7.0f);
          Bf16PairsFmaMatmul(l.dense, x.data(), rows, b, zmm.data(), begin, end);
          internal::Bf16PairsFmaMatmulAvx2(l.dense, x.data(), rows, b, ymm.data(), begin, end);
          ASSERT_EQ(std::memcmp(zmm.data(), ymm.data(), zmm.size() * 4), 0)
              << n << " x " << k << ", " << rows << " rows, columns [" << begin << ", " << end
              << ")";
        }
      }
    }
  }
}

// On AVX-512 CPUs without AVX-512 BF16 Fp8PanelFmaMatmul runs the zmm twin (fma_pairs_avx512.cc):
// the AVX2 kernel's bits for every FP8 kind, through both routes (registers up to 5 rows, decoded
// f16 / f32 panels beyond), K = 1, odd K, K past a K block and the 32 KiB steps, with and without
// bias, over all columns and inside panels.
TEST(FmaPairPanelsExactTest, Fp8Avx512TwinGivesTheAvx2Bits) {
  if (!internal::Avx2PanelsAvailable() || std::string(FloatPanelTargetName()) != "avx512") {
    GTEST_SKIP() << "needs AVX-512 and AVX2 (not under TESSERA_CPU_ISA=avx2)";
  }
  for (int kind = 1; kind <= 5; ++kind) {
    for (const auto& [n, k] :
         {std::pair<int64_t, int64_t>{70, 2600}, {70, 2601}, {37, 1}, {37, 301}, {5, 64}}) {
      const Layer l = Make(kind, n, k, 13, static_cast<uint32_t>(kind + n + k));
      const std::vector<float> x = Acts(l, 13, 5);
      for (const int64_t rows : {1, 2, 5, 6, 11, 13}) {
        for (const float* b :
             {static_cast<const float*>(l.bias.data()), static_cast<const float*>(nullptr)}) {
          for (const auto& [begin, end] :
               {std::pair<int64_t, int64_t>{0, n}, {3, n - 2}, {std::min<int64_t>(40, n - 1), n}}) {
            std::vector<float> zmm(rows * n, -7.0f), ymm(rows * n, -7.0f);
            Fp8PanelFmaMatmul(l.quant, x.data(), rows, b, zmm.data(), begin, end);
            internal::Fp8PanelFmaMatmulAvx2(l.quant, x.data(), rows, b, ymm.data(), begin, end);
            ASSERT_EQ(std::memcmp(zmm.data(), ymm.data(), zmm.size() * 4), 0)
                << "kind " << kind << ", " << n << " x " << k << ", " << rows << " rows, columns ["
                << begin << ", " << end << ")";
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace tessera::kernels::cpu::fast
