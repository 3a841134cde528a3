// The in-process bandwidth probes: finite, positive, and in a physically plausible range (between
// 0.1 GB/s and 10 TB/s), on one thread and on a pool.
#include "kernels/cpu/memory_bandwidth.h"

#include <cmath>

#include "gtest/gtest.h"

namespace tessera::kernels::cpu {
namespace {

TEST(MemoryBandwidthTest, PlausibleRates) {
  ThreadPool pool(2);
  for (ThreadPool* p : {static_cast<ThreadPool*>(nullptr), &pool}) {
    const MemoryBandwidth bw = MeasureMemoryBandwidth(p, int64_t{8} << 20, 2);
    EXPECT_TRUE(std::isfinite(bw.triad_gbs));
    EXPECT_TRUE(std::isfinite(bw.read_gbs));
    EXPECT_GT(bw.triad_gbs, 0.1);
    EXPECT_GT(bw.read_gbs, 0.1);
    EXPECT_LT(bw.triad_gbs, 1e4);
    EXPECT_LT(bw.read_gbs, 1e4);
  }
}

}  // namespace
}  // namespace tessera::kernels::cpu
