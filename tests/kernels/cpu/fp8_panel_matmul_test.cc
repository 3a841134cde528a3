// The FP8 panel kernel (kernels/cpu/fast/fp8_panel_matmul.h) on random codes and odd shapes, W8A16
// (per-row and per-tensor weight scales, the exact hi + lo split) and W8A8 (E4M3 activation values,
// per-token row scales and per-column weight scales in the epilogue):
//  * each output within the split's bound of the exact sum in double;
//  * every row bit-identical alone and in calls of 2-53 rows (without AMX: the register path up
//    to 24 rows, in 6-row tiles and K blocks, the decoded-panel GEMM beyond, in row chunks; on
//    the AMX route: tiles decoded inside the walk up to 32 rows, decoded panels beyond), and
//    under column splits at odd places and panel boundaries, on either side of those limits;
//  * the same for the AMX route on the software model of the tile instructions, on any CPU,
//    with the decode buffers holding NaN from an earlier layer (padding must be rewritten);
//    where the CPU grants AMX the first test runs that route with the real instructions
//    (Fp8PanelMatmul takes it there; the test records which route ran);
//  * the repack puts each code where the header says.
#include "kernels/cpu/fast/fp8_panel_matmul.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iostream>
#include <random>
#include <tuple>
#include <vector>

#include "gtest/gtest.h"
#include "hwy/aligned_allocator.h"
#include "kernels/cpu/fast/amx_panel_gemm.h"
#include "kernels/cpu/fast/bf16_dot_matmul.h"
#include "kernels/numeric/fp8.h"
#include "tests/kernels/cpu/amx_model.h"

