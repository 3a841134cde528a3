// RAII owners for CUDA resources: a device allocation (DeviceBuffer), a stream (CudaStream) and
// an event (CudaEvent). Each is move-only, frees its handle in the destructor, and is created
// through a factory that returns absl::StatusOr, so a missing device or an exhausted pool is a
// status at the call site rather than a crash. Hot paths never allocate: the backend carves
// per-step tensors out of one DeviceArena (engine/backend/cuda/device_arena.h) built on these.
#ifndef TESSERA_KERNELS_CUDA_DEVICE_MEMORY_H_
#define TESSERA_KERNELS_CUDA_DEVICE_MEMORY_H_

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "kernels/cuda/cuda_status.h"

namespace tessera::kernels::cuda {

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  static absl::StatusOr<DeviceBuffer> Allocate(size_t bytes);
  // Allocates and copies `bytes` from host memory (synchronously).
  static absl::StatusOr<DeviceBuffer> FromHost(const void* data, size_t bytes);
  template <typename T>
  static absl::StatusOr<DeviceBuffer> FromVector(const std::vector<T>& v) {
    return FromHost(v.data(), v.size() * sizeof(T));
  }

  DeviceBuffer(DeviceBuffer&& other) noexcept
      : ptr_(std::exchange(other.ptr_, nullptr)), bytes_(std::exchange(other.bytes_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer();

  void* data() const { return ptr_; }
  template <typename T>
  T* as() const { return static_cast<T*>(ptr_); }
  size_t bytes() const { return bytes_; }

  // Synchronous copies of [0, bytes) to/from host memory.
  absl::Status CopyToHost(void* dst, size_t bytes) const;
  absl::Status CopyFromHost(const void* src, size_t bytes);
  template <typename T>
  absl::StatusOr<std::vector<T>> ToVector(size_t count) const {
    std::vector<T> out(count);
    TESSERA_RETURN_IF_ERROR(CopyToHost(out.data(), count * sizeof(T)));
    return out;
  }

 private:
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

class CudaStream {
 public:
  CudaStream() = default;
  static absl::StatusOr<CudaStream> Create();  // non-blocking w.r.t. the legacy stream
  CudaStream(CudaStream&& other) noexcept : stream_(std::exchange(other.stream_, nullptr)) {}
  CudaStream& operator=(CudaStream&& other) noexcept;
  CudaStream(const CudaStream&) = delete;
  CudaStream& operator=(const CudaStream&) = delete;
  ~CudaStream();

  cudaStream_t get() const { return stream_; }
  absl::Status Synchronize() const;

 private:
  cudaStream_t stream_ = nullptr;
};

class CudaEvent {
 public:
  CudaEvent() = default;
  static absl::StatusOr<CudaEvent> Create();
  CudaEvent(CudaEvent&& other) noexcept : event_(std::exchange(other.event_, nullptr)) {}
  CudaEvent& operator=(CudaEvent&& other) noexcept;
  CudaEvent(const CudaEvent&) = delete;
  CudaEvent& operator=(const CudaEvent&) = delete;
  ~CudaEvent();

  cudaEvent_t get() const { return event_; }
  absl::Status Record(cudaStream_t stream) const;
  // Milliseconds between `start` and this event (both recorded and completed).
  absl::StatusOr<float> ElapsedMsSince(const CudaEvent& start) const;

 private:
  cudaEvent_t event_ = nullptr;
};

}  // namespace tessera::kernels::cuda

#endif  // TESSERA_KERNELS_CUDA_DEVICE_MEMORY_H_
