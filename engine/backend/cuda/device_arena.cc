#include "engine/backend/cuda/device_arena.h"

#include "absl/strings/str_format.h"
#include "engine/common/status_macros.h"

namespace tessera::backend::cuda {
namespace {

double MiB(size_t bytes) { return static_cast<double>(bytes) / (1 << 20); }

}  // namespace

absl::StatusOr<void*> ArenaRegion::Allocate(size_t bytes, absl::string_view what) {
  // Even an empty request takes one alignment unit, so distinct tensors never share an address.
  const size_t charged = ArenaAligned(bytes == 0 ? 1 : bytes);
  if (charged > capacity_ - used_) {
    return absl::ResourceExhaustedError(absl::StrFormat(
        "device arena region '%s': %s needs %.2f MiB, %.2f of %.2f MiB free", name_, what,
        MiB(charged), MiB(capacity_ - used_), MiB(capacity_)));
  }
  void* p = base_ == nullptr ? nullptr : base_ + used_;
  used_ += charged;
  return p;
}

absl::StatusOr<DeviceArena> DeviceArena::Create(size_t bytes) {
  DeviceArena arena;
  absl::StatusOr<kernels::cuda::DeviceBuffer> buffer =
      kernels::cuda::DeviceBuffer::Allocate(ArenaAligned(bytes));
  if (!buffer.ok()) {
    return absl::Status(buffer.status().code(),
                        absl::StrFormat("device arena of %.1f MiB: %s", MiB(bytes),
                                        buffer.status().message()));
  }
  arena.buffer_ = std::move(*buffer);
  return arena;
}

absl::StatusOr<ArenaRegion> DeviceArena::Carve(absl::string_view name, size_t bytes) {
  const size_t charged = ArenaAligned(bytes);
  if (charged > buffer_.bytes() - carved_) {
    return absl::ResourceExhaustedError(absl::StrFormat(
        "device arena: region '%s' needs %.2f MiB, %.2f of %.2f MiB left", name, MiB(charged),
        MiB(buffer_.bytes() - carved_), MiB(buffer_.bytes())));
  }
  ArenaRegion region(std::string(name), static_cast<char*>(buffer_.data()) + carved_, charged);
  carved_ += charged;
  return region;
}

}  // namespace tessera::backend::cuda
