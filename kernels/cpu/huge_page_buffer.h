// Owned, zero-filled host memory backed by transparent huge pages where the kernel grants them,
// for the weights a layer repacks at load (int8-activation tiles, bf16 panels, GGUF repacks).
// Decode streams every weight byte once per token, and on 4 KiB pages that stream crosses a page
// (a TLB entry, a restart of the hardware prefetcher's page-bounded stream) every 64 cache lines:
// on the 2-core Zen 4 VMs a plain read of 512 MiB ran at 25 GB/s on one core with 4 KiB pages and
// 29-31 with 2 MiB pages (bench/README.md). On Linux, buffers of 2 MiB and more start on a 2 MiB
// boundary and are advised MADV_HUGEPAGE (which is what THP's `madvise` mode, common on VMs,
// waits for); their last partial 2 MiB and smaller buffers stay on 4 KiB pages rather than waste
// up to 2 MiB each. Elsewhere it is aligned_alloc. The memory is 64-byte aligned. (The paged KV
// cache stays a committed std::vector: on huge pages it decoded no faster at a 2k context, and
// lazily mapped pages would let an over-committed server be OOM-killed mid-request instead of
// failing at start.)
#ifndef TESSERA_KERNELS_CPU_HUGE_PAGE_BUFFER_H_
#define TESSERA_KERNELS_CPU_HUGE_PAGE_BUFFER_H_

#include <cstdint>

namespace tessera::kernels::cpu {

class HugePageBuffer {
 public:
  HugePageBuffer() = default;
  // `bytes` zero-filled bytes; aborts when the system has no memory left (as operator new would
  // terminate, exceptions being disabled across modules).
  explicit HugePageBuffer(int64_t bytes);
  ~HugePageBuffer();
  HugePageBuffer(HugePageBuffer&& other) noexcept;
  HugePageBuffer& operator=(HugePageBuffer&& other) noexcept;
  HugePageBuffer(const HugePageBuffer&) = delete;
  HugePageBuffer& operator=(const HugePageBuffer&) = delete;

  uint8_t* data() const { return data_; }
  int64_t size() const { return size_; }
  // Bytes of the buffer the kernel backs with huge pages now (from /proc/self/smaps; 0 where it
  // cannot tell; an upper bound where the kernel merged the mapping with an advised neighbour).
  // For tests and reports.
  int64_t HugePageBytes() const;

 private:
  void Release();

  uint8_t* data_ = nullptr;
  int64_t size_ = 0;
  int64_t mapped_ = 0;  // bytes mapped at data_
};

}  // namespace tessera::kernels::cpu

#endif  // TESSERA_KERNELS_CPU_HUGE_PAGE_BUFFER_H_
