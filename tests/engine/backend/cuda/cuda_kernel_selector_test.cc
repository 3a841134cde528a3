// The CUDA kernel selector for sm 80/89/90/100/120, without a device: kernel ids, the fallback
// chain and the reasons it records.
#include "engine/backend/cuda/cuda_kernel_selector.h"

#include <gtest/gtest.h>

#include <initializer_list>
#include <string>

#include "kernels/cuda/device.h"

namespace tessera::backend::cuda {
namespace {

using quant::ActivationFormat;
using quant::LinearSpec;
using quant::ScaleGranularity;
using quant::WeightFormat;

LinearSpec Nvfp4W4A4() {
  LinearSpec s;
  s.module = "model.layers.0.mlp.down_proj";
  s.n = 4096;
  s.k = 4096;
  s.weight_format = WeightFormat::kNvfp4;
  s.activation = ActivationFormat::kNvfp4;
  s.reason = "checkpoint: modelopt NVFP4";
  return s;
}

LinearSpec Fp8(ScaleGranularity w, ScaleGranularity a) {
  LinearSpec s;
  s.module = "model.layers.0.self_attn.q_proj";
  s.n = 4096;
  s.k = 4096;
  s.weight_format = WeightFormat::kFp8E4m3;
  s.weight_scale = w;
  s.block_n = s.block_k = 128;
  s.activation = ActivationFormat::kFp8;
  s.activation_scale = a;
  s.activation_group = 128;
  return s;
}

bool Compiled(int sm) { return kernels::cuda::HasArchSpecificTarget(sm); }

// Whether this build's targets run generic kernels on every sm in `sms`. The tests below name sm
// 80-120, which the default CMAKE_CUDA_ARCHITECTURES (80;89;90a;100a;120a) covers; a build for
// fewer (90a alone, say, to save compile time for one device) refuses the others with "not
// compiled for", so those tests skip there instead of failing.
bool Runnable(std::initializer_list<int> sms) {
  for (int sm : sms) {
    if (!kernels::cuda::CanRunGenericKernels(sm)) return false;
  }
  return true;
}
std::string NarrowBuild() {
  return "this build's CUDA targets (" + kernels::cuda::CompiledArchsString() +
         ") do not cover the sm values this test names";
}

TEST(CudaKernelSelectorTest, Nvfp4W4A4FallsBackBelowBlackwell) {
  if (!Runnable({80, 89, 90})) GTEST_SKIP() << NarrowBuild();
  for (int sm : {80, 89, 90}) {
    for (quant::ScaleOrigin origin : {quant::ScaleOrigin::kStatic, quant::ScaleOrigin::kDynamic}) {
      LinearSpec s = Nvfp4W4A4();
      s.activation_origin = origin;
      ASSERT_TRUE(CudaKernelSelector(sm).Select(&s).ok()) << sm;
      EXPECT_EQ(s.kernel, "cuda/w4a16-mma-nvfp4");
      EXPECT_EQ(s.reason, "checkpoint: modelopt NVFP4; fallback: sm_" + std::to_string(sm) +
                              " has no FP4 MMA, using W4A16");
    }
  }
}

// Static activation global scale (what ModelOpt and compressed-tensors checkpoints carry):
// cuBLASLt's FP4 GEMM where the a-target is compiled, W4A16 with the reason where it is not.
TEST(CudaKernelSelectorTest, Nvfp4W4A4OnBlackwell) {
  if (!Runnable({100, 120})) GTEST_SKIP() << NarrowBuild();
  for (int sm : {100, 120}) {
    LinearSpec s = Nvfp4W4A4();
    s.activation_origin = quant::ScaleOrigin::kStatic;
    ASSERT_TRUE(CudaKernelSelector(sm).Select(&s).ok()) << sm;
    if (Compiled(sm)) {
      EXPECT_EQ(s.kernel, "cuda/nvfp4-w4a4-cublaslt");
      EXPECT_EQ(s.kernel, kNvfp4W4A4Kernel);
      EXPECT_EQ(s.reason, "checkpoint: modelopt NVFP4") << "no fallback is recorded";
    } else {
      EXPECT_EQ(s.kernel, "cuda/w4a16-mma-nvfp4");
      EXPECT_EQ(s.reason, "checkpoint: modelopt NVFP4; fallback: not compiled for sm_" +
                              std::to_string(sm) + "a (CMAKE_CUDA_ARCHITECTURES=" +
                              kernels::cuda::CompiledArchsString() + "), using W4A16");
    }
  }
  // sm_103 (B300) has no 103a target in the default architecture list.
  if (!Compiled(103) && kernels::cuda::CanRunGenericKernels(103)) {
    LinearSpec s = Nvfp4W4A4();
    s.activation_origin = quant::ScaleOrigin::kStatic;
    ASSERT_TRUE(CudaKernelSelector(103).Select(&s).ok());
    EXPECT_EQ(s.kernel, "cuda/w4a16-mma-nvfp4");
    EXPECT_NE(s.reason.find("not compiled for sm_103a"), std::string::npos) << s.reason;
  }
}

// Block-scale bytes that E4M3 reads as negative or NaN: W4A16 (which decodes them as the CPU
// does), not cuBLASLt's unsigned UE4M3, and the plan says why.
TEST(CudaKernelSelectorTest, Nvfp4W4A4SignedScalesStayW4A16) {
  if (!Runnable({100, 120})) GTEST_SKIP() << NarrowBuild();
  for (int sm : {100, 120}) {
    LinearSpec s = Nvfp4W4A4();
    s.activation_origin = quant::ScaleOrigin::kStatic;
    s.nvfp4_scales_signed_or_nan = true;
    ASSERT_TRUE(CudaKernelSelector(sm).Select(&s).ok()) << sm;
    EXPECT_EQ(s.kernel, "cuda/w4a16-mma-nvfp4");
    if (Compiled(sm)) {
      EXPECT_EQ(s.reason,
                "checkpoint: modelopt NVFP4; fallback: block scale bytes with the sign bit or NaN "
                "(cuBLASLt reads them as unsigned UE4M3), using W4A16");
    }
  }
}

// A dynamic (per-row) activation global scale cannot become cuBLASLt's single alpha.
TEST(CudaKernelSelectorTest, Nvfp4W4A4DynamicGlobalScaleStaysW4A16) {
  if (!Runnable({100, 120})) GTEST_SKIP() << NarrowBuild();
  for (int sm : {100, 120}) {
    LinearSpec s = Nvfp4W4A4();
    s.activation_origin = quant::ScaleOrigin::kDynamic;
    ASSERT_TRUE(CudaKernelSelector(sm).Select(&s).ok()) << sm;
    EXPECT_EQ(s.kernel, "cuda/w4a16-mma-nvfp4");
    if (Compiled(sm)) {
      EXPECT_EQ(s.reason,
                "checkpoint: modelopt NVFP4; fallback: dynamic NVFP4 activation global scales "
                "(one per row) cannot fold into cuBLASLt's scalar alpha, using W4A16");
    } else {
      EXPECT_NE(s.reason.find("not compiled for sm_"), std::string::npos) << s.reason;
    }
  }
}

// Shapes cuBLASLt's FP4 GEMM cannot take fall back in the plan instead of failing at run time.
// (N % 8 != 0 is the case that reaches W4A16: a K that is not a multiple of 32 is not one of 64
// either, which W4A16 needs, so such a layer has no CUDA kernel at all and the plan says so.)
TEST(CudaKernelSelectorTest, Nvfp4W4A4UnsupportedShapesFallBack) {
  for (int sm : {100, 120}) {
    if (!Compiled(sm)) continue;
    LinearSpec s = Nvfp4W4A4();
    s.activation_origin = quant::ScaleOrigin::kStatic;
    s.n = 4100;
    ASSERT_TRUE(CudaKernelSelector(sm).Select(&s).ok());
    EXPECT_EQ(s.kernel, "cuda/w4a16-mma-nvfp4");
    EXPECT_EQ(s.reason,
              "checkpoint: modelopt NVFP4; fallback: NVFP4 W4A4 gemm [4100 x 4096]: cuBLASLt's "
              "FP4 GEMM needs K % 32 == 0 and N % 8 == 0 (16-byte aligned rows), using W4A16");
    s = Nvfp4W4A4();
    s.activation_origin = quant::ScaleOrigin::kStatic;
    s.k = 4096 + 16;
    EXPECT_EQ(CudaKernelSelector(sm).Select(&s).code(), absl::StatusCode::kInvalidArgument);
  }
}

TEST(CudaKernelSelectorTest, Fp8Cascade) {
  if (!Runnable({80, 89, 90, 100, 120})) GTEST_SKIP() << NarrowBuild();
  LinearSpec s = Fp8(ScaleGranularity::kRowwise, ScaleGranularity::kColwise);
  ASSERT_TRUE(CudaKernelSelector(80).Select(&s).ok());
  EXPECT_EQ(s.kernel, "cuda/fp8-w8a16-dequant-bf16");
  EXPECT_EQ(s.reason, "fallback: sm_80 has no FP8 MMA, using W8A16");

  s = Fp8(ScaleGranularity::kRowwise, ScaleGranularity::kColwise);
  ASSERT_TRUE(CudaKernelSelector(89).Select(&s).ok());
  EXPECT_EQ(s.kernel, "cuda/fp8-w8a8-cublaslt+epilogue");
  for (int sm : {90, 100, 120}) {
    s = Fp8(ScaleGranularity::kRowwise, ScaleGranularity::kColwise);
    ASSERT_TRUE(CudaKernelSelector(sm).Select(&s).ok());
    EXPECT_EQ(s.kernel, "cuda/fp8-w8a8-cublaslt-scaled") << sm;
    EXPECT_TRUE(s.reason.empty());
  }

  s = Fp8(ScaleGranularity::kBlock, ScaleGranularity::kGroup);
  ASSERT_TRUE(CudaKernelSelector(89).Select(&s).ok());
  EXPECT_EQ(s.kernel, "cuda/fp8-w8a16-dequant-bf16");
  EXPECT_NE(s.reason.find("fallback: sm_89: cuBLASLt 128x128 block scaling needs sm_90+"),
            std::string::npos) << s.reason;
  s = Fp8(ScaleGranularity::kBlock, ScaleGranularity::kGroup);
  ASSERT_TRUE(CudaKernelSelector(90).Select(&s).ok());
  EXPECT_EQ(s.kernel, "cuda/fp8-w8a8-cublaslt-scaled");

  s = Fp8(ScaleGranularity::kTensor, ScaleGranularity::kTensor);
  s.activation_origin = quant::ScaleOrigin::kStatic;
  ASSERT_TRUE(CudaKernelSelector(89).Select(&s).ok());
  EXPECT_EQ(s.kernel, "cuda/fp8-w8a8-cublaslt-scaled");

  s = Fp8(ScaleGranularity::kTensor, ScaleGranularity::kTensor);  // dynamic per-tensor
  ASSERT_TRUE(CudaKernelSelector(90).Select(&s).ok());
  EXPECT_EQ(s.kernel, "cuda/fp8-w8a16-dequant-bf16");
  EXPECT_NE(s.reason.find("no CUDA quantizer"), std::string::npos) << s.reason;
}

TEST(CudaKernelSelectorTest, WeightOnlyAndErrors) {
  if (!Runnable({80, 89, 90, 100, 120})) GTEST_SKIP() << NarrowBuild();
  LinearSpec s;
  s.module = "m";
  s.n = 4096;
  s.k = 4096;
  s.weight_format = WeightFormat::kInt4;
  s.group_size = 128;
  for (int sm : {80, 89, 90, 100, 120}) {
    ASSERT_TRUE(CudaKernelSelector(sm).Select(&s).ok());
    EXPECT_EQ(s.kernel, "cuda/w4a16-mma-int4");
  }
  s.act_order = true;
  absl::Status st = CudaKernelSelector(90).Select(&s);
  EXPECT_EQ(st.code(), absl::StatusCode::kUnimplemented);
  EXPECT_NE(st.message().find("act-order"), absl::string_view::npos);

  s.act_order = false;
  s.weight_format = WeightFormat::kMxfp4;
  ASSERT_TRUE(CudaKernelSelector(120).Select(&s).ok());
  EXPECT_EQ(s.kernel, "cuda/w4a16-mma-mxfp4");

  // bitsandbytes 4-bit: dequantized to bf16 at upload, the reason says so.
  s.weight_format = WeightFormat::kBnb4bit;
  s.group_size = 64;
  ASSERT_TRUE(CudaKernelSelector(90).Select(&s).ok());
  EXPECT_EQ(s.kernel, "cuda/bnb4-dequant-bf16");
  EXPECT_NE(s.reason.find("dequantized to bf16"), std::string::npos) << s.reason;

  s.weight_format = WeightFormat::kGgufQ4_K;
  st = CudaKernelSelector(90).Select(&s);
  EXPECT_EQ(st.code(), absl::StatusCode::kUnimplemented);
  EXPECT_NE(st.message().find("no CUDA kernel"), absl::string_view::npos) << st;

  s.weight_format = WeightFormat::kBF16;
  EXPECT_EQ(CudaKernelSelector(75).Select(&s).code(), absl::StatusCode::kUnimplemented);
  ASSERT_TRUE(CudaKernelSelector(80).Select(&s).ok());
  EXPECT_EQ(s.kernel, "cuda/cublaslt-bf16");
  EXPECT_EQ(CudaKernelSelector(90).name(), "cuda sm_90");
}

}  // namespace
}  // namespace tessera::backend::cuda
