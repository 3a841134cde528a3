// CUDA activation quantizers for the W8A8 and W4A4 linear layers: FP8 E4M3 dynamic per-token
// (with the fbgemm upper bound and vLLM's minimum scale), FP8 per-token-group (DeepSeek block
// FP8, group 128), NVFP4 (E2M1 codes, a UE4M3 scale per 16, a global divisor g) and the per-row
// dynamic NVFP4 global scale; NVFP4 also in the form with cuBLASLt's swizzled scale layout that
// the W4A4 GEMM (nvfp4_gemm.h) reads. They compute exactly the formulas of the CPU references in
// kernels/cpu/quant/activation_quant.h, in the same f32 operation order and through the same
// kernels/numeric encoders (integer bit manipulation, not the cvt instructions), so codes and
// scales match the CPU bit for bit on every arch; the device tests check that.
//
// All pointers are device pointers, rows are contiguous f32 [rows, k], work is queued on
// `stream`, and each function validates its arguments first (INVALID_ARGUMENT naming the problem).
#ifndef TESSERA_KERNELS_CUDA_ACTIVATION_QUANT_H_
#define TESSERA_KERNELS_CUDA_ACTIVATION_QUANT_H_

#include <cuda_runtime_api.h>

#include <cstdint>

#include "absl/status/status.h"

namespace tessera::kernels::cuda {

// Per-token: a = amax(row) (or min(amax, *scale_ub) when scale_ub is non-null; a device pointer),
// s = max(a / 448, min_scale), s = 1 if that is 0, q = sat_e4m3(x / s); scales[m] = s.
absl::Status QuantizeFp8PerToken(const float* x, int64_t rows, int64_t k, const float* scale_ub,
                                 float min_scale, uint8_t* q, float* scales, cudaStream_t stream);

// Where per-group scales go. kRowMajor is the CPU reference's [rows, groups]; kGroupMajor is
// [groups, rows] (rows contiguous), the outer-dimension-major order cuBLASLt's VEC128_32F mode
// reads for the B operand.
enum class GroupScaleLayout { kRowMajor, kGroupMajor };

// Per-token-group: for each group of `group_size` consecutive K elements (the last may be
// shorter), s = max(amax, eps) / 448 (1 if 0), q = sat_e4m3(x / s).
absl::Status QuantizeFp8PerTokenGroup(const float* x, int64_t rows, int64_t k, int64_t group_size,
                                      float eps, GroupScaleLayout layout, uint8_t* q,
                                      float* scales, cudaStream_t stream);

// The group-major form padded to `padded_rows` rows (cuBLASLt's VEC128_32F/BLK128x128 FP8 GEMM
// needs M % 4 == 0): rows [0, rows) as above, scales[g * padded_rows + m]; rows [rows,
// padded_rows) get zero codes and unit scales, so the padded GEMM rows are zeros and nothing
// uninitialized is read. x holds only `rows` rows.
absl::Status QuantizeFp8PerTokenGroupPadded(const float* x, int64_t rows, int64_t padded_rows,
                                            int64_t k, int64_t group_size, float eps, uint8_t* q,
                                            float* scales, cudaStream_t stream);

// NVFP4 with g = global_scale[m * global_scale_row_stride] (stride 0: one static g, 1: per row):
// sf = e4m3(g * amax_16 / 6), q = e2m1(x * (g / sf)) (0 if sf == 0). q_packed is [rows, k/2]
// (element 2j in the low nibble), block_scales [rows, k/16] row-major. k % 16 == 0 and x must be
// 16-byte aligned (each thread reads one block with four float4 loads).
absl::Status QuantizeNvfp4(const float* x, int64_t rows, int64_t k, const float* global_scale,
                           int64_t global_scale_row_stride, uint8_t* q_packed,
                           uint8_t* block_scales, cudaStream_t stream);

// The same codes and scales, with the scales written in the swizzled 128x4-tile layout cuBLASLt's
// VEC16_UE4M3 FP4 GEMM reads (kernels/cuda/nvfp4_scale_layout.h): swizzled_scales receives
// SwizzledScaleBytes(rows, k / 16) bytes, the padding (rows up to a multiple of 128, scale columns
// up to a multiple of 4) set to zero, so no GEMM tile reads uninitialized memory. q_packed is
// [rows, k/2] as above; same argument rules.
absl::Status QuantizeNvfp4Swizzled(const float* x, int64_t rows, int64_t k,
                                   const float* global_scale, int64_t global_scale_row_stride,
                                   uint8_t* q_packed, uint8_t* swizzled_scales,
                                   cudaStream_t stream);

// g[m] = 2688 / amax(row m), 1 for an all-zero row (the CPU Nvfp4DynamicGlobalScalePerRow).
absl::Status Nvfp4DynamicGlobalScalePerRow(const float* x, int64_t rows, int64_t k,
                                           float* global_scales, cudaStream_t stream);

}  // namespace tessera::kernels::cuda

#endif  // TESSERA_KERNELS_CUDA_ACTIVATION_QUANT_H_
