// The AVX-512 BF16 dense kernel (kernels/cpu/fast/bf16_dot_matmul.h), both activation forms, on
// random data and odd shapes (odd K, K past the 1024-element K block, N not a multiple of the
// 16-column panel or the 64-column tile, padded source rows). Accuracy, each output against a sum
// in double: the bf16 form against Σ bf16(x)·w (exact products) within (K/2 + 1)·u·Σ|x·w|; the
// split form against Σ x·w (f32 x) within (2^-16 + (K + 2)·u)·Σ|x·w| — tight enough that
// dropping lo, treating x as f32 in the bf16 form, dropping the odd last element or the bias
// fails. Batch invariance: every row alone vs. calls of 2..14 rows (one 6-row tile: K in
// registers; more: K blocks with parked accumulators) and column splits at any column (masked
// stores), bit for bit. The repacked layout puts every element where the header says; the
// fallbacks (FastMatmul on the original rows, on x or on the rounded x) agree within the same
// bounds. RoundActsToBf16 is FloatToBf16 for hi and for the residual lo, plus zero padding. Kernel
// cases skip on CPUs without AVX-512 BF16.
#include "kernels/cpu/fast/bf16_dot_matmul.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <tuple>
#include <vector>

#include "gtest/gtest.h"
#include "hwy/aligned_allocator.h"
#include "kernels/numeric/half.h"

