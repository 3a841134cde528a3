#include "kernels/cpu/fast/parallel_repack.h"

#include <algorithm>

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
  if (pool != nullptr && groups > kGrain) {
    pool->ParallelFor(groups, kGrain, run);
  } else {
    run(0, groups);
  }
  first.data = dst;
  first.n = n;
  return first;
}

}  // namespace tessera::kernels::cpu::fast
