// FastMatmul against the scalar reference decoder on random data: every dense and ggml weight
// format, odd shapes (k not a multiple of the vector width for dense types, n not a multiple of
// the column tile), 1..17 rows. Tolerance: the result is a lane-parallel f32 sum of exactly
// decoded weights times activations, so against the exact (double) dot product of the same
// decoded values it is within (K + 8)·u·Σ|x·w| (u = 2^-24; Higham §4.2, as quant_test_util.h).
// Also checks the contracts the server relies on: a row's result is bit-identical whatever rows
// share its call (GEMV path vs tiled GEMM path) and however the columns are split.
#include "kernels/cpu/fast/fast_matmul.h"

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "hwy/aligned_allocator.h"
#include "hwy/targets.h"
#include "kernels/cpu/fast/ggml_repack.h"
#include "kernels/cpu/matmul_reference.h"
#include "kernels/numeric/half.h"
#include "tests/kernels/cpu/hwy_targets_test_util.h"
#include "tests/kernels/cpu/iq_grid_test_util.h"

namespace tessera::kernels::cpu::fast {
namespace {

struct Case {
  const char* name;
  WeightEncoding enc;
};

std::vector<Case> AllCases() {
  std::vector<Case> cases;
  cases.push_back({"F32", {DenseType::kF32, std::nullopt}});
  cases.push_back({"BF16", {DenseType::kBF16, std::nullopt}});
  cases.push_back({"F16", {DenseType::kF16, std::nullopt}});
  const std::pair<const char*, GgmlBlockType> ggml[] = {
      {"Q4_0", GgmlBlockType::kQ4_0}, {"Q4_1", GgmlBlockType::kQ4_1}, {"Q5_0", GgmlBlockType::kQ5_0},
      {"Q5_1", GgmlBlockType::kQ5_1}, {"Q8_0", GgmlBlockType::kQ8_0}, {"Q4_K", GgmlBlockType::kQ4_K},
      {"Q5_K", GgmlBlockType::kQ5_K}, {"Q6_K", GgmlBlockType::kQ6_K},
      {"MXFP4", GgmlBlockType::kMxfp4}, {"Q2_K", GgmlBlockType::kQ2_K},
      {"Q3_K", GgmlBlockType::kQ3_K}, {"IQ4_NL", GgmlBlockType::kIq4Nl},
      {"IQ4_XS", GgmlBlockType::kIq4Xs}, {"IQ2_XXS", GgmlBlockType::kIq2Xxs},
      {"IQ2_XS", GgmlBlockType::kIq2Xs}, {"IQ2_S", GgmlBlockType::kIq2S},
      {"IQ3_XXS", GgmlBlockType::kIq3Xxs}, {"IQ3_S", GgmlBlockType::kIq3S},
      {"IQ1_S", GgmlBlockType::kIq1S}, {"IQ1_M", GgmlBlockType::kIq1M},
      {"TQ1_0", GgmlBlockType::kTq1_0}, {"TQ2_0", GgmlBlockType::kTq2_0}};
  for (const auto& [name, t] : ggml) cases.push_back({name, {std::nullopt, t}});
  return cases;
}

uint16_t RandomHalf(std::mt19937& rng, float lo, float hi) {
  return numeric::FloatToHalf(std::uniform_real_distribution<float>(lo, hi)(rng));
}

// Random weight bytes with valid (finite) scale fields.
std::vector<uint8_t> RandomWeights(const WeightEncoding& enc, int64_t n, int64_t k,
                                   std::mt19937& rng) {
  const int64_t bytes = n * WeightRowBytes(enc, k);
  std::vector<uint8_t> w(bytes);
  std::uniform_int_distribution<int> byte(0, 255);
  for (auto& b : w) b = static_cast<uint8_t>(byte(rng));
  auto put = [&](uint8_t* p, uint16_t h) { std::memcpy(p, &h, 2); };
  if (enc.dense) {
    std::normal_distribution<float> nd(0.0f, 1.0f);
    for (int64_t i = 0; i < n * k; ++i) {
      const float v = nd(rng);
      if (*enc.dense == DenseType::kF32) {
        std::memcpy(&w[4 * i], &v, 4);
      } else if (*enc.dense == DenseType::kBF16) {
        put(&w[2 * i], numeric::FloatToBf16(v));
      } else {
        put(&w[2 * i], numeric::FloatToHalf(v));
      }
    }
    return w;
  }
  const GgmlBlockInfo info = GetGgmlBlockInfo(*enc.ggml);
  for (int64_t b = 0; b < bytes / info.bytes; ++b) {
    uint8_t* p = &w[b * info.bytes];
    switch (*enc.ggml) {
      case GgmlBlockType::kQ4_0: case GgmlBlockType::kQ5_0: case GgmlBlockType::kQ8_0:
      case GgmlBlockType::kIq4Nl: case GgmlBlockType::kIq4Xs:  // f16 d first
      case GgmlBlockType::kIq2Xxs: case GgmlBlockType::kIq2Xs: case GgmlBlockType::kIq2S:
      case GgmlBlockType::kIq3Xxs: case GgmlBlockType::kIq3S: case GgmlBlockType::kIq1S:
        put(p, RandomHalf(rng, -0.1f, 0.1f));
        break;
      case GgmlBlockType::kQ4_1: case GgmlBlockType::kQ5_1: case GgmlBlockType::kQ4_K:
      case GgmlBlockType::kQ5_K:
        put(p, RandomHalf(rng, -0.1f, 0.1f));
        put(p + 2, RandomHalf(rng, -0.1f, 0.1f));
        break;
      case GgmlBlockType::kQ6_K:
        put(p + 208, RandomHalf(rng, -0.01f, 0.01f));
        break;
      case GgmlBlockType::kQ2_K:  // f16 d and dmin after 16 scale and 64 code bytes
        put(p + 80, RandomHalf(rng, -0.1f, 0.1f));
        put(p + 82, RandomHalf(rng, -0.1f, 0.1f));
        break;
      case GgmlBlockType::kQ3_K:  // f16 d after the 32 + 64 + 12 mask, code and scale bytes
        put(p + 108, RandomHalf(rng, -0.01f, 0.01f));
        break;
      case GgmlBlockType::kMxfp4:
        p[0] = static_cast<uint8_t>(120 + b % 12);
        break;
      case GgmlBlockType::kIq1M:  // f16 d in the top nibbles of the four u16 scales
      case GgmlBlockType::kTq1_0:  // f16 d at the end
      case GgmlBlockType::kTq2_0:
        testing::SetIqGridHalf(*enc.ggml, p, RandomHalf(rng, -0.1f, 0.1f));
        break;
    }
  }
  return w;
}

// Prepares FastWeights for `enc` (repacking Q8_0/Q4_0 into `storage`).
FastWeights Prepare(const WeightEncoding& enc, const std::vector<uint8_t>& w, int64_t n,
                    int64_t k, hwy::AlignedFreeUniquePtr<uint8_t[]>* storage) {
  FastWeights fw;
  fw.n = n;
  fw.k = k;
  fw.data = w.data();
  fw.row_stride = WeightRowBytes(enc, k);
  if (enc.dense) {
    fw.format = *enc.dense == DenseType::kF32   ? FastFormat::kF32
                : *enc.dense == DenseType::kBF16 ? FastFormat::kBF16
                                                 : FastFormat::kF16;
    return fw;
  }
  if (HasRepackedLayout(*enc.ggml)) {
    *storage = hwy::AllocateAligned<uint8_t>(n * RepackedRowStride(*enc.ggml, k));
    return RepackGgmlRows(*enc.ggml, w.data(), n, k, storage->get());
  }
  fw.format = FastFormat::kGgml;
  fw.ggml = *enc.ggml;
  return fw;
}

class FastMatmulTest : public ::testing::TestWithParam<int> {};

// Checks one format on whichever SIMD target the dispatcher currently picks.
void CheckFormat(int index) {
  const Case c = AllCases()[index];
  const bool dense = c.enc.dense.has_value();
  const int64_t block = dense ? 1 : GetGgmlBlockInfo(*c.enc.ggml).elements;
  std::mt19937 rng(1234 + index);
  for (const int64_t k_blocks : {1, 3, 8}) {
    const int64_t k = dense ? 37 * k_blocks : block * k_blocks;
    const int64_t n = 13;
    const auto w = RandomWeights(c.enc, n, k, rng);
    hwy::AlignedFreeUniquePtr<uint8_t[]> storage;
    const FastWeights fw = Prepare(c.enc, w, n, k, &storage);
    std::vector<float> bias(n);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    for (auto& b : bias) b = nd(rng);
    const int64_t max_rows = 17;
    std::vector<float> x(max_rows * k);
    for (auto& v : x) v = nd(rng);
    // Row-at-a-time (GEMV path) results are the baseline every batch must reproduce exactly.
    std::vector<float> single(max_rows * n);
    for (int64_t r = 0; r < max_rows; ++r) {
      FastMatmul(fw, x.data() + r * k, 1, bias.data(), single.data() + r * n, 0, n);
    }
    std::vector<float> wrow(k);
    for (int64_t col = 0; col < n; ++col) {
      DecodeWeightRow(c.enc, w.data(), k, col, wrow.data());
      for (int64_t r = 0; r < max_rows; ++r) {
        double exact = bias[col], mag = std::abs(bias[col]);
        for (int64_t i = 0; i < k; ++i) {
          exact += static_cast<double>(x[r * k + i]) * wrow[i];
          mag += std::abs(static_cast<double>(x[r * k + i]) * wrow[i]);
        }
        const double tol = (k + 8) * std::ldexp(1.0, -24) * mag * (1 + 1e-6);
        ASSERT_NEAR(single[r * n + col], exact, tol) << c.name << " k=" << k << " r=" << r;
      }
    }
    for (const int64_t rows : {2, 3, 4, 5, 9, 17}) {
      std::vector<float> y(rows * n, -1.0f);
      // Split the columns unevenly, as a thread pool might.
      FastMatmul(fw, x.data(), rows, bias.data(), y.data(), 0, 5);
      FastMatmul(fw, x.data(), rows, bias.data(), y.data(), 5, n);
      for (int64_t i = 0; i < rows * n; ++i) {
        ASSERT_EQ(y[i], single[i]) << c.name << " k=" << k << " rows=" << rows << " i=" << i;
      }
    }
  }
}

// Long rows make the tiled path split a batch into several row blocks; results must not change.
TEST(FastMatmulRowBlocks, LongRowsAreBatchInvariant) {
  for (const int index : {1, 3}) {  // BF16, Q4_0
    const Case c = AllCases()[index];
    std::mt19937 rng(99);
    const int64_t n = 6, k = 8192, rows = 21;
    const auto w = RandomWeights(c.enc, n, k, rng);
    hwy::AlignedFreeUniquePtr<uint8_t[]> storage;
    const FastWeights fw = Prepare(c.enc, w, n, k, &storage);
    std::vector<float> x(rows * k);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    for (auto& v : x) v = nd(rng);
    std::vector<float> batch(rows * n), one(n);
    FastMatmul(fw, x.data(), rows, nullptr, batch.data(), 0, n);
    for (int64_t r = 0; r < rows; ++r) {
      FastMatmul(fw, x.data() + r * k, 1, nullptr, one.data(), 0, n);
      for (int64_t j = 0; j < n; ++j) ASSERT_EQ(batch[r * n + j], one[j]) << c.name << " r=" << r;
    }
  }
}

// Every compiled target this CPU supports (AVX-512, AVX2, SSE4, ...), not only the best one.
TEST_P(FastMatmulTest, MatchesReferenceAndIsBatchInvariant) {
  const auto param = GetParam();
  ForEachHwyTarget([&] { CheckFormat(param); });
}

INSTANTIATE_TEST_SUITE_P(AllFormats, FastMatmulTest,
                         ::testing::Range(0, static_cast<int>(AllCases().size())),
                         [](const auto& info) { return std::string(AllCases()[info.param].name); });

}  // namespace
}  // namespace tessera::kernels::cpu::fast
