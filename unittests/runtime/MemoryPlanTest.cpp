// planMemory: buffers alive at the same step never share bytes; buffers that
// are not do; and ArenaPool hands each concurrent caller its own arena.
#include "kiln/runtime/MemoryPlan.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>
#include <thread>

namespace rt = kiln::runtime;

namespace {
/// Arenas come from a device: the CPU's.
std::unique_ptr<rt::Device> cpu() {
  auto device = rt::createDevice("cpu");
  EXPECT_TRUE(device.ok()) << device.status().message();
  return device.ok() ? std::move(*device) : nullptr;
}
} // namespace

namespace {

rt::Lifetime alive(int64_t first, int64_t last) {
  rt::Lifetime lifetime;
  lifetime.extend(first);
  lifetime.extend(last);
  return lifetime;
}

/// Every pair of buffers alive at once has disjoint byte ranges inside the arena.
void expectValid(const rt::MemoryPlan &plan, const std::vector<int64_t> &sizes,
                 const std::vector<rt::Lifetime> &lifetimes, int64_t alignment) {
  for (size_t a = 0; a < sizes.size(); ++a) {
    if (!lifetimes[a].used() || sizes[a] == 0)
      continue;
    EXPECT_EQ(plan.offsets[a] % alignment, 0) << a;
    EXPECT_LE(plan.offsets[a] + sizes[a], plan.bytes) << a;
    for (size_t b = a + 1; b < sizes.size(); ++b) {
      if (!lifetimes[a].overlaps(lifetimes[b]) || sizes[b] == 0)
        continue;
      bool disjoint = plan.offsets[a] + sizes[a] <= plan.offsets[b] ||
                      plan.offsets[b] + sizes[b] <= plan.offsets[a];
      EXPECT_TRUE(disjoint) << "buffers " << a << " and " << b << " overlap in time and bytes";
    }
  }
}

TEST(MemoryPlanTest, AChainReusesTheBuffersThatDied) {
  // t0 -> t1 -> t2 -> t3: each read by the next step only.
  std::vector<int64_t> sizes{1000, 1000, 1000, 1000};
  std::vector<rt::Lifetime> lifetimes{alive(0, 1), alive(1, 2), alive(2, 3), alive(3, 4)};
  rt::MemoryPlan plan = rt::planMemory(sizes, lifetimes);
  expectValid(plan, sizes, lifetimes, 64);
  EXPECT_EQ(plan.bytes, 2 * 1024) << "two buffers alive at once, each rounded to 64 bytes";
  EXPECT_EQ(plan.offsets[0], plan.offsets[2]);
  EXPECT_EQ(plan.offsets[1], plan.offsets[3]);
}

TEST(MemoryPlanTest, BuffersAliveTogetherGetDisjointRanges) {
  std::vector<int64_t> sizes{100, 200, 300};
  std::vector<rt::Lifetime> lifetimes{alive(0, 5), alive(2, 3), alive(3, 4)};
  rt::MemoryPlan plan = rt::planMemory(sizes, lifetimes, 128);
  expectValid(plan, sizes, lifetimes, 128);
  EXPECT_GE(plan.bytes, 100 + 200 + 300);
}

TEST(MemoryPlanTest, UnusedAndEmptyBuffersTakeNoSpace) {
  std::vector<int64_t> sizes{0, 4096, 64};
  std::vector<rt::Lifetime> lifetimes{alive(0, 1), rt::Lifetime(), alive(0, 0)};
  rt::MemoryPlan plan = rt::planMemory(sizes, lifetimes);
  EXPECT_EQ(plan.bytes, 64);
  EXPECT_EQ(rt::planMemory({}, {}).bytes, 0);
}

TEST(MemoryPlanTest, RandomGraphsStayValidAndNearTheLowerBound) {
  std::mt19937 random(7);
  for (int trial = 0; trial < 200; ++trial) {
    size_t n = 1 + random() % 40;
    int64_t steps = 1 + random() % 30;
    std::vector<int64_t> sizes(n);
    std::vector<rt::Lifetime> lifetimes(n);
    for (size_t i = 0; i < n; ++i) {
      sizes[i] = random() % 5 == 0 ? 0 : 1 + random() % 100000;
      int64_t first = random() % steps;
      lifetimes[i] = alive(first, first + random() % 4);
    }
    rt::MemoryPlan plan = rt::planMemory(sizes, lifetimes);
    expectValid(plan, sizes, lifetimes, 64);
    // Never more than no sharing at all, never less than the busiest step.
    int64_t unshared = 0, busiest = 0;
    for (size_t i = 0; i < n; ++i)
      unshared += (sizes[i] + 63) / 64 * 64;
    for (int64_t step = 0; step < steps + 4; ++step) {
      int64_t live = 0;
      for (size_t i = 0; i < n; ++i)
        if (lifetimes[i].first <= step && step <= lifetimes[i].last)
          live += sizes[i];
      busiest = std::max(busiest, live);
    }
    EXPECT_LE(plan.bytes, unshared);
    EXPECT_GE(plan.bytes, busiest);
  }
}

TEST(ArenaPoolTest, ConcurrentCallersHoldDistinctArenasThatAreReused) {
  std::unique_ptr<rt::Device> device = cpu();
  ASSERT_TRUE(device);
  rt::ArenaPool pool(*device);
  {
    rt::ArenaPool::Lease a = pool.acquire(1000), b = pool.acquire(1000);
    ASSERT_NE(a.data(), nullptr);
    ASSERT_NE(b.data(), nullptr);
    EXPECT_NE(a.data(), b.data());
    EXPECT_EQ(reinterpret_cast<uintptr_t>(a.data()) % 64, 0u);
  }
  EXPECT_EQ(pool.arenasAllocated(), 2u);
  // Given back: later calls reuse them, growing one if they need more.
  void *first;
  {
    rt::ArenaPool::Lease c = pool.acquire(500);
    first = c.data();
  }
  {
    rt::ArenaPool::Lease d = pool.acquire(1 << 20);
    ASSERT_NE(d.data(), nullptr);
    static_cast<char *>(d.data())[(1 << 20) - 1] = 1;
  }
  EXPECT_EQ(pool.arenasAllocated(), 2u);
  EXPECT_NE(first, nullptr);

  // Many threads at once: no arena is handed to two of them.
  std::mutex mutex;
  std::set<void *> held;
  bool shared = false;
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 200; ++i) {
        rt::ArenaPool::Lease lease = pool.acquire(4096);
        {
          std::lock_guard<std::mutex> lock(mutex);
          shared |= !held.insert(lease.data()).second;
        }
        std::lock_guard<std::mutex> lock(mutex);
        held.erase(lease.data());
      }
    });
  for (std::thread &thread : threads)
    thread.join();
  EXPECT_FALSE(shared);
  EXPECT_LE(pool.arenasAllocated(), 8u + 2u);
}

} // namespace

TEST(ArenaPoolTest, CountsTheBytesItHoldsBetweenCalls) {
  std::unique_ptr<rt::Device> device = cpu();
  ASSERT_TRUE(device);
  rt::ArenaPool pool(*device);
  EXPECT_EQ(pool.bytesHeld(), 0u);
  {
    rt::ArenaPool::Lease a = pool.acquire(100), b = pool.acquire(1000);
    // Rounded up to whole 64-byte lines.
    EXPECT_EQ(pool.bytesHeld(), 128u + 1024u);
  }
  // Given back, still held; growing the larger one replaces its bytes.
  EXPECT_EQ(pool.bytesHeld(), 128u + 1024u);
  { rt::ArenaPool::Lease c = pool.acquire(4096); }
  EXPECT_EQ(pool.bytesHeld(), 128u + 4096u);
  { rt::ArenaPool::Lease d = pool.acquire(64); }
  EXPECT_EQ(pool.bytesHeld(), 128u + 4096u);
}
