// Software prefetch of the next column group for the GEMV kernels that read a group of NC
// weight rows as NC short streams (kernels/cpu/fast/fast_matmul.cc, fast_quant_matmul.cc): the
// hardware prefetchers keep restarting on such streams, so the next group's bytes are prefetched
// into L2, sequentially, one line per line consumed. Into L2 rather than L1: an L1 prefetch
// holds one of the core's few L1 miss buffers until its line arrives. Measured on this project's
// Zen 4 VMs at M = 1 from DRAM (bench/README.md): F16 27-29 -> 31-35 GB/s, BF16 28-30 -> 33-41.
#ifndef TESSERA_KERNELS_CPU_FAST_NEXT_GROUP_PREFETCH_H_
#define TESSERA_KERNELS_CPU_FAST_NEXT_GROUP_PREFETCH_H_

#include <cstdint>

namespace tessera::kernels::cpu::fast {

struct NextGroupPrefetch {
  uintptr_t next = 0;  // first byte of the next group; 0: prefetch nothing
  int64_t step = 1;    // bytes of the next group per (chunk, column) step of the current one
  // Step i of the current group (i = chunk · NC + column) prefetches the line holding byte
  // i · step of the next group, once per line. `next` is an address, never dereferenced: it may
  // lie past the weights.
  inline void Touch(int64_t i) const {
    if (next == 0) return;
    const uintptr_t a = next + static_cast<uintptr_t>(i * step);
    if ((a & 63) < static_cast<uintptr_t>(step)) {
      __builtin_prefetch(reinterpret_cast<const void*>(a), 0, 2);
    }
  }
};

}  // namespace tessera::kernels::cpu::fast

#endif  // TESSERA_KERNELS_CPU_FAST_NEXT_GROUP_PREFETCH_H_
