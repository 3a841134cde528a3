// QuantizedLinear's fast paths (kernels/cpu/fast/fast_quant_matmul.h) against its scalar
// reference path (QuantizedLinear::ForwardReference) on random data and odd shapes, for FP8
// W8A16 (per-tensor, per-row, block scales) and W8A8 (static and per-token activations; block
// weights with per-token-group activations), INT8
// W8A8 (static with a zero point, per-token symmetric and asymmetric; bit for bit), 4-bit
// integer weight-only (group 32/64/128, per-channel, fractional zero points; group 16 checks the
// reference fallback; act-order against the checkpoint-order oracle), NVFP4 W4A16 and W4A4
// (static and dynamic activation global scale) and MXFP4 W4A16.
// Tolerance: both paths sum the same exactly-decoded products (weights are decoded bit-identically,
// activation quantization is the same reference code) in different orders, so each is within
// (K + 8)·u·Σ|x·w| of the exact sum (u = 2^-24); the test allows twice the sum of both bounds,
// with Σ|x·w| taken over the dequantized weights and 2|x| (a quantized activation is at most
// twice the original in magnitude), plus a few ulps of the result for the scale epilogue.
// INT4 weight-only with f32 activations (the panels of quant_panel_matmul.h) takes the zero
// point out of the per-weight decode, whose bound (K + G + 2)·u·Σ s·(|q − 8| + |z − 8|)·|x| is
// about 1.5x Σ|x·w| on these random codes and zero points: well inside the allowance above, and
// quant_panel_matmul_test.cc holds the kernel to its own bound. On AVX-512 BF16 the 4-bit
// panels (and FP8 W8A16's) take exact activations as the hi + lo split, which adds up to
// 2^-16·Σ|x|·(|w| + |z − 8|·s) (the shortest K here, 32, is where it comes closest to the
// allowance: about 0.95 of it in the worst case, far less on random data).
// Batch invariance: every row of a multi-row call (registers for <= 4 or 6 rows, tiled GEMM
// above) is bit-identical to the same row computed alone, and to the result with columns split
// across 2 or 3 threads.
#include <cmath>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/cpu/fast/fp8_panel_matmul.h"
#include "tests/kernels/cpu/fast_quant_test_util.h"

