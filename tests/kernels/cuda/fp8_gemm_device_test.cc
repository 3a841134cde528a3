// Device tests of the FP8 W8A8 GEMM (kernels/cuda/fp8_gemm.h) against the CPU reference
// (kernels/cpu/quant/fp8_matmul.h) on the same codes: per-token x per-channel scales with bf16 and
// f32 output, and 128x128 weight blocks x per-token-group-128 activations on padded rows. Each
// test GTEST_SKIP()s where the device or arch cannot run it.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "kernels/cpu/quant/activation_quant.h"
#include "kernels/cpu/quant/fp8_matmul.h"
#include "kernels/cuda/activation_quant.h"
#include "kernels/cuda/cublaslt_gemm.h"
#include "kernels/cuda/device.h"
#include "kernels/cuda/fp8_gemm.h"
#include "kernels/numeric/half.h"
#include "tests/kernels/cuda/cuda_test_util.h"

namespace tessera::kernels::cuda {
namespace {

using testing::Alloc;
using testing::Download;
using testing::Nmse;
using testing::RandomBytes;
using testing::RandomFloats;
using testing::Upload;

TEST(Fp8GemmDeviceTest, PerTokenPerChannelMatchesCpu) {
  TESSERA_REQUIRE_CUDA_DEVICE();
  auto info = QueryDevice(0);
  const Fp8GemmProblem p{512, 1024, Fp8ActScale::kPerToken, Fp8WeightScale::kPerChannel};
  absl::StatusOr<Fp8Path> path = ChooseFp8Path(p, info->sm);
  if (!path.ok()) GTEST_SKIP() << path.status();
  auto lt = CublasLtGemm::Create();
  ASSERT_TRUE(lt.ok()) << lt.status();
  const int64_t m = 24;
  std::vector<float> x = RandomFloats(m * p.k, 1.0f, 16);
  std::vector<uint8_t> qx(m * p.k);
  std::vector<float> sx(m);
  cpu::QuantizeFp8PerToken(x.data(), m, p.k, nullptr, cpu::kFp8PerTokenMinScale, qx.data(),
                           sx.data());
  std::vector<uint8_t> qw = RandomBytes(p.n * p.k, 17, 0, 0x76);  // finite, mixed signs
  for (size_t i = 0; i < qw.size(); i += 2) qw[i] |= 0x80;
  std::vector<float> sw = RandomFloats(p.n, 0.01f, 18);
  for (float& s : sw) s = std::fabs(s) + 1e-3f;
  std::vector<float> ref(m * p.n);
  cpu::Fp8Weights cw{qw.data(), cpu::Fp8WeightScaleLayout::kPerRow, sw.data(), 0, 0};
  cpu::Fp8Activations ca{qx.data(), cpu::Fp8ActScaleLayout::kPerToken, sx.data(), 0};
  ASSERT_TRUE(cpu::MatmulFp8W8A8(cw, p.n, p.k, ca, m, nullptr, ref.data(), 0, p.n));
  DeviceBuffer dqw = Upload(qw), dsw = Upload(sw), dqx = Upload(qx), dsx = Upload(sx),
               dy = Alloc(m * p.n * 2), dscratch = Alloc(m * p.n * 4);
  const Fp8GemmArgs args{dqw.as<uint8_t>(), dsw.as<float>(), dqx.as<uint8_t>(), dsx.as<float>(),
                         m, dy.as<uint16_t>(), dscratch.as<float>()};
  ASSERT_OK(Fp8Gemm(**lt, p, *path, args, nullptr));
  ASSERT_OK(Fp8Gemm(**lt, p, *path, args, nullptr));  // second call hits the plan cache
  EXPECT_EQ((*lt)->cached_plans(), 1);
  const std::vector<uint16_t> y = Download<uint16_t>(dy, m * p.n);
  std::vector<float> got(y.size());
  for (size_t i = 0; i < y.size(); ++i) got[i] = numeric::Bf16ToFloat(y[i]);
  EXPECT_LT(Nmse(got, ref), 1e-5);  // bf16 output rounding dominates (2^-18 / 3)

  // f32 output with a bias (Fp8GemmArgs::y_f32): straight from cuBLASLt where it offers that (a
  // second cached plan), else the bf16 result widened; the log says which ran.
  const std::vector<float> bias = RandomFloats(p.n, 1.0f, 19);
  DeviceBuffer dbias = Upload(bias), dy32 = Alloc(m * p.n * 4);
  Fp8GemmArgs f32_args = args;
  f32_args.y_f32 = dy32.as<float>();
  f32_args.bias = dbias.as<float>();
  ASSERT_OK(Fp8Gemm(**lt, p, *path, f32_args, nullptr));
  const bool direct = (*lt)->cached_plans() == 2;
  std::vector<float> ref_b = ref, got_b = got;
  for (int64_t i = 0; i < m * p.n; ++i) {
    ref_b[i] += bias[i % p.n];
    got_b[i] += bias[i % p.n];
  }
  const std::vector<float> y32 = Download<float>(dy32, m * p.n);
  const double nmse = Nmse(y32, ref_b);
  std::printf("FP8 %s, f32 output %s: NMSE %.3g\n", std::string(Fp8PathName(*path)).c_str(),
              direct ? "from cuBLASLt" : "widened from bf16", nmse);
  if (direct) {
    EXPECT_LT(nmse, 1e-6);  // no bf16 rounding: only the accumulation's
  } else {
    EXPECT_EQ(std::memcmp(y32.data(), got_b.data(), y32.size() * 4), 0);
  }
}

// The DeepSeek-style recipe: 128x128 weight blocks x per-token-group-128 activations, on 5
// rows padded to 8 (cuBLASLt needs M % 4 == 0), against the CPU reference on the same codes.
// The weight scales go up row-major [N/128, K/128], as weight_upload.cc uploads them; the test
// also reports the result with the transposed order, so a layout mismatch names itself.
TEST(Fp8GemmDeviceTest, Block128PaddedRowsMatchCpu) {
  TESSERA_REQUIRE_CUDA_DEVICE();
  auto info = QueryDevice(0);
  const Fp8GemmProblem p{256, 512, Fp8ActScale::kPerTokenGroup128, Fp8WeightScale::kBlock128};
  absl::StatusOr<Fp8Path> path = ChooseFp8Path(p, info->sm);
  if (!path.ok()) GTEST_SKIP() << path.status();
  auto lt = CublasLtGemm::Create();
  ASSERT_TRUE(lt.ok()) << lt.status();
  const int64_t m = 5, rows = Fp8GemmRows(p, m), groups = p.k / 128, nb = p.n / 128;
  ASSERT_EQ(rows, 8);
  std::vector<float> x = RandomFloats(m * p.k, 1.0f, 26);
  std::vector<uint8_t> qx(m * p.k);
  std::vector<float> sx(m * groups);
  cpu::QuantizeFp8PerTokenGroup(x.data(), m, p.k, 128, cpu::kFp8PerTokenGroupEps, qx.data(),
                                sx.data());
  std::vector<uint8_t> qw = RandomBytes(p.n * p.k, 27, 0, 0x76);
  for (size_t i = 0; i < qw.size(); i += 2) qw[i] |= 0x80;
  std::vector<float> sw = RandomFloats(nb * groups, 0.01f, 28);
  for (float& s : sw) s = std::fabs(s) + 1e-3f;
  std::vector<float> ref(m * p.n);
  cpu::Fp8Weights cw{qw.data(), cpu::Fp8WeightScaleLayout::kBlock, sw.data(), 128, 128};
  cpu::Fp8Activations ca{qx.data(), cpu::Fp8ActScaleLayout::kPerTokenGroup, sx.data(), 128};
  ASSERT_TRUE(cpu::MatmulFp8W8A8(cw, p.n, p.k, ca, m, nullptr, ref.data(), 0, p.n));

  DeviceBuffer dx = Upload(x), dq = Alloc(rows * p.k), ds = Alloc(rows * groups * 4);
  ASSERT_OK(QuantizeFp8PerTokenGroupPadded(dx.as<float>(), m, rows, p.k, 128,
                                           cpu::kFp8PerTokenGroupEps, dq.as<uint8_t>(),
                                           ds.as<float>(), nullptr));
  // The padded quantizer gives the CPU's codes, group-major scales and zero padding rows.
  const std::vector<uint8_t> q_got = Download<uint8_t>(dq, rows * p.k);
  const std::vector<float> s_got = Download<float>(ds, rows * groups);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t g = 0; g < groups; ++g) {
      EXPECT_EQ(s_got[g * rows + r], r < m ? sx[r * groups + g] : 1.0f) << r << "," << g;
    }
    for (int64_t i = 0; i < p.k; ++i) {
      ASSERT_EQ(q_got[r * p.k + i], r < m ? qx[r * p.k + i] : 0) << r << "," << i;
    }
  }
  std::vector<float> sw_t(sw.size());
  for (int64_t b = 0; b < nb; ++b) {
    for (int64_t g = 0; g < groups; ++g) sw_t[g * nb + b] = sw[b * groups + g];
  }
  DeviceBuffer dqw = Upload(qw), dy = Alloc(rows * p.n * 2);
  auto run = [&](const std::vector<float>& scales) -> double {
    DeviceBuffer dsw = Upload(scales);
    const Fp8GemmArgs args{dqw.as<uint8_t>(), dsw.as<float>(), dq.as<uint8_t>(), ds.as<float>(),
                           rows, dy.as<uint16_t>(), nullptr};
    const absl::Status st = Fp8Gemm(**lt, p, *path, args, nullptr);
    EXPECT_TRUE(st.ok()) << st;
    if (!st.ok()) return 1e9;
    const std::vector<uint16_t> y = Download<uint16_t>(dy, rows * p.n);
    std::vector<float> got(m * p.n);
    for (size_t i = 0; i < got.size(); ++i) got[i] = numeric::Bf16ToFloat(y[i]);
    return Nmse(got, ref);
  };
  const double nmse = run(sw), nmse_transposed = run(sw_t);
  std::printf("block128: NMSE %.3g with row-major weight scales, %.3g transposed\n", nmse,
              nmse_transposed);
  EXPECT_LT(nmse, 1e-5);
  // Unpadded rows are refused with the reason.
  const Fp8GemmArgs unpadded{dqw.as<uint8_t>(), dqw.as<float>(), dq.as<uint8_t>(),
                             ds.as<float>(), m, dy.as<uint16_t>(), nullptr};
  EXPECT_EQ(Fp8Gemm(**lt, p, *path, unpadded, nullptr).code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace tessera::kernels::cuda
