// A fixed pool of worker threads for data-parallel loops.
//
// parallel_for splits [0, n) into contiguous ranges, one per thread, and runs
// them on the pool plus the calling thread; for_each_chunk hands out chunks,
// each thread's own run first, then the others' leftovers. Neither allocates
// (the callable is passed by reference, not wrapped in std::function), so the
// decode loop can call them hundreds of times a token. Idle workers sleep on
// a condition variable after a short spin: no core is burnt while nothing runs.
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace ember {

// A task that throws fails the whole call: parallel_for / for_each_chunk wait
// for every thread to leave the task, then rethrow the first exception on the
// calling thread (no worker is left running on a frame that is gone).
class ThreadPool {
 public:
  // 0: one per hardware thread. Throws ember::Error when the system cannot
  // start that many threads (having stopped the ones it did start).
  explicit ThreadPool(int n_threads = 0);
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

  // fn(chunk, thread_index) for every chunk in [0, n_chunks). Each thread owns a
  // contiguous share and walks it in order, so a memory-bound loop over rows
  // reads one unbroken stream per thread (what the hardware prefetchers
  // follow); a thread that finishes its share early then takes chunks from the
  // ends of the others', so one delayed thread (another process on its core)
  // does not hold the step back.
  template <class F>
  void for_each_chunk(int64_t n_chunks, F&& fn) {
    if (n_chunks <= 0) return;
    if (n_threads_ == 1 || n_chunks == 1) {
      for (int64_t c = 0; c < n_chunks; ++c) fn(c, 0);
      return;
    }
    if (n_chunks > 0x7fffffff) throw_too_many_chunks();
    for (int t = 0; t < n_threads_; ++t)
      shares_[size_t(t)].reset(n_chunks * t / n_threads_, n_chunks * (t + 1) / n_threads_);
    on_each_thread([&](int t) {
      for (int i = 0; i < n_threads_; ++i) {  // own share first, then the next threads'
        Share& s = shares_[size_t((t + i) % n_threads_)];
        for (;;) {
          const int64_t c = s.take(/*front=*/i == 0);
          if (c < 0) break;
          fn(c, t);
        }
      }
    });
  }

 private:
  using Thunk = void (*)(void*, int64_t, int64_t, int);
  void run(int64_t n, int parts, Thunk thunk, void* ctx);
  [[noreturn]] static void throw_too_many_chunks();
  void worker(int index);
  void run_part(int part);
  void stop_workers();
  void record_error(std::exception_ptr e);

  // One thread's share of a for_each_chunk: the chunks [next, end), packed in
  // one word so that the owner (taking from the front) and helpers (taking
  // from the back) can never both take, or both miss, the last chunk.
  struct alignas(64) Share {
    std::atomic<uint64_t> range{0};
    static uint64_t pack(int64_t next, int64_t end) { return uint64_t(next) << 32 | uint64_t(end); }
    void reset(int64_t next, int64_t end) { range.store(pack(next, end), std::memory_order_relaxed); }
    int64_t take(bool front) {
      uint64_t v = range.load(std::memory_order_relaxed);
      for (;;) {
        const int64_t next = int64_t(v >> 32), end = int64_t(v & 0xffffffffu);
        if (next >= end) return -1;
        const uint64_t nv = front ? pack(next + 1, end) : pack(next, end - 1);
        if (range.compare_exchange_weak(v, nv, std::memory_order_relaxed)) return front ? next : end - 1;
      }
    }
  };

  int n_threads_;
  std::vector<Share> shares_;
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
  std::exception_ptr error_;  // first exception of the current job (guarded by mu_)
};

}  // namespace ember