namespace tessera::kernels::cpu::fast {
namespace {

struct Layer {
  int64_t n, k;
  bool w8a8, per_row;
  std::vector<uint8_t> q;
  std::vector<float> scales, col_scale, row_scale, bias;
  hwy::AlignedFreeUniquePtr<uint8_t[]> panels;
  FastQuantWeights w;
};

Layer Make(int64_t n, int64_t k, int64_t rows, bool w8a8, bool per_row, uint32_t seed) {
  Layer l{n, k, w8a8, per_row, {}, {}, {}, {}, {}, nullptr, {}};
  std::mt19937 rng(seed);
  l.q.resize(n * k);
  for (auto& c : l.q) {
    c = static_cast<uint8_t>(rng());
    if ((c & 0x7F) == 0x7F) c ^= 1;  // no NaN codes
  }
  std::uniform_real_distribution<float> scale(1e-3f, 2e-2f);
  for (int64_t i = 0; i < (per_row ? n : 1); ++i) l.scales.push_back(scale(rng));
  for (int64_t i = 0; i < n; ++i) l.col_scale.push_back(scale(rng));
  for (int64_t i = 0; i < rows; ++i) l.row_scale.push_back(scale(rng));
  for (int64_t i = 0; i < n; ++i) l.bias.push_back(scale(rng) * 30);
  FastQuantWeights& w = l.w;
  w.decode = QuantDecode::kFp8;
  w.q = l.q.data();
  w.n = n;
  w.k = k;
  w.scale_k = k;
  if (w8a8) {  // QuantizedLinear's W8A8 form: bare codes, the scales in the epilogue
    static const float kUnit = 1.0f;
    w.scales = &kUnit;
    w.scale_rows = n;
    w.scale_row_stride = 0;
    w.col_scale = l.col_scale.data();
    w.col_scale_stride = 1;
    w.row_scale = l.row_scale.data();
    w.row_scale_stride = 1;
  } else {
    w.scales = l.scales.data();
    w.scale_rows = per_row ? 1 : n;
    w.scale_row_stride = per_row ? 1 : 0;
  }
  l.panels = hwy::AllocateAligned<uint8_t>(Fp8PairsBytes(n, k));
  w = RepackFp8Pairs(w, l.panels.get());
  return l;
}

std::vector<float> Activations(int64_t rows, int64_t k, bool e4m3, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> x(rows * k);
  for (auto& v : x) v = e4m3 ? numeric::DecodeE4m3(numeric::EncodeE4m3(nd(rng) * 40.0f)) : nd(rng);
  return x;
}

// Fp8PanelMatmul's signature: the kernel as dispatched, or its AMX route on the model.
using Fp8Matmul = void (*)(const FastQuantWeights&, const uint16_t*, const uint16_t*, int64_t,
                           const float*, float*, int64_t, int64_t);

void AmxRouteOnModel(const FastQuantWeights& w, const uint16_t* hi, const uint16_t* lo,
                     int64_t rows, const float* bias, float* y, int64_t n_begin, int64_t n_end) {
  internal::Fp8PanelMatmulAmx(w, hi, lo, rows, bias, y, n_begin, n_end, testing::kModelBf16Gemms);
}

// y for rows [0, rows) of x, columns split into [b, e) pieces of `step`.
std::vector<float> RunPanels(const Layer& l, const float* x, int64_t rows, int64_t step,
                             const float* row_scale, Fp8Matmul matmul = Fp8PanelMatmul) {
  const int64_t stride = Bf16DotActStride(l.k);
  std::vector<uint16_t> hi(rows * stride), lo(rows * stride);
  RoundActsToBf16(x, l.k, 0, rows, hi.data(), lo.data(), nullptr);
  FastQuantWeights w = l.w;
  if (l.w8a8) w.row_scale = row_scale;
  std::vector<float> y(rows * l.n, -7.0f);
  for (int64_t b = 0; b < l.n; b += step) {
    // Each piece into a fresh buffer: a call may write its own columns only (threads share y).
    const int64_t e = std::min(l.n, b + step);
    std::vector<float> piece(rows * l.n, -7.0f);
    matmul(w, hi.data(), l.w8a8 ? nullptr : lo.data(), rows, l.bias.data(), piece.data(), b, e);
    for (int64_t m = 0; m < rows; ++m) {
      for (int64_t c = 0; c < l.n; ++c) {
        if (c >= b && c < e) {
          y[m * l.n + c] = piece[m * l.n + c];
        } else {
          EXPECT_EQ(piece[m * l.n + c], -7.0f)
              << "column " << c << " outside [" << b << ", " << e << ") written, row " << m;
        }
      }
    }
  }
  return y;
}

class Fp8PanelTest : public ::testing::TestWithParam<std::tuple<bool, bool>> {
 protected:
  void CheckAccurateAndInvariant(Fp8Matmul matmul);
};

TEST_P(Fp8PanelTest, AccurateInvariantOnOddShapes) {
  const char* route = AmxBf16Usable() ? "amx-tiles" : "avx512";
  RecordProperty("fp8_panel_route", route);
  std::cout << "FP8 panel route: " << route << "\n";
  CheckAccurateAndInvariant(Fp8PanelMatmul);
}

TEST_P(Fp8PanelTest, AmxRouteOnTheModelAccurateInvariant) {
  CheckAccurateAndInvariant(AmxRouteOnModel);
}

void Fp8PanelTest::CheckAccurateAndInvariant(Fp8Matmul matmul) {
  const auto [w8a8, per_row] = GetParam();
  for (const auto& [n, k] : {std::pair<int64_t, int64_t>{1, 1}, {17, 3}, {37, 64}, {70, 65},
                             {16, 130}, {33, 2048}, {5, 515}}) {
    // 53 rows: the decoded-panel GEMM runs its tiles in chunks of 24 rows (32 on AMX),
    // prefetching between them.
    const int64_t rows = 53;
    Layer l = Make(n, k, rows, w8a8, per_row, static_cast<uint32_t>(n * 131 + k));
    if (!Fp8PanelSupported(l.w)) GTEST_SKIP() << "no AVX-512 BF16 / VBMI on this CPU";
    {  // An earlier layer of NaN codes leaves NaN in this thread's decoded panels.
      Layer poison = Make(64, 2048, 40, w8a8, per_row, 1);
      std::fill(poison.q.begin(), poison.q.end(), uint8_t{0x7F});
      FastQuantWeights src = poison.w;
      src.q = poison.q.data();
      poison.w = RepackFp8Pairs(src, poison.panels.get());
      const std::vector<float> px = Activations(40, 2048, w8a8, 2);
      RunPanels(poison, px.data(), 40, 64, poison.row_scale.data(), matmul);
    }
    const std::vector<float> x = Activations(rows, k, w8a8, static_cast<uint32_t>(k));
    const std::vector<float> all = RunPanels(l, x.data(), rows, n, l.row_scale.data(), matmul);
    for (int64_t m = 0; m < rows; ++m) {
      for (int64_t c = 0; c < n; ++c) {
        double exact = 0, mag = 0;
        for (int64_t i = 0; i < k; ++i) {
          const double p = static_cast<double>(x[m * k + i]) * numeric::DecodeE4m3(l.q[c * k + i]);
          exact += p;
          mag += std::fabs(p);
        }
        const double s = w8a8 ? static_cast<double>(l.row_scale[m]) * l.col_scale[c]
                              : l.scales[per_row ? c : 0];
        exact = exact * s + l.bias[c];
        const double tol = (std::ldexp(1.0, -16) * !w8a8 + (k + 8) * std::ldexp(1.0, -24)) *
                               mag * std::fabs(s) +
                           std::ldexp(1.0, -21) * std::fabs(exact) + 1e-30;
        ASSERT_NEAR(all[m * n + c], exact, tol) << "n " << n << " k " << k << " m " << m;
      }
    }
    // All rows again with the columns split at odd places (the decoded-panel GEMM's passes
    // start mid-panel).
    const std::vector<float> split = RunPanels(l, x.data(), rows, 7, l.row_scale.data(), matmul);
    ASSERT_EQ(std::memcmp(split.data(), all.data(), rows * n * 4), 0) << "n " << n << " k " << k;
    // Each row alone and in calls of other sizes (either side of 24 and 32 rows), split anyhow.
    for (int64_t r : {1, 2, 3, 4, 5, 6, 7, 9, 30, 33}) {
      for (int64_t m0 = 0; m0 + r <= rows; m0 += r) {
        const std::vector<float> part = RunPanels(l, x.data() + m0 * k, r, r % 2 == 0 ? 16 : 7,
                                                  l.row_scale.data() + m0, matmul);
        ASSERT_EQ(std::memcmp(part.data(), all.data() + m0 * n, r * n * 4), 0)
            << "rows " << r << " from " << m0 << " n " << n << " k " << k;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Forms, Fp8PanelTest,
                         // W8A8 carries its weight scales in the epilogue, per row or not (the
                         // per-tensor form is the stride-0 test below).
                         ::testing::Values(std::tuple{false, false}, std::tuple{false, true},
                                           std::tuple{true, true}),
                         [](const ::testing::TestParamInfo<std::tuple<bool, bool>>& info) {
                           return std::string(std::get<0>(info.param) ? "W8A8" : "W8A16") +
                                  (std::get<1>(info.param) ? "_PerRow" : "_PerTensor");
                         });

// W8A8 with one static activation scale and a per-tensor weight scale (both stride 0), no bias,
// and an output whose products vdpbf16ps flushes to zero: rows alone vs in a 9-row call (without
// AMX: registers vs decoded panels) bit for bit, sign of zero included, for K = 1 and 2 mod 4;
// the other outputs close to the exact sum.
TEST(Fp8PanelLayoutTest, StaticScalesNoBiasTinySums) {
  for (const int64_t k : {65, 130, 2048}) {
    Layer l = Make(21, k, 9, true, true, 11);
    if (!Fp8PanelSupported(l.w)) GTEST_SKIP() << "no AVX-512 BF16 / VBMI on this CPU";
    l.w.col_scale_stride = 0;
    l.w.row_scale_stride = 0;
    l.bias.clear();
    // Column 0 all 2^-9 (the smallest E4M3 subnormal) and row 2 all -2^-120: every product is
    // -2^-129, which vdpbf16ps flushes to a zero whose sign depends on the order of the adds (a
    // trailing +0 pair on one path only made the two paths disagree; caught here).
    for (int64_t i = 0; i < k; ++i) l.q[i] = 0x01;
    FastQuantWeights src = l.w;
    src.q = l.q.data();
    l.w = RepackFp8Pairs(src, l.panels.get());
    std::vector<float> x = Activations(9, k, true, 5);
    for (int64_t i = 0; i < k; ++i) x[2 * k + i] = -0x1p-120f;
    const int64_t stride = Bf16DotActStride(k);
    std::vector<uint16_t> hi(9 * stride);
    RoundActsToBf16(x.data(), k, 0, 9, hi.data(), nullptr, nullptr);
    std::vector<float> all(9 * 21), one(21);
    Fp8PanelMatmul(l.w, hi.data(), nullptr, 9, nullptr, all.data(), 0, 21);
    EXPECT_EQ(all[2 * 21], 0.0f);  // +0 or -0, as the CPU flushes (-0 for K = 65 on Zen 4)
    for (int64_t m = 0; m < 9; ++m) {
      Fp8PanelMatmul(l.w, hi.data() + m * stride, nullptr, 1, nullptr, one.data(), 0, 21);
      ASSERT_EQ(std::memcmp(one.data(), all.data() + m * 21, 21 * 4), 0) << "row " << m << " k " << k;
      for (int64_t c = 0; c < 21 && m != 2; ++c) {
        double exact = 0, mag = 0;
        for (int64_t i = 0; i < k; ++i) {
          const double p = static_cast<double>(x[m * k + i]) * numeric::DecodeE4m3(l.q[c * k + i]);
          exact += p;
          mag += std::fabs(p);
        }
        const double sc = static_cast<double>(l.row_scale[0]) * l.col_scale[0];
        ASSERT_NEAR(all[m * 21 + c], exact * sc, (k + 8) * std::ldexp(1.0, -24) * mag * sc + 1e-30);
      }
    }
  }
}

TEST(Fp8PanelLayoutTest, RepackPutsEveryCodeInItsPanelSlot) {
  const Layer l = Make(19, 7, 1, false, true, 3);
  const int64_t panel_bytes = 2 * 64;  // K = 7 padded to 8: two steps of two pairs
  ASSERT_EQ(Fp8PairsBytes(19, 7), 2 * panel_bytes);
  for (int64_t c = 0; c < 32; ++c) {
    for (int64_t i = 0; i < 8; ++i) {
      const uint8_t want = c < 19 && i < 7 ? l.q[c * 7 + i] : 0;
      ASSERT_EQ(l.panels[(c / 16) * panel_bytes + (i / 2) * 32 + (c % 16) * 2 + i % 2], want)
          << c << " " << i;
    }
  }
}

}  // namespace
}  // namespace tessera::kernels::cpu::fast
