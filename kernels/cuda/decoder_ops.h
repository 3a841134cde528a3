// Small CUDA ops the GPU decoder (engine/backend/cuda/cuda_decoder.h) needs between the kernel
// families and that mirror a step of the CPU decoder or of the CPU quantized linear: bias add,
// bf16 -> f32 widening of a GEMM result (with the bias fused), static per-tensor FP8 activation
// quantization (kernels/cpu/quant/activation_quant.h QuantizeFp8Static with kDivide, through the
// same kernels/numeric encoder, so codes match the CPU bit for bit) and the row gather that picks
// the positions whose logits were asked for, and the column split that hands a fused GEMM's
// output (q / k / v or gate / up from one weight matrix) to the buffers the decoder reads. Pointers
// are device pointers; work is queued on `stream`; arguments are validated first (INVALID_ARGUMENT
// naming the problem).
#ifndef TESSERA_KERNELS_CUDA_DECODER_OPS_H_
#define TESSERA_KERNELS_CUDA_DECODER_OPS_H_

#include <cuda_runtime_api.h>

#include <cstdint>

#include "absl/status/status.h"
#include "absl/types/span.h"

namespace tessera::kernels::cuda {

// y[r, j] += bias[j] for y [rows, n].
absl::Status AddBiasRows(float* y, const float* bias, int64_t rows, int64_t n,
                         cudaStream_t stream);

// out[r, j] = float(x[r, j]) (+ bias[j] when bias is non-null) for x bf16 bits [rows, n].
absl::Status Bf16RowsToF32(const uint16_t* x, int64_t rows, int64_t n, const float* bias,
                           float* out, cudaStream_t stream);

// q[i] = sat_e4m3(x[i] / *scale) for `count` elements; `scale` is one device float (the
// checkpoint's input_scale, a dequant multiplier, positive).
absl::Status QuantizeFp8StaticDivide(const float* x, int64_t count, const float* scale,
                                     uint8_t* q, cudaStream_t stream);

// dst[i, :] = src[rows[i], :] for i in [0, count); rows are device int32 indices into src
// [*, n].
absl::Status GatherRows(const float* src, const int32_t* rows, int64_t count, int64_t n,
                        float* dst, cudaStream_t stream);

// One output of SplitColumns: the next `width` columns of the source, into dst [rows, width],
// plus bias[j] (added after the product, as AddBiasRows does) when bias is non-null.
struct ColumnSlice {
  float* dst = nullptr;
  const float* bias = nullptr;
  int64_t width = 0;
};
inline constexpr int kMaxColumnSlices = 4;

// Hands src [rows, Σ width] to the slices in order, in one launch: the output of one GEMM over
// weights stacked by rows (q / k / v) to the per-projection buffers.
absl::Status SplitColumns(const float* src, int64_t rows, absl::Span<const ColumnSlice> slices,
                          cudaStream_t stream);

}  // namespace tessera::kernels::cuda

#endif  // TESSERA_KERNELS_CUDA_DECODER_OPS_H_
