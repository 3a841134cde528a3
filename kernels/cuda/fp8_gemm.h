// FP8 E4M3 W8A8 linear layers (quant-formats.md §5.7 and §5.1): the capability query that picks
// how a scale combination runs on a given arch, and the launcher. Paths:
//  * cuBLASLt with scales inside the matmul: per-tensor scale pointers (SCALAR_32F) on sm_89+;
//    per-channel weights x per-token activations through OUTER_VEC_32F and DeepSeek 128x128
//    weight blocks x per-token-group-128 activations through BLK128x128_32F / VEC128_32F on
//    sm_90+ (where cuBLASLt 13 offers those modes).
//  * cuBLASLt without scales into f32, then our epilogue kernel y = sa(m) · (sw(n) · acc) (the
//    CPU reference's operand order) to bf16: per-channel/per-token on sm_89, and any mix of
//    per-tensor with per-row/per-token scales.
// Block scaling on sm_89 and anything on sm_80 are unsupported here; the kernel selector falls
// back to W8A16 and says why.
#ifndef TESSERA_KERNELS_CUDA_FP8_GEMM_H_
#define TESSERA_KERNELS_CUDA_FP8_GEMM_H_

#include <cuda_runtime_api.h>

#include <cstdint>

#include "absl/status/statusor.h"
#include "kernels/cuda/cublaslt_gemm.h"

namespace tessera::kernels::cuda {

enum class Fp8ActScale { kPerTensor, kPerToken, kPerTokenGroup128 };
enum class Fp8WeightScale { kPerTensor, kPerChannel, kBlock128 };

struct Fp8GemmProblem {
  int64_t n = 0, k = 0;
  Fp8ActScale act = Fp8ActScale::kPerToken;
  Fp8WeightScale weight = Fp8WeightScale::kPerChannel;
};

enum class Fp8Path { kCublasLtScaled, kCublasLtThenEpilogue };
absl::string_view Fp8PathName(Fp8Path path);

// The path for `problem` on `sm`, or why there is none (UNIMPLEMENTED for arch limits,
// INVALID_ARGUMENT for inconsistent scales or shapes).
absl::StatusOr<Fp8Path> ChooseFp8Path(const Fp8GemmProblem& problem, int sm);
inline absl::Status SupportsFp8Gemm(const Fp8GemmProblem& problem, int sm) {
  return ChooseFp8Path(problem, sm).status();
}

// The cuBLASLt configuration a path uses for `m` tokens (testable without a device).
LtGemmConfig Fp8LtConfig(const Fp8GemmProblem& problem, int64_t m, Fp8Path path);

// Device pointers of one call. Scale layouts: per-tensor 1 float; per-channel [N]; per-token
// [M]; weight blocks as cuBLASLt BLK128x128 reads them; per-token-group scales group-major
// [K/128, M] (QuantizeFp8PerTokenGroup with GroupScaleLayout::kGroupMajor).
struct Fp8GemmArgs {
  const uint8_t* w = nullptr;         // [N, K] E4M3
  const float* w_scales = nullptr;
  const uint8_t* x = nullptr;         // [M, K] E4M3
  const float* x_scales = nullptr;
  int64_t m = 0;
  uint16_t* y = nullptr;              // [M, N] bf16
  float* f32_scratch = nullptr;       // [M, N] f32, needed by the epilogue path only
  // Optional [M, N] f32 result (+ bias[n] when bias is set). The scaled path then asks cuBLASLt
  // for f32 output straight into it (the bias added after, as the CPU adds it), which saves the
  // bf16 -> f32 launch and the bf16 rounding the CPU reference does not have; where cuBLASLt has
  // no algorithm for that (UNIMPLEMENTED from its heuristic, before any launch) and on the
  // epilogue path, the bf16 result in y is widened into it with the bias.
  float* y_f32 = nullptr;
  const float* bias = nullptr;
};

// cuBLASLt's block-scaled FP8 GEMM (VEC128_32F activations x BLK128x128_32F weights) has no
// algorithm unless M % 4 == 0 (cuBLASLt 13.1 on an H100: M = 1, 2, 3, 5, 6, 17 refused, 4, 8,
// 12, 16, 20 accepted), so callers run it on this many rows and pad the activations
// (QuantizeFp8PerTokenGroupPadded). Every other problem runs on exactly M rows.
inline int64_t Fp8GemmRows(const Fp8GemmProblem& problem, int64_t m) {
  return problem.weight == Fp8WeightScale::kBlock128 ? (m + 3) / 4 * 4 : m;
}

absl::Status Fp8Gemm(CublasLtGemm& lt, const Fp8GemmProblem& problem, Fp8Path path,
                     const Fp8GemmArgs& args, cudaStream_t stream);

// The epilogue on its own: y[m, n] = bf16(sa[m * sa_stride] · (sw[n * sw_stride] · acc[m, n])).
absl::Status Fp8ScaleEpilogue(const float* acc, int64_t m, int64_t n, const float* sa,
                              int64_t sa_stride, const float* sw, int64_t sw_stride, uint16_t* y,
                              cudaStream_t stream);

}  // namespace tessera::kernels::cuda

#endif  // TESSERA_KERNELS_CUDA_FP8_GEMM_H_
