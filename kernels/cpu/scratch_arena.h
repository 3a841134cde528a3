// Per-thread scratch memory for the buffers a layer fills before its column split (quantized
// activations, block scales, gathered act-order rows) and its kernels read during it. A
// ScratchFrame hands out 64-byte-aligned, uninitialized arrays that live until the frame ends;
// frames nest in LIFO order on a thread, so a layer's buffers stay valid while a sibling layer
// prepares its own (ForwardSharedInput runs the q, k and v projections' columns in one
// ParallelFor after all three have prepared). The blocks are kept across calls, so a decode
// step's buffers come from memory already mapped; when the outermost frame of a thread ends, a
// call that needed more than one block leaves one block of its peak size if that is at most a
// few MiB (the next call of the same shape fits in it), else frees them all rather than pin a
// long prompt's buffers for the life of the thread.
#ifndef TESSERA_KERNELS_CPU_SCRATCH_ARENA_H_
#define TESSERA_KERNELS_CPU_SCRATCH_ARENA_H_

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace tessera::kernels::cpu {

class ScratchFrame {
 public:
  ScratchFrame();
  ~ScratchFrame();
  ScratchFrame(const ScratchFrame&) = delete;
  ScratchFrame& operator=(const ScratchFrame&) = delete;

  // `count` uninitialized Ts, 64-byte aligned, valid until this frame ends. Allocate only from
  // the innermost live frame of the thread (the one constructed last).
  template <typename T>
  T* Alloc(int64_t count) {
    static_assert(std::is_trivially_copyable_v<T> && alignof(T) <= 64);
    return static_cast<T*>(AllocBytes(count * static_cast<int64_t>(sizeof(T))));
  }

 private:
  void* AllocBytes(int64_t bytes);

  size_t saved_block_;
  int64_t saved_offset_;
  int64_t saved_before_;
};

}  // namespace tessera::kernels::cpu

#endif  // TESSERA_KERNELS_CPU_SCRATCH_ARENA_H_
