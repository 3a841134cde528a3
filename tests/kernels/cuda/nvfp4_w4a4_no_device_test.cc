// The NVFP4 W4A4 path's pieces that need no GPU: the swizzled scale layout against an independent
// statement of it (torchao/vLLM's `to_blocked`, the reshape/permute form of the cuBLAS "1D Block
// Scaling Factors Layout", replayed here as tensor operations on position labels), the block
// quantizer the CUDA kernels run against the CPU reference QuantizeNvfp4 bit for bit (also at the
// rounding boundaries where the f32 operation order decides the codes), the cuBLASLt
// descriptors of the FP4 GEMM, and the capability query's arch/shape cascade.
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "kernels/cpu/quant/activation_quant.h"
#include "kernels/cuda/cublaslt_gemm.h"
#include "kernels/cuda/device.h"
#include "kernels/cuda/nvfp4_block_quant.h"
#include "kernels/cuda/nvfp4_gemm.h"
#include "kernels/cuda/nvfp4_scale_layout.h"
#include "tests/kernels/cuda/nvfp4_test_data.h"

namespace tessera::kernels::cuda {
namespace {

// A dense row-major tensor of int64 labels, with the two PyTorch view operations `to_blocked`
// uses: reshape (same order, new shape) and permute (materialized contiguously).
struct LabelTensor {
  std::vector<int64_t> shape;
  std::vector<int64_t> data;

  LabelTensor Reshape(std::vector<int64_t> new_shape) const {
    int64_t known = 1, infer = -1;
    for (size_t i = 0; i < new_shape.size(); ++i) {
      if (new_shape[i] == -1) {
        infer = static_cast<int64_t>(i);
      } else {
        known *= new_shape[i];
      }
    }
    if (infer >= 0) new_shape[infer] = static_cast<int64_t>(data.size()) / known;
    int64_t numel = 1;
    for (int64_t d : new_shape) numel *= d;
    EXPECT_EQ(numel, static_cast<int64_t>(data.size()));
    return {new_shape, data};
  }

