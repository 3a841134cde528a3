// RunLinears' grouping rules without a device (engine/backend/cuda/device_linear.h): which bf16
// layers form one stacked [Σ n, K] matrix, and which FP8 W8A8 layers can share one activation
// quantization. The pointers are stand-ins into one host array; nothing is dereferenced.
#include "engine/backend/cuda/device_linear.h"

#include <cstdint>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "kernels/cuda/decoder_ops.h"

namespace tessera::backend::cuda {
namespace {

namespace kc = ::tessera::kernels::cuda;

// q / k / v of a GQA layer (K = 64) laid back to back in `arena`, as the loader uploads them.
struct Qkv {
  std::vector<uint16_t> arena = std::vector<uint16_t>((64 + 16 + 16) * 64);
  DeviceLinear q, k, v;
  Qkv() {
    int64_t row = 0;
    for (auto [l, n] : {std::pair{&q, 64}, std::pair{&k, 16}, std::pair{&v, 16}}) {
      l->kind = DeviceLinearKind::kBf16;
      l->n = n;
      l->k = 64;
      l->bf16 = arena.data() + row * 64;
      row += n;
    }
  }
};

TEST(DeviceLinearTest, StackedBf16WidthNeedsBackToBackBf16LayersOfOneK) {
  Qkv l;
  EXPECT_EQ(StackedBf16Width({&l.q, &l.k, &l.v}), 96);
  EXPECT_EQ(StackedBf16Width({&l.q, &l.k}), 80);
  EXPECT_EQ(StackedBf16Width({&l.k, &l.v}), 32);
  EXPECT_EQ(StackedBf16Width({&l.q}), 0) << "one layer needs no stacking";
  EXPECT_EQ(StackedBf16Width({&l.q, &l.v}), 0) << "k sits between them";
  EXPECT_EQ(StackedBf16Width({&l.k, &l.q}), 0) << "out of order";
  DeviceLinear shifted = l.k;
  shifted.bf16 += 64;  // a bias (or alignment padding) between q and k
  EXPECT_EQ(StackedBf16Width({&l.q, &shifted}), 0);
  DeviceLinear other_k = l.k;
  other_k.k = 32;
  EXPECT_EQ(StackedBf16Width({&l.q, &other_k}), 0);
  DeviceLinear fp8 = l.k;
  fp8.kind = DeviceLinearKind::kFp8W8A8;
  EXPECT_EQ(StackedBf16Width({&l.q, &fp8}), 0);
  const std::vector<const DeviceLinear*> too_many(kc::kMaxColumnSlices + 1, &l.q);
  EXPECT_EQ(StackedBf16Width(too_many), 0);
}

TEST(DeviceLinearTest, SharesFp8ActivationsOnlyForDynamicPerTokenWithOneBound) {
  DeviceLinear a;
  a.kind = DeviceLinearKind::kFp8W8A8;
  a.n = 64;
  a.k = 128;
  a.fp8_problem = {64, 128, kc::Fp8ActScale::kPerToken, kc::Fp8WeightScale::kPerChannel};
  DeviceLinear b = a;
  b.n = 16;
  b.fp8_problem.n = 16;
  EXPECT_TRUE(SharesFp8Activations({&a, &b}));
  EXPECT_FALSE(SharesFp8Activations({&a})) << "nothing to share";
  const float one = 1.0f, two = 2.0f;
  DeviceLinear static_scale = b;
  static_scale.static_input_scale = &one;
  EXPECT_FALSE(SharesFp8Activations({&a, &static_scale}));
  DeviceLinear grouped = b;
  grouped.activation_group = 128;
  EXPECT_FALSE(SharesFp8Activations({&a, &grouped}));
  DeviceLinear bounded = b, other_bound = b;
  bounded.scale_ub = &one;
  other_bound.scale_ub = &two;
  EXPECT_FALSE(SharesFp8Activations({&a, &bounded}));
  DeviceLinear bounded_too = a;
  bounded_too.scale_ub = &one;
  EXPECT_TRUE(SharesFp8Activations({&bounded_too, &bounded}));
  EXPECT_FALSE(SharesFp8Activations({&bounded, &other_bound}));
  DeviceLinear other_k = b;
  other_k.k = 256;
  EXPECT_FALSE(SharesFp8Activations({&a, &other_k}));
  DeviceLinear blocks = b;  // 128x128 weight blocks pad the GEMM's rows
  blocks.fp8_problem.weight = kc::Fp8WeightScale::kBlock128;
  EXPECT_FALSE(SharesFp8Activations({&a, &blocks}));
  DeviceLinear bf16 = b;
  bf16.kind = DeviceLinearKind::kBf16;
  EXPECT_FALSE(SharesFp8Activations({&a, &bf16}));
}

}  // namespace
}  // namespace tessera::backend::cuda
