// Tests of kernels/cpu/quant/int_weight_only_matmul.h: the dequantize-row function against the
// spec formula W = (float(q) − zero) · scale with contiguous and act-order (g_idx) groups, the
// packed 4-bit layout against the byte-per-code layout (bit-identical results), bits 2/3/4/8 with
// symmetric and asymmetric zeros against a double-precision matmul, odd shapes, and batch
// invariance.
#include "kernels/cpu/quant/int_weight_only_matmul.h"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "tests/kernels/cpu/quant_test_util.h"

namespace tessera::kernels::cpu {
namespace {

using testing::ExpectBatchInvariant;
using testing::ExpectCloseToReference;
using testing::RandomActivations;
using testing::RandomBytes;
using testing::RandomFloats;
using testing::ReferenceMatmul;

// A quantized weight in both layouts plus its group description.
struct WeightData {
  std::vector<uint8_t> codes;   // [N, K]
  std::vector<uint8_t> packed;  // [N, ceil(K/2)], only for bits <= 4
  std::vector<float> scales;
  std::vector<float> zeros;
  std::vector<int32_t> g_idx;
  IntWeights view;  // the byte-per-code layout
};

// Random codes for `bits`, symmetric (zero = 2^(bits-1)) or random integer zeros; with act_order
// a shuffled g_idx over ceil(K / group_size) groups replaces the contiguous k / group_size.
WeightData MakeWeights(std::mt19937& rng, int bits, bool symmetric, int64_t n, int64_t k,
                       int64_t group_size, bool act_order) {
  WeightData d;
  d.codes = RandomBytes(rng, n * k, 0, (1 << bits) - 1);
  const int64_t groups = (k + group_size - 1) / group_size;
  d.scales = RandomFloats(rng, n * groups, 0.001f, 0.05f);
  d.zeros.resize(n * groups);
  std::uniform_int_distribution<int> zero_dist(0, (1 << bits) - 1);
  for (float& z : d.zeros) z = symmetric ? static_cast<float>(1 << (bits - 1)) : zero_dist(rng);
  if (act_order) {
    // Desc-act: the K channels are a permutation of group-contiguous channels.
    d.g_idx.resize(k);
    for (int64_t i = 0; i < k; ++i) d.g_idx[i] = static_cast<int32_t>(i / group_size);
    std::shuffle(d.g_idx.begin(), d.g_idx.end(), rng);
  }
  if (bits <= 4) {
    const int64_t row_bytes = IntWeightRowBytes(IntWeightPacking::kU4Pairs, k);
    d.packed.resize(n * row_bytes);
    for (int64_t r = 0; r < n; ++r) PackU4Pairs(&d.codes[r * k], k, &d.packed[r * row_bytes]);
  }
  d.view.packing = IntWeightPacking::kU8;
  d.view.q = d.codes.data();
  d.view.scales = d.scales.data();
  d.view.zeros = d.zeros.data();
  d.view.num_groups = groups;
  d.view.group_size = group_size;
  d.view.g_idx = act_order ? d.g_idx.data() : nullptr;
  return d;
}

IntWeights PackedView(const WeightData& d) {
  IntWeights v = d.view;
  v.packing = IntWeightPacking::kU4Pairs;
  v.q = d.packed.data();
  return v;
}

TEST(IntWeightOnlyTest, PackU4PairsPutsEvenElementInLowNibble) {
  const std::vector<uint8_t> codes = {0x1, 0x2, 0xF, 0x0, 0x7};
  std::vector<uint8_t> packed(3, 0xEE);
  PackU4Pairs(codes.data(), 5, packed.data());
  EXPECT_EQ(packed, (std::vector<uint8_t>{0x21, 0x0F, 0x07}));
  EXPECT_EQ(IntWeightRowBytes(IntWeightPacking::kU4Pairs, 5), 3);
  EXPECT_EQ(IntWeightRowBytes(IntWeightPacking::kU8, 5), 5);
}

TEST(IntWeightOnlyTest, DequantizeRowFollowsTheSpecFormula) {
  std::mt19937 rng(31);
  const int64_t n = 5;
  const int64_t k = 70;
  for (bool act_order : {false, true}) {
    WeightData d = MakeWeights(rng, 4, false, n, k, 32, act_order);
    std::vector<float> row(k);
    std::vector<float> row_packed(k);
    for (int64_t r = 0; r < n; ++r) {
      DequantizeIntWeightRow(d.view, k, r, row.data());
      DequantizeIntWeightRow(PackedView(d), k, r, row_packed.data());
      for (int64_t i = 0; i < k; ++i) {
        const int64_t g = act_order ? d.g_idx[i] : i / 32;
        const float want =
            (static_cast<float>(d.codes[r * k + i]) - d.zeros[r * 3 + g]) * d.scales[r * 3 + g];
        ASSERT_EQ(std::bit_cast<uint32_t>(row[i]), std::bit_cast<uint32_t>(want)) << r << "," << i;
        ASSERT_EQ(std::bit_cast<uint32_t>(row_packed[i]), std::bit_cast<uint32_t>(want));
      }
    }
  }
}

TEST(IntWeightOnlyTest, MatchesDoubleReferenceForAllBitWidths) {
  std::mt19937 rng(32);
  struct Case {
    int64_t n, k, rows, group_size;
  };
  // One group equal to K (per-channel), several groups, a partial last group, odd K for packing.
  const Case cases[] = {
      {1, 128, 1, 128}, {7, 128, 3, 32}, {7, 257, 17, 64}, {33, 64, 3, 64}, {5, 7, 3, 7}};
  for (const Case& c : cases) {
    for (int bits : {2, 3, 4, 8}) {
      for (bool symmetric : {true, false}) {
        for (bool act_order : {false, true}) {
          SCOPED_TRACE(::testing::Message() << "n=" << c.n << " k=" << c.k << " rows=" << c.rows
                                            << " group=" << c.group_size << " bits=" << bits
                                            << " sym=" << symmetric << " act=" << act_order);
          WeightData d = MakeWeights(rng, bits, symmetric, c.n, c.k, c.group_size, act_order);
          const std::vector<float> x = RandomActivations(rng, c.rows * c.k);
          const std::vector<float> bias = RandomFloats(rng, c.n, -1.0f, 1.0f);
          std::vector<float> y(c.rows * c.n);
          ASSERT_TRUE(MatmulIntWeightOnly(d.view, c.n, c.k, x.data(), c.rows, bias.data(), y.data(),
                                          0, c.n));
          std::vector<double> wd(c.n * c.k);
          std::vector<float> row(c.k);
          for (int64_t r = 0; r < c.n; ++r) {
            DequantizeIntWeightRow(d.view, c.k, r, row.data());
            std::copy(row.begin(), row.end(), wd.begin() + r * c.k);
          }
          const std::vector<double> xd(x.begin(), x.end());
          ExpectCloseToReference(y, ReferenceMatmul(xd, wd, bias.data(), c.rows, c.n, c.k), c.k);
          if (bits <= 4) {
            // 4 bits in memory, same numbers bit for bit.
            std::vector<float> y_packed(c.rows * c.n);
            ASSERT_TRUE(MatmulIntWeightOnly(PackedView(d), c.n, c.k, x.data(), c.rows, bias.data(),
                                            y_packed.data(), 0, c.n));
            for (size_t i = 0; i < y.size(); ++i) {
              ASSERT_EQ(std::bit_cast<uint32_t>(y[i]), std::bit_cast<uint32_t>(y_packed[i]));
            }
          }
        }
      }
    }
  }
}

TEST(IntWeightOnlyTest, RejectsBadGroups) {
  std::mt19937 rng(33);
  WeightData d = MakeWeights(rng, 4, true, 2, 64, 32, false);
  const std::vector<float> x(64, 1.0f);
  std::vector<float> y(2);
  d.view.num_groups = 1;  // k / group_size reaches group 1
  EXPECT_FALSE(MatmulIntWeightOnly(d.view, 2, 64, x.data(), 1, nullptr, y.data(), 0, 2));
  d.view.num_groups = 2;
  d.view.group_size = 0;
  EXPECT_FALSE(MatmulIntWeightOnly(d.view, 2, 64, x.data(), 1, nullptr, y.data(), 0, 2));
  std::vector<int32_t> g_idx(64, 0);
  g_idx[10] = 2;
  d.view.g_idx = g_idx.data();
  EXPECT_FALSE(MatmulIntWeightOnly(d.view, 2, 64, x.data(), 1, nullptr, y.data(), 0, 2));
  g_idx[10] = 1;
  EXPECT_TRUE(MatmulIntWeightOnly(d.view, 2, 64, x.data(), 1, nullptr, y.data(), 0, 2));
}

TEST(IntWeightOnlyTest, BatchInvariant) {
  std::mt19937 rng(34);
  const int64_t n = 7;
  const int64_t k = 256;
  const int64_t rows = 17;
  WeightData d = MakeWeights(rng, 4, false, n, k, 128, true);
  const std::vector<float> x = RandomActivations(rng, rows * k);
  const std::vector<float> bias = RandomFloats(rng, n, -1.0f, 1.0f);
  for (const IntWeights& view : {d.view, PackedView(d)}) {
    ExpectBatchInvariant(
        [&](int64_t r0, int64_t r, int64_t nb, int64_t ne, float* y) {
          return MatmulIntWeightOnly(view, n, k, &x[r0 * k], r, bias.data(), y, nb, ne);
        },
        rows, n);
  }
}

}  // namespace
}  // namespace tessera::kernels::cpu
