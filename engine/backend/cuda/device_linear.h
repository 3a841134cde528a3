// Running one uploaded linear layer (weight_upload.h) on a stream: y[rows, N] f32 = x · Wᵀ + b,
// whatever kernel the precision plan chose — the cuBLASLt bf16 GEMM (dense and W8A16), the
// W4A16 mma.sync kernel, FP8 W8A8 (activation quantization as the CPU QuantizedLinear does
// it: static per-tensor, dynamic per-token with vLLM's minimum scale and the optional fbgemm
// upper bound, or per-token-group 128; then cuBLASLt, then bf16 -> f32 with the bias), or NVFP4
// W4A4 (the CPU's NVFP4 quantization with the static global scale, scales written swizzled; then
// cuBLASLt's block-scaled FP4 GEMM, then bf16 -> f32 with the bias). The
// temporaries come from a LinearScratch carved once from the arena, sized for the largest
// layer and step.
#ifndef TESSERA_ENGINE_BACKEND_CUDA_DEVICE_LINEAR_H_
#define TESSERA_ENGINE_BACKEND_CUDA_DEVICE_LINEAR_H_

#include <cuda_runtime_api.h>

#include <cstdint>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "engine/backend/cuda/device_arena.h"
#include "engine/backend/cuda/weight_upload.h"
#include "kernels/cuda/cublaslt_gemm.h"

namespace tessera::backend::cuda {

// Device temporaries of RunLinear, sized in elements so that the layers (many rows, moderate N)
// and lm_head (few rows, N = vocab) share one set: a call needs rows <= rows, rows * K <= x_elems
// and rows * N <= y_elems (and, for NVFP4 W4A4, SwizzledScaleBytes(rows, K/16) <= fp4_scale_bytes).
struct LinearScratch {
  int64_t rows = 0, x_elems = 0, y_elems = 0, w_elems = 0, fp4_scale_bytes = 0;
  int64_t y_f32_elems = 0;        // max(y_elems, the stacked bf16 GEMMs' output)
  uint16_t* x_bf16 = nullptr;     // [x_elems] when the caller has no bf16 copy
  uint8_t* x_fp8 = nullptr;       // [x_elems] FP8 codes, or NVFP4 codes [rows, K/2]
  // [fp4_scale_bytes] NVFP4 activation block scales in cuBLASLt's swizzled layout (null when no
  // layer runs NVFP4 W4A4).
  uint8_t* x_fp4_scales = nullptr;
  float* x_scales = nullptr;      // [x_elems / 128 + rows] per token or per 128-group
  uint16_t* y_bf16 = nullptr;     // [y_elems] FP8 / NVFP4 GEMM output
  float* y_f32 = nullptr;  // [y_f32_elems] FP8 epilogue-path accumulator, stacked bf16 output
  // [w_elems] bf16 weights of one W4A16 layer, dequantized for passes of at least
  // kernels::cuda::kW4A16DequantMinRows rows (null when no such pass can happen).
  uint16_t* w_bf16 = nullptr;

  // stacked_elems: rows x (Σ n) of the largest stacked bf16 group RunLinears may run (0: none).
  static absl::StatusOr<LinearScratch> Carve(int64_t rows, int64_t x_elems, int64_t y_elems,
                                             int64_t w_elems, int64_t fp4_scale_bytes,
                                             int64_t stacked_elems, ArenaRegion& region);
};

// y = x · Wᵀ (+ bias) for `rows` <= scratch.rows. `x` is f32 [rows, K]; `x_bf16` is the same
// values in bf16 when the caller already has them (RmsNorm and SwiGLU write both), else null.
absl::Status RunLinear(const DeviceLinear& layer, const float* x, const uint16_t* x_bf16,
                       int64_t rows, float* y, const LinearScratch& scratch,
                       kernels::cuda::CublasLtGemm& lt, cudaStream_t stream);

// Passes of at most this many rows run a group of bf16 layers whose weights lie back to back as
// one GEMM (RunLinears); LinearScratch::y_f32 must then hold rows x (Σ n) floats.
inline constexpr int64_t kStackedBf16MaxRows = 64;

// Σ n of `layers` when they are 2 to kMaxColumnSlices bf16 layers of one K whose weights lie back
// to back (one [Σ n, K] row-major matrix from the first one's pointer), else 0.
int64_t StackedBf16Width(absl::Span<const DeviceLinear* const> layers);

// Whether `layers` are 2 or more FP8 W8A8 layers that quantize x identically (dynamic per-token
// activations, one upper bound, one K, no row padding), so that one quantization serves all.
bool SharesFp8Activations(absl::Span<const DeviceLinear* const> layers);

// RunLinear for layers[i] -> ys[i], layers that read the same x (q / k / v, gate / up):
//  * StackedBf16Width > 0 (the loader uploads q, k, v and gate, up in that order; a bias in
//    between breaks the run): for up to kStackedBf16MaxRows rows, one cuBLASLt GEMM into the
//    scratch, then SplitColumns (with the biases) into each output, or each layer alone where
//    cuBLASLt has no algorithm for the stacked shape. At decode the narrow k / v projections
//    each sat at cuBLASLt's latency floor, as long as the 4x wider q;
//  * SharesFp8Activations: x quantized once for all of them, then each one's GEMM (the same bits
//    as RunLinear gives each);
//  * W4A16 layers of one format below the dequantization threshold, with x_bf16 given: one
//    W4A16GemmGroup (the same bits as RunLinear gives each);
//  * else RunLinear for each.
absl::Status RunLinears(absl::Span<const DeviceLinear* const> layers, const float* x,
                        const uint16_t* x_bf16, int64_t rows, absl::Span<float* const> ys,
                        const LinearScratch& scratch, kernels::cuda::CublasLtGemm& lt,
                        cudaStream_t stream);

}  // namespace tessera::backend::cuda

#endif  // TESSERA_ENGINE_BACKEND_CUDA_DEVICE_LINEAR_H_
