// QuantizeOnline (engine/quant/packed_weights.h) split over a thread pool writes the same codes
// and scales as on one thread, for every online scheme: the rows are independent once the
// per-tensor scales (FP8 per tensor, NVFP4's global scale) are known.
#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "engine/quant/packed_weights.h"
#include "engine/quant/precision_plan.h"
#include "gtest/gtest.h"
#include "kernels/cpu/thread_pool.h"
#include "kernels/numeric/e8m0.h"
#include "kernels/numeric/fp4.h"
#include "kernels/numeric/fp8.h"

namespace tessera::quant {
namespace {

TEST(QuantizeOnlineTest, PoolGivesTheSameBytes) {
  const int64_t n = 37, k = 256;
  std::mt19937 rng(5);
  std::normal_distribution<float> dist(0.0f, 0.05f);
  std::vector<float> w(n * k);
  for (float& v : w) v = dist(rng);
  for (int64_t i = 0; i < k; ++i) w[3 * k + i] = 0.0f;  // an all-zero row (scale fallbacks)
  w[11 * k + 7] = 4.0f;                                   // an outlier (per-tensor scales)
  // Exact ties, which round-half-even and round-half-away disagree on: row 20 with amax 127
  // (INT8's s = 1), row 21's first group with amax 7 (INT4's s = 1, per channel and per 64).
  const std::vector<float> ties = {0.5f, 1.5f, 2.5f, -0.5f, -1.5f, -2.5f, 6.5f, -6.5f};
  w[20 * k] = 127.0f;
  w[21 * k] = 7.0f;
  for (size_t i = 0; i < ties.size(); ++i) {
    w[20 * k + 1 + i] = ties[i];
    w[21 * k + 1 + i] = ties[i];
  }
  kernels::cpu::ThreadPool pool(3);
  for (const std::string scheme :
       {"fp8", "ptpc_fp8", "fp8_wo", "int8", "int4_wo_per_channel", "int4_wo_64", "nvfp4",
        "nvfp4_w4a16", "mxfp4"}) {
    SCOPED_TRACE(scheme);
    absl::StatusOr<LinearSpec> spec = OnlineSchemeSpec(scheme, "layer", n, k);
    ASSERT_TRUE(spec.ok()) << spec.status();
    absl::StatusOr<PackedWeights> one = QuantizeOnline(*spec, w);
    absl::StatusOr<PackedWeights> split = QuantizeOnline(*spec, w, &pool);
    ASSERT_TRUE(one.ok()) << one.status();
    ASSERT_TRUE(split.ok()) << split.status();
    EXPECT_EQ(one->bytes, split->bytes);
    EXPECT_EQ(one->scales, split->scales);
    EXPECT_EQ(one->zeros, split->zeros);
    EXPECT_EQ(one->scale_bytes, split->scale_bytes);
    EXPECT_EQ(one->global_scale, split->global_scale);
    EXPECT_EQ(split->q, split->bytes.data());
    // Something was quantized: the rows are not all one code.
    bool varied = false;
    for (uint8_t b : split->bytes) varied = varied || b != split->bytes[0];
    EXPECT_TRUE(varied);
    if (spec->weight_format == WeightFormat::kInt8 || spec->weight_format == WeightFormat::kInt4) {
      // The codes are std::nearbyint(w / s), clamped (and for INT4 offset by 8).
      const bool int4 = spec->weight_format == WeightFormat::kInt4;
      const int64_t groups = static_cast<int64_t>(split->scales.size()) / n;
      for (int64_t i = 0; i < n * k; ++i) {
        const float s = split->scales[i / k * groups + (i % k) / (k / groups)];
        const float q = std::nearbyint(w[i] / s);
        const int want = int4 ? static_cast<int>(std::clamp(q, -8.0f, 7.0f)) + 8
                              : static_cast<int8_t>(std::clamp(q, -127.0f, 127.0f));
        ASSERT_EQ(int4 ? static_cast<int>(split->bytes[i]) : static_cast<int8_t>(split->bytes[i]),
                  want)
            << i;
      }
    }
    if (spec->weight_format == WeightFormat::kNvfp4 ||
        spec->weight_format == WeightFormat::kMxfp4) {
      // The vectorized FP4 encoder's contract: each code is EncodeE2m1 of w over its block's scale.
      const bool nvfp4 = spec->weight_format == WeightFormat::kNvfp4;
      const int64_t block = nvfp4 ? 16 : 32;
      for (int64_t i = 0; i < n * k; ++i) {
        const uint8_t sf = split->scale_bytes[i / block];
        const float denom =
            nvfp4 ? numeric::DecodeE4m3(sf) * split->global_scale : numeric::DecodeE8m0(sf);
        ASSERT_EQ(numeric::GetE2m1Nibble(split->bytes.data(), static_cast<size_t>(i)),
                  numeric::EncodeE2m1(w[i] / denom))
            << i;
      }
    }
    if (spec->weight_format == WeightFormat::kFp8E4m3) {  // the vectorized encoder's contract
      const bool per_row = split->scales.size() == static_cast<size_t>(n);
      for (int64_t i = 0; i < n * k; ++i) {
        const float s = split->scales[per_row ? i / k : 0];
        ASSERT_EQ(split->bytes[i], numeric::EncodeE4m3(w[i] / s)) << i;
      }
    }
  }
}

}  // namespace
}  // namespace tessera::quant