namespace tessera::kernels::cpu::fast {
namespace {

constexpr double kU = 1.0 / (1 << 24);

struct Problem {
  int64_t n, k, stride;  // stride in elements (>= k)
  std::vector<uint16_t> w;
  std::vector<float> x, bias;
  FastWeights fw;  // the original rows
  hwy::AlignedFreeUniquePtr<uint8_t[]> packed;
  FastWeights pairs;  // RepackBf16Pairs of fw
};

Problem Make(int64_t n, int64_t k, int64_t rows, int64_t pad, uint32_t seed) {
  Problem p{n, k, k + pad, {}, {}, {}, {}, nullptr, {}};
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  p.w.resize(n * p.stride);
  for (auto& v : p.w) v = numeric::FloatToBf16(nd(rng) * 0.05f);
  p.x.resize(rows * k);
  for (auto& v : p.x) v = nd(rng) * 3.0f;
  p.bias.resize(n);
  for (auto& v : p.bias) v = nd(rng);
  p.fw.format = FastFormat::kBF16;
  p.fw.data = reinterpret_cast<const uint8_t*>(p.w.data());
  p.fw.n = n;
  p.fw.k = k;
  p.fw.row_stride = 2 * p.stride;
  p.packed = hwy::AllocateAligned<uint8_t>(Bf16PairsBytes(n, k));
  p.pairs = RepackBf16Pairs(p.fw, p.packed.get());
  return p;
}

struct Acts {
  std::vector<uint16_t> hi, lo;
  std::vector<float> rounded;
};

Acts Round(const Problem& p, int64_t rows) {
  Acts a;
  a.hi.assign(rows * Bf16DotActStride(p.k), 0xFFFF);
  a.lo.assign(rows * Bf16DotActStride(p.k), 0xFFFF);
  a.rounded.assign(rows * p.k, 0.0f);
  RoundActsToBf16(p.x.data(), p.k, 0, rows, a.hi.data(), a.lo.data(), a.rounded.data());
  return a;
}

// |y - Σ x·w - b| against the bound of the form, for every output (x: the rounded activations
// for the bf16 form, the f32 ones for the split form).
void ExpectAccurate(const Problem& p, const std::vector<float>& x, bool split, int64_t rows,
                    const std::vector<float>& y, const char* what) {
  for (int64_t m = 0; m < rows; ++m) {
    for (int64_t n = 0; n < p.n; ++n) {
      double exact = p.bias[n], mag = std::abs(p.bias[n]);
      for (int64_t i = 0; i < p.k; ++i) {
        const double prod =
            static_cast<double>(x[m * p.k + i]) * numeric::Bf16ToFloat(p.w[n * p.stride + i]);
        exact += prod;
        mag += std::abs(prod);
      }
      const double bound = split ? (1.0 / 65536 + (p.k + 2) * kU) * mag
                                 : (static_cast<double>(p.k + 1) / 2 + 1) * kU * mag;
      ASSERT_LE(std::abs(y[m * p.n + n] - exact), bound)
          << what << " m " << m << " n " << n << " k " << p.k;
    }
  }
}

TEST(Bf16DotTest, RoundActsIsFloatToBf16WithZeroPadding) {
  const float specials[] = {0.0f,
                            -0.0f,
                            1.0f + 1.0f / 256,
                            1.0f + 3.0f / 256,
                            -3.4e38f,
                            std::numeric_limits<float>::infinity(),
                            std::nanf(""),
                            1e-40f};
  std::vector<float> x(std::begin(specials), std::end(specials));
  const int64_t k = static_cast<int64_t>(x.size()), kp = Bf16DotActStride(k);
  EXPECT_EQ(kp, 32);  // whole AMX K tiles of 32
  EXPECT_EQ(Bf16DotActStride(7), 32);
  EXPECT_EQ(Bf16DotActStride(33), 64);
  EXPECT_EQ(Bf16DotActStride(2048), 2080);  // rows 4 KiB apart would share L1 sets
  std::vector<uint16_t> xb(kp, 0xFFFF), lo(kp, 0xFFFF);
  std::vector<float> back(k);
  RoundActsToBf16(x.data(), k, 0, 1, xb.data(), lo.data(), back.data());
  for (int64_t i = 0; i < k; ++i) {
    EXPECT_EQ(xb[i], numeric::FloatToBf16(x[i])) << i;
    const float want = numeric::Bf16ToFloat(xb[i]);
    EXPECT_EQ(std::memcmp(&back[i], &want, 4), 0) << i;
    EXPECT_EQ(lo[i], numeric::FloatToBf16(x[i] - want)) << i;
  }
  EXPECT_EQ(numeric::Bf16ToFloat(lo[3]), 3.0f / 256 - 4.0f / 256);  // 1 + 3/256 rounds to 1 + 4/256
  for (int64_t i = k; i < kp; ++i) {
    EXPECT_EQ(xb[i], 0) << i;
    EXPECT_EQ(lo[i], 0) << i;
  }
}

TEST(Bf16DotTest, RepackPutsEveryElementInItsPanelSlot) {
  Problem p = Make(37, 77, 1, 5, 3);
  const int64_t pairs = 48;  // K = 77 padded to three AMX K tiles of 16 pairs
  ASSERT_EQ(Bf16PanelKTiles(p.k), 3);
  ASSERT_EQ(p.pairs.format, FastFormat::kBf16Pairs);
  ASSERT_EQ(p.pairs.row_stride, pairs * 64);
  ASSERT_EQ(Bf16PairsBytes(37, 77), 3 * pairs * 64);
  const uint16_t* packed = reinterpret_cast<const uint16_t*>(p.packed.get());
  for (int64_t n = 0; n < 48; ++n) {
    for (int64_t i = 0; i < 2 * pairs; ++i) {
      const uint16_t want = (n < p.n && i < p.k) ? p.w[n * p.stride + i] : 0;
      ASSERT_EQ(packed[(n / 16) * pairs * 32 + (i / 2) * 32 + (n % 16) * 2 + i % 2], want)
          << "n " << n << " k " << i;
    }
  }
}

TEST(Bf16DotTest, AccurateOnOddShapes) {
  if (!Bf16DotAvailable()) GTEST_SKIP() << "no AVX-512 BF16 on this CPU";
  for (auto [n, k, rows, pad] : {std::tuple<int64_t, int64_t, int64_t, int64_t>{1, 1, 1, 0},
                                 {5, 31, 3, 1},
                                 {17, 32, 6, 0},
                                 {37, 33, 9, 7},
                                 {16, 512, 5, 0},
                                 {21, 1025, 13, 3},
                                 {9, 1100, 4, 0},
                                 {70, 2048, 8, 32},
                                 {65, 2500, 7, 0}}) {
    Problem p = Make(n, k, rows, pad, static_cast<uint32_t>(n * 1000 + k));
    const Acts a = Round(p, rows);
    std::vector<float> y(rows * n, std::nanf(""));
    Bf16DotMatmul(p.pairs, a.hi.data(), nullptr, rows, p.bias.data(), y.data(), 0, n);
    ExpectAccurate(p, a.rounded, false, rows, y, "bf16 form");
    Bf16DotMatmul(p.pairs, a.hi.data(), a.lo.data(), rows, p.bias.data(), y.data(), 0, n);
    ExpectAccurate(p, p.x, true, rows, y, "split form");
    // The fallbacks: FastMatmul on the original rows with the rounded or the f32 activations.
    std::vector<float> yf(rows * n);
    FastMatmul(p.fw, a.rounded.data(), rows, p.bias.data(), yf.data(), 0, n);
    ExpectAccurate(p, a.rounded, false, rows, yf, "bf16 fallback");
    FastMatmul(p.fw, p.x.data(), rows, p.bias.data(), yf.data(), 0, n);
    ExpectAccurate(p, p.x, true, rows, yf, "split fallback");
  }
}

TEST(Bf16DotTest, BatchAndColumnSplitInvariant) {
  if (!Bf16DotAvailable()) GTEST_SKIP() << "no AVX-512 BF16 on this CPU";
  for (auto [n, k] : {std::pair<int64_t, int64_t>{83, 2100}, {20, 96}, {7, 545}}) {
    const int64_t rows = 14;
    Problem p = Make(n, k, rows, 0, static_cast<uint32_t>(k));
    const Acts a = Round(p, rows);
    const int64_t kp = Bf16DotActStride(k);
    for (const bool split : {false, true}) {
      const uint16_t* lo = split ? a.lo.data() : nullptr;
      // Each row alone: one tile, the whole K in registers.
      std::vector<float> alone(rows * n);
      for (int64_t m = 0; m < rows; ++m) {
        Bf16DotMatmul(p.pairs, a.hi.data() + m * kp, split ? lo + m * kp : nullptr, 1,
                      p.bias.data(), alone.data() + m * n, 0, n);
      }
      for (int64_t r = 2; r <= rows; ++r) {
        std::vector<float> y(r * n);
        // Columns split at odd places (not panel boundaries), and at the pool's multiples of 16.
        const int64_t step = r % 2 == 0 ? 5 : 16;
        for (int64_t b = 0; b < n; b += step) {
          Bf16DotMatmul(p.pairs, a.hi.data(), lo, r, p.bias.data(), y.data(), b,
                        std::min(n, b + step));
        }
        for (int64_t i = 0; i < r * n; ++i) {
          ASSERT_EQ(std::memcmp(&y[i], &alone[i], 4), 0)
              << (split ? "split" : "bf16") << " rows " << r << " element " << i;
        }
      }
    }
  }
}

// Without a bias, a bf16 denormal activation times a weight of 2^100 would give 2^-30 if it were
// used: vdpbf16ps reads it as zero, as the header says, so the output is exactly the rest.
TEST(Bf16DotTest, NoBiasAndDenormalsFlushLikeZero) {
  if (!Bf16DotAvailable()) GTEST_SKIP() << "no AVX-512 BF16 on this CPU";
  Problem p = Make(3, 64, 1, 0, 5);
  p.x.assign(64, 0.0f);
  p.x[0] = 2.0f;
  p.x[63] = 1e-39f;  // a bf16 denormal (bf16 keeps f32's exponent range: 1e-39 < 2^-126)
  for (int64_t n = 0; n < 3; ++n) p.w[n * 64 + 63] = numeric::FloatToBf16(std::ldexp(1.0f, 100));
  p.pairs = RepackBf16Pairs(p.fw, p.packed.get());
  const Acts a = Round(p, 1);
  ASSERT_NE(a.hi[63], 0);  // the activation itself survives the rounding
  std::vector<float> y(3);
  Bf16DotMatmul(p.pairs, a.hi.data(), nullptr, 1, nullptr, y.data(), 0, 3);
  for (int64_t n = 0; n < 3; ++n) {
    EXPECT_EQ(y[n], 2.0f * numeric::Bf16ToFloat(p.w[n * 64])) << n;
  }
}

}  // namespace
}  // namespace tessera::kernels::cpu::fast
