// Turning CUDA runtime and cuBLAS(Lt) failures into absl::Status values that name the failing
// call and its file:line, so that no CUDA error is ever dropped or turned into a crash. Every
// host function of the CUDA kernels and backend returns absl::Status / StatusOr and wraps each
// runtime call in RETURN_IF_CUDA_ERROR / RETURN_IF_CUBLAS_ERROR.
#ifndef TESSERA_KERNELS_CUDA_CUDA_STATUS_H_
#define TESSERA_KERNELS_CUDA_CUDA_STATUS_H_

#include <cublas_api.h>
#include <cuda_runtime_api.h>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "kernels/common/status_macros.h"  // TESSERA_RETURN_IF_ERROR

namespace tessera::kernels::cuda {

// A missing driver or device is UNAVAILABLE (the backend cannot run here; callers fall back to
// the CPU); memory exhaustion is RESOURCE_EXHAUSTED; bad launches are INVALID_ARGUMENT; anything
// else is INTERNAL.
inline absl::Status CudaErrorToStatus(cudaError_t err, const char* expr, const char* file,
                                      int line) {
  if (err == cudaSuccess) return absl::OkStatus();
  const std::string msg = absl::StrCat(file, ":", line, ": ", expr, " failed: ",
                                       cudaGetErrorName(err), " (", cudaGetErrorString(err), ")");
  switch (err) {
    case cudaErrorNoDevice:
    case cudaErrorInsufficientDriver:
    case cudaErrorInvalidDevice:
    case cudaErrorDevicesUnavailable:
      return absl::UnavailableError(msg);
    case cudaErrorMemoryAllocation:
      return absl::ResourceExhaustedError(msg);
    case cudaErrorInvalidValue:
    case cudaErrorInvalidConfiguration:
      return absl::InvalidArgumentError(msg);
    default:
      return absl::InternalError(msg);
  }
}

inline absl::Status CublasErrorToStatus(cublasStatus_t st, const char* expr, const char* file,
                                        int line) {
  if (st == CUBLAS_STATUS_SUCCESS) return absl::OkStatus();
  const std::string msg = absl::StrCat(file, ":", line, ": ", expr,
                                       " failed: cublasStatus ", static_cast<int>(st));
  switch (st) {
    case CUBLAS_STATUS_NOT_INITIALIZED:  // cublasLtCreate without a usable device/driver
      return absl::UnavailableError(msg);
    case CUBLAS_STATUS_ALLOC_FAILED:
      return absl::ResourceExhaustedError(msg);
    case CUBLAS_STATUS_INVALID_VALUE:
      return absl::InvalidArgumentError(msg);
    case CUBLAS_STATUS_NOT_SUPPORTED:
    case CUBLAS_STATUS_ARCH_MISMATCH:
      return absl::UnimplementedError(msg);
    default:
      return absl::InternalError(msg);
  }
}

}  // namespace tessera::kernels::cuda

#define TESSERA_CUDA_STATUS_CONCAT_INNER(a, b) a##b
#define TESSERA_CUDA_STATUS_CONCAT(a, b) TESSERA_CUDA_STATUS_CONCAT_INNER(a, b)

// Evaluates a cudaError_t expression; on failure returns the status from the enclosing function.
#define RETURN_IF_CUDA_ERROR(expr)                                                          \
  do {                                                                                      \
    const cudaError_t tessera_cuda_err_ = (expr);                                           \
    if (tessera_cuda_err_ != cudaSuccess) {                                                 \
      return ::tessera::kernels::cuda::CudaErrorToStatus(tessera_cuda_err_, #expr, __FILE__, \
                                                         __LINE__);                         \
    }                                                                                       \
  } while (0)

// Evaluates a cublasStatus_t expression; on failure returns the status.
#define RETURN_IF_CUBLAS_ERROR(expr)                                                         \
  do {                                                                                       \
    const cublasStatus_t tessera_cublas_st_ = (expr);                                        \
    if (tessera_cublas_st_ != CUBLAS_STATUS_SUCCESS) {                                       \
      return ::tessera::kernels::cuda::CublasErrorToStatus(tessera_cublas_st_, #expr,         \
                                                           __FILE__, __LINE__);              \
    }                                                                                        \
  } while (0)

// After a <<<>>> launch: reports launch-configuration errors (not asynchronous faults).
#define RETURN_IF_LAUNCH_ERROR() RETURN_IF_CUDA_ERROR(cudaPeekAtLastError())

#endif  // TESSERA_KERNELS_CUDA_CUDA_STATUS_H_
