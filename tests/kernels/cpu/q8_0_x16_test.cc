// GGUF Q8_0 in 16-column tiles with int8 activations (kernels/cpu/fast/int4_x16.h, kQ8_0x16) on
// random ggml blocks:
//  * the kernel (VNNI here) equals the portable loop bit for bit, for column counts that are not
//    multiples of 16 and row counts across one and two row tiles;
//  * each row's result is the same alone or with other rows, and however columns are split;
//  * against the ggml block arithmetic read straight from the file's bytes (Σ_b d_w·d_x·Σ w·x in
//    double, the same int8 activations) it is within f32 accumulation rounding, and against float
//    activations within the activation rounding bound.
// And the integer byte tiles (kU8x16: INT8 / INT3 / INT2 weight-only codes with per-group scales
// and zero points), kernel against portable loop bit for bit and batch / split invariance.
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "hwy/aligned_allocator.h"
#include "kernels/cpu/fast/int4_x16.h"
#include "kernels/cpu/fast/q8_act_matmul.h"
#include "kernels/numeric/half.h"
#include "tests/kernels/cpu/int4_x16_test_util.h"

namespace tessera::kernels::cpu::fast {
namespace {

constexpr int64_t kBlockBytes = 34;

struct Q8Matrix {
  std::vector<uint8_t> ggml;
  hwy::AlignedFreeUniquePtr<uint8_t[]> tiles;
  FastWeights fw;
};

Q8Matrix RandomQ8(int64_t n, int64_t k, std::mt19937& rng) {
  Q8Matrix m;
  const int64_t blocks = k / 32;
  m.ggml.resize(n * blocks * kBlockBytes);
  std::uniform_real_distribution<float> scale(-0.02f, 0.02f);
  for (int64_t i = 0; i < n * blocks; ++i) {
    uint8_t* b = m.ggml.data() + i * kBlockBytes;
    const uint16_t h = numeric::FloatToHalf(scale(rng));
    std::memcpy(b, &h, 2);
    for (int j = 2; j < kBlockBytes; ++j) b[j] = static_cast<uint8_t>(rng());
    if (i % 7 == 0) b[2] = 0x80;  // −128, the code with no positive twin
  }
  m.tiles = hwy::AllocateAligned<uint8_t>(Q8_0x16Bytes(n, k));
  m.fw = RepackQ8_0x16(m.ggml.data(), n, k, m.tiles.get());
  return m;
}

using testing::Acts;
using testing::Quantize;

std::vector<float> Normal(int64_t n, std::mt19937& rng) {
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& e : v) e = nd(rng);
  return v;
}

TEST(Q8_0x16Test, MatchesPortableBitForBit) {
  if (testing::FastKernels().empty()) {
    GTEST_SKIP() << "neither AVX-512 VNNI nor AVX2: Int4x16Matmul is the portable loop itself";
  }
  std::mt19937 rng(61);
  for (const auto& [n, k] : {std::pair<int64_t, int64_t>{37, 32},
                             {19, 96},
                             {16, 544},
                             {33, 1056},
                             {5, 2048},
                             {3, 5632}}) {
    const Q8Matrix w = RandomQ8(n, k, rng);
    testing::ExpectMatchesPortable(w.fw, rng, {1, 2, 3, 5, 8, 9, 16, 17});
  }
}

TEST(Q8_0x16Test, BatchAndColumnSplitInvariant) {
  std::mt19937 rng(67);
  const int64_t n = 45, k = 1088, rows = 17;
  const Q8Matrix w = RandomQ8(n, k, rng);
  const auto x = Normal(rows * k, rng);
  testing::ExpectBatchAndColumnSplitInvariant(w.fw, x, rows);
}

TEST(Q8_0x16Test, MatchesGgmlBlockArithmetic) {
  std::mt19937 rng(71);
  // 65 blocks: the tile's last record holds one block (int4_x16_layout.h).
  const int64_t n = 21, k = 2080, rows = 3, blocks = k / 32;
  const Q8Matrix w = RandomQ8(n, k, rng);
  const auto x = Normal(rows * k, rng);
  const Acts a = Quantize(x.data(), rows, k);
  std::vector<float> y(rows * n);
  Int4x16Matmul(w.fw, a.view, nullptr, y.data(), 0, n);
  for (int64_t m = 0; m < rows; ++m) {
    for (int64_t c = 0; c < n; ++c) {
      double int8_dot = 0, int8_mag = 0, exact = 0, bound = 0, mag = 0;
      for (int64_t b = 0; b < blocks; ++b) {
        const uint8_t* blk = w.ggml.data() + (c * blocks + b) * kBlockBytes;
        uint16_t h;
        std::memcpy(&h, blk, 2);
        const double dw = numeric::HalfToFloat(h), dx = a.d[m * blocks + b];
        int64_t isum = 0, wsum = 0;
        for (int j = 0; j < 32; ++j) {
          const int wq = static_cast<int8_t>(blk[2 + j]);
          isum += wq * a.q[m * k + b * 32 + j];
          wsum += std::abs(wq);
          const double xv = x[m * k + b * 32 + j];
          exact += dw * wq * xv;
          mag += std::fabs(dw * wq * xv);
        }
        int8_dot += dw * dx * static_cast<double>(isum);
        int8_mag += std::fabs(dw * dx * static_cast<double>(isum));
        bound += std::fabs(dw) * static_cast<double>(wsum) * dx / 2;
      }
      const float got = y[m * n + c];
      EXPECT_NEAR(got, int8_dot, 1e-6 * int8_mag + 1e-30) << "m=" << m << " c=" << c;
      EXPECT_NEAR(got, exact, bound * 1.0001 + 1e-5 * mag) << "m=" << m << " c=" << c;
    }
  }
}

struct U8Matrix {
  std::vector<uint8_t> codes;
  std::vector<float> scales, zeros;
  hwy::AlignedFreeUniquePtr<uint8_t[]> tiles;
  FastWeights fw;
};

U8Matrix RandomU8(int64_t n, int64_t k, int64_t group, int bits, std::mt19937& rng) {
  U8Matrix m;
  m.codes.resize(n * k);
  for (auto& c : m.codes) c = static_cast<uint8_t>(rng() % (1u << bits));
  std::uniform_real_distribution<float> scale(1e-4f, 0.01f), zero(0.0f, float((1 << bits) - 1));
  for (int64_t i = 0; i < n * (k / group); ++i) {
    m.scales.push_back(scale(rng));
    m.zeros.push_back(i % 3 == 0 ? float(1 << (bits - 1)) : zero(rng));  // integer and fractional
  }
  FastWeights src;
  src.format = FastFormat::kU8Groups;
  src.data = m.codes.data();
  src.n = n;
  src.k = k;
  src.row_stride = k;
  src.group_scales = m.scales.data();
  src.group_zeros = m.zeros.data();
  src.group_size = group;
  m.tiles = hwy::AllocateAligned<uint8_t>(U8x16Bytes(n, k, group));
  m.fw = RepackU8x16(src, m.tiles.get());
  return m;
}

TEST(U8x16Test, MatchesPortableBitForBitAndInvariant) {
  if (testing::FastKernels().empty()) {
    GTEST_SKIP() << "neither AVX-512 VNNI nor AVX2: Int4x16Matmul is the portable loop itself";
  }
  std::mt19937 rng(83);
  for (int bits : {8, 3, 2}) {
    for (const auto& [n, k, g] : {std::tuple<int64_t, int64_t, int64_t>{37, 256, 32},
                                  {19, 384, 128},
                                  {33, 96, 96},
                                  {5, 2048, 128}}) {
      const U8Matrix w = RandomU8(n, k, g, bits, rng);
      SCOPED_TRACE(::testing::Message() << "int" << bits << " g=" << g);
      testing::ExpectMatchesPortable(w.fw, rng, {1, 3, 8, 9, 17});
      if (n >= 31) testing::ExpectBatchAndColumnSplitInvariant(w.fw, Normal(17 * k, rng), 17);
    }
  }
}

}  // namespace
}  // namespace tessera::kernels::cpu::fast
