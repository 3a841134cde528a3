// Device tests of the GPU decoder's stacked bf16 projections: SplitColumns hands one GEMM's
// [rows, Σ width] output to per-projection buffers (with biases) exactly, and one cuBLASLt GEMM
// over q / k / v weights stacked by rows gives each projection what its own GEMM gives, within
// the f32 summation order. GTEST_SKIP()s without a device.
#include <cstdint>
#include <cstring>
#include <vector>

#include <gtest/gtest.h>

#include "kernels/cuda/cublaslt_gemm.h"
#include "kernels/cuda/decoder_ops.h"
#include "kernels/cuda/elementwise.h"
#include "tests/kernels/cuda/cuda_test_util.h"

namespace tessera::kernels::cuda {
namespace {

using testing::Alloc;
using testing::Download;
using testing::Nmse;
using testing::RandomFloats;
using testing::Upload;

TEST(SplitColumnsDeviceTest, EveryColumnLandsInItsSliceWithItsBias) {
  TESSERA_REQUIRE_CUDA_DEVICE();
  const int64_t widths[] = {48, 16, 16};  // q / k / v of a small GQA layer
  const int64_t total = 80;
  for (const int64_t rows : {int64_t{1}, int64_t{3}, int64_t{64}}) {
    const std::vector<float> src = RandomFloats(rows * total, 1.0f, 7);
    const std::vector<float> bias = RandomFloats(16, 1.0f, 8);
    DeviceBuffer dsrc = Upload(src), dbias = Upload(bias);
    DeviceBuffer dq = Alloc(rows * 48 * 4), dk = Alloc(rows * 16 * 4), dv = Alloc(rows * 16 * 4);
    const std::vector<ColumnSlice> slices = {{dq.as<float>(), nullptr, 48},
                                             {dk.as<float>(), dbias.as<float>(), 16},
                                             {dv.as<float>(), nullptr, 16}};
    ASSERT_OK(SplitColumns(dsrc.as<float>(), rows, slices, nullptr));
    const std::vector<std::vector<float>> got = {Download<float>(dq, rows * 48),
                                                 Download<float>(dk, rows * 16),
                                                 Download<float>(dv, rows * 16)};
    for (int64_t r = 0; r < rows; ++r) {
      int64_t begin = 0;
      for (int p = 0; p < 3; ++p) {
        for (int64_t j = 0; j < widths[p]; ++j) {
          const float want = src[r * total + begin + j] + (p == 1 ? bias[j] : 0.0f);
          ASSERT_EQ(got[p][r * widths[p] + j], want) << "row " << r << " slice " << p << " col " << j;
        }
        begin += widths[p];
      }
    }
  }
}

TEST(SplitColumnsDeviceTest, StackedBf16GemmMatchesOneGemmPerProjection) {
  TESSERA_REQUIRE_CUDA_DEVICE();
  auto lt = CublasLtGemm::Create();
  ASSERT_TRUE(lt.ok()) << lt.status();
  const int64_t k = 256, widths[] = {256, 64, 64}, total = 384;
  const std::vector<float> w = RandomFloats(total * k, 0.05f, 3);
  for (const int64_t rows : {int64_t{1}, int64_t{16}}) {
    const std::vector<float> x = RandomFloats(rows * k, 1.0f, 4);
    DeviceBuffer dw32 = Upload(w), dx32 = Upload(x), dw = Alloc(total * k * 2),
                 dx = Alloc(rows * k * 2), dstacked = Alloc(rows * total * 4);
    ASSERT_OK(F32ToBf16(dw32.as<float>(), total * k, dw.as<uint16_t>(), nullptr));
    ASSERT_OK(F32ToBf16(dx32.as<float>(), rows * k, dx.as<uint16_t>(), nullptr));
    const LtGemmConfig stacked{LtGemmKind::kBf16, rows, total, k, LtScaleMode::kNone,
                               LtScaleMode::kNone, true};
    ASSERT_OK((*lt)->Run(stacked, {dw.data(), dx.data(), nullptr, nullptr, 1.0f, dstacked.data()},
                         nullptr));
    std::vector<DeviceBuffer> outs;
    std::vector<ColumnSlice> slices;
    for (const int64_t n : widths) {
      outs.push_back(Alloc(rows * n * 4));
      slices.push_back({outs.back().as<float>(), nullptr, n});
    }
    ASSERT_OK(SplitColumns(dstacked.as<float>(), rows, slices, nullptr));
    int64_t first_row = 0;
    for (int p = 0; p < 3; ++p) {
      const int64_t n = widths[p];
      DeviceBuffer alone = Alloc(rows * n * 4);
      const LtGemmConfig one{LtGemmKind::kBf16, rows, n, k, LtScaleMode::kNone,
                             LtScaleMode::kNone, true};
      const auto* w_p = dw.as<uint16_t>() + first_row * k;
      ASSERT_OK((*lt)->Run(one, {w_p, dx.data(), nullptr, nullptr, 1.0f, alone.data()}, nullptr));
      EXPECT_LT(Nmse(Download<float>(outs[p], rows * n), Download<float>(alone, rows * n)), 1e-12)
          << "projection " << p << ", " << rows << " rows";
      first_row += n;
    }
  }
}

}  // namespace
}  // namespace tessera::kernels::cuda
