// A persistent pool of worker threads for the CPU kernels. Threads are created once; each
// ParallelFor splits [0, n) into contiguous chunks of decreasing size (guided: large first, a
// grain or two at the end), which the caller and the workers take from a shared counter, and
// returns when all are done. The chunk boundaries depend only on n, grain and the thread count,
// never on timing, and fn never learns which thread runs a chunk, so results are deterministic;
// which thread runs a chunk is not, which keeps both cores busy when one is slowed (a 2-core VM's
// other tenant, memory traffic).
//
// A decode step issues hundreds of small ParallelFor calls a few microseconds apart, so a
// futex wake-up per call (tens of microseconds on a loaded VM) would cost more than the work it
// splits. Workers therefore spin briefly on an atomic generation counter before sleeping on the
// condition variable, and the caller spins briefly before waiting for completion; the spin is
// bounded so idle pools do not burn the cores other processes need.
#ifndef TESSERA_KERNELS_CPU_THREAD_POOL_H_
#define TESSERA_KERNELS_CPU_THREAD_POOL_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace tessera::kernels::cpu {

class ThreadPool {
 public:
  // threads <= 0 means the number of hardware threads.
  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return static_cast<int>(workers_.size()) + 1; }

  // Calls fn(begin, end) over disjoint chunks covering [0, n); chunks are multiples of `grain`
  // (except the last) so that callers can keep SIMD-friendly boundaries. Not reentrant: one
  // ParallelFor at a time per pool (the engine calls it from one thread).
  void ParallelFor(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn);

 private:
  void WorkerLoop();
  // Runs chunks from next_chunk_ until none are left.
  void RunChunks(const std::function<void(int64_t, int64_t)>& fn);

  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable start_cv_;
  std::condition_variable done_cv_;
  // Written by the caller before `generation_` is bumped (release) and read by workers after
  // they observe the new generation (acquire).
  const std::function<void(int64_t, int64_t)>* job_ = nullptr;
  std::vector<std::pair<int64_t, int64_t>> chunks_;
  std::atomic<int64_t> next_chunk_{0};
  std::atomic<uint64_t> generation_{0};
  std::atomic<int> pending_{0};
  std::atomic<int> sleepers_{0};  // workers blocked (or about to block) on start_cv_
  bool stop_ = false;             // guarded by mu_
};

// pool->ParallelFor(n, grain, fn), or fn(0, n) on the calling thread when there is no pool (the
// callers that take an optional pool: load-time repacks, tests and tools without one).
void ParallelForOrInline(ThreadPool* pool, int64_t n, int64_t grain,
                         const std::function<void(int64_t, int64_t)>& fn);

}  // namespace tessera::kernels::cpu

#endif  // TESSERA_KERNELS_CPU_THREAD_POOL_H_
