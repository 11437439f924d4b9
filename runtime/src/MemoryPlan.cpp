//===- MemoryPlan.cpp - Liveness-based arena offsets and the arena pool ---===//

#include "kiln/runtime/MemoryPlan.h"

#include <algorithm>
#include <numeric>

namespace kiln::runtime {

static int64_t alignUp(int64_t value, int64_t alignment) {
  return (value + alignment - 1) / alignment * alignment;
}

MemoryPlan planMemory(const std::vector<int64_t> &sizes,
                      const std::vector<Lifetime> &lifetimes, int64_t alignment) {
  MemoryPlan plan;
  plan.offsets.assign(sizes.size(), 0);
  std::vector<size_t> order(sizes.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return sizes[a] > sizes[b]; });
  std::vector<size_t> placed;
  std::vector<std::pair<int64_t, int64_t>> taken; // [begin, end) of overlapping buffers
  for (size_t buffer : order) {
    if (sizes[buffer] <= 0 || !lifetimes[buffer].used())
      continue;
    taken.clear();
    for (size_t other : placed)
      if (lifetimes[buffer].overlaps(lifetimes[other]))
        taken.push_back({plan.offsets[other], plan.offsets[other] + sizes[other]});
    std::sort(taken.begin(), taken.end());
    // The first gap between the ranges in use that holds this buffer.
    int64_t offset = 0;
    for (const auto &[begin, end] : taken) {
      if (offset + sizes[buffer] <= begin)
        break;
      offset = std::max(offset, alignUp(end, alignment));
    }
    plan.offsets[buffer] = offset;
    plan.bytes = std::max(plan.bytes, alignUp(offset + sizes[buffer], alignment));
    placed.push_back(buffer);
  }
  return plan;
}

ArenaPool::Lease::Lease(ArenaPool *pool, std::unique_ptr<Arena> arena)
    : pool_(pool), arena_(std::move(arena)) {}

ArenaPool::Lease::Lease(Lease &&other) noexcept
    : pool_(other.pool_), arena_(std::move(other.arena_)) {
  other.pool_ = nullptr;
}

ArenaPool::Lease &ArenaPool::Lease::operator=(Lease &&other) noexcept {
  if (this != &other) {
    if (pool_ && arena_)
      pool_->giveBack(std::move(arena_));
    pool_ = other.pool_;
    arena_ = std::move(other.arena_);
    other.pool_ = nullptr;
  }
  return *this;
}

ArenaPool::Lease::~Lease() {
  if (pool_ && arena_)
    pool_->giveBack(std::move(arena_));
}

ArenaPool::~ArenaPool() = default;

ArenaPool::Lease ArenaPool::acquire(size_t bytes) {
  std::unique_ptr<Arena> arena;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    // Any free arena: the largest first, grown below if too small (a
    // symbolic graph's arena follows its largest sizes so far).
    if (!free_.empty()) {
      auto largest = std::max_element(free_.begin(), free_.end(), [](const auto &a, const auto &b) {
        return a->bytes < b->bytes;
      });
      arena = std::move(*largest);
      free_.erase(largest);
    } else {
      ++allocated_;
      arena = std::make_unique<Arena>();
    }
  }
  if (arena->bytes < bytes) {
    arena->memory.reset();
    size_t rounded = (bytes + 63) / 64 * 64;
    bytesHeld_ -= arena->bytes;
    StatusOr<DeviceBuffer> memory = device_.allocate(rounded);
    arena->bytes = 0;
    if (memory.ok()) {
      arena->memory = std::move(*memory);
      arena->bytes = rounded;
    }
    bytesHeld_ += arena->bytes;
  }
  return Lease(this, std::move(arena));
}

void ArenaPool::giveBack(std::unique_ptr<Arena> arena) {
  std::lock_guard<std::mutex> lock(mutex_);
  free_.push_back(std::move(arena));
}

size_t ArenaPool::bytesHeld() const { return bytesHeld_.load(); }

size_t ArenaPool::arenasAllocated() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return allocated_;
}

} // namespace kiln::runtime
