//===- ThreadPool.h - Fork-join parallelism for CPU kernels ---------------===//

#ifndef KILN_RUNTIME_THREADPOOL_H
#define KILN_RUNTIME_THREADPOOL_H

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace kiln::runtime {

/// $KILN_NUM_THREADS when it is a positive integer, else the number of
/// hardware threads (at least 1).
int defaultThreadCount();

/// A fixed set of threads that run one parallelFor at a time. The calling
/// thread takes part, so a pool of size N starts N - 1 workers.
class ThreadPool {
public:
  /// Values below 1 are treated as 1 (everything runs on the caller).
  explicit ThreadPool(int numThreads);
  ~ThreadPool();
  ThreadPool(const ThreadPool &) = delete;
  ThreadPool &operator=(const ThreadPool &) = delete;

  /// Threads that execute work items, the caller included.
  int size() const { return static_cast<int>(workers_.size()) + 1; }

  /// How many of them later jobs use, the caller included (clamped to
  /// [1, size()]); the others sleep. The Python bridge follows
  /// torch.get_num_threads() with it on every call.
  void setActiveThreads(int count);
  int activeThreads() const { return active_.load(std::memory_order_relaxed); }

  /// Calls fn(i) exactly once for every i in [0, count) and returns when all
  /// calls are done. Safe to call from several threads (calls are queued) and
  /// from inside `fn` (the nested loop runs inline). `fn` must not throw.
  void parallelFor(int64_t count, const std::function<void(int64_t)> &fn);

private:
  void workerLoop(int index);
  void runItems(const std::function<void(int64_t)> &fn, int64_t count);

  std::vector<std::thread> workers_;
  /// Serializes concurrent parallelFor calls: the pool runs one job at a time.
  std::mutex submitMutex_;

  // The current job, guarded by mutex_ (next_ is claimed lock-free).
  std::mutex mutex_;
  std::condition_variable wake_; // a job was published, or stop_
  std::condition_variable done_; // inJob_ dropped to zero
  const std::function<void(int64_t)> *fn_ = nullptr;
  int64_t count_ = 0;
  std::atomic<int64_t> next_{0};
  /// Bumped per job; atomic so idle workers can spin on it without the lock.
  std::atomic<uint64_t> generation_{0};
  /// Whether workers may still join the current job; cleared once the caller
  /// has seen every item claimed, so late wakers stay asleep.
  bool jobOpen_ = false;
  int inJob_ = 0; // workers currently running items of the job
  std::atomic<int> active_{1};
  bool stop_ = false;
};

} // namespace kiln::runtime

#endif // KILN_RUNTIME_THREADPOOL_H
