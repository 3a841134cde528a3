// Load-time repacks split over the thread pool. The 16-column layouts (the int8 tiles of
// int4_x16.h, the f16 / f32 panels of float_panel_matmul.h, the bf16 pairs of
// bf16_dot_matmul.h) are one fixed-size record per 16 output columns, each written from those
// columns' source rows (and scales) alone; so a repack of columns [c0, c1) into the records from
// c0 / 16 on is the same bytes as the whole repack's there, and ranges of records can be written
// by different threads. A single-threaded repack left one core idle at model load: TinyLlama-1.1B
// spent 1.4 (Q4_0) to 4.2 s (F16) there, most of it in the repack loops and in the kernel
// zeroing the fresh pages they first touch (which then also runs on both cores).
#ifndef TESSERA_KERNELS_CPU_FAST_PARALLEL_REPACK_H_
#define TESSERA_KERNELS_CPU_FAST_PARALLEL_REPACK_H_

#include <cstdint>
#include <functional>

#include "kernels/cpu/fast/fast_matmul.h"
#include "kernels/cpu/thread_pool.h"

namespace tessera::kernels::cpu::fast {

// Output columns per record of the layouts above.
inline constexpr int64_t kRepackGroupColumns = 16;

// Rewrites the n columns into `dst` by calling repack_columns(c0, c1, dst + c0 / 16 ·
// group_bytes) over ranges of whole 16-column groups (c1 = n for the last), on `pool` when given
// and inline otherwise, and returns the FastWeights of the whole matrix: the first range's,
// with data = dst and n = n. repack_columns must write the records of its columns only (the
// repacks above, called on the source rows of c0 .. c1 − 1, do).
FastWeights RepackColumnGroups(
    ThreadPool* pool, int64_t n, int64_t group_bytes, uint8_t* dst,
    const std::function<FastWeights(int64_t c0, int64_t c1, uint8_t* dst_at)>& repack_columns);

// The repacks of int4_x16.h, float_panel_matmul.h and bf16_dot_matmul.h through
// RepackColumnGroups, each range given its columns' rows and scales; same arguments and result as
// the one-call versions.
//   GGUF rows of `type` (RepackGgmlX16):
FastWeights RepackGgmlX16OverPool(ThreadPool* pool, GgmlBlockType type, const uint8_t* ggml_rows,
                                  int64_t n, int64_t k, uint8_t* dst);
//   dense rows (src.data + col · row_stride) into panels of bytes(16, k) each (RepackF16Panels,
//   RepackF32Panels, RepackBf16Pairs with F16PanelsBytes, F32PanelsBytes, Bf16PairsBytes):
FastWeights RepackPanelsOverPool(ThreadPool* pool, const FastWeights& src,
                                 int64_t (*bytes)(int64_t n, int64_t k),
                                 FastWeights (*repack)(const FastWeights&, uint8_t*),
                                 uint8_t* dst);
//   kU4Groups / kU8Groups weights (scales and zero points [n, k / group_size]) into RepackU4x16 /
//   RepackU8x16's tiles of group_bytes each:
FastWeights RepackGroupedOverPool(ThreadPool* pool, const FastWeights& src, int64_t group_bytes,
                                  uint8_t* dst,
                                  FastWeights (*repack)(const FastWeights&, uint8_t*));
//   kNvfp4Pairs weights (block scales [n, k / 16]) (RepackNvfp4x16):
FastWeights RepackNvfp4x16OverPool(ThreadPool* pool, const FastWeights& src, uint8_t* dst);
//   MXFP4 pairs [n, k / 2] and E8M0 scales [n, k / 32] (RepackMxfp4x16):
FastWeights RepackMxfp4x16OverPool(ThreadPool* pool, const uint8_t* packed, const uint8_t* scales,
                                   int64_t n, int64_t k, uint8_t* dst);

}  // namespace tessera::kernels::cpu::fast

#endif  // TESSERA_KERNELS_CPU_FAST_PARALLEL_REPACK_H_
