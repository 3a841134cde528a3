// The f16 and f32 panel kernels (kernels/cpu/fast/float_panel_matmul.h), the AVX-512 ones and
// their AVX2 twins (avx2_panels.h), on random data and odd shapes (odd K, K past the 1024 /
// 512-step K block with more rows than one tile, N not a multiple of the 16-column panel or the
// 64-column tile, padded source rows), each test once per weight type and kernel. Accuracy, each
// output against a sum in double: within (K + 1)·u·(Σ|x·w| + |bias|), tight enough that dropping
// a k, the bias or the odd last element fails. Batch invariance: every row alone vs. calls of
// 2..14 rows and column splits at any column (masked stores), bit for bit. The two kernels agree
// bit for bit (one FMA sequence). The repacked layout puts every element where the header says;
// f16 subnormal weights are used exactly (vcvtph2ps does not flush them); the row kernel
// (FastMatmul kF16 / kF32, the fallback without the panels) agrees within the same bound.
#include "kernels/cpu/fast/float_panel_matmul.h"

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "gtest/gtest.h"
#include "hwy/aligned_allocator.h"
#include "kernels/cpu/fast/avx2_panels.h"
#include "kernels/numeric/half.h"

namespace tessera::kernels::cpu::fast {
namespace {

constexpr double kU = 1.0 / (1 << 24);

// Which kernel a test runs: the public entry (AVX-512 here, or AVX2 without it) or the AVX2 one.
enum class Kernel { kPublic, kAvx2 };

bool Runs(Kernel kernel) {
  return kernel == Kernel::kPublic ? F16PanelAvailable() : internal::Avx2PanelsAvailable();
}

struct Problem {
  bool f32;
  Kernel kernel = Kernel::kPublic;
  int64_t n, k, stride;  // stride in elements (>= k)
  std::vector<uint16_t> w;   // f16 weights
  std::vector<float> w32;    // f32 weights
  std::vector<float> x, bias;
  FastWeights fw;  // the original rows
  hwy::AlignedFreeUniquePtr<uint8_t[]> packed;
  FastWeights panels;  // RepackF16Panels / RepackF32Panels of fw

