// Test helper shared by the 16-column tile tests (int4_x16_test.cc, q8_0_x16_test.cc): int8
// activation blocks from QuantizeActsInt4x16, owned together with the Int4x16Acts view of them.
#ifndef TESSERA_TESTS_KERNELS_CPU_INT4_X16_TEST_UTIL_H_
#define TESSERA_TESTS_KERNELS_CPU_INT4_X16_TEST_UTIL_H_

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/cpu/fast/int4_x16.h"
#include "kernels/cpu/fast/q8_act_matmul.h"
#include "kernels/cpu/ggml_dequant.h"
#include "kernels/numeric/half.h"

namespace tessera::kernels::cpu::fast::testing {

struct Acts {
  std::vector<int8_t> q;
  std::vector<float> d, s, s2;
  Int4x16Acts view;
};

// halves: code sums per half block (s the first halves', s2 the second's), as kQ6_Kx16 needs.
inline Acts Quantize(const float* x, int64_t rows, int64_t k, bool halves = false) {
  Acts a;
  a.q.resize(rows * k);
  a.d.resize(rows * k / 32);
  a.s.resize(rows * k / 32);
  if (halves) a.s2.resize(rows * k / 32);
  QuantizeActsInt4x16(x, k, 0, rows, a.q.data(), a.d.data(), a.s.data(),
                      halves ? a.s2.data() : nullptr);
  a.view = {rows, a.q.data(), a.d.data(), a.s.data()};
  a.view.s2 = halves ? a.s2.data() : nullptr;
  return a;
}

inline bool NeedsHalves(const FastWeights& fw) { return X16NeedsHalfSums(fw.format); }

// The kernels this CPU can run besides the portable loop (AVX-512 VNNI, AVX-VNNI or its EVEX twin,
// AVX2).
inline std::vector<Int4x16Kernel> FastKernels() {
  std::vector<Int4x16Kernel> out;
  for (Int4x16Kernel kernel :
       {Int4x16Kernel::kAvx512Vnni, Int4x16Kernel::kAvxVnni, Int4x16Kernel::kAvx2}) {
    if (Int4x16KernelSupported(kernel)) out.push_back(kernel);
  }
  return out;
}

// Int4x16Matmul (the dispatcher) and every fast kernel this CPU supports (Int4x16MatmulOn) equal
// Int4x16MatmulPortable bit for bit on the activations a: all columns with `bias`, a column range
// that starts and ends inside column groups (with bias), and a per-row scale without bias (the
// epilogue's multiply-only form). `what` names the case.
inline void ExpectKernelsMatchPortable(const FastWeights& fw, const Int4x16Acts& a,
                                       const float* bias, const std::string& what) {
  const int64_t n = fw.n, rows = a.rows;
  std::vector<float> row_scales(rows);
  for (int64_t m = 0; m < rows; ++m) row_scales[m] = 0.75f + 0.125f * static_cast<float>(m % 5);
  Int4x16Acts scaled = a;
  scaled.row_scale = row_scales.data();
  scaled.row_scale_stride = 1;
  struct Case {
    const char* name;
    const Int4x16Acts* acts;
    const float* bias;
    int64_t begin, end;
  };
  const Case cases[] = {{"all columns", &a, bias, 0, n},
                        {"inner columns", &a, bias, std::min<int64_t>(3, n),
                         std::max<int64_t>(n - 2, std::min<int64_t>(3, n))},
                        {"row scale, no bias", &scaled, nullptr, 0, n}};
  for (const Case& c : cases) {
    std::vector<float> ref(rows * n, -2.0f);
    Int4x16MatmulPortable(fw, *c.acts, c.bias, ref.data(), c.begin, c.end);
    std::vector<Int4x16Kernel> kernels = FastKernels();
    kernels.push_back(Int4x16Kernel::kPortable);  // stands for the dispatcher below
    for (size_t ki = 0; ki < kernels.size(); ++ki) {
      const bool dispatcher = ki + 1 == kernels.size();
      std::vector<float> y(rows * n, -2.0f);
      if (dispatcher) {
        Int4x16Matmul(fw, *c.acts, c.bias, y.data(), c.begin, c.end);
      } else {
        Int4x16MatmulOn(kernels[ki], fw, *c.acts, c.bias, y.data(), c.begin, c.end);
      }
      for (int64_t i = 0; i < rows * n; ++i) {
        ASSERT_EQ(std::memcmp(&y[i], &ref[i], 4), 0)
            << (dispatcher ? "Int4x16Matmul" : Int4x16KernelName(kernels[ki])) << " " << what
            << " (" << c.name << ") n=" << n << " k=" << fw.k << " rows=" << rows << " i=" << i
            << ": " << y[i] << " vs " << ref[i];
      }
    }
  }
}

// Int4x16MatmulPortable on fw equals, within f32 rounding, a double sum of w (the reference
// dequantizer's [fw.n, fw.k] weights) times the activations as the tiles see them (code times
// block scale), plus bias: each output within roundings · 2^-24 · (Σ |x·w| + slack · Σ |x|).
inline void ExpectPortableFollowsDequantized(const FastWeights& fw, const Acts& a,
                                             const std::vector<float>& w,
                                             const std::vector<float>& bias, double roundings,
                                             double slack, const std::string& what) {
  const int64_t n = fw.n, k = fw.k, rows = a.view.rows;
  std::vector<float> y(rows * n);
  Int4x16MatmulPortable(fw, a.view, bias.data(), y.data(), 0, n);
  for (int64_t m = 0; m < rows; ++m) {
    for (int64_t c = 0; c < n; ++c) {
      double want = bias[c], mag = std::abs(bias[c]);
      for (int64_t i = 0; i < k; ++i) {
        const double xi = double(a.q[m * k + i]) * a.d[m * (k / 32) + i / 32];
        want += xi * w[c * k + i];
        mag += std::abs(xi * w[c * k + i]) + std::abs(xi) * slack;
      }
      ASSERT_NEAR(y[m * n + c], want, roundings * 0x1p-24 * mag)
          << what << " m=" << m << " c=" << c;
    }
  }
}

// On rows of normal random activations and bias: ExpectPortableFollowsDequantized, then
// ExpectKernelsMatchPortable.
inline void ExpectTilesFollowDequantized(const FastWeights& fw, const std::vector<float>& w,
                                         int64_t rows, double roundings, double slack,
                                         std::mt19937& rng, const std::string& what) {
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> x(rows * fw.k), bias(fw.n);
  for (auto& v : x) v = nd(rng);
  for (auto& v : bias) v = nd(rng);
  const Acts a = Quantize(x.data(), rows, fw.k, NeedsHalves(fw));
  ExpectPortableFollowsDequantized(fw, a, w, bias, roundings, slack, what);
  if (::testing::Test::HasFatalFailure()) return;
  ExpectKernelsMatchPortable(fw, a.view, bias.data(), what);
}

// n x k weights of GGUF `type` as random bytes, with an f16 scale uniform in ±0.004 written at each
// offset of `scales_at` in every block (d, and Q2_K's dmin): every code and sub-block scale
// random, the block scales sane.
inline std::vector<uint8_t> RandomGgmlBlocks(GgmlBlockType type, int64_t n, int64_t k,
                                             std::initializer_list<int64_t> scales_at,
                                             std::mt19937& rng) {
  const GgmlBlockInfo info = GetGgmlBlockInfo(type);
  const int64_t blocks = n * k / info.elements;
  std::vector<uint8_t> src(blocks * info.bytes);
  for (auto& b : src) b = static_cast<uint8_t>(rng());
  std::uniform_real_distribution<float> scale(-0.004f, 0.004f);
  for (int64_t i = 0; i < blocks; ++i) {
    for (const int64_t at : scales_at) {
      const uint16_t h = numeric::FloatToHalf(scale(rng));
      std::memcpy(src.data() + i * info.bytes + at, &h, 2);
    }
  }
  return src;
}

// ExpectKernelsMatchPortable for each row count, on normal random activations.
inline void ExpectMatchesPortable(const FastWeights& fw, std::mt19937& rng,
                                  std::initializer_list<int64_t> row_counts) {
  const int64_t n = fw.n, k = fw.k;
  std::normal_distribution<float> nd(0.0f, 1.0f);
  for (int64_t rows : row_counts) {
    std::vector<float> x(rows * k), bias(n);
    for (auto& v : x) v = nd(rng);
    for (auto& v : bias) v = nd(rng);
    const Acts a = Quantize(x.data(), rows, k, NeedsHalves(fw));
    ExpectKernelsMatchPortable(fw, a.view, bias.data(), "");
    if (::testing::Test::HasFatalFailure()) return;
  }
}

// Rows of x ([rows, fw.k], fw.n ≥ 31) give the same bits however the columns are split and
// whether each row runs alone or with the others.
inline void ExpectBatchAndColumnSplitInvariant(const FastWeights& fw, const std::vector<float>& x,
                                               int64_t rows) {
  const int64_t n = fw.n, k = fw.k;
  const Acts a = Quantize(x.data(), rows, k, NeedsHalves(fw));
  std::vector<float> all(rows * n, -1.0f), split(rows * n, -1.0f);
  Int4x16Matmul(fw, a.view, nullptr, all.data(), 0, n);
  for (auto [b, e] : {std::pair<int64_t, int64_t>{0, 7}, {7, 30}, {30, n}}) {
    Int4x16Matmul(fw, a.view, nullptr, split.data(), b, e);
  }
  ASSERT_EQ(std::memcmp(all.data(), split.data(), all.size() * 4), 0);
  for (int64_t m = 0; m < rows; ++m) {
    const Acts one = Quantize(x.data() + m * k, 1, k, NeedsHalves(fw));
    std::vector<float> y(n);
    Int4x16Matmul(fw, one.view, nullptr, y.data(), 0, n);
    ASSERT_EQ(std::memcmp(y.data(), all.data() + m * n, n * 4), 0) << "row " << m;
  }
}

}  // namespace tessera::kernels::cpu::fast::testing

#endif  // TESSERA_TESTS_KERNELS_CPU_INT4_X16_TEST_UTIL_H_
