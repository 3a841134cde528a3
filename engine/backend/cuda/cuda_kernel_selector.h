// The CUDA backend's answer to "which kernel runs this LinearSpec" for a device of compute
// capability `sm`. It asks each kernel family's capability query (kernels/cuda/*_entry.cu) and
// walks an explicit fallback chain, recording the kernel in spec->kernel and every fallback with
// its cause in spec->reason ("fallback: sm_90 has no FP4 MMA, using W4A16"):
//   FP8 W8A8   -> cuBLASLt scaled / cuBLASLt + epilogue -> W8A16 (weights dequantized to bf16)
//   NVFP4 W4A4 -> cuBLASLt block-scaled FP4 (cuda/nvfp4-w4a4-cublaslt) on sm_100a/sm_120a
//                 builds with a static activation global scale and K % 32 == 0, N % 8 == 0;
//                 otherwise NVFP4 W4A16 mma.sync with the reason (below sm_100, a-target not
//                 compiled, dynamic per-row activation global scale, shape)
//   NVFP4/MXFP4/INT4/AWQ W4A16 -> mma.sync W4A16; bf16/f16/f32 -> cuBLASLt bf16
// Anything else is an error naming the format, so the plan fails at load, never at run time. It
// needs no device: the plan can be resolved (and tested) for any sm.
#ifndef TESSERA_ENGINE_BACKEND_CUDA_CUDA_KERNEL_SELECTOR_H_
#define TESSERA_ENGINE_BACKEND_CUDA_CUDA_KERNEL_SELECTOR_H_

#include <string>

#include "absl/strings/string_view.h"
#include "engine/quant/precision_plan.h"
#include "kernels/cuda/fp8_gemm.h"

namespace tessera::backend::cuda {

// The FP8 GEMM problem (scale granularities) of an FP8 W8A8 spec, or why the CUDA kernels have
// none; shared by the selector and the weight upload so both read the spec the same way.
absl::StatusOr<kernels::cuda::Fp8GemmProblem> Fp8ProblemFor(const quant::LinearSpec& spec);

// The kernel id of NVFP4 W4A4 through cuBLASLt (kernels/cuda/nvfp4_gemm.h).
inline constexpr absl::string_view kNvfp4W4A4Kernel = "cuda/nvfp4-w4a4-cublaslt";

class CudaKernelSelector : public quant::KernelSelector {
 public:
  explicit CudaKernelSelector(int sm) : sm_(sm) {}
  std::string name() const override;  // "cuda sm_90"
  absl::Status Select(quant::LinearSpec* spec) const override;

 private:
  absl::Status SelectFp8(quant::LinearSpec* spec) const;
  absl::Status SelectNvfp4W4A4(quant::LinearSpec* spec) const;
  absl::Status SelectW4A16(quant::LinearSpec* spec) const;
  int sm_;
};

}  // namespace tessera::backend::cuda

#endif  // TESSERA_ENGINE_BACKEND_CUDA_CUDA_KERNEL_SELECTOR_H_