namespace tessera::backend::cpu {
namespace {

using namespace fast_quant_testing;  // NOLINT: the shared fixtures of these tests

TEST(FastQuantTest, Fp8W8A16) {
  for (const auto act : {ActivationFormat::kFloat, ActivationFormat::kBf16}) {
    for (const auto scale :
         {ScaleGranularity::kTensor, ScaleGranularity::kRowwise, ScaleGranularity::kBlock}) {
      for (const auto& [n, k] :
           {std::pair<int64_t, int64_t>{37, 37}, {5, 256}, {67, 96}, {1, 16}}) {
        CheckLayer([&] { return Fp8(n, k, scale, act, ScaleOrigin::kDynamic, 7); },
                   act == ActivationFormat::kFloat ? "fp8 w8a16" : "fp8 w8a16 bf16 act",
                   scale != ScaleGranularity::kBlock || k % 32 == 0);
      }
    }
  }
  // bf16 activations really are rounded: the two forms differ on the same inputs.
  ExpectActivationFormsDiffer(
      Fp8(67, 96, ScaleGranularity::kRowwise, ActivationFormat::kFloat, ScaleOrigin::kDynamic, 7),
      Fp8(67, 96, ScaleGranularity::kRowwise, ActivationFormat::kBf16, ScaleOrigin::kDynamic, 7),
      5);
}

TEST(FastQuantTest, Fp8W8A8) {
  for (const auto scale : {ScaleGranularity::kTensor, ScaleGranularity::kRowwise}) {
    for (const auto origin : {ScaleOrigin::kStatic, ScaleOrigin::kDynamic}) {
      for (const auto& [n, k] : {std::pair<int64_t, int64_t>{37, 37}, {5, 256}, {67, 96}}) {
        CheckLayer([&] { return Fp8(n, k, scale, ActivationFormat::kFp8, origin, 11); }, "fp8 w8a8",
                   true);
      }
    }
  }
}

// Block weights (16 x 32 here; 128 x 128 in DeepSeek-V3 / Qwen3-FP8 checkpoints) with
// per-token-group activations of the block's width, per-token and static activations: both
// scales fold into each block's sum on the BF16 kernel; without AVX-512 BF16 the Highway kernel
// runs them as (code · act scale) · (code · weight scale) (TESSERA_CPU_ISA=avx2 runs that here).
// K = 80 and 37 end in a partial block.
TEST(FastQuantTest, Fp8W8A8BlockWeights) {
  // Block width 32 (one vdpbf16ps unit per fold) and 128 (four, DeepSeek's; K = 96 is one
  // partial block, the unblocked form; 200 ends in a partial block); 48 is not whole BF16 units,
  // so the scaled-activation Highway path takes it even with AVX-512 BF16.
  for (const int acts : {0, 1, 2}) {  // per-token-group, per-token, static
    for (const auto& [n, k, bk] : {std::tuple<int64_t, int64_t, int64_t>{37, 37, 32},
                                   {5, 256, 32},
                                   {67, 96, 32},
                                   {40, 80, 32},
                                   {40, 200, 128},
                                   {19, 384, 128},
                                   {33, 96, 128},
                                   {21, 144, 48}}) {  // 48: the Highway kernel everywhere
      CheckLayer(
          [&] {
            PackedWeights w = Fp8(n, k, ScaleGranularity::kBlock, ActivationFormat::kFp8,
                                  acts == 2 ? ScaleOrigin::kStatic : ScaleOrigin::kDynamic, 19, bk);
            if (acts == 0) {
              w.spec.activation_scale = ScaleGranularity::kGroup;
              w.spec.activation_group = bk;
            }
            return w;
          },
          acts == 0   ? "fp8 block w8a8 group acts"
          : acts == 1 ? "fp8 block w8a8 token acts"
                      : "fp8 block w8a8 static acts",
          true);
    }
  }
}

// INT8 W8A8 on the VNNI panel kernel: bit-identical to the reference (integer sums, the same
// epilogue), so beyond CheckLayer's bound the outputs are compared bit for bit.
TEST(FastQuantTest, Int8W8A8) {
  const bool vnni = kernels::cpu::fast::Int8DotAvailable();
  for (const auto scale : {ScaleGranularity::kTensor, ScaleGranularity::kRowwise}) {
    for (const auto origin : {ScaleOrigin::kStatic, ScaleOrigin::kDynamic}) {
      for (const bool zp : {false, true}) {
        for (const auto& [n, k] : {std::pair<int64_t, int64_t>{37, 37}, {5, 256}, {67, 2100}}) {
          auto make = [&] { return Int8(n, k, scale, origin, zp, 13); };
          CheckLayer(make, "int8 w8a8", vnni);
          const QuantizedLinear lin(make(), {}, nullptr);
          const std::vector<float> x = RandomX(9, k, 77);
          std::vector<float> fast(9 * n), ref(9 * n);
          lin.Forward(x.data(), 9, fast.data());
          lin.ForwardReference(x.data(), 9, ref.data());
          ASSERT_EQ(std::memcmp(fast.data(), ref.data(), fast.size() * 4), 0)
              << n << "x" << k << " zp " << zp;
        }
      }
    }
  }
  // Per-token asymmetric rows far from zero get zero points outside int8's range (the kernel's
  // int32 sum would wrap): such calls take the reference, so the outputs still agree exactly.
  const QuantizedLinear asym(
      Int8(37, 300, ScaleGranularity::kRowwise, ScaleOrigin::kDynamic, true, 17), {}, nullptr);
  std::vector<float> x(3 * 300);
  for (size_t i = 0; i < x.size(); ++i) x[i] = 1000.0f + 0.001f * static_cast<float>(i % 7);
  std::vector<float> fast(3 * 37), ref(3 * 37);
  asym.Forward(x.data(), 3, fast.data());
  asym.ForwardReference(x.data(), 3, ref.data());
  EXPECT_EQ(std::memcmp(fast.data(), ref.data(), fast.size() * 4), 0);
}

TEST(FastQuantTest, Int4WeightOnly) {
  for (const auto& [n, k, g] : {std::tuple<int64_t, int64_t, int64_t>{37, 128, 128},
                                {5, 384, 128},
                                {67, 64, 32},
                                {9, 48, 16},
                                {33, 80, -1},
                                {33, 96, -1},
                                {3, 256, 64}}) {
    const bool fast = QuantPanels() && k % 32 == 0 && (g < 0 || g % 32 == 0);  // group 16: reference
    CheckLayer([&] { return Int4(n, k, g, 3); }, "int4", fast);
    // --cpu_bf16_activations: bf16 activations (the bf16-pair panels, hi alone), against the
    // reference on the same rounded activations.
    CheckLayer([&] { return WithActivation(Int4(n, k, g, 3), ActivationFormat::kBf16); },
               "int4 bf16 act", fast);
  }
  // bf16 activations really are rounded (and the split really is not): the forms differ.
  ExpectActivationFormsDiffer(Int4(37, 128, 128, 3),
                              WithActivation(Int4(37, 128, 128, 3), ActivationFormat::kBf16), 5);
}

// --cpu_int8_activations on INT4 weight-only layers: the VNNI int8-activation kernel against the
// reference path, which quantizes and dequantizes the activations the same way.
TEST(FastQuantTest, Int4Int8Activations) {
  for (const auto& [n, k, g] : {std::tuple<int64_t, int64_t, int64_t>{37, 128, 128},
                                {5, 384, 128},
                                {67, 64, 32},
                                {33, 96, -1},
                                {3, 256, 64},
                                {20, 2048, 128}}) {
    CheckLayer([&] { return WithActivation(Int4(n, k, g, 5), ActivationFormat::kInt8Block32); },
               "int4 x q8_0 act", true);
  }
}

// What the model loader does to a layer on its tiles: the owned codes go, Forward is unchanged,
// ForwardReference says NaN rather than reading freed memory. A layer on its codes keeps them.
TEST(FastQuantTest, DropReferenceCodesKeepsForward) {
  PackedWeights tiled = Int4(37, 256, 128, 5);
  tiled.spec.activation = ActivationFormat::kInt8Block32;
  QuantizedLinear lin(std::move(tiled), {}, nullptr);
  const std::vector<float> x = RandomX(3, 256, 7);
  std::vector<float> before(3 * 37), after(3 * 37), ref(3 * 37);
  lin.Forward(x.data(), 3, before.data());
  lin.DropReferenceCodes();
  lin.Forward(x.data(), 3, after.data());
  EXPECT_EQ(std::memcmp(before.data(), after.data(), before.size() * 4), 0);
  if (lin.uses_fast_path()) {
    EXPECT_TRUE(lin.weights().bytes.empty());
    lin.ForwardReference(x.data(), 3, ref.data());
    EXPECT_TRUE(std::isnan(ref[0]));
  }
  // INT4 with f32 activations runs on its panels (AVX-512 or AVX2), which hold the codes too.
  QuantizedLinear panels(Int4(37, 256, 128, 5), {}, nullptr);
  panels.Forward(x.data(), 3, before.data());
  panels.DropReferenceCodes();
  panels.Forward(x.data(), 3, after.data());
  EXPECT_EQ(std::memcmp(before.data(), after.data(), before.size() * 4), 0);
  EXPECT_EQ(panels.weights().bytes.empty(), panels.uses_fast_path() && QuantPanels());
  EXPECT_EQ(panels.weights().scales.empty(), panels.uses_fast_path() && QuantPanels());
  panels.ForwardReference(x.data(), 3, ref.data());
  EXPECT_EQ(std::isnan(ref[0]), panels.uses_fast_path() && QuantPanels());  // no codes, no scales
  // Without AVX-512 the plan says which kernel runs them.
  EXPECT_EQ(panels.Describe().find("(cpu-avx2-panels)") != std::string::npos,
            std::string_view(kernels::cpu::fast::QuantPanelTargetName()) == "avx2")
      << panels.Describe();
  // INT8 weight-only with f32 activations runs on the same panels.
  QuantizedLinear bytes(IntCodes(8, 37, 256, 128, 5), {}, nullptr);
  bytes.Forward(x.data(), 3, before.data());
  bytes.DropReferenceCodes();
  bytes.Forward(x.data(), 3, after.data());
  EXPECT_EQ(std::memcmp(before.data(), after.data(), before.size() * 4), 0);
  EXPECT_EQ(bytes.weights().bytes.empty(), bytes.uses_fast_path() && QuantPanels());
  // FP8 W8A16 with 2-D block scales decodes the codes where they are (the BF16 and Highway
  // kernels): it keeps them. Without AVX-512 BF16 it runs the FMA panels (fp8_panel_matmul.h),
  // which hold the codes, so they go.
  QuantizedLinear plain(
      Fp8(37, 256, ScaleGranularity::kBlock, ActivationFormat::kFloat, ScaleOrigin::kDynamic, 5),
      {}, nullptr);
  plain.Forward(x.data(), 3, before.data());
  plain.DropReferenceCodes();
  plain.Forward(x.data(), 3, after.data());
  EXPECT_EQ(std::memcmp(before.data(), after.data(), before.size() * 4), 0);
  const bool fma_panels = plain.Describe().find("-panels)") != std::string::npos;
  if (fma_panels) {  // the ISA the FMA panels run in
    EXPECT_NE(plain.Describe().find(std::string("(cpu-") +
                                    kernels::cpu::fast::FloatPanelTargetName() + "-panels)"),
              std::string::npos)
        << plain.Describe();
  }
  EXPECT_EQ(plain.weights().bytes.empty(), fma_panels);
  plain.ForwardReference(x.data(), 3, ref.data());
  EXPECT_EQ(std::isnan(ref[0]), fma_panels);
}

// --cpu_int8_activations on INT8 / INT3 / INT2 weight-only layers: the byte tiles (kU8x16)
// against the reference path's same int8-activation scheme; act-order INT8 sorted at load.
TEST(FastQuantTest, IntBytesInt8Activations) {
  for (int bits : {8, 3, 2}) {
    for (const auto& [n, k, g] : {std::tuple<int64_t, int64_t, int64_t>{37, 128, 128},
                                  {5, 384, 128},
                                  {67, 64, 32},
                                  {33, 96, -1},
                                  {20, 2048, 128}}) {
      SCOPED_TRACE(testing::Message() << "int" << bits << " " << n << "x" << k << " g" << g);
      CheckLayer(
          [&] {
            PackedWeights w = IntCodes(bits, n, k, g, 7);
            w.spec.activation = ActivationFormat::kInt8Block32;
            return w;
          },
          "int bytes x q8_0 act", true);
    }
  }
  CheckLayer(
      [&] {
        PackedWeights w = IntCodes(8, 19, 256, 64, 9);
        w.spec.activation = ActivationFormat::kInt8Block32;
        w.spec.act_order = true;
        std::mt19937 rng(10);
        std::vector<int32_t> rank(256);
        std::iota(rank.begin(), rank.end(), 0);
        std::shuffle(rank.begin(), rank.end(), rng);
        for (int32_t r : rank) w.g_idx.push_back(r / 64);
        return w;
      },
      "int8 act-order x q8_0 act", true);
}

// INT8 / INT3 / INT2 weight-only codes with f32 activations: the byte-code decoder of
// FastQuantMatmul, on every target (groups of whole vectors, or one per row with any K).
TEST(FastQuantTest, IntBytesWeightOnly) {
  kernels::cpu::fast::ForEachHwyTarget([] {
    for (int bits : {8, 3, 2}) {
      for (const auto& [n, k, g] : {std::tuple<int64_t, int64_t, int64_t>{37, 128, 128},
                                    {5, 384, 128},
                                    {67, 64, 32},
                                    {9, 48, 16},
                                    {33, 83, -1},  // K not a multiple of any vector width
                                    {20, 2048, 128}}) {
        SCOPED_TRACE(testing::Message() << "int" << bits << " " << n << "x" << k << " g" << g);
        CheckLayer([&] { return IntCodes(bits, n, k, g, 11); }, "int bytes", true);
      }
    }
  });
  CheckLayer(
      [&] {
        PackedWeights w = IntCodes(8, 19, 256, 64, 9);
        w.spec.act_order = true;
        std::mt19937 rng(12);
        std::vector<int32_t> rank(256);
        std::iota(rank.begin(), rank.end(), 0);
        std::shuffle(rank.begin(), rank.end(), rng);
        for (int32_t r : rank) w.g_idx.push_back(r / 64);
        return w;
      },
      "int8 act-order", true);
  // One-hot rows make each output one weight: (float(q) − z) · s exactly, the reference's two
  // roundings (a fused or reordered form, e.g. q·s − z·s, would differ in the last bits). The
  // panels (AVX-512) compute s · ((q − c) − (z − c)) for a centre c: the same bits for integer
  // zero points (every real checkpoint's); a fractional z far below c rounds z − c first, so
  // those outputs are held to the panels' bound, 4·u·s·(|q − c| + |z − c|), c = 2^(bits − 1).
  for (int bits : {8, 3}) {
    const QuantizedLinear lin(IntCodes(bits, 21, 96, 32, 17), {}, nullptr);
    ASSERT_TRUE(lin.uses_fast_path());
    const int64_t n = 21, k = 96;
    std::vector<float> x(k * k, 0.0f), y(k * n), w_row(k);
    for (int64_t i = 0; i < k; ++i) x[i * k + i] = 1.0f;
    lin.Forward(x.data(), k, y.data());
    for (int64_t c = 0; c < n; ++c) {
      lin.weights().DequantizeRow(c, w_row.data());
      for (int64_t i = 0; i < k; ++i) {
        const int64_t g = c * (k / 32) + i / 32;
        const float z = lin.weights().zeros[g];
        if (z == std::floor(z)) {
          ASSERT_EQ(y[i * n + c], w_row[i]) << "int" << bits << " col " << c << " k " << i;
        } else {
          const double centre = 1 << (bits - 1), q = lin.weights().q[c * k + i];
          const double tol = 4 * std::ldexp(1.0, -24) * lin.weights().scales[g] *
                             (std::fabs(q - centre) + std::fabs(z - centre));
          ASSERT_NEAR(y[i * n + c], w_row[i], tol) << "int" << bits << " col " << c << " k " << i;
        }
      }
    }
  }
  // Groups that are not whole vectors stay on the reference kernel.
  CheckLayer([&] { return IntCodes(8, 7, 72, 24, 13); }, "int8 g24", false);
  EXPECT_FALSE(QuantizedLinear(IntCodes(8, 7, 72, 24, 13), {}, nullptr).uses_fast_path());
}

// GPTQ act-order (desc_act): g_idx[i] = rank(i) / group for a random ranking, so each group holds
// `group` channels scattered over K. The layer sorts its channels by group at load; its output is
// checked against MatmulIntWeightOnly on the checkpoint-order codes and g_idx (the oracle, not
// the layer's own reference path), with CheckLayer's bound.
PackedWeights Int4ActOrder(int64_t n, int64_t k, int64_t group, bool uniform, uint32_t seed) {
  PackedWeights w = Int4(n, k, group, seed);
  std::mt19937 rng(seed + 1);
  w.spec.act_order = true;
  std::vector<int32_t> rank(k);
  std::iota(rank.begin(), rank.end(), 0);
  std::shuffle(rank.begin(), rank.end(), rng);
  const int64_t g = group > 0 ? group : k;
  for (int64_t i = 0; i < k; ++i) {
    w.g_idx.push_back(uniform ? static_cast<int32_t>(rank[i] / g)
                              : static_cast<int32_t>(rng() % static_cast<uint32_t>(k / g)));
  }
  return w;
}

// x quantized to int8 blocks of 32 in the layer's sorted channel order (stable sort by g_idx),
// dequantized, back in channel order: what the int8-activation scheme multiplies.
std::vector<float> Q8InSortedOrder(const std::vector<float>& x, int64_t rows, int64_t k,
                                   const std::vector<int32_t>& g_idx) {
  std::vector<int32_t> perm(k);
  std::iota(perm.begin(), perm.end(), 0);
  std::stable_sort(perm.begin(), perm.end(),
                   [&](int32_t a, int32_t b) { return g_idx[a] < g_idx[b]; });
  std::vector<float> out(rows * k), sorted(k);
  std::vector<int8_t> q(k);
  std::vector<float> d(k / 32);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t j = 0; j < k; ++j) sorted[j] = x[r * k + perm[j]];
    kernels::cpu::fast::QuantizeRowQ8Block32(sorted.data(), k, q.data(), d.data());
    for (int64_t j = 0; j < k; ++j) out[r * k + perm[j]] = static_cast<float>(q[j]) * d[j / 32];
  }
  return out;
}

