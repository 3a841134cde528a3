// DeviceArena: all the device memory the CUDA decoder uses, taken with one cudaMalloc at start-up
// and partitioned by bump allocation into regions — the weights, the KV block pools and the
// per-step activation scratch. Nothing is allocated or freed while serving: a step only rewinds
// its scratch region. One allocation also makes the footprint visible up front (the load fails
// with RESOURCE_EXHAUSTED naming the sizes, not half-way through a request) and keeps the
// allocator's bookkeeping out of the hot path.
//
// ArenaRegion is a non-owning window [base, base + capacity) with its own bump pointer; the
// arena hands out regions with Carve and regions hand out aligned allocations with Allocate.
#ifndef TESSERA_ENGINE_BACKEND_CUDA_DEVICE_ARENA_H_
#define TESSERA_ENGINE_BACKEND_CUDA_DEVICE_ARENA_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "kernels/cuda/device_memory.h"

namespace tessera::backend::cuda {

// 256 bytes: cudaMalloc's own alignment, enough for every vector load and for cuBLASLt.
inline constexpr size_t kArenaAlignment = 256;

// Rounds `bytes` up to the arena alignment (what a region charges for an allocation).
constexpr size_t ArenaAligned(size_t bytes) {
  return (bytes + kArenaAlignment - 1) / kArenaAlignment * kArenaAlignment;
}

class ArenaRegion {
 public:
  ArenaRegion() = default;
  ArenaRegion(std::string name, char* base, size_t capacity)
      : name_(std::move(name)), base_(base), capacity_(capacity) {}
  // A region that only counts: Allocate returns null pointers and used() is what the same
  // sequence of allocations will take from a real region (sizing before the cudaMalloc).
  static ArenaRegion Measuring(std::string name) {
    return ArenaRegion(std::move(name), nullptr, static_cast<size_t>(-1));
  }

  // `bytes` (rounded up to kArenaAlignment) from this region; RESOURCE_EXHAUSTED naming the
  // region, `what` and the sizes when it does not fit. Zero bytes give a valid, unique pointer.
  absl::StatusOr<void*> Allocate(size_t bytes, absl::string_view what);
  template <typename T>
  absl::StatusOr<T*> AllocateArray(int64_t count, absl::string_view what) {
    if (count < 0) return absl::InvalidArgumentError("negative allocation");
    absl::StatusOr<void*> p = Allocate(static_cast<size_t>(count) * sizeof(T), what);
    if (!p.ok()) return p.status();
    return static_cast<T*>(*p);
  }

  // The bump pointer, to rewind per-step scratch (Rewind(0) empties the region).
  size_t mark() const { return used_; }
  void Rewind(size_t mark) { used_ = mark < used_ ? mark : used_; }

  const std::string& name() const { return name_; }
  char* base() const { return base_; }
  size_t capacity() const { return capacity_; }
  size_t used() const { return used_; }

 private:
  std::string name_;
  char* base_ = nullptr;
  size_t capacity_ = 0;
  size_t used_ = 0;
};

class DeviceArena {
 public:
  // One cudaMalloc of `bytes` on the current device (UNAVAILABLE without a device,
  // RESOURCE_EXHAUSTED when it does not fit, with the size in the message).
  static absl::StatusOr<DeviceArena> Create(size_t bytes);

  DeviceArena() = default;
  DeviceArena(DeviceArena&&) = default;
  DeviceArena& operator=(DeviceArena&&) = default;

  // The next `bytes` (aligned) of the arena as a region of its own.
  absl::StatusOr<ArenaRegion> Carve(absl::string_view name, size_t bytes);

  size_t capacity() const { return buffer_.bytes(); }
  size_t carved() const { return carved_; }

 private:
  kernels::cuda::DeviceBuffer buffer_;
  size_t carved_ = 0;
};

}  // namespace tessera::backend::cuda

#endif  // TESSERA_ENGINE_BACKEND_CUDA_DEVICE_ARENA_H_