  LabelTensor Permute(const std::vector<int>& perm) const {
    const size_t rank = shape.size();
    std::vector<int64_t> stride(rank, 1);
    for (size_t i = rank - 1; i > 0; --i) stride[i - 1] = stride[i] * shape[i];
    LabelTensor out;
    for (int p : perm) out.shape.push_back(shape[p]);
    out.data.resize(data.size());
    std::vector<int64_t> idx(rank, 0);  // index into `out`
    for (size_t flat = 0; flat < data.size(); ++flat) {
      int64_t src = 0;
      for (size_t d = 0; d < rank; ++d) src += idx[d] * stride[perm[d]];
      out.data[flat] = data[src];
      for (size_t d = rank; d-- > 0;) {  // odometer increment
        if (++idx[d] < out.shape[d]) break;
        idx[d] = 0;
      }
    }
    return out;
  }
};

// torchao / vLLM / flashinfer `to_blocked(scales)` applied to a matrix whose entry (r, c) of the
// padded [R, C] matrix is labelled r * C + c: the result lists, position by position of the
// swizzled buffer, which padded entry lands there.
//   padded.view(nrb, 128, ncb, 4).permute(0, 2, 1, 3)
//         .reshape(-1, 4, 32, 4).transpose(1, 2).reshape(-1, 32, 16).flatten()
std::vector<int64_t> ToBlockedLabels(int64_t rows, int64_t cols) {
  const int64_t nrb = (rows + 127) / 128, ncb = (cols + 3) / 4;
  LabelTensor t{{nrb * 128, ncb * 4}, {}};
  t.data.resize(nrb * 128 * ncb * 4);
  for (size_t i = 0; i < t.data.size(); ++i) t.data[i] = static_cast<int64_t>(i);
  return t.Reshape({nrb, 128, ncb, 4})
      .Permute({0, 2, 1, 3})
      .Reshape({-1, 4, 32, 4})
      .Permute({0, 2, 1, 3})
      .Reshape({-1, 32, 16})
      .Reshape({-1})
      .data;
}

TEST(Nvfp4ScaleLayoutTest, MatchesToBlockedAndIsABijectionOntoThePaddedBuffer) {
  std::vector<int64_t> row_counts;
  for (int64_t r = 1; r <= 260; ++r) row_counts.push_back(r);  // 1, 2, 3 row tiles
  row_counts.push_back(384);
  row_counts.push_back(385);
  for (int64_t rows : row_counts) {
    for (int64_t cols = 1; cols <= 12; ++cols) {
      const std::vector<int64_t> labels = ToBlockedLabels(rows, cols);
      const int64_t padded_cols = SwizzledScaleCols(cols);
      ASSERT_EQ(static_cast<int64_t>(labels.size()), SwizzledScaleBytes(rows, cols));
      ASSERT_EQ(SwizzledScaleRows(rows) * padded_cols, SwizzledScaleBytes(rows, cols));
      // Every entry of the padded domain lands where to_blocked puts it; since `labels` is a
      // permutation of the domain, the offsets cover the buffer exactly once.
      for (int64_t r = 0; r < SwizzledScaleRows(rows); ++r) {
        for (int64_t c = 0; c < padded_cols; ++c) {
          const int64_t off = SwizzledScaleOffset(r, c, cols);
          ASSERT_GE(off, 0);
          ASSERT_LT(off, static_cast<int64_t>(labels.size()));
          ASSERT_EQ(labels[off], r * padded_cols + c)
              << rows << "x" << cols << " (" << r << ", " << c << ")";
        }
      }
    }
  }
}

TEST(Nvfp4ScaleLayoutTest, SwizzleZeroesPaddingAndUnswizzleInvertsIt) {
  std::mt19937 rng(7);
  for (auto [rows, cols] : {std::pair<int64_t, int64_t>{1, 2}, {5, 4}, {130, 6}, {256, 8}}) {
    std::vector<uint8_t> scales(rows * cols);
    for (uint8_t& s : scales) s = static_cast<uint8_t>(1 + rng() % 254);  // never 0
    std::vector<uint8_t> swizzled(SwizzledScaleBytes(rows, cols), 0xAB);
    SwizzleScales(scales.data(), rows, cols, swizzled.data());
    int64_t nonzero = 0;
    for (uint8_t b : swizzled) nonzero += b != 0;
    EXPECT_EQ(nonzero, rows * cols) << "padding must be zero";
    std::vector<uint8_t> back(rows * cols);
    UnswizzleScales(swizzled.data(), rows, cols, back.data());
    EXPECT_EQ(back, scales);
  }
}

// Rows of 16-element blocks that exercise every branch of the block quantizer: ordinary values
// at several magnitudes, all-zero blocks, a lone NaN, +-inf, subnormals, and values that saturate
// the E4M3 scale or the E2M1 codes.
std::vector<float> HardActivations(int64_t rows, int64_t k, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_real_distribution<float> exponent(-30.0f, 30.0f);
  std::vector<float> x(rows * k);
  for (int64_t i = 0; i < rows * k; ++i) {
    const int64_t block = i / 16;
    switch (block % 7) {
      case 0:
        x[i] = normal(rng);
        break;
      case 1:
        x[i] = normal(rng) * std::exp2(exponent(rng));
        break;
      case 2:
        x[i] = 0.0f;
        break;
      case 3:
        x[i] = (i % 16 == 5) ? std::numeric_limits<float>::quiet_NaN() : normal(rng);
        break;
      case 4:
        x[i] = (i % 16 == 3) ? -std::numeric_limits<float>::infinity() : normal(rng) * 1e3f;
        break;
      case 5:
        x[i] = normal(rng) * 1e-40f;
        break;  // subnormal f32
      default:
        x[i] = (i % 16 == 0) ? 1e30f : normal(rng);
        break;
    }
  }
  return x;
}

TEST(Nvfp4BlockQuantTest, MatchesCpuQuantizeNvfp4BitForBit) {
  const int64_t rows = 23, k = 7 * 16 * 3;
  const std::vector<float> x = HardActivations(rows, k, 11);
  std::vector<float> per_row(rows);
  cpu::Nvfp4DynamicGlobalScalePerRow(x.data(), rows, k, per_row.data());
  // Static divisors as checkpoints carry them (1 / input_scale), extreme ones, and per-row ones.
  const std::vector<std::pair<std::vector<float>, int64_t>> cases = {
      {{2688.0f / 3.7f}, 0}, {{1.0f}, 0},          {{1e-3f}, 0},
      {{1e6f}, 0},           {{448.0f * 6.0f}, 0}, {per_row, 1}};
  const int64_t blocks = k / 16;
  int64_t checked = 0;
  for (const auto& [g, stride] : cases) {
    std::vector<uint8_t> q_ref(rows * k / 2), sf_ref(rows * blocks);
    ASSERT_TRUE(
        cpu::QuantizeNvfp4(x.data(), rows, k, g.data(), stride, q_ref.data(), sf_ref.data()));
    for (int64_t m = 0; m < rows; ++m) {
      for (int64_t b = 0; b < blocks; ++b) {
        float v[kNvfp4BlockElems];
        for (int j = 0; j < kNvfp4BlockElems; ++j) v[j] = x[m * k + b * 16 + j];
        const Nvfp4Block got = QuantizeNvfp4Block(v, g[m * stride]);
        ASSERT_EQ(got.scale, sf_ref[m * blocks + b])
            << "g " << g[m * stride] << " row " << m << " block " << b;
        for (int j = 0; j < 8; ++j) {
          ASSERT_EQ(Nvfp4BlockByte(got, j), q_ref[m * k / 2 + b * 8 + j])
              << "g " << g[m * stride] << " row " << m << " block " << b << " byte " << j;
        }
        ++checked;
      }
    }
  }
  EXPECT_EQ(checked, static_cast<int64_t>(cases.size()) * rows * blocks);
}

// Data at the rounding boundaries where the order of the f32 operations decides the codes: a
// reassociated formula fails here even when random data cannot tell.
TEST(Nvfp4BlockQuantTest, OperationOrderMatchesCpuAtRoundingBoundaries) {
  const testing::OrderSensitiveRows d = testing::MakeOrderSensitiveRows(8, 16, 3);
  EXPECT_GT(d.scale_order_blocks, d.rows * 16 / 2);
  EXPECT_GT(d.code_order_elements, d.rows * 16 * 15 / 4);
  const int64_t blocks = d.k / 16;
  std::vector<uint8_t> q_ref(d.rows * d.k / 2), sf_ref(d.rows * blocks);
  ASSERT_TRUE(cpu::QuantizeNvfp4(d.x.data(), d.rows, d.k, d.global_scales.data(), 1, q_ref.data(),
                                 sf_ref.data()));
  for (int64_t m = 0; m < d.rows; ++m) {
    for (int64_t b = 0; b < blocks; ++b) {
      float v[kNvfp4BlockElems];
      for (int j = 0; j < kNvfp4BlockElems; ++j) v[j] = d.x[m * d.k + b * 16 + j];
      const Nvfp4Block got = QuantizeNvfp4Block(v, d.global_scales[m]);
      ASSERT_EQ(got.scale, sf_ref[m * blocks + b]) << "row " << m << " block " << b;
      for (int j = 0; j < 8; ++j) {
        ASSERT_EQ(Nvfp4BlockByte(got, j), q_ref[m * d.k / 2 + b * 8 + j])
            << "row " << m << " block " << b << " byte " << j;
      }
    }
  }
}

TEST(Nvfp4GemmNoDeviceTest, DescriptorsCarryFp4TypesAndBlockScaleModes) {
  for (int64_t m : {1, 5, 130}) {
    const LtGemmConfig config = Nvfp4LtConfig(m, 256, 512);
    absl::StatusOr<LtDescriptors> d = LtDescriptors::Create(config);
    ASSERT_TRUE(d.ok()) << config.ToString() << ": " << d.status();
    auto desc_attr = [&](cublasLtMatmulDescAttributes_t attr) {
      int32_t v = -1;
      size_t written = 0;
      EXPECT_EQ(cublasLtMatmulDescGetAttribute(d->desc(), attr, &v, sizeof(v), &written),
                CUBLAS_STATUS_SUCCESS);
      return v;
    };
    EXPECT_EQ(desc_attr(CUBLASLT_MATMUL_DESC_A_SCALE_MODE),
              CUBLASLT_MATMUL_MATRIX_SCALE_VEC16_UE4M3);
    EXPECT_EQ(desc_attr(CUBLASLT_MATMUL_DESC_B_SCALE_MODE),
              CUBLASLT_MATMUL_MATRIX_SCALE_VEC16_UE4M3);
    EXPECT_EQ(desc_attr(CUBLASLT_MATMUL_DESC_TRANSA), CUBLAS_OP_T);  // the TN form FP4 needs
    EXPECT_EQ(desc_attr(CUBLASLT_MATMUL_DESC_TRANSB), CUBLAS_OP_N);
    EXPECT_EQ(desc_attr(CUBLASLT_MATMUL_DESC_COMPUTE_TYPE), CUBLAS_COMPUTE_32F);
    EXPECT_EQ(desc_attr(CUBLASLT_MATMUL_DESC_SCALE_TYPE), CUDA_R_32F);
    struct Expect {
      cublasLtMatrixLayout_t layout;
      int32_t type;
      uint64_t rows, cols;
      int64_t ld;
    };
    for (const Expect& e : {Expect{d->a(), CUDA_R_4F_E2M1, 512, 256, 512},
                            Expect{d->b(), CUDA_R_4F_E2M1, 512, static_cast<uint64_t>(m), 512},
                            Expect{d->d(), CUDA_R_16BF, 256, static_cast<uint64_t>(m), 256}}) {
      // One attribute of the layout, read back as the type of `zero`.
      auto attr = [&](cublasLtMatrixLayoutAttribute_t a, auto zero) {
        decltype(zero) v = zero;
        size_t w = 0;
        EXPECT_EQ(cublasLtMatrixLayoutGetAttribute(e.layout, a, &v, sizeof(v), &w),
                  CUBLAS_STATUS_SUCCESS);
        return v;
      };
      const int32_t type = attr(CUBLASLT_MATRIX_LAYOUT_TYPE, int32_t{-1});
      const uint64_t rows = attr(CUBLASLT_MATRIX_LAYOUT_ROWS, uint64_t{0});
      const uint64_t cols = attr(CUBLASLT_MATRIX_LAYOUT_COLS, uint64_t{0});
      const int64_t ld = attr(CUBLASLT_MATRIX_LAYOUT_LD, int64_t{0});
      EXPECT_EQ(type, e.type);
      EXPECT_EQ(rows, e.rows);
      EXPECT_EQ(cols, e.cols);
      EXPECT_EQ(ld, e.ld);
    }
    // Setting the per-call scale pointers touches no memory; any 16-byte aligned value is fine.
    alignas(16) static uint8_t fake[32];
    EXPECT_TRUE(d->SetScalePointers(fake, fake + 16).ok());
  }
  // K must give 16-byte rows of packed codes; the modes must be the NVFP4 ones.
  EXPECT_EQ(LtDescriptors::Create(Nvfp4LtConfig(4, 256, 48)).status().code(),
            absl::StatusCode::kInvalidArgument);
  LtGemmConfig wrong = Nvfp4LtConfig(4, 256, 512);
  wrong.activation_scale = LtScaleMode::kOuterVector;
  EXPECT_EQ(LtDescriptors::Create(wrong).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(Nvfp4GemmNoDeviceTest, CapabilityCascade) {
  for (int sm : {80, 89, 90}) {
    const absl::Status st = SupportsNvfp4W4A4(4096, 4096, sm);
    EXPECT_EQ(st.code(), absl::StatusCode::kUnimplemented) << sm;
    EXPECT_EQ(st.message(), "sm_" + std::to_string(sm) + " has no FP4 MMA");
  }
  for (int sm : {100, 103, 120}) {
    const absl::Status st = SupportsNvfp4W4A4(4096, 4096, sm);
    if (HasArchSpecificTarget(sm)) {
      EXPECT_TRUE(st.ok()) << st;
      const absl::Status odd_k = SupportsNvfp4W4A4(4096, 4096 + 16, sm);
      EXPECT_EQ(odd_k.code(), absl::StatusCode::kUnimplemented);
      EXPECT_NE(odd_k.message().find("K % 32 == 0"), absl::string_view::npos) << odd_k;
      EXPECT_EQ(SupportsNvfp4W4A4(4100, 4096, sm).code(), absl::StatusCode::kUnimplemented);
      EXPECT_TRUE(SupportsNvfp4W4A4(8, 32, sm).ok());
    } else {
      EXPECT_EQ(st.code(), absl::StatusCode::kFailedPrecondition) << sm;
      EXPECT_NE(st.message().find("not compiled for sm_" + std::to_string(sm) + "a"),
                absl::string_view::npos)
          << st;
    }
  }
  EXPECT_EQ(SupportsNvfp4W4A4(0, 4096, 100).code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace tessera::kernels::cuda
