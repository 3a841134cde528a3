// Entry point of the decoder glue ops (decoder_ops.h): validation and launches. All generic,
// memory-bound, one thread per element (grid-stride where a row loop is natural).
#include <cstdint>

#include "absl/strings/str_cat.h"
#include "kernels/cuda/cuda_status.h"
#include "kernels/cuda/decoder_ops.h"
#include "kernels/numeric/fp8.h"
#include "kernels/numeric/half.h"

namespace tessera::kernels::cuda {
namespace {

constexpr int kThreads = 256;
// Grid-stride loops cap the grid, so element counts past 2^31 need no 64-bit grid math.
constexpr int64_t kMaxBlocks = 65535;

unsigned GridFor(int64_t n) {
  const int64_t blocks = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(blocks < kMaxBlocks ? blocks : kMaxBlocks);
}

__device__ __forceinline__ int64_t GlobalIndex() {
  return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ __forceinline__ int64_t GlobalStride() {
  return static_cast<int64_t>(gridDim.x) * blockDim.x;
}

__global__ void AddBiasRowsKernel(float* __restrict__ y, const float* __restrict__ bias,
                                  int64_t total, int64_t n) {
  for (int64_t i = GlobalIndex(); i < total; i += GlobalStride()) {
    y[i] = __fadd_rn(y[i], bias[i % n]);  // the CPU adds the bias after the dot product
  }
}

__global__ void Bf16RowsToF32Kernel(const uint16_t* __restrict__ x, int64_t total, int64_t n,
                                    const float* __restrict__ bias, float* __restrict__ out) {
  for (int64_t i = GlobalIndex(); i < total; i += GlobalStride()) {
    const float v = numeric::Bf16ToFloat(x[i]);
    out[i] = bias != nullptr ? __fadd_rn(v, bias[i % n]) : v;
  }
}

__global__ void QuantizeFp8StaticKernel(const float* __restrict__ x, int64_t count,
                                        const float* __restrict__ scale,
                                        uint8_t* __restrict__ q) {
  const float s = *scale;
  for (int64_t i = GlobalIndex(); i < count; i += GlobalStride()) {
    q[i] = numeric::EncodeE4m3(__fdiv_rn(x[i], s));
  }
}

__global__ void GatherRowsKernel(const float* __restrict__ src, const int32_t* __restrict__ rows,
                                 int64_t n, float* __restrict__ dst) {
  const int64_t i = blockIdx.x;
  const float* s = src + static_cast<int64_t>(rows[i]) * n;
  for (int64_t j = threadIdx.x; j < n; j += blockDim.x) dst[i * n + j] = s[j];
}

// SplitColumns' slices by value (the kernel parameter space holds them).
struct Slices {
  ColumnSlice part[kMaxColumnSlices];
  int64_t begin[kMaxColumnSlices + 1];  // first source column of each slice, then the total
  int count;
};

__global__ void SplitColumnsKernel(const float* __restrict__ src, int64_t total, Slices s) {
  const int64_t cols = s.begin[s.count];
  for (int64_t i = GlobalIndex(); i < total; i += GlobalStride()) {
    const int64_t r = i / cols, c = i - r * cols;
    int p = 0;
    while (c >= s.begin[p + 1]) ++p;
    const int64_t j = c - s.begin[p];
    const float v = src[i];
    s.part[p].dst[r * s.part[p].width + j] =
        s.part[p].bias != nullptr ? __fadd_rn(v, s.part[p].bias[j]) : v;
  }
}

absl::Status CheckShape(const char* what, int64_t rows, int64_t n) {
  if (rows < 0 || n <= 0) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": bad shape [", rows, ", ", n, "]"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status SplitColumns(const float* src, int64_t rows, absl::Span<const ColumnSlice> slices,
                          cudaStream_t stream) {
  if (slices.empty() || slices.size() > static_cast<size_t>(kMaxColumnSlices)) {
    return absl::InvalidArgumentError(
        absl::StrCat("SplitColumns: ", slices.size(), " slices (1 to ", kMaxColumnSlices, ")"));
  }
  Slices s{};
  s.count = static_cast<int>(slices.size());
  for (int p = 0; p < s.count; ++p) {
    const ColumnSlice& slice = slices[p];
    if (slice.dst == nullptr || slice.width <= 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("SplitColumns: slice ", p, " has ", slice.width, " columns and ",
                       slice.dst == nullptr ? "no" : "an", " output"));
    }
    s.part[p] = slice;
    s.begin[p + 1] = s.begin[p] + slice.width;
  }
  TESSERA_RETURN_IF_ERROR(CheckShape("SplitColumns", rows, s.begin[s.count]));
  if (src == nullptr) return absl::InvalidArgumentError("SplitColumns: null source");
  if (rows == 0) return absl::OkStatus();
  const int64_t total = rows * s.begin[s.count];
  SplitColumnsKernel<<<GridFor(total), kThreads, 0, stream>>>(src, total, s);
  RETURN_IF_LAUNCH_ERROR();
  return absl::OkStatus();
}

absl::Status AddBiasRows(float* y, const float* bias, int64_t rows, int64_t n,
                         cudaStream_t stream) {
  TESSERA_RETURN_IF_ERROR(CheckShape("AddBiasRows", rows, n));
  if (y == nullptr || bias == nullptr) return absl::InvalidArgumentError("AddBiasRows: null");
  if (rows == 0) return absl::OkStatus();
  AddBiasRowsKernel<<<GridFor(rows * n), kThreads, 0, stream>>>(y, bias, rows * n, n);
  RETURN_IF_LAUNCH_ERROR();
  return absl::OkStatus();
}

absl::Status Bf16RowsToF32(const uint16_t* x, int64_t rows, int64_t n, const float* bias,
                           float* out, cudaStream_t stream) {
  TESSERA_RETURN_IF_ERROR(CheckShape("Bf16RowsToF32", rows, n));
  if (x == nullptr || out == nullptr) return absl::InvalidArgumentError("Bf16RowsToF32: null");
  if (rows == 0) return absl::OkStatus();
  Bf16RowsToF32Kernel<<<GridFor(rows * n), kThreads, 0, stream>>>(x, rows * n, n, bias, out);
  RETURN_IF_LAUNCH_ERROR();
  return absl::OkStatus();
}

absl::Status QuantizeFp8StaticDivide(const float* x, int64_t count, const float* scale,
                                     uint8_t* q, cudaStream_t stream) {
  if (count < 0 || x == nullptr || scale == nullptr || q == nullptr) {
    return absl::InvalidArgumentError("QuantizeFp8StaticDivide: bad arguments");
  }
  if (count == 0) return absl::OkStatus();
  QuantizeFp8StaticKernel<<<GridFor(count), kThreads, 0, stream>>>(x, count, scale, q);
  RETURN_IF_LAUNCH_ERROR();
  return absl::OkStatus();
}

absl::Status GatherRows(const float* src, const int32_t* rows, int64_t count, int64_t n,
                        float* dst, cudaStream_t stream) {
  TESSERA_RETURN_IF_ERROR(CheckShape("GatherRows", count, n));
  if (count > INT32_MAX) return absl::InvalidArgumentError("GatherRows: too many rows");
  if (src == nullptr || rows == nullptr || dst == nullptr) {
    return absl::InvalidArgumentError("GatherRows: null");
  }
  if (count == 0) return absl::OkStatus();
  GatherRowsKernel<<<static_cast<unsigned>(count), kThreads, 0, stream>>>(src, rows, n, dst);
  RETURN_IF_LAUNCH_ERROR();
  return absl::OkStatus();
}

}  // namespace tessera::kernels::cuda
