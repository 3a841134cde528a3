// The INT4 weight-only panel kernel (kernels/cpu/fast/int4_panel_matmul.h) on random codes,
// fractional and integer zero points, groups of 2 to K, and odd shapes:
//  * each output within the header's bound of the exact sum in double of x times the reference's
//    dequantized weights ((float(q) − z) · s, as kernels/cpu/quant's IntWeights decode them),
//    for integer zero points (GPTQ, AWQ; 8 is the symmetric form) and fractional ones;
//  * every row bit-identical alone (the register path) and in calls of 2-40 rows (6-row tiles
//    over decoded K blocks), under column splits at odd places and panel boundaries;
//  * the repack puts each code, scale and zero point where the header says.
#include "kernels/cpu/fast/int4_panel_matmul.h"

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "hwy/aligned_allocator.h"
#include "kernels/cpu/quant/int_weight_only_matmul.h"

namespace tessera::kernels::cpu::fast {
namespace {

struct Layer {
  int64_t n, k, group;
  std::vector<uint8_t> codes, q;  // codes one per byte [n, k]; q the kU4Pairs rows
  std::vector<float> scales, zeros, bias;
  hwy::AlignedFreeUniquePtr<uint8_t[]> panels;
  FastQuantWeights w;
};

Layer Make(int64_t n, int64_t k, int64_t group, uint32_t seed) {
  Layer l{n, k, group, {}, {}, {}, {}, {}, nullptr, {}};
  std::mt19937 rng(seed);
  l.codes.resize(n * k);
  for (auto& c : l.codes) c = static_cast<uint8_t>(rng() % 16);
  l.q.resize(n * k / 2);
  for (int64_t r = 0; r < n; ++r) PackU4Pairs(l.codes.data() + r * k, k, l.q.data() + r * k / 2);
  std::uniform_real_distribution<float> scale(1e-3f, 5e-2f), zero(0.0f, 15.0f);
  for (int64_t i = 0; i < n * (k / group); ++i) {
    l.scales.push_back(scale(rng));
    // Integer zero points (GPTQ, AWQ) and fractional ones.
    l.zeros.push_back(i % 3 == 0 ? static_cast<float>(rng() % 16) : zero(rng));
  }
  for (int64_t i = 0; i < n; ++i) l.bias.push_back(scale(rng) * 30);
  FastQuantWeights& w = l.w;
  w.decode = QuantDecode::kInt4;
  w.q = l.q.data();
  w.n = n;
  w.k = k;
  w.scales = l.scales.data();
  w.zeros = l.zeros.data();
  w.scale_rows = 1;
  w.scale_row_stride = k / group;
  w.scale_k = group;
  l.panels = hwy::AllocateAligned<uint8_t>(Int4PanelsBytes(n, k, group));
  w = RepackInt4Panels(w, l.panels.get());
  return l;
}

std::vector<float> Activations(int64_t rows, int64_t k, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> x(rows * k);
  for (auto& v : x) v = nd(rng);
  if (rows > 1) x[k + 1] = 0.0f;
  return x;
}

// y for rows [0, rows) of x, columns split into [b, e) pieces of `step`.
std::vector<float> RunPanels(const Layer& l, const float* x, int64_t rows, int64_t step, bool bias) {
  std::vector<float> y(rows * l.n, -7.0f);
  for (int64_t b = 0; b < l.n; b += step) {
    Int4PanelMatmul(l.w, x, rows, bias ? l.bias.data() : nullptr, y.data(), b,
                    std::min(l.n, b + step));
  }
  return y;
}

TEST(Int4PanelTest, AccurateAndBatchInvariantOnOddShapes) {
  struct Shape {
    int64_t n, k, group;
  };
  for (const Shape& s : {Shape{1, 2, 2}, Shape{17, 64, 32}, Shape{37, 256, 128}, Shape{70, 96, 96},
                         Shape{16, 1024, 64}, Shape{33, 2048, 128}, Shape{5, 1536, 1536},
                         Shape{67, 40, 8}}) {
    const int64_t rows = 40;
    const Layer l = Make(s.n, s.k, s.group, static_cast<uint32_t>(s.n * 131 + s.k));
    if (!Int4PanelSupported(l.w)) GTEST_SKIP() << "no AVX-512 on this CPU";
    const std::vector<float> x = Activations(rows, s.k, static_cast<uint32_t>(s.k));
    for (const bool bias : {true, false}) {
      const std::vector<float> all = RunPanels(l, x.data(), rows, s.n, bias);
      for (int64_t m = 0; m < rows; ++m) {
        for (int64_t c = 0; c < s.n; ++c) {
          double exact = bias ? l.bias[c] : 0.0, mag = 0;
          for (int64_t i = 0; i < s.k; ++i) {
            const int64_t g = c * (s.k / s.group) + i / s.group;
            const float wv =
                (static_cast<float>(l.codes[c * s.k + i]) - l.zeros[g]) * l.scales[g];
            const double xv = x[m * s.k + i];
            exact += xv * wv;
            // The header's bound: the group sums take q − 8 and the centred zero point apart.
            mag += std::fabs(xv) * l.scales[g] *
                   (std::fabs(l.codes[c * s.k + i] - 8.0) + std::fabs(l.zeros[g] - 8.0));
          }
          const double tol = (s.k + s.group + 3) * std::ldexp(1.0, -24) * mag +
                             std::ldexp(1.0, -23) * std::fabs(exact) + 1e-30;
          ASSERT_NEAR(all[m * s.n + c], exact, tol)
              << "n " << s.n << " k " << s.k << " m " << m << " c " << c;
        }
      }
      // Each row alone (register path) and in calls of other sizes (either path), split anyhow.
      for (int64_t r : {1, 2, 5, 6, 7, 9, 13, 20}) {
        for (int64_t m0 = 0; m0 + r <= rows; m0 += r) {
          const std::vector<float> part = RunPanels(l, x.data() + m0 * s.k, r, r % 2 == 0 ? 16 : 7, bias);
          ASSERT_EQ(std::memcmp(part.data(), all.data() + m0 * s.n, r * s.n * 4), 0)
              << "rows " << r << " from " << m0 << " n " << s.n << " k " << s.k;
        }
      }
    }
  }
}

// A scale of +inf and a NaN zero point reach only their own group's outputs, as in the
// reference (a zero weight times an infinite scale is NaN there too).
TEST(Int4PanelTest, NonFiniteScalesStayInTheirColumn) {
  Layer l = Make(20, 64, 32, 9);
  if (!Int4PanelSupported(l.w)) GTEST_SKIP() << "no AVX-512 on this CPU";
  l.scales[3 * 2 + 1] = INFINITY;  // column 3, group 1
  l.zeros[17 * 2] = NAN;           // column 17, group 0
  FastQuantWeights src = l.w;
  src.q = l.q.data();
  l.w = RepackInt4Panels(src, l.panels.get());
  const std::vector<float> x = Activations(8, 64, 3);
  for (const int64_t rows : {1, 8}) {
    const std::vector<float> y = RunPanels(l, x.data(), rows, 20, false);
    for (int64_t m = 0; m < rows; ++m) {
      for (int64_t c = 0; c < 20; ++c) {
        EXPECT_EQ(std::isfinite(y[m * 20 + c]), c != 3 && c != 17) << m << " " << c;
      }
    }
  }
}

TEST(Int4PanelTest, RepackPutsEveryCodeScaleAndZeroInItsSlot) {
  const Layer l = Make(19, 12, 4, 3);
  const int64_t group_bytes = 128 + 4 * 8, panel_bytes = 3 * group_bytes;
  ASSERT_EQ(Int4PanelsBytes(19, 12, 4), 2 * panel_bytes);
  for (int64_t c = 0; c < 32; ++c) {
    for (int64_t g = 0; g < 3; ++g) {
      const uint8_t* head = l.panels.get() + (c / 16) * panel_bytes + g * group_bytes;
      float z, s;
      std::memcpy(&z, head + 4 * (c % 16), 4);
      std::memcpy(&s, head + 64 + 4 * (c % 16), 4);
      EXPECT_EQ(z, c < 19 ? l.zeros[c * 3 + g] - 8.0f : 0.0f);  // centred
      EXPECT_EQ(s, c < 19 ? l.scales[c * 3 + g] : 0.0f);
      for (int64_t t = 0; t < 2; ++t) {
        const uint8_t byte = head[128 + t * 16 + c % 16];
        const int64_t i = 4 * g + 2 * t;
        EXPECT_EQ(byte & 0xF, c < 19 ? l.codes[c * 12 + i] : 0) << c << " " << i;
        EXPECT_EQ(byte >> 4, c < 19 ? l.codes[c * 12 + i + 1] : 0) << c << " " << i + 1;
      }
    }
  }
}

TEST(Int4PanelTest, SupportedChecksTheLayout) {
  Layer l = Make(16, 64, 32, 1);
  FastQuantWeights w = l.w;
  if (!Int4PanelSupported(w)) GTEST_SKIP() << "no AVX-512 on this CPU";
  FastQuantWeights odd = w;
  odd.scale_k = 3;
  EXPECT_FALSE(Int4PanelSupported(odd));
  FastQuantWeights ragged = w;
  ragged.scale_k = 48;  // does not divide K
  EXPECT_FALSE(Int4PanelSupported(ragged));
  FastQuantWeights fp8 = w;
  fp8.decode = QuantDecode::kFp8;
  EXPECT_FALSE(Int4PanelSupported(fp8));
  FastQuantWeights no_zeros = w;
  no_zeros.zeros = nullptr;
  EXPECT_FALSE(Int4PanelSupported(no_zeros));
}

}  // namespace
}  // namespace tessera::kernels::cpu::fast
