// ThreadPool (kernels/cpu/thread_pool.h): every index of [0, n) runs exactly once, chunks are
// multiples of the grain and guided (each 1 / (2 · threads) of what is left, so sizes never grow
// and the last ones are a grain), the chunk boundaries are the same on every call (only the
// thread that runs a chunk may change), and back-to-back calls never see a worker lag into the
// next call.
#include "kernels/cpu/thread_pool.h"

#include <algorithm>
#include <atomic>
#include <cmath>
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
        const int64_t units = (n + grain - 1) / grain;
        const int64_t parts = std::min<int64_t>(threads, units);
        if (parts <= 1) {
          EXPECT_EQ(first.size(), 1u);
          continue;
        }
        // Guided: what is left shrinks by 1 - 1 / (2 · parts) per chunk until chunks are a grain.
        const double bound = 2.0 * parts * (std::log(static_cast<double>(units)) + 1.0) + 1.0;
        EXPECT_LE(static_cast<double>(first.size()), bound) << "n " << n << " grain " << grain;
        int64_t prev = n;
        for (const auto& [b, e] : first) {
          if (e != n) {
            EXPECT_LE(e - b, prev) << "chunk sizes grow at " << b;
          }
          prev = e - b;
        }
        EXPECT_LE(first.rbegin()->second - first.rbegin()->first, grain);
        EXPECT_LE(first.begin()->second, ((units + 2 * parts - 1) / (2 * parts)) * grain);
      }
    }
  }
}

TEST(ThreadPoolTest, SplitsSmallMatricesAcrossThreads) {
  ThreadPool pool(2);
  // 256 columns in grains of 16 (a KV projection): the first chunk is a quarter, so both threads
  // get work, and the last is one grain, so neither waits long for the other.
  const auto chunks = Chunks(pool, 256, 16);
  EXPECT_GE(chunks.size(), 4u);
  EXPECT_EQ(chunks.begin()->second, 64);
  EXPECT_EQ(chunks.rbegin()->second - chunks.rbegin()->first, 16);
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
