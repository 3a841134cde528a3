// This machine's memory bandwidth of the moment, measured in-process so that every benchmark can
// report its weight streaming rate as a fraction of a roofline taken in the same run. Two probes
// over arrays far larger than the last-level cache, split over the thread pool like the kernels:
// a STREAM triad (a = b + s·c, counted as STREAM does, 12 bytes per element) and a read-only sum
// (what a decode GEMV does: it only reads weights). The arrays hold distinct values on every
// page: a hypervisor that merges identical pages (this project's VMs do) would otherwise serve
// them from one cached page and report up to twice the real bandwidth.
#ifndef TESSERA_KERNELS_CPU_MEMORY_BANDWIDTH_H_
#define TESSERA_KERNELS_CPU_MEMORY_BANDWIDTH_H_

#include <cstdint>
#include <utility>
#include <vector>

#include "kernels/cpu/thread_pool.h"

namespace tessera::kernels::cpu {

struct MemoryBandwidth {
  double triad_gbs = 0;  // best of the repetitions, STREAM's byte count
  double read_gbs = 0;   // best of the repetitions
};

// Runs each probe `repetitions` times over three arrays of `array_bytes` each (default 64 MiB,
// twice a 32 MiB L3) on `pool` (null: the calling thread) and returns the best rates.
MemoryBandwidth MeasureMemoryBandwidth(ThreadPool* pool, int64_t array_bytes = int64_t{64} << 20,
                                       int repetitions = 5);

// Reads every byte of `spans` (pointer, bytes) once per repetition, each span split over `pool`,
// and returns the best rate in GB/s: the decode roofline of exactly those pages (a model's
// weights), independent of where a fresh probe array happens to land. On this project's VMs fresh
// allocations land in a fast or a slow half of host memory (the triad reads ~45 or ~75 GB/s from
// one call to the next), so the weights' own read rate is the fair denominator for decode.
double MeasureSpanReadGBs(ThreadPool* pool, const std::vector<std::pair<const uint8_t*, int64_t>>& spans,
                          int repetitions = 3);

}  // namespace tessera::kernels::cpu

#endif  // TESSERA_KERNELS_CPU_MEMORY_BANDWIDTH_H_
