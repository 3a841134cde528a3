#include "kernels/cpu/fast/parallel_repack.h"

#include <algorithm>

#include "kernels/cpu/fast/int4_x16.h"
#include "kernels/cpu/ggml_dequant.h"

namespace tessera::kernels::cpu::fast {

FastWeights RepackColumnGroups(
    ThreadPool* pool, int64_t n, int64_t group_bytes, uint8_t* dst,
    const std::function<FastWeights(int64_t c0, int64_t c1, uint8_t* dst_at)>& repack_columns) {
  const int64_t groups = (n + kRepackGroupColumns - 1) / kRepackGroupColumns;
  FastWeights first;
  auto run = [&](int64_t g0, int64_t g1) {
    const int64_t c0 = g0 * kRepackGroupColumns;
    const int64_t c1 = std::min(n, g1 * kRepackGroupColumns);
    const FastWeights w = repack_columns(c0, c1, dst + g0 * group_bytes);
    if (g0 == 0) first = w;  // one range starts at group 0; no other writes `first`
  };
  // Ranges of 8 groups (128 columns): a few hundred KiB to a few MiB of output each, so the
  // pool's split costs nothing against the copying.
  constexpr int64_t kGrain = 8;
  ParallelForOrInline(pool, groups, kGrain, run);
  first.data = dst;
  first.n = n;
  return first;
}

FastWeights RepackGgmlX16OverPool(ThreadPool* pool, GgmlBlockType type, const uint8_t* ggml_rows,
                                  int64_t n, int64_t k, uint8_t* dst) {
  const GgmlBlockInfo info = GetGgmlBlockInfo(type);
  const int64_t row_bytes = k / info.elements * info.bytes;
  return RepackColumnGroups(pool, n, GgmlX16Bytes(type, kRepackGroupColumns, k), dst,
                            [&](int64_t c0, int64_t c1, uint8_t* dst_at) {
                              return RepackGgmlX16(type, ggml_rows + c0 * row_bytes, c1 - c0, k,
                                                   dst_at);
                            });
}

FastWeights RepackPanelsOverPool(ThreadPool* pool, const FastWeights& src,
                                 int64_t (*bytes)(int64_t n, int64_t k),
                                 FastWeights (*repack)(const FastWeights&, uint8_t*),
                                 uint8_t* dst) {
  return RepackColumnGroups(pool, src.n, bytes(kRepackGroupColumns, src.k), dst,
                            [&](int64_t c0, int64_t c1, uint8_t* dst_at) {
                              FastWeights part = src;
                              part.data = src.data + c0 * src.row_stride;
                              part.n = c1 - c0;
                              return repack(part, dst_at);
                            });
}

FastWeights RepackGroupedOverPool(ThreadPool* pool, const FastWeights& src, int64_t group_bytes,
                                  uint8_t* dst,
                                  FastWeights (*repack)(const FastWeights&, uint8_t*)) {
  const int64_t groups_per_column = src.k / src.group_size;
  return RepackColumnGroups(pool, src.n, group_bytes, dst,
                            [&](int64_t c0, int64_t c1, uint8_t* dst_at) {
                              FastWeights part = src;
                              part.data = src.data + c0 * src.row_stride;
                              part.group_scales = src.group_scales + c0 * groups_per_column;
                              part.group_zeros = src.group_zeros + c0 * groups_per_column;
                              part.n = c1 - c0;
                              return repack(part, dst_at);
                            });
}

FastWeights RepackNvfp4x16OverPool(ThreadPool* pool, const FastWeights& src, uint8_t* dst) {
  return RepackColumnGroups(pool, src.n, Nvfp4x16Bytes(kRepackGroupColumns, src.k), dst,
                            [&](int64_t c0, int64_t c1, uint8_t* dst_at) {
                              FastWeights part = src;
                              part.data = src.data + c0 * src.row_stride;
                              part.block_scales = src.block_scales + c0 * (src.k / 16);
                              part.n = c1 - c0;
                              return RepackNvfp4x16(part, dst_at);
                            });
}

FastWeights RepackMxfp4x16OverPool(ThreadPool* pool, const uint8_t* packed, const uint8_t* scales,
                                   int64_t n, int64_t k, uint8_t* dst) {
  return RepackColumnGroups(pool, n, Mxfp4x16Bytes(kRepackGroupColumns, k), dst,
                            [&](int64_t c0, int64_t c1, uint8_t* dst_at) {
                              return RepackMxfp4x16(packed + c0 * (k / 2), scales + c0 * (k / 32),
                                                    c1 - c0, k, dst_at);
                            });
}

}  // namespace tessera::kernels::cpu::fast