  float W(int64_t col, int64_t i) const {
    return f32 ? w32[col * stride + i] : numeric::HalfToFloat(w[col * stride + i]);
  }
  void Repack() {
    panels = f32 ? RepackF32Panels(fw, packed.get()) : RepackF16Panels(fw, packed.get());
  }
  void Matmul(const float* xs, int64_t rows, const float* b, float* y, int64_t n_begin,
              int64_t n_end) const {
    if (kernel == Kernel::kAvx2) {
      (f32 ? internal::F32PanelMatmulAvx2 : internal::F16PanelMatmulAvx2)(panels, xs, rows, b, y,
                                                                          n_begin, n_end);
    } else {
      (f32 ? F32PanelMatmul : F16PanelMatmul)(panels, xs, rows, b, y, n_begin, n_end);
    }
  }
};

Problem Make(bool f32, int64_t n, int64_t k, int64_t rows, int64_t pad, uint32_t seed,
             Kernel kernel = Kernel::kPublic) {
  Problem p{f32, kernel, n, k, k + pad, {}, {}, {}, {}, {}, nullptr, {}};
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  if (f32) {
    p.w32.resize(n * p.stride);
    for (auto& v : p.w32) v = nd(rng) * 0.05f;
  } else {
    p.w.resize(n * p.stride);
    for (auto& v : p.w) v = numeric::FloatToHalf(nd(rng) * 0.05f);
  }
  p.x.resize(rows * k);
  for (auto& v : p.x) v = nd(rng) * 3.0f;
  p.bias.resize(n);
  for (auto& v : p.bias) v = nd(rng);
  p.fw.format = f32 ? FastFormat::kF32 : FastFormat::kF16;
  p.fw.data = f32 ? reinterpret_cast<const uint8_t*>(p.w32.data())
                  : reinterpret_cast<const uint8_t*>(p.w.data());
  p.fw.n = n;
  p.fw.k = k;
  p.fw.row_stride = (f32 ? 4 : 2) * p.stride;
  p.packed = hwy::AllocateAligned<uint8_t>(f32 ? F32PanelsBytes(n, k) : F16PanelsBytes(n, k));
  p.Repack();
  return p;
}

// (f32 weights, kernel).
class FloatPanelTest : public ::testing::TestWithParam<std::tuple<bool, Kernel>> {
 protected:
  bool F32() const { return std::get<0>(GetParam()); }
  Kernel Which() const { return std::get<1>(GetParam()); }
};

void ExpectAccurate(const Problem& p, int64_t rows, const float* bias, const std::vector<float>& y,
                    const char* what) {
  for (int64_t m = 0; m < rows; ++m) {
    for (int64_t n = 0; n < p.n; ++n) {
      double exact = bias != nullptr ? bias[n] : 0.0, mag = std::abs(exact);
      for (int64_t i = 0; i < p.k; ++i) {
        const double prod = static_cast<double>(p.x[m * p.k + i]) * p.W(n, i);
        exact += prod;
        mag += std::abs(prod);
      }
      ASSERT_LE(std::abs(y[m * p.n + n] - exact), (p.k + 1) * kU * mag)
          << what << " m " << m << " n " << n << " k " << p.k;
    }
  }
}

TEST(F16PanelTest, RepackPutsEveryElementInItsPanelSlot) {
  Problem p = Make(false, 37, 77, 1, 5, 3);
  const int64_t lines = (p.k + 1) / 2;
  ASSERT_EQ(p.panels.format, FastFormat::kF16Panels);
  ASSERT_EQ(p.panels.row_stride, lines * 64);
  ASSERT_EQ(F16PanelsBytes(37, 77), 3 * lines * 64);
  const uint16_t* packed = reinterpret_cast<const uint16_t*>(p.packed.get());
  for (int64_t n = 0; n < 48; ++n) {
    for (int64_t i = 0; i < 2 * lines; ++i) {
      const uint16_t want = (n < p.n && i < p.k) ? p.w[n * p.stride + i] : 0;
      ASSERT_EQ(packed[(n / 16) * lines * 32 + i * 16 + n % 16], want) << "n " << n << " k " << i;
    }
  }
}

TEST(F32PanelTest, RepackPutsEveryElementInItsPanelSlot) {
  Problem p = Make(true, 37, 77, 1, 5, 3);
  ASSERT_EQ(p.panels.format, FastFormat::kF32Panels);
  ASSERT_EQ(p.panels.row_stride, p.k * 64);
  ASSERT_EQ(F32PanelsBytes(37, 77), 3 * p.k * 64);
  const float* packed = reinterpret_cast<const float*>(p.packed.get());
  for (int64_t n = 0; n < 48; ++n) {
    for (int64_t i = 0; i < p.k; ++i) {
      const float want = n < p.n ? p.w32[n * p.stride + i] : 0.0f;
      ASSERT_EQ(packed[(n / 16) * p.k * 16 + i * 16 + n % 16], want) << "n " << n << " k " << i;
    }
  }
}

TEST_P(FloatPanelTest, AccurateOnOddShapes) {
  if (!Runs(Which())) GTEST_SKIP() << "no AVX-512 or AVX2 + FMA + F16C on this CPU";
  for (auto [n, k, rows, pad] : {std::tuple<int64_t, int64_t, int64_t, int64_t>{1, 1, 1, 0},
                                 {5, 31, 3, 1},
                                 {17, 32, 6, 0},
                                 {37, 33, 9, 7},
                                 {16, 1024, 7, 0},
                                 {11, 513, 8, 0},
                                 {21, 1025, 13, 3},
                                 {9, 2100, 4, 0},
                                 {70, 2048, 8, 32},
                                 {65, 2500, 7, 0}}) {
    Problem p = Make(F32(), n, k, rows, pad, static_cast<uint32_t>(n * 1000 + k), Which());
    std::vector<float> y(rows * n, std::nanf(""));
    p.Matmul(p.x.data(), rows, p.bias.data(), y.data(), 0, n);
    ExpectAccurate(p, rows, p.bias.data(), y, "panels");
    p.Matmul(p.x.data(), rows, nullptr, y.data(), 0, n);
    ExpectAccurate(p, rows, nullptr, y, "panels, no bias");
    std::vector<float> yf(rows * n);
    FastMatmul(p.fw, p.x.data(), rows, p.bias.data(), yf.data(), 0, n);
    ExpectAccurate(p, rows, p.bias.data(), yf, "row kernel");
  }
}

TEST_P(FloatPanelTest, BatchAndColumnSplitInvariant) {
  if (!Runs(Which())) GTEST_SKIP() << "no AVX-512 or AVX2 + FMA + F16C on this CPU";
  for (auto [n, k] : {std::pair<int64_t, int64_t>{83, 2100}, {20, 96}, {7, 545}}) {
    const int64_t rows = 14;
    Problem p = Make(F32(), n, k, rows, 0, static_cast<uint32_t>(k), Which());
    std::vector<float> alone(rows * n);
    for (int64_t m = 0; m < rows; ++m) {  // one tile, the whole K in registers
      p.Matmul(p.x.data() + m * k, 1, p.bias.data(), alone.data() + m * n, 0, n);
    }
    for (int64_t r = 2; r <= rows; ++r) {
      std::vector<float> y(r * n);
      // Columns split at odd places (not panel boundaries), and at the pool's multiples of 16.
      const int64_t step = r % 2 == 0 ? 5 : 16;
      for (int64_t b = 0; b < n; b += step) {
        p.Matmul(p.x.data(), r, p.bias.data(), y.data(), b, std::min(n, b + step));
      }
      for (int64_t i = 0; i < r * n; ++i) {
        ASSERT_EQ(std::memcmp(&y[i], &alone[i], 4), 0) << "rows " << r << " element " << i;
      }
    }
  }
}

// The AVX2 kernel is the AVX-512 one's FMA sequence on ymm halves: the same bits, for every tile
// shape the two walk (6 x 4 panels there, 6 x 1 here) and with or without a bias.
TEST_P(FloatPanelTest, Avx2KernelGivesTheAvx512Bits) {
  if (Which() != Kernel::kAvx2) GTEST_SKIP() << "run once per weight type";
  if (!internal::Avx2PanelsAvailable() || !F16PanelAvailable() ||
      std::string(FloatPanelTargetName()) != "avx512") {
    GTEST_SKIP() << "needs AVX-512 and AVX2 (not under TESSERA_CPU_ISA=avx2)";
  }
  for (auto [n, k, rows] :
       {std::tuple<int64_t, int64_t, int64_t>{70, 2048, 13}, {37, 1100, 7}, {5, 3, 1}}) {
    Problem p = Make(F32(), n, k, rows, 0, static_cast<uint32_t>(n + k));
    std::vector<float> want(rows * n), got(rows * n);
    for (const float* b :
         {static_cast<const float*>(p.bias.data()), static_cast<const float*>(nullptr)}) {
      p.kernel = Kernel::kPublic;
      p.Matmul(p.x.data(), rows, b, want.data(), 0, n);
      p.kernel = Kernel::kAvx2;
      p.Matmul(p.x.data(), rows, b, got.data(), 0, n);
      ASSERT_EQ(std::memcmp(want.data(), got.data(), want.size() * 4), 0) << n << " x " << k;
    }
  }
}

// The smallest f16 subnormal (2^-24) times 2^20 is 2^-4: used exactly, not flushed to zero.
TEST_P(FloatPanelTest, SubnormalF16WeightsAreExact) {
  if (F32()) GTEST_SKIP() << "f16 weights";
  if (!Runs(Which())) GTEST_SKIP() << "no AVX-512 or AVX2 + FMA + F16C on this CPU";
  Problem p = Make(false, 3, 64, 1, 0, 5, Which());
  p.x.assign(64, 0.0f);
  p.x[5] = std::ldexp(1.0f, 20);
  p.x[63] = 1.0f;
  for (int64_t n = 0; n < 3; ++n) {
    p.w[n * 64 + 5] = 0x0001;                           // 2^-24
    p.w[n * 64 + 63] = numeric::FloatToHalf(65504.0f);  // the largest f16
  }
  p.Repack();
  std::vector<float> y(3);
  p.Matmul(p.x.data(), 1, nullptr, y.data(), 0, 3);
  for (int64_t n = 0; n < 3; ++n) EXPECT_EQ(y[n], 65504.0f + 0.0625f) << n;
}

INSTANTIATE_TEST_SUITE_P(WeightTypesAndKernels, FloatPanelTest,
                         ::testing::Combine(::testing::Bool(),
                                            ::testing::Values(Kernel::kPublic, Kernel::kAvx2)),
                         [](const ::testing::TestParamInfo<std::tuple<bool, Kernel>>& info) {
                           return std::string(std::get<0>(info.param) ? "F32" : "F16") +
                                  (std::get<1>(info.param) == Kernel::kAvx2 ? "Avx2" : "");
                         });

}  // namespace
}  // namespace tessera::kernels::cpu::fast
