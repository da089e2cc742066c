#include "util/thread_pool.h"

#include <algorithm>
#include <stdexcept>

namespace ember {

ThreadPool::ThreadPool(int n_threads) {
  if (n_threads <= 0) n_threads = int(std::max(1u, std::thread::hardware_concurrency()));
  n_threads_ = n_threads;
  shares_ = std::vector<Share>(size_t(n_threads_));
  for (int i = 1; i < n_threads_; ++i) workers_.emplace_back([this, i] { worker(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    stop_ = true;
    generation_.fetch_add(1);
  }
  wake_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::throw_too_many_chunks() { throw std::length_error("ThreadPool::for_each_chunk: more than 2^31 chunks"); }

void ThreadPool::run_part(int part) {
  if (part >= parts_) return;
  const int64_t b = n_ * part / parts_;
  const int64_t e = n_ * (part + 1) / parts_;
  if (b < e) thunk_(ctx_, b, e, part);
}

void ThreadPool::run(int64_t n, int parts, Thunk thunk, void* ctx) {
  {
    std::lock_guard<std::mutex> lk(mu_);
    thunk_ = thunk;
    ctx_ = ctx;
    n_ = n;
    parts_ = parts;
    pending_.store(n_threads_ - 1, std::memory_order_relaxed);
    generation_.fetch_add(1, std::memory_order_release);
  }
  wake_.notify_all();
  run_part(0);
  // Brief spin (the other parts usually finish within microseconds of ours), then sleep.
  for (int i = 0; i < 20000 && pending_.load(std::memory_order_acquire) > 0; ++i) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
  }
  if (pending_.load(std::memory_order_acquire) > 0) {
    std::unique_lock<std::mutex> lk(mu_);
    done_cv_.wait(lk, [&] { return pending_.load(std::memory_order_acquire) == 0; });
  }
}

void ThreadPool::worker(int index) {
  uint64_t seen = 0;
  for (;;) {
    // Spin a little for the next job, then sleep until woken.
    uint64_t g = generation_.load(std::memory_order_acquire);
    for (int i = 0; i < 20000 && g == seen; ++i) {
#if defined(__x86_64__) || defined(__i386__)
      __builtin_ia32_pause();
#endif
      g = generation_.load(std::memory_order_acquire);
    }
    if (g == seen) {
      std::unique_lock<std::mutex> lk(mu_);
      wake_.wait(lk, [&] { return generation_.load(std::memory_order_acquire) != seen; });
      g = generation_.load(std::memory_order_acquire);
    }
    seen = g;
    {
      std::lock_guard<std::mutex> lk(mu_);
      if (stop_) return;
    }
    run_part(index);
    if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      std::lock_guard<std::mutex> lk(mu_);
      done_cv_.notify_one();
    }
  }
}

}  // namespace ember
