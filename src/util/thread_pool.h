// A fixed pool of worker threads for data-parallel loops.
//
// parallel_for splits [0, n) into contiguous ranges, one per thread, and runs
// them on the pool plus the calling thread. It allocates nothing (the callable
// is passed by reference, not wrapped in std::function), so the decode loop can
// call it hundreds of times a token. Idle workers sleep on a condition variable
// after a short spin: no core is burnt while nothing runs.
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

namespace ember {

class ThreadPool {
 public:
  explicit ThreadPool(int n_threads = 0);  // 0: one per hardware thread
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return n_threads_; }

  // fn(begin, end, thread_index) for disjoint ranges covering [0, n).
  // `grain` is the smallest range worth giving a thread.
  template <class F>
  void parallel_for(int64_t n, F&& fn, int64_t grain = 1) {
    if (n <= 0) return;
    int64_t parts = n_threads_;
    if (grain > 1) parts = std::min<int64_t>(parts, (n + grain - 1) / grain);
    if (parts <= 1) { fn(int64_t(0), n, 0); return; }
    auto thunk = [](void* ctx, int64_t b, int64_t e, int t) { (*static_cast<F*>(ctx))(b, e, t); };
    run(n, int(parts), thunk, &fn);
  }

  // fn(thread_index) once on each of `size()` threads.
  template <class F>
  void on_each_thread(F&& fn) {
    parallel_for(n_threads_, [&](int64_t b, int64_t, int t) { (void)b; fn(t); });
  }

 private:
  using Thunk = void (*)(void*, int64_t, int64_t, int);
  void run(int64_t n, int parts, Thunk thunk, void* ctx);
  void worker(int index);
  void run_part(int part);

  int n_threads_;
  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable wake_;
  std::condition_variable done_cv_;
  // The current job (valid while pending_ > 0).
  Thunk thunk_ = nullptr;
  void* ctx_ = nullptr;
  int64_t n_ = 0;
  int parts_ = 0;
  std::atomic<uint64_t> generation_{0};
  std::atomic<int> pending_{0};
  bool stop_ = false;
};

}  // namespace ember