TEST(FastQuantTest, Int4ActOrder) {
  for (const bool int8_acts : {false, true}) {
    for (const auto& [n, k, g, uniform] :
         {std::tuple<int64_t, int64_t, int64_t, bool>{37, 256, 128, true},
          {5, 384, 32, true},
          {67, 256, 64, true},
          {33, 96, -1, true},
          {19, 128, 32, false}}) {
      auto make = [&] {
        PackedWeights w = Int4ActOrder(n, k, g, uniform, 21);
        if (int8_acts) w.spec.activation = ActivationFormat::kInt8Block32;
        return w;
      };
      SCOPED_TRACE(testing::Message() << n << "x" << k << " g" << g << (uniform ? "" : " ragged")
                                      << (int8_acts ? " q8 acts" : ""));
      // Ragged groups (not GPTQ's) keep a g_idx and the reference path.
      CheckLayer(make, "int4 act-order", QuantPanels() && uniform);
      const PackedWeights original = make();
      const QuantizedLinear lin(make(), {}, nullptr);
      std::vector<float> w_orig(k), w_layer(k);
      for (int64_t c = 0; c < n; ++c) {
        original.DequantizeRow(c, w_orig.data());
        lin.weights().DequantizeRow(c, w_layer.data());
        ASSERT_EQ(w_orig, w_layer) << "row " << c;
      }
      const int64_t rows = 6;
      const std::vector<float> x = RandomX(rows, k, 99);
      // Ragged groups run the f32 reference whatever the plan asked (QuantizedLinear says so in
      // its kernel label).
      const bool q8 = int8_acts && uniform;
      const std::vector<float> xo = q8 ? Q8InSortedOrder(x, rows, k, original.g_idx) : x;
      if (!uniform) {
        EXPECT_EQ(lin.weights().spec.kernel, "cpu/int-wo-ref");
      }
      std::vector<float> oracle(rows * n), fast(rows * n), ref(rows * n);
      ASSERT_TRUE(kernels::cpu::MatmulIntWeightOnly(original.AsInt(), n, k, xo.data(), rows,
                                                    nullptr, oracle.data(), 0, n));
      lin.Forward(x.data(), rows, fast.data());
      lin.ForwardReference(x.data(), rows, ref.data());
      for (int64_t c = 0; c < n; ++c) {
        original.DequantizeRow(c, w_orig.data());
        for (int64_t r = 0; r < rows; ++r) {
          double sum_abs = 0.0;
          for (int64_t i = 0; i < k; ++i) sum_abs += 2.0 * std::fabs(x[r * k + i] * w_orig[i]);
          const double u = std::ldexp(1.0, -24);
          const double tol = 4.0 * (k + 8) * u * sum_abs + 1e-30;
          ASSERT_NEAR(fast[r * n + c], oracle[r * n + c], tol) << "fast, row " << r << " col " << c;
          ASSERT_NEAR(ref[r * n + c], oracle[r * n + c], tol) << "ref, row " << r << " col " << c;
        }
      }
    }
  }
}

}  // namespace
}  // namespace tessera::backend::cpu
