// The NVFP4 W4A4 family: capability query with its arch cascade, the cuBLASLt configuration and
// the launcher. There is no kernel of our own here: the GEMM is cuBLASLt's, the activation
// quantizer lives with the other quantizers (activation_quant_entry.cu).
#include "kernels/cuda/nvfp4_gemm.h"

#include <cstdint>

#include "absl/strings/str_cat.h"
#include "kernels/cuda/device.h"

namespace tessera::kernels::cuda {

absl::Status SupportsNvfp4W4A4(int64_t n, int64_t k, int sm) {
  if (n <= 0 || k <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("NVFP4 W4A4 gemm: bad shape [", n, " x ", k, "]"));
  }
  if (sm < 100) return absl::UnimplementedError(absl::StrCat("sm_", sm, " has no FP4 MMA"));
  // cuBLASLt brings its own FP4 kernels, and our quantizer is generic code that a plain target's
  // PTX would also run; the path is still kept to builds that target the exact Blackwell arch,
  // because that is the build its ptxas report and device tests cover, and where the
  // arch-specific quantizer (cvt.rn.satfinite.e2m1x2) would go.
  if (!HasArchSpecificTarget(sm)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "not compiled for sm_", sm, "a (CMAKE_CUDA_ARCHITECTURES=", CompiledArchsString(), ")"));
  }
  if (k % kNvfp4GemmKMultiple != 0 || n % kNvfp4GemmNMultiple != 0) {
    // Unimplemented, not invalid: the layer is fine, this GEMM just cannot take it (W4A16 can).
    return absl::UnimplementedError(absl::StrCat(
        "NVFP4 W4A4 gemm [", n, " x ", k, "]: cuBLASLt's FP4 GEMM needs K % ", kNvfp4GemmKMultiple,
        " == 0 and N % ", kNvfp4GemmNMultiple, " == 0 (16-byte aligned rows)"));
  }
  return absl::OkStatus();
}

LtGemmConfig Nvfp4LtConfig(int64_t m, int64_t n, int64_t k) {
  LtGemmConfig c;
  c.kind = LtGemmKind::kNvfp4;
  c.m = m;
  c.n = n;
  c.k = k;
  c.weight_scale = LtScaleMode::kVec16Ue4m3;
  c.activation_scale = LtScaleMode::kVec16Ue4m3;
  c.f32_output = false;  // bf16 D, as vLLM's cutlass_scaled_fp4_mm; the bias is added in f32 after
  return c;
}

absl::Status Nvfp4W4A4Gemm(CublasLtGemm& lt, int64_t n, int64_t k, const Nvfp4W4A4Args& a,
                           cudaStream_t stream) {
  if (a.w == nullptr || a.w_scales == nullptr || a.x == nullptr || a.x_scales == nullptr ||
      a.y == nullptr) {
    return absl::InvalidArgumentError("NVFP4 W4A4 gemm: null operand or scale");
  }
  if (a.m < 0) return absl::InvalidArgumentError("NVFP4 W4A4 gemm: m < 0");
  if (a.m == 0) return absl::OkStatus();
  if (n <= 0 || k <= 0 || k % kNvfp4GemmKMultiple != 0 || n % kNvfp4GemmNMultiple != 0) {
    return absl::InvalidArgumentError(absl::StrCat("NVFP4 W4A4 gemm: shape [", n, " x ", k,
                                                   "] was not accepted by SupportsNvfp4W4A4"));
  }
  for (const void* p : {static_cast<const void*>(a.w), static_cast<const void*>(a.w_scales),
                        static_cast<const void*>(a.x), static_cast<const void*>(a.x_scales),
                        static_cast<const void*>(a.y)}) {
    if (reinterpret_cast<uintptr_t>(p) % 16 != 0) {
      return absl::InvalidArgumentError("NVFP4 W4A4 gemm: pointers must be 16-byte aligned");
    }
  }
  LtGemmArgs args;
  args.weights = a.w;
  args.activations = a.x;
  args.weight_scales = a.w_scales;
  args.activation_scales = a.x_scales;
  args.alpha = a.alpha;
  args.out = a.y;
  return lt.Run(Nvfp4LtConfig(a.m, n, k), args, stream);
}

}  // namespace tessera::kernels::cuda
