// Device tests of the NVFP4 W4A4 path against the CPU references: the quantizer that writes
// cuBLASLt's swizzled scales (any device: it is generic code) bit for bit against
// cpu::QuantizeNvfp4, and cuBLASLt's block-scaled FP4 GEMM (sm_100a / sm_120a builds on such a
// device only) against cpu::MatmulNvfp4W4A4 on the same codes, within the bf16 output rounding.
// Each test GTEST_SKIP()s, saying why, where it cannot run.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "kernels/cpu/quant/activation_quant.h"
#include "kernels/cpu/quant/fp4_matmul.h"
#include "kernels/cuda/activation_quant.h"
#include "kernels/cuda/cublaslt_gemm.h"
#include "kernels/cuda/decoder_ops.h"
#include "kernels/cuda/nvfp4_gemm.h"
#include "kernels/cuda/nvfp4_scale_layout.h"
#include "tests/kernels/cuda/cuda_test_util.h"
#include "tests/kernels/cuda/nvfp4_test_data.h"

namespace tessera::kernels::cuda {
namespace {

using testing::Alloc;
using testing::Download;
using testing::Nmse;
using testing::RandomBytes;
using testing::RandomFloats;
using testing::Upload;

// A static activation global scale as calibration would give it: 2688 / amax of the data.
float StaticGlobalScale(const std::vector<float>& x) {
  float amax = 0;
  for (float v : x) amax = std::max(amax, std::fabs(v));
  return cpu::kNvfp4GlobalScaleNumerator / amax;
}

TEST(Nvfp4W4A4DeviceTest, SwizzledQuantizerMatchesCpuBitForBit) {
  TESSERA_REQUIRE_CUDA_DEVICE();
  // Row counts below, at and past one 128-row tile; K / 16 = 4, 6 (column padding), 32 scales.
  for (auto [rows, k] : {std::pair<int64_t, int64_t>{1, 64}, {5, 96}, {130, 512}, {128, 96}}) {
    std::vector<float> x = RandomFloats(rows * k, 2.0f, static_cast<uint32_t>(rows + k));
    for (int64_t i = 0; i < 16; ++i) x[i] = 0;  // an all-zero block (scale code 0)
    std::vector<float> per_row(rows);
    cpu::Nvfp4DynamicGlobalScalePerRow(x.data(), rows, k, per_row.data());
    for (const auto& [g, stride] :
         {std::pair{std::vector<float>{StaticGlobalScale(x)}, 0}, std::pair{per_row, 1}}) {
      std::vector<uint8_t> q_ref(rows * k / 2), sf_ref(rows * k / 16);
      ASSERT_TRUE(
          cpu::QuantizeNvfp4(x.data(), rows, k, g.data(), stride, q_ref.data(), sf_ref.data()));
      std::vector<uint8_t> want(SwizzledScaleBytes(rows, k / 16));
      SwizzleScales(sf_ref.data(), rows, k / 16, want.data());  // padding zero
      DeviceBuffer dx = Upload(x), dg = Upload(g), dq = Alloc(rows * k / 2),
                   dsf = Alloc(want.size());
      // Poison the scale buffer: the kernel must write every byte, padding included.
      ASSERT_EQ(cudaMemset(dsf.data(), 0xCD, want.size()), cudaSuccess);
      ASSERT_OK(QuantizeNvfp4Swizzled(dx.as<float>(), rows, k, dg.as<float>(), stride,
                                      dq.as<uint8_t>(), dsf.as<uint8_t>(), nullptr));
      EXPECT_EQ(Download<uint8_t>(dq, rows * k / 2), q_ref) << rows << "x" << k;
      const std::vector<uint8_t> got = Download<uint8_t>(dsf, want.size());
      EXPECT_EQ(got, want) << rows << "x" << k << " stride " << stride;
      std::vector<uint8_t> unswizzled(rows * k / 16);
      UnswizzleScales(got.data(), rows, k / 16, unswizzled.data());
      EXPECT_EQ(unswizzled, sf_ref);
    }
  }
}

// The same on data where the f32 operation order decides the codes (nvfp4_test_data.h): catches
// a device compilation that contracts or reassociates the shared formula.
TEST(Nvfp4W4A4DeviceTest, SwizzledQuantizerKeepsTheOperationOrder) {
  TESSERA_REQUIRE_CUDA_DEVICE();
  const testing::OrderSensitiveRows d = testing::MakeOrderSensitiveRows(130, 6, 9);
  ASSERT_GT(d.scale_order_blocks, 0);
  ASSERT_GT(d.code_order_elements, 0);
  std::vector<uint8_t> q_ref(d.rows * d.k / 2), sf_ref(d.rows * d.k / 16);
  ASSERT_TRUE(cpu::QuantizeNvfp4(d.x.data(), d.rows, d.k, d.global_scales.data(), 1, q_ref.data(),
                                 sf_ref.data()));
  std::vector<uint8_t> want(SwizzledScaleBytes(d.rows, d.k / 16));
  SwizzleScales(sf_ref.data(), d.rows, d.k / 16, want.data());
  DeviceBuffer dx = Upload(d.x), dg = Upload(d.global_scales), dq = Alloc(d.rows * d.k / 2),
               dsf = Alloc(want.size());
  ASSERT_OK(QuantizeNvfp4Swizzled(dx.as<float>(), d.rows, d.k, dg.as<float>(), 1, dq.as<uint8_t>(),
                                  dsf.as<uint8_t>(), nullptr));
  EXPECT_EQ(Download<uint8_t>(dq, d.rows * d.k / 2), q_ref);
  EXPECT_EQ(Download<uint8_t>(dsf, want.size()), want);
}

TEST(Nvfp4W4A4DeviceTest, CublasLtGemmMatchesCpuReference) {
  TESSERA_REQUIRE_CUDA_DEVICE();
  const int sm = QueryDevice(0)->sm;
  if (absl::Status st = SupportsNvfp4W4A4(256, 512, sm); !st.ok()) {
    GTEST_SKIP() << "NVFP4 W4A4 needs an sm_100a/sm_120a build on such a device: " << st;
  }
  auto lt = CublasLtGemm::Create();
  ASSERT_TRUE(lt.ok()) << lt.status();
  // Odd M (1, 5, 130: partial 128-row scale tiles); N and K multiples of 8 and 32, K / 16 = 6
  // in the second shape (scale columns padded to 8).
  for (auto [m, n, k] : {std::tuple<int64_t, int64_t, int64_t>{1, 256, 512},
                         {5, 40, 96},
                         {130, 384, 1024},
                         {1, 4096, 4096}}) {
    SCOPED_TRACE(::testing::Message() << m << "x" << n << "x" << k);
    ASSERT_TRUE(SupportsNvfp4W4A4(n, k, sm).ok());
    const std::vector<float> x = RandomFloats(m * k, 1.0f, 40);
    const std::vector<float> bias = RandomFloats(n, 1.0f, 41);
    const std::vector<uint8_t> w = RandomBytes(n * k / 2, 42);                  // every E2M1 code
    const std::vector<uint8_t> w_sf = RandomBytes(n * k / 16, 43, 0x20, 0x50);  // 2^-3 .. 2^3
    const float alpha_w = 0.37f, g = StaticGlobalScale(x);
    const float alpha = cpu::Nvfp4Alpha(alpha_w, g);

    std::vector<uint8_t> qa(m * k / 2), sfa(m * k / 16);
    ASSERT_TRUE(cpu::QuantizeNvfp4(x.data(), m, k, &g, 0, qa.data(), sfa.data()));
    std::vector<float> ref(m * n);
    const cpu::Nvfp4Weights cw{w.data(), w_sf.data(), alpha_w};
    const cpu::Nvfp4Activations ca{qa.data(), sfa.data(), &alpha, 0};
    ASSERT_TRUE(cpu::MatmulNvfp4W4A4(cw, n, k, ca, m, bias.data(), ref.data(), 0, n));

    std::vector<uint8_t> w_sf_swizzled(SwizzledScaleBytes(n, k / 16));
    SwizzleScales(w_sf.data(), n, k / 16, w_sf_swizzled.data());
    DeviceBuffer dx = Upload(x), dg = Upload(std::vector<float>{g}), dw = Upload(w),
                 dw_sf = Upload(w_sf_swizzled), dqa = Alloc(m * k / 2),
                 dsfa = Alloc(SwizzledScaleBytes(m, k / 16)), dy = Alloc(m * n * 2),
                 dbias = Upload(bias), dout = Alloc(m * n * 4);
    ASSERT_OK(QuantizeNvfp4Swizzled(dx.as<float>(), m, k, dg.as<float>(), 0, dqa.as<uint8_t>(),
                                    dsfa.as<uint8_t>(), nullptr));
    Nvfp4W4A4Args args;
    args.w = dw.as<uint8_t>();
    args.w_scales = dw_sf.as<uint8_t>();
    args.x = dqa.as<uint8_t>();
    args.x_scales = dsfa.as<uint8_t>();
    args.m = m;
    args.alpha = alpha;
    args.y = dy.as<uint16_t>();
    ASSERT_OK(Nvfp4W4A4Gemm(**lt, n, k, args, nullptr));
    ASSERT_OK(Bf16RowsToF32(dy.as<uint16_t>(), m, n, dbias.as<float>(), dout.as<float>(), nullptr));
    const std::vector<float> got = Download<float>(dout, m * n);
    // Every block term is exact in f32 on both sides; the f32 sum over blocks differs only in
    // order, so the bf16 output rounding (relative 2^-9, NMSE ~ 2^-18 / 3) dominates.
    EXPECT_LT(Nmse(got, ref), 1e-5);
    double worst = 0, scale = 0;
    for (size_t i = 0; i < ref.size(); ++i) {
      worst = std::max(worst, std::fabs(static_cast<double>(got[i]) - ref[i]));
      scale = std::max(scale, std::fabs(static_cast<double>(ref[i])));
    }
    EXPECT_LE(worst, scale * 0x1p-7) << "max |gpu - cpu| " << worst << " of max |cpu| " << scale;
  }
}

}  // namespace
}  // namespace tessera::kernels::cuda
