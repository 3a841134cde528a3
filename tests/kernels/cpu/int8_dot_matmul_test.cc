// The INT8 W8A8 kernels (kernels/cpu/fast/int8_dot_matmul.h: AVX-512 VNNI, and the AVX2 one of
// avx2_panels.h, each run here) against the scalar reference MatmulInt8W8A8, bit for bit: random
// codes and odd shapes (K not a multiple of 4, K past the 2048-element K block, N not a multiple of
// the 16-column panel or the 64-column tile), 1..14 rows (one 6-row tile: K in registers; more: K
// blocks with parked accumulators), per-row and per-tensor weight scales, per-token and static
// activation scales, symmetric and with zero points, with and without bias, column splits at any
// column; and the extreme sums the int32 arithmetic must hold (codes -128 / 127 with the largest
// zero point, K = 2^16 - 1). Also the layout and the u8 shift. Kernel cases skip on CPUs without
// the kernel's instructions.
#include "kernels/cpu/fast/int8_dot_matmul.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iterator>
#include <limits>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "gtest/gtest.h"
#include "hwy/aligned_allocator.h"
#include "kernels/cpu/fast/avx2_panels.h"
#include "kernels/cpu/quant/activation_quant.h"

namespace tessera::kernels::cpu::fast {
namespace {

struct Case {
  int64_t n, k, rows;
  bool w_per_row, per_token, azp, bias;
};

struct Data {
  std::vector<int8_t> qw, qa;
  std::vector<float> sw, sa, bias;
  std::vector<int32_t> azp, azp_adj, col_sums;
  hwy::AlignedFreeUniquePtr<uint8_t[]> panels;
  std::vector<uint8_t> u8;
};

Data Make(const Case& c, uint32_t seed, int extreme = 0) {
  Data d;
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> code(-128, 127);
  std::uniform_real_distribution<float> scale(1e-3f, 2e-2f);
  d.qw.resize(c.n * c.k);
  d.qa.resize(c.rows * c.k);
  for (auto& v : d.qw) v = static_cast<int8_t>(extreme != 0 ? -128 : code(rng));
  for (auto& v : d.qa) v = static_cast<int8_t>(extreme != 0 ? (extreme > 0 ? 127 : -128) : code(rng));
  d.sw.resize(c.w_per_row ? c.n : 1);
  for (auto& v : d.sw) v = scale(rng);
  d.sa.resize(c.per_token ? c.rows : 1);
  for (auto& v : d.sa) v = scale(rng);
  if (c.azp) {
    d.azp.resize(c.per_token ? c.rows : 1);
    for (auto& v : d.azp) v = extreme > 0 ? -128 : extreme < 0 ? 127 : code(rng);
  }
  if (c.bias) {
    d.bias.resize(c.n);
    for (auto& v : d.bias) v = scale(rng) * 100;
  }
  d.azp_adj.resize(c.n);
  ComputeInt8AzpAdjustment(d.qw.data(), c.n, c.k, d.azp_adj.data());
  d.col_sums.resize(c.n);
  d.panels = hwy::AllocateAligned<uint8_t>(Int8QuadsBytes(c.n, c.k));
  RepackInt8Quads(d.qw.data(), c.n, c.k, d.panels.get(), d.col_sums.data());
  d.u8.assign(c.rows * Int8DotActStride(c.k), 0);
  Int8ActsToU8(d.qa.data(), c.k, 0, c.rows, d.u8.data());
  return d;
}

using Int8Kernel = void (*)(const Int8DotWeights&, const uint8_t*, const Int8Activations&, int64_t,
                            const float*, float*, int64_t, int64_t);

void ExpectBitExact(const Case& c, const Data& d, const char* what, Int8Kernel kernel) {
  Int8Weights rw{d.qw.data(), d.sw.data(), c.w_per_row, d.azp_adj.data()};
  Int8Activations ra{d.qa.data(), d.sa.data(), c.azp ? d.azp.data() : nullptr, c.per_token};
  const float* bias = c.bias ? d.bias.data() : nullptr;
  std::vector<float> ref(c.rows * c.n), got(c.rows * c.n, -1.0f);
  ASSERT_TRUE(MatmulInt8W8A8(rw, c.n, c.k, ra, c.rows, bias, ref.data(), 0, c.n));
  const Int8DotWeights fw{d.panels.get(), d.col_sums.data(), d.sw.data(), c.w_per_row, c.n, c.k};
  // Column splits at odd places (not panel boundaries).
  for (int64_t b = 0; b < c.n; b += 13) {
    kernel(fw, d.u8.data(), ra, c.rows, bias, got.data(), b, std::min(c.n, b + 13));
  }
  for (int64_t i = 0; i < c.rows * c.n; ++i) {
    ASSERT_EQ(std::memcmp(&got[i], &ref[i], 4), 0)
        << what << " n " << c.n << " k " << c.k << " rows " << c.rows << " element " << i << ": "
        << got[i] << " vs " << ref[i];
  }
}

TEST(Int8DotTest, LayoutAndShift) {
  const int64_t n = 19, k = 7;
  std::vector<int8_t> q(n * k);
  for (int64_t i = 0; i < n * k; ++i) q[i] = static_cast<int8_t>(i * 37 - 100);
  auto panels = hwy::AllocateAligned<uint8_t>(Int8QuadsBytes(n, k));
  std::vector<int32_t> sums(n);
  ASSERT_EQ(Int8QuadsBytes(n, k), 2 * 1024);  // two panels of one AMX K tile (64 K) each
  RepackInt8Quads(q.data(), n, k, panels.get(), sums.data());
  for (int64_t c = 0; c < 32; ++c) {
    for (int64_t i = 0; i < 8; ++i) {
      const uint8_t want = (c < n && i < k) ? static_cast<uint8_t>(q[c * k + i]) : 0;
      ASSERT_EQ(panels[(c / 16) * 1024 + (i / 4) * 64 + (c % 16) * 4 + i % 4], want) << c << " " << i;
    }
  }
  for (int64_t c = 0; c < n; ++c) {
    int32_t s = 0;
    for (int64_t i = 0; i < k; ++i) s += q[c * k + i];
    EXPECT_EQ(sums[c], s) << c;
  }
  EXPECT_EQ(Int8DotActStride(7), 64);  // whole AMX K tiles of 64
  EXPECT_EQ(Int8DotActStride(65), 128);
  EXPECT_EQ(Int8DotActStride(4096), 4160);
  std::vector<uint8_t> u8(64, 0);
  const std::vector<int8_t> a = {-128, -1, 0, 1, 127, 5, -5};
  Int8ActsToU8(a.data(), 7, 0, 1, u8.data());
  std::vector<uint8_t> want(64, 128);  // padded with code 0
  const uint8_t head[] = {0, 127, 128, 129, 255, 133, 123};
  std::copy(std::begin(head), std::end(head), want.begin());
  EXPECT_EQ(u8, want);
}

// The fused quantizer against QuantizeInt8PerTokenSymmetric + Int8ActsToU8: ties (x · 127 / amax
// exactly k + 0.5 with amax = 127), NaN (ignored by the amax, code 0), ±inf (amax inf: every code
// 0), all-zero rows, negative zero, and random rows of odd lengths.
TEST(Int8DotTest, FusedSymmetricQuantizerMatchesReference) {
  std::mt19937 rng(5);
  std::normal_distribution<float> nd(0.0f, 3.0f);
  std::vector<std::vector<float>> rows;
  std::vector<float> ties = {127.0f, -127.0f};
  for (int v = -127; v < 127; ++v) ties.push_back(v + 0.5f);
  rows.push_back(ties);
  rows.push_back({1.0f, std::nanf(""), -2.0f, 0.25f, -0.0f});
  rows.push_back({std::numeric_limits<float>::infinity(), 1.0f, -3.0f});
  rows.push_back(std::vector<float>(37, 0.0f));
  rows.push_back({1e-44f, -3e-45f, 0.0f});  // amax denormal: 127 / amax is inf, codes saturate
  rows.push_back({1e-44f, std::numeric_limits<float>::infinity()});  // inf · 0: NaN -> code 0
  for (int64_t len : {1, 15, 16, 17, 100, 4096}) {
    std::vector<float> r(len);
    for (auto& v : r) v = nd(rng);
    rows.push_back(r);
  }
  for (const auto& r : rows) {
    const int64_t k = static_cast<int64_t>(r.size());
    std::vector<int8_t> q(k);
    float ref_scale = 0, scale = 0;
    QuantizeInt8PerTokenSymmetric(r.data(), 1, k, q.data(), &ref_scale);
    std::vector<uint8_t> want(Int8DotActStride(k)), got(Int8DotActStride(k), 7);
    Int8ActsToU8(q.data(), k, 0, 1, want.data());
    QuantizeInt8PerTokenSymmetricU8(r.data(), k, 0, 1, &scale, got.data());
    EXPECT_EQ(std::memcmp(&scale, &ref_scale, 4), 0) << "k " << k;
    EXPECT_EQ(got, want) << "k " << k;
  }
}

// Int8DotMatmul where it runs AVX-512 VNNI (or AMX), and the AVX2 kernel on any CPU with AVX2.
class Int8KernelTest : public ::testing::TestWithParam<bool> {
 protected:
  // The kernel under test, or null (skip) where this CPU lacks it.
  static Int8Kernel Kernel() {
    if (GetParam()) return internal::Avx2PanelsAvailable() ? internal::Int8DotMatmulAvx2 : nullptr;
    return Int8DotAvailable() ? Int8DotMatmul : nullptr;
  }
};

TEST_P(Int8KernelTest, BitExactAgainstReference) {
  const Int8Kernel kernel = Kernel();
  if (kernel == nullptr) GTEST_SKIP() << "not on this CPU";
  uint32_t seed = 1;
  for (auto [n, k, rows] : {std::tuple<int64_t, int64_t, int64_t>{1, 1, 1},
                            {5, 3, 2},
                            {17, 64, 6},
                            {37, 101, 7},
                            {70, 2049, 13},
                            {16, 4100, 14},
                            {65, 256, 1},
                            {33, 300, 70}}) {
    for (int variant = 0; variant < 8; ++variant) {
      const Case c{n, k, rows, (variant & 1) != 0, (variant & 2) != 0, (variant & 4) != 0,
                   variant % 3 != 0};
      const Data d = Make(c, seed++);
      ASSERT_NO_FATAL_FAILURE(ExpectBitExact(c, d, "random", kernel));
    }
  }
}

TEST_P(Int8KernelTest, ExtremeSumsStayExact) {
  const Int8Kernel kernel = Kernel();
  if (kernel == nullptr) GTEST_SKIP() << "not on this CPU";
  const int64_t k = (int64_t{1} << 16) - 1;
  ASSERT_TRUE(Int8DotSupportsK(k));
  ASSERT_FALSE(Int8DotSupportsK(k + 1));
  for (int extreme : {1, -1}) {
    for (bool azp : {false, true}) {
      const Case c{16, k, 2, true, true, azp, true};
      const Data d = Make(c, 99, extreme);
      ASSERT_NO_FATAL_FAILURE(ExpectBitExact(c, d, extreme > 0 ? "127s" : "-128s", kernel));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Kernels, Int8KernelTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return std::string(info.param ? "Avx2" : "Int8DotMatmul");
                         });

}  // namespace
}  // namespace tessera::kernels::cpu::fast
