//===- ThreadPoolTest.cpp -------------------------------------------------===//

#include "kiln/runtime/ThreadPool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <cstdlib>
#include <memory>
#include <thread>
#include <vector>

using namespace kiln::runtime;

namespace {

/// Runs parallelFor(count) and checks that every index ran exactly once.
void expectEachIndexOnce(ThreadPool &pool, int64_t count) {
  std::unique_ptr<std::atomic<int>[]> hits(new std::atomic<int>[count + 1]);
  for (int64_t i = 0; i <= count; ++i)
    hits[i] = 0;
  pool.parallelFor(count, [&](int64_t i) {
    if (i >= 0 && i < count)
      hits[i].fetch_add(1);
    else
      hits[count].fetch_add(1); // out of range: counted in the spare slot
  });
  for (int64_t i = 0; i < count; ++i)
    ASSERT_EQ(hits[i].load(), 1) << "index " << i << " of " << count;
  EXPECT_EQ(hits[count].load(), 0) << "out-of-range indices ran";
}

} // namespace

TEST(ThreadPoolTest, EachIndexRunsExactlyOnce) {
  for (int threads : {1, 2, 4}) {
    ThreadPool pool(threads);
    EXPECT_EQ(pool.size(), threads);
    for (int64_t count : {0, 1, 7, 1000})
      expectEachIndexOnce(pool, count);
  }
}

TEST(ThreadPoolTest, NonPositiveSizeRunsOnCaller) {
  ThreadPool pool(0);
  EXPECT_EQ(pool.size(), 1);
  std::thread::id caller = std::this_thread::get_id();
  bool allOnCaller = true;
  pool.parallelFor(10, [&](int64_t) {
    allOnCaller &= std::this_thread::get_id() == caller;
  });
  EXPECT_TRUE(allOnCaller);
}

TEST(ThreadPoolTest, RepeatedCalls) {
  ThreadPool pool(3);
  for (int round = 0; round < 500; ++round)
    expectEachIndexOnce(pool, round % 13);
}

TEST(ThreadPoolTest, UsesWorkerThreads) {
  ThreadPool pool(2);
  std::atomic<bool> sawWorker{false};
  std::thread::id caller = std::this_thread::get_id();
  // Retry: on a loaded machine the caller may legitimately claim everything.
  for (int round = 0; round < 200 && !sawWorker; ++round) {
    pool.parallelFor(64, [&](int64_t) {
      if (std::this_thread::get_id() != caller)
        sawWorker = true;
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    });
  }
  EXPECT_TRUE(sawWorker);
}

TEST(ThreadPoolTest, ConcurrentCallers) {
  ThreadPool pool(3);
  std::vector<std::thread> callers;
  for (int t = 0; t < 4; ++t)
    callers.emplace_back([&pool] {
      for (int round = 0; round < 100; ++round)
        expectEachIndexOnce(pool, 37);
    });
  for (std::thread &caller : callers)
    caller.join();
}

TEST(ThreadPoolTest, NestedCallsRunInline) {
  ThreadPool pool(2);
  std::atomic<int> total{0};
  pool.parallelFor(8, [&](int64_t) {
    pool.parallelFor(5, [&](int64_t) { total.fetch_add(1); });
  });
  EXPECT_EQ(total.load(), 40);
}

TEST(ThreadPoolTest, DefaultThreadCountReadsEnvironment) {
  ::setenv("KILN_NUM_THREADS", "3", 1);
  EXPECT_EQ(defaultThreadCount(), 3);
  ::setenv("KILN_NUM_THREADS", "zero", 1);
  EXPECT_GE(defaultThreadCount(), 1);
  ::setenv("KILN_NUM_THREADS", "-2", 1);
  EXPECT_GE(defaultThreadCount(), 1);
  ::unsetenv("KILN_NUM_THREADS");
  EXPECT_GE(defaultThreadCount(), 1);
}

TEST(ThreadPoolTest, ActiveThreadsLimitsTheThreadsThatRunAJob) {
  kiln::runtime::ThreadPool pool(4);
  auto threadsUsed = [&] {
    std::mutex mutex;
    std::set<std::thread::id> ids;
    pool.parallelFor(400, [&](int64_t) {
      // Long enough that every enabled worker gets to take items.
      auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(200);
      while (std::chrono::steady_clock::now() < until) {
      }
      std::lock_guard<std::mutex> lock(mutex);
      ids.insert(std::this_thread::get_id());
    });
    return ids.size();
  };
  pool.setActiveThreads(2);
  EXPECT_EQ(pool.activeThreads(), 2);
  for (int i = 0; i < 3; ++i)
    EXPECT_LE(threadsUsed(), 2u);
  pool.setActiveThreads(1);
  EXPECT_EQ(threadsUsed(), 1u) << "the caller alone";
  pool.setActiveThreads(100);
  EXPECT_EQ(pool.activeThreads(), 4) << "clamped to the pool's size";
  EXPECT_GE(threadsUsed(), 2u) << "the workers wake again";
  pool.setActiveThreads(0);
  EXPECT_EQ(pool.activeThreads(), 1);
}
