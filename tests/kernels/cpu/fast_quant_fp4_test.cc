// QuantizedLinear's NVFP4 (W4A16 and W4A4, static and dynamic activation global scale) and MXFP4
// W4A16 paths against its reference path, with f32 activations, with bf16 activations
// (--cpu_bf16_activations) and with int8 activations (the int8 tiles); tolerance and batch
// invariance as in fast_quant_test.cc.
#include <cmath>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/cpu/fast/fast_quant_matmul.h"
#include "tests/kernels/cpu/fast_quant_test_util.h"

namespace tessera::backend::cpu {
namespace {

using namespace fast_quant_testing;  // NOLINT: the shared fixtures of these tests

TEST(FastQuantTest, Nvfp4) {
  for (const auto& [n, k] : {std::pair<int64_t, int64_t>{37, 32}, {5, 288}, {67, 64}, {3, 16}}) {
    const bool fast = QuantPanels() && k % 32 == 0;  // k = 16: reference
    const bool tiles = Int8Tiles() && k % 32 == 0;
    CheckLayer(
        [&] {
          return Fp4(WeightFormat::kNvfp4, n, k, ActivationFormat::kFloat, ScaleOrigin::kDynamic,
                     5);
        },
        "nvfp4 w4a16", fast);
    CheckLayer(  // --cpu_bf16_activations
        [&] {
          return Fp4(WeightFormat::kNvfp4, n, k, ActivationFormat::kBf16, ScaleOrigin::kDynamic,
                     5);
        },
        "nvfp4 w4a16 bf16 act", fast);
    for (const auto origin : {ScaleOrigin::kStatic, ScaleOrigin::kDynamic}) {
      CheckLayer(
          [&] { return Fp4(WeightFormat::kNvfp4, n, k, ActivationFormat::kNvfp4, origin, 5); },
          "nvfp4 w4a4", fast || tiles);
    }
    // --cpu_int8_activations: W4A16 with int8 activations (the int8 tiles), against the reference
    // on the same quantized-and-dequantized activations.
    if (k % 32 != 0) continue;  // the selector only picks int8 blocks of 32 for k % 32 == 0
    CheckLayer(
        [&] {
          return Fp4(WeightFormat::kNvfp4, n, k, ActivationFormat::kInt8Block32,
                     ScaleOrigin::kDynamic, 5);
        },
        "nvfp4 w4a16 x q8_0 act", tiles);
  }
}

TEST(FastQuantTest, Mxfp4) {
  for (const auto& [n, k] : {std::pair<int64_t, int64_t>{37, 32}, {5, 288}, {67, 64}}) {
    CheckLayer(
        [&] {
          return Fp4(WeightFormat::kMxfp4, n, k, ActivationFormat::kFloat, ScaleOrigin::kDynamic,
                     9);
        },
        "mxfp4", QuantPanels());
    CheckLayer(  // --cpu_bf16_activations
        [&] {
          return Fp4(WeightFormat::kMxfp4, n, k, ActivationFormat::kBf16, ScaleOrigin::kDynamic,
                     9);
        },
        "mxfp4 bf16 act", QuantPanels());
    // --cpu_int8_activations: the int8 tiles, against the reference on the same activations.
    CheckLayer(
        [&] {
          return Fp4(WeightFormat::kMxfp4, n, k, ActivationFormat::kInt8Block32,
                     ScaleOrigin::kDynamic, 9);
        },
        "mxfp4 x q8_0 act", Int8Tiles());
  }
  // A NaN scale keeps the layer off the tiles (they would read it as a number).
  PackedWeights nan_scale =
      Fp4(WeightFormat::kMxfp4, 16, 64, ActivationFormat::kInt8Block32, ScaleOrigin::kDynamic, 9);
  nan_scale.scale_bytes[5] = 0xFF;
  const QuantizedLinear lin(std::move(nan_scale), {}, nullptr);
  std::vector<float> x(64, 0.5f), y(16);
  lin.Forward(x.data(), 1, y.data());
  EXPECT_TRUE(std::isnan(y[2])) << y[2];  // scale 5: column 2's second block (two per column)
  // The same with f32 activations: the 4-bit panels refuse the layer and the table decoder
  // propagates the NaN.
  PackedWeights f32_nan =
      Fp4(WeightFormat::kMxfp4, 16, 64, ActivationFormat::kFloat, ScaleOrigin::kDynamic, 9);
  f32_nan.scale_bytes[5] = 0xFF;
  f32_nan.spec.kernel = "cpu/mxfp4-w4a16-fast";  // the selector's label: it sees no scale bytes
  const QuantizedLinear f32_lin(std::move(f32_nan), {}, nullptr);
  f32_lin.Forward(x.data(), 1, y.data());
  EXPECT_TRUE(std::isnan(y[2])) << y[2];
  EXPECT_FALSE(std::isnan(y[3])) << y[3];
  // Without AVX-512 no fast kernel takes it (the panels refuse NaN scales, FastQuantMatmul's
  // table decoder needs 16 lanes): the plan says the reference runs.
  EXPECT_EQ(f32_lin.Describe().find("(scalar reference") != std::string::npos,
            !f32_lin.uses_fast_path())
      << f32_lin.Describe();
  EXPECT_EQ(f32_lin.uses_fast_path(), kernels::cpu::fast::FastQuant4BitAvailable());
  // And with bf16 activations, whose rounded values the table decoder takes in its lane order:
  // the other columns as the reference computes them.
  PackedWeights bf16_nan =
      Fp4(WeightFormat::kMxfp4, 16, 64, ActivationFormat::kBf16, ScaleOrigin::kDynamic, 9);
  bf16_nan.scale_bytes[5] = 0xFF;
  const QuantizedLinear bf16_lin(std::move(bf16_nan), {}, nullptr);
  std::vector<float> xr = RandomX(2, 64, 17), yr(32), ref(32);
  bf16_lin.Forward(xr.data(), 2, yr.data());
  bf16_lin.ForwardReference(xr.data(), 2, ref.data());
  for (int i = 0; i < 32; ++i) {
    if (i % 16 == 2) {
      EXPECT_TRUE(std::isnan(yr[i])) << i;
    } else {
      EXPECT_NEAR(yr[i], ref[i], 1e-5 * (1.0 + std::fabs(ref[i]))) << i;
    }
  }
}

// f32-activation FP4 layers run on the 4-bit panels (AVX-512 or AVX2), which hold the codes and the
// block scales: DropReferenceCodes frees both and Forward is unchanged.
TEST(FastQuantTest, Fp4PanelsDropReferenceCodes) {
  for (const auto fmt : {WeightFormat::kMxfp4, WeightFormat::kNvfp4}) {
    QuantizedLinear lin(Fp4(fmt, 37, 256, ActivationFormat::kFloat, ScaleOrigin::kDynamic, 3), {},
                        nullptr);
    const std::vector<float> x = RandomX(3, 256, 7);
    std::vector<float> before(3 * 37), after(3 * 37);
    lin.Forward(x.data(), 3, before.data());
    lin.DropReferenceCodes();
    lin.Forward(x.data(), 3, after.data());
    EXPECT_EQ(before, after);
    EXPECT_EQ(lin.weights().bytes.empty(), QuantPanels());
    EXPECT_EQ(lin.weights().scale_bytes.empty(), QuantPanels());
  }
}

}  // namespace
}  // namespace tessera::backend::cpu
