#include "util/thread_pool.h"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <utility>

#include "util/error.h"

namespace ember {

ThreadPool::ThreadPool(int n_threads) {
  if (n_threads <= 0) n_threads = int(std::max(1u, std::thread::hardware_concurrency()));
  n_threads_ = n_threads;
  shares_ = std::vector<Share>(size_t(n_threads_));
  try {
    workers_.reserve(size_t(n_threads_ - 1));
    for (int i = 1; i < n_threads_; ++i) workers_.emplace_back([this, i] { worker(i); });
  } catch (const std::exception& e) {
    // The system refused a thread (or memory): stop the ones already started,
    // which would otherwise be destroyed joinable (std::terminate).
    const size_t started = workers_.size();
    stop_workers();
    throw Error("cannot start " + std::to_string(n_threads_) + " threads (" + std::to_string(started + 1) +
                " started): " + e.what());
  }
}

ThreadPool::~ThreadPool() { stop_workers(); }

void ThreadPool::stop_workers() {
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
    error_ = nullptr;
  }
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
  // The caller's share may throw; the workers still use `ctx` (a frame of our
  // caller), so wait for them before the exception leaves this function.
  try {
    run_part(0);
  } catch (...) {
    record_error(std::current_exception());
  }
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
  std::exception_ptr error;
  {
    std::lock_guard<std::mutex> lk(mu_);
    error = std::exchange(error_, nullptr);
  }
  if (error) std::rethrow_exception(error);  // the first failure of this job
}

void ThreadPool::record_error(std::exception_ptr e) {
  std::lock_guard<std::mutex> lk(mu_);
  if (!error_) error_ = std::move(e);
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
    try {
      run_part(index);
    } catch (...) {  // reported by run() on the calling thread
      record_error(std::current_exception());
    }
    if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      std::lock_guard<std::mutex> lk(mu_);
      done_cv_.notify_one();
    }
  }
}

}  // namespace ember
