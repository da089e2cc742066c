// The thread pool's loops cover every index exactly once, whatever the thread
// count, and for_each_chunk lets idle threads take a delayed thread's chunks.
#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <chrono>
#include <thread>
#include <vector>

#include "util/thread_pool.h"

using namespace ember;

TEST(ThreadPool, ParallelForCoversEachIndexOnce) {
  for (int threads : {1, 2, 3, 8}) {
    ThreadPool pool(threads);
    for (int64_t n : {0, 1, 2, 7, 1000}) {
      std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
      pool.parallel_for(n, [&](int64_t b, int64_t e, int) {
        for (int64_t i = b; i < e; ++i) hits[size_t(i)].fetch_add(1);
      });
      for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[size_t(i)].load(), 1) << "threads " << threads << " n " << n << " i " << i;
    }
  }
}

TEST(ThreadPool, ForEachChunkCoversEachChunkOnce) {
  for (int threads : {1, 2, 3, 8}) {
    ThreadPool pool(threads);
    for (int64_t n : {0, 1, 2, 7, 64, 5000}) {
      for (int rep = 0; rep < 20; ++rep) {  // repeated: the owner/helper races differ run to run
        std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
        pool.for_each_chunk(n, [&](int64_t c, int t) {
          ASSERT_GE(t, 0);
          ASSERT_LT(t, threads);
          hits[size_t(c)].fetch_add(1);
        });
        for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[size_t(i)].load(), 1) << "threads " << threads << " n " << n << " chunk " << i;
      }
    }
  }
}

TEST(ThreadPool, ForEachChunkOwnersWalkInOrderAndIdleThreadsHelp) {
  ThreadPool pool(2);
  const int64_t n = 40;
  std::vector<int> ran_on(size_t(n), -1);
  std::vector<std::vector<int64_t>> order(2);
  std::atomic<bool> second_started{false};
  pool.for_each_chunk(n, [&](int64_t c, int t) {
    // Thread 0 waits until thread 1 has begun, so each starts on its own share.
    if (t == 0 && c == 0)
      while (!second_started.load()) std::this_thread::yield();
    // Thread 1 is slow: thread 0 finishes its own share, then takes from the back of thread 1's.
    if (t == 1) {
      second_started.store(true);
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    ran_on[size_t(c)] = t;
    order[size_t(t)].push_back(c);
  });
  for (int64_t c = 0; c < n / 2; ++c) EXPECT_EQ(ran_on[size_t(c)], 0) << c;  // thread 0's own share
  // Thread 1 ran its share from the front, in order; thread 0 helped from the back.
  ASSERT_FALSE(order[1].empty());
  EXPECT_EQ(order[1].front(), n / 2);
  for (size_t i = 1; i < order[1].size(); ++i) EXPECT_EQ(order[1][i], order[1][i - 1] + 1);
  EXPECT_EQ(ran_on[size_t(n - 1)], 0);
  EXPECT_GT(order[0].size(), size_t(n / 2));
}

// A throwing task fails the call on the calling thread, after every worker has
// left the task (under ASan, a worker still running on the caller's dead frame
// is a stack-use-after-scope); the pool stays usable afterwards.
TEST(ThreadPool, ThrowInTheCallersShareWaitsForWorkersThenRethrows) {
  ThreadPool pool(4);
  for (int round = 0; round < 20; ++round) {
    std::atomic<int> done{0};
    auto run = [&] {
      std::atomic<int> local{0};  // the frame workers would dangle on
      pool.parallel_for(4, [&](int64_t b, int64_t, int) {
        if (b == 0) throw std::runtime_error("caller share fails");
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
        local.fetch_add(1);
        done.fetch_add(1);
      });
    };
    EXPECT_THROW(run(), std::runtime_error);
    EXPECT_EQ(done.load(), 3);  // the workers finished before the exception left
  }
  std::atomic<int> n{0};
  pool.parallel_for(100, [&](int64_t b, int64_t e, int) { n.fetch_add(int(e - b)); });
  EXPECT_EQ(n.load(), 100);
}

TEST(ThreadPool, ThrowInAWorkerIsRethrownOnTheCaller) {
  ThreadPool pool(3);
  EXPECT_THROW(pool.parallel_for(3, [&](int64_t b, int64_t, int) {
                 if (b != 0) throw std::length_error("worker fails");
               }),
               std::length_error);
  EXPECT_THROW(pool.for_each_chunk(64, [&](int64_t c, int) {
                 if (c == 40) throw std::logic_error("chunk fails");
               }),
               std::logic_error);
  std::atomic<int> n{0};
  pool.for_each_chunk(64, [&](int64_t, int) { n.fetch_add(1); });
  EXPECT_EQ(n.load(), 64);
}
