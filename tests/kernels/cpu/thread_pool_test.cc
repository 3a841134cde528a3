// ThreadPool (kernels/cpu/thread_pool.h): every index of [0, n) runs exactly once, chunks are
// multiples of the grain, the chunk boundaries are the same on every call (only the thread that
// runs a chunk may change), and back-to-back calls never see a worker lag into the next call.
#include "kernels/cpu/thread_pool.h"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <set>
#include <utility>
#include <vector>

#include "gtest/gtest.h"

namespace tessera::kernels::cpu {
namespace {

std::set<std::pair<int64_t, int64_t>> Chunks(ThreadPool& pool, int64_t n, int64_t grain) {
  std::mutex mu;
  std::set<std::pair<int64_t, int64_t>> chunks;
  std::vector<std::atomic<int>> hits(n);
  pool.ParallelFor(n, grain, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) hits[i].fetch_add(1);
    std::lock_guard<std::mutex> lock(mu);
    chunks.emplace(b, e);
  });
  for (int64_t i = 0; i < n; ++i) EXPECT_EQ(hits[i].load(), 1) << "index " << i << " of " << n;
  for (const auto& [b, e] : chunks) {
    EXPECT_LT(b, e);
    EXPECT_EQ(b % grain, 0);
    if (e != n) {
      EXPECT_EQ(e % grain, 0);
    }
  }
  return chunks;
}

TEST(ThreadPoolTest, CoversEveryIndexOnceInGrainAlignedChunks) {
  for (int threads : {1, 2, 3, 8}) {
    ThreadPool pool(threads);
    for (int64_t n : {1, 2, 15, 16, 17, 100, 256, 2048, 5632, 32000}) {
      for (int64_t grain : {1, 16, 4096}) {
        const auto first = Chunks(pool, n, grain);
        EXPECT_EQ(Chunks(pool, n, grain), first) << "n " << n << " grain " << grain;
        EXPECT_LE(static_cast<int64_t>(first.size()), 4 * threads);
      }
    }
  }
}

TEST(ThreadPoolTest, SplitsSmallMatricesAcrossThreads) {
  ThreadPool pool(2);
  // 256 columns in grains of 16 (a KV projection): both threads get work, chunks ≥ 4 grains.
  const auto chunks = Chunks(pool, 256, 16);
  EXPECT_GE(chunks.size(), 2u);
  for (const auto& [b, e] : chunks) EXPECT_GE(e - b, 64);
}

TEST(ThreadPoolTest, BackToBackCallsStayConsistent) {
  ThreadPool pool(2);
  std::vector<int64_t> out(1000);
  for (int call = 0; call < 5000; ++call) {
    const int64_t n = 1 + call % 1000;
    pool.ParallelFor(n, 1, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) out[i] = call;
    });
    ASSERT_EQ(*std::min_element(out.begin(), out.begin() + n), call) << "call " << call;
  }
}

}  // namespace
}  // namespace tessera::kernels::cpu
