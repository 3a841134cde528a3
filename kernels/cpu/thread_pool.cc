#include "kernels/cpu/thread_pool.h"

#include <algorithm>
#include <chrono>

namespace tessera::kernels::cpu {
namespace {

// How long a thread spins before sleeping. A decode step's ParallelFor calls are a few
// microseconds apart, so this catches the next call; longer idle periods sleep.
constexpr auto kSpin = std::chrono::microseconds(100);

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

// Spins until pred() holds or kSpin passes; returns pred()'s last value.
template <typename Pred>
bool SpinUntil(Pred pred) {
  const auto deadline = std::chrono::steady_clock::now() + kSpin;
  for (int i = 0;; ++i) {
    if (pred()) return true;
    CpuRelax();
    if ((i & 63) == 63 && std::chrono::steady_clock::now() > deadline) return pred();
  }
}

}  // namespace

ThreadPool::ThreadPool(int threads) {
  if (threads <= 0) threads = std::max(1u, std::thread::hardware_concurrency());
  for (int i = 1; i < threads; ++i) workers_.emplace_back([this] { WorkerLoop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  start_cv_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::ParallelFor(int64_t n, int64_t grain,
                             const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  grain = std::max<int64_t>(grain, 1);
  const int64_t units = (n + grain - 1) / grain;
  const int64_t parts = std::min<int64_t>(size(), units);
  if (parts <= 1) {
    fn(0, n);
    return;
  }
  // Guided chunks, taken in order from a shared counter: each is 1 / (2 · parts) of what is
  // left (at least one grain), so the first ones are large (few counter hits, long sequential
  // weight streams) and the last ones are a grain or two, and a thread that finishes early (the
  // other slowed by memory traffic or by the hypervisor) waits for at most one small chunk.
  // Boundaries depend only on n, grain and the thread count.
  chunks_.clear();
  for (int64_t done = 0; done < units;) {
    const int64_t left = units - done;
    const int64_t take = std::max<int64_t>(1, (left + 2 * parts - 1) / (2 * parts));
    chunks_.emplace_back(std::min(n, done * grain), std::min(n, (done + take) * grain));
    done += take;
  }
  next_chunk_.store(0, std::memory_order_relaxed);
  job_ = &fn;
  // Every worker reports back, even one with no chunk, so none can lag into the next call.
  pending_.store(static_cast<int>(workers_.size()), std::memory_order_relaxed);
  {
    // Under the lock so a worker checking its wait predicate cannot miss the new generation.
    std::lock_guard<std::mutex> lock(mu_);
    generation_.fetch_add(1, std::memory_order_release);
  }
  start_cv_.notify_all();  // no system call when no worker sleeps
  RunChunks(fn);
  if (!SpinUntil([this] { return pending_.load(std::memory_order_acquire) == 0; })) {
    std::unique_lock<std::mutex> lock(mu_);
    done_cv_.wait(lock, [this] { return pending_.load(std::memory_order_acquire) == 0; });
  }
  job_ = nullptr;
}

void ThreadPool::RunChunks(const std::function<void(int64_t, int64_t)>& fn) {
  const int64_t count = static_cast<int64_t>(chunks_.size());
  for (int64_t i = next_chunk_.fetch_add(1, std::memory_order_relaxed); i < count;
       i = next_chunk_.fetch_add(1, std::memory_order_relaxed)) {
    fn(chunks_[i].first, chunks_[i].second);
  }
}

void ThreadPool::WorkerLoop() {
  uint64_t seen = 0;
  while (true) {
    if (!SpinUntil([&] { return generation_.load(std::memory_order_acquire) != seen; })) {
      std::unique_lock<std::mutex> lock(mu_);
      start_cv_.wait(lock,
                     [&] { return stop_ || generation_.load(std::memory_order_acquire) != seen; });
      if (stop_) return;
    }
    seen = generation_.load(std::memory_order_acquire);
    RunChunks(*job_);
    if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      std::lock_guard<std::mutex> lock(mu_);
      done_cv_.notify_one();
    }
  }
}

void ParallelForOrInline(ThreadPool* pool, int64_t n, int64_t grain,
                         const std::function<void(int64_t, int64_t)>& fn) {
  if (pool != nullptr) {
    pool->ParallelFor(n, grain, fn);
  } else {
    fn(0, n);
  }
}

}  // namespace tessera::kernels::cpu
