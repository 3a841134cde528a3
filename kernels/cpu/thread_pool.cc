#include "kernels/cpu/thread_pool.h"

#include <algorithm>

namespace tessera::kernels::cpu {

ThreadPool::ThreadPool(int threads) {
  if (threads <= 0) threads = std::max(1u, std::thread::hardware_concurrency());
  for (int i = 1; i < threads; ++i) workers_.emplace_back([this, i] { WorkerLoop(i); });
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
  std::vector<std::pair<int64_t, int64_t>> chunks;
  for (int64_t p = 0; p < parts; ++p) {
    const int64_t b = std::min(n, units * p / parts * grain);
    const int64_t e = std::min(n, units * (p + 1) / parts * grain);
    chunks.emplace_back(b, e);
  }
  {
    std::unique_lock<std::mutex> lock(mu_);
    chunks_ = chunks;
    job_ = &fn;
    pending_ = static_cast<int>(parts) - 1;
    ++generation_;
  }
  start_cv_.notify_all();
  fn(chunks[0].first, chunks[0].second);
  std::unique_lock<std::mutex> lock(mu_);
  done_cv_.wait(lock, [this] { return pending_ == 0; });
  job_ = nullptr;
}

void ThreadPool::WorkerLoop(int index) {
  uint64_t seen = 0;
  while (true) {
    std::pair<int64_t, int64_t> chunk;
    const std::function<void(int64_t, int64_t)>* job;
    {
      std::unique_lock<std::mutex> lock(mu_);
      start_cv_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      if (index >= static_cast<int>(chunks_.size())) continue;
      chunk = chunks_[index];
      job = job_;
    }
    (*job)(chunk.first, chunk.second);
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (--pending_ == 0) done_cv_.notify_one();
    }
  }
}

}  // namespace tessera::kernels::cpu
