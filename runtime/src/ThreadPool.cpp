//===- ThreadPool.cpp -----------------------------------------------------===//

#include "kiln/runtime/ThreadPool.h"

#include <algorithm>

#include <cstdlib>
#include <string>

namespace kiln::runtime {

int defaultThreadCount() {
  if (const char *env = std::getenv("KILN_NUM_THREADS")) {
    char *end = nullptr;
    long value = std::strtol(env, &end, 10);
    if (end != env && *end == '\0' && value > 0 && value <= 4096)
      return static_cast<int>(value);
  }
  unsigned hardware = std::thread::hardware_concurrency();
  return hardware ? static_cast<int>(hardware) : 1;
}

namespace {

/// The pool whose job the current thread is executing, to run nested
/// parallelFor calls inline instead of deadlocking on submitMutex_.
thread_local const ThreadPool *activePool = nullptr;

class ActivePoolScope {
public:
  explicit ActivePoolScope(const ThreadPool *pool) : saved_(activePool) {
    activePool = pool;
  }
  ~ActivePoolScope() { activePool = saved_; }

private:
  const ThreadPool *saved_;
};

void cpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

/// Launches usually come back to back; a short spin lets workers pick up the
/// next one without a futex round trip, while idle pools still sleep.
constexpr int kSpinIterations = 2000;

} // namespace

ThreadPool::ThreadPool(int numThreads) {
  int workers = numThreads > 1 ? numThreads - 1 : 0;
  workers_.reserve(static_cast<size_t>(workers));
  for (int i = 0; i < workers; ++i)
    workers_.emplace_back([this, i] { workerLoop(i); });
  active_.store(workers + 1, std::memory_order_relaxed);
}

void ThreadPool::setActiveThreads(int count) {
  active_.store(std::clamp(count, 1, size()), std::memory_order_relaxed);
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  for (std::thread &worker : workers_)
    worker.join();
}

void ThreadPool::runItems(const std::function<void(int64_t)> &fn,
                          int64_t count) {
  ActivePoolScope scope(this);
  for (;;) {
    int64_t i = next_.fetch_add(1, std::memory_order_relaxed);
    if (i >= count)
      return;
    fn(i);
  }
}

void ThreadPool::parallelFor(int64_t count,
                             const std::function<void(int64_t)> &fn) {
  if (count <= 0)
    return;
  if (count == 1 || workers_.empty() || activePool == this ||
      active_.load(std::memory_order_relaxed) == 1) {
    for (int64_t i = 0; i < count; ++i)
      fn(i);
    return;
  }

  std::lock_guard<std::mutex> submit(submitMutex_);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    fn_ = &fn;
    count_ = count;
    next_.store(0, std::memory_order_relaxed);
    generation_.fetch_add(1, std::memory_order_release);
    jobOpen_ = true;
  }
  wake_.notify_all();

  runItems(fn, count);

  // Every item is claimed now. Close the job and wait for the workers that
  // joined it, since they still use `fn`, which dies when we return.
  std::unique_lock<std::mutex> lock(mutex_);
  jobOpen_ = false;
  done_.wait(lock, [this] { return inJob_ == 0; });
  fn_ = nullptr;
}

void ThreadPool::workerLoop(int index) {
  uint64_t seen = 0;
  // Worker `index` is the (index + 2)-th thread of a job, the caller first.
  auto enabled = [&] { return index + 1 < active_.load(std::memory_order_relaxed); };
  for (;;) {
    for (int i = 0; i < kSpinIterations && enabled() &&
                    generation_.load(std::memory_order_acquire) == seen;
         ++i)
      cpuRelax();

    const std::function<void(int64_t)> *fn;
    int64_t count;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] {
        return stop_ || (jobOpen_ && generation_.load() != seen && enabled());
      });
      if (stop_)
        return;
      seen = generation_.load();
      fn = fn_;
      count = count_;
      ++inJob_;
    }

    runItems(*fn, count);

    std::lock_guard<std::mutex> lock(mutex_);
    if (--inJob_ == 0)
      done_.notify_one();
  }
}

} // namespace kiln::runtime
