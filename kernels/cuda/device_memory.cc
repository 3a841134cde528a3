#include "kernels/cuda/device_memory.h"

namespace tessera::kernels::cuda {

absl::StatusOr<DeviceBuffer> DeviceBuffer::Allocate(size_t bytes) {
  DeviceBuffer buf;
  if (bytes == 0) return buf;
  RETURN_IF_CUDA_ERROR(cudaMalloc(&buf.ptr_, bytes));
  buf.bytes_ = bytes;
  return buf;
}

absl::StatusOr<DeviceBuffer> DeviceBuffer::FromHost(const void* data, size_t bytes) {
  TESSERA_ASSIGN_OR_RETURN(DeviceBuffer buf, Allocate(bytes));
  TESSERA_RETURN_IF_ERROR(buf.CopyFromHost(data, bytes));
  return buf;
}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    if (ptr_ != nullptr) cudaFree(ptr_);
    ptr_ = std::exchange(other.ptr_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

DeviceBuffer::~DeviceBuffer() {
  // A destructor cannot report; cudaFree only fails after an earlier sticky error, which the
  // next checked call surfaces.
  if (ptr_ != nullptr) cudaFree(ptr_);
}

absl::Status DeviceBuffer::CopyToHost(void* dst, size_t bytes) const {
  if (bytes > bytes_) return absl::OutOfRangeError("CopyToHost past the end of the buffer");
  if (bytes == 0) return absl::OkStatus();
  RETURN_IF_CUDA_ERROR(cudaMemcpy(dst, ptr_, bytes, cudaMemcpyDeviceToHost));
  return absl::OkStatus();
}

absl::Status DeviceBuffer::CopyFromHost(const void* src, size_t bytes) {
  if (bytes > bytes_) return absl::OutOfRangeError("CopyFromHost past the end of the buffer");
  if (bytes == 0) return absl::OkStatus();
  RETURN_IF_CUDA_ERROR(cudaMemcpy(ptr_, src, bytes, cudaMemcpyHostToDevice));
  return absl::OkStatus();
}

absl::StatusOr<CudaStream> CudaStream::Create() {
  CudaStream s;
  RETURN_IF_CUDA_ERROR(cudaStreamCreateWithFlags(&s.stream_, cudaStreamNonBlocking));
  return s;
}

CudaStream& CudaStream::operator=(CudaStream&& other) noexcept {
  if (this != &other) {
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
    stream_ = std::exchange(other.stream_, nullptr);
  }
  return *this;
}

CudaStream::~CudaStream() {
  if (stream_ != nullptr) cudaStreamDestroy(stream_);
}

absl::Status CudaStream::Synchronize() const {
  RETURN_IF_CUDA_ERROR(cudaStreamSynchronize(stream_));
  return absl::OkStatus();
}

absl::StatusOr<CudaEvent> CudaEvent::Create() {
  CudaEvent e;
  RETURN_IF_CUDA_ERROR(cudaEventCreate(&e.event_));
  return e;
}

CudaEvent& CudaEvent::operator=(CudaEvent&& other) noexcept {
  if (this != &other) {
    if (event_ != nullptr) cudaEventDestroy(event_);
    event_ = std::exchange(other.event_, nullptr);
  }
  return *this;
}

CudaEvent::~CudaEvent() {
  if (event_ != nullptr) cudaEventDestroy(event_);
}

absl::Status CudaEvent::Record(cudaStream_t stream) const {
  RETURN_IF_CUDA_ERROR(cudaEventRecord(event_, stream));
  return absl::OkStatus();
}

absl::StatusOr<float> CudaEvent::ElapsedMsSince(const CudaEvent& start) const {
  RETURN_IF_CUDA_ERROR(cudaEventSynchronize(event_));
  float ms = 0;
  RETURN_IF_CUDA_ERROR(cudaEventElapsedTime(&ms, start.event_, event_));
  return ms;
}

}  // namespace tessera::kernels::cuda
