//===- MemoryPlan.h - Sharing memory between buffers by liveness ----------===//
//
// A graph's intermediates (buffers no output aliases) live in one arena per
// call: buffers whose lifetimes do not overlap share bytes. The arena is
// taken from a pool and given back after the call, so steady-state calls
// allocate no intermediates and concurrent calls each hold their own.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_MEMORYPLAN_H
#define KILN_RUNTIME_MEMORYPLAN_H

#include "kiln/runtime/Device.h"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

namespace kiln::runtime {

/// The steps (of the plan: launches and the collectives between them) a
/// buffer is used in, inclusive; first > last
/// for a buffer that is never used.
struct Lifetime {
  int64_t first = INT64_MAX;
  int64_t last = -1;
  bool used() const { return first <= last; }
  bool overlaps(const Lifetime &other) const {
    return used() && other.used() && first <= other.last && other.first <= last;
  }
  void extend(int64_t step) {
    first = first < step ? first : step;
    last = last > step ? last : step;
  }
};

struct MemoryPlan {
  std::vector<int64_t> offsets; // per buffer, in bytes from the arena's start
  int64_t bytes = 0;            // the arena's size
};

/// Arena offsets for buffers of `sizes` bytes alive over `lifetimes`:
/// buffers whose lifetimes overlap get disjoint byte ranges, each offset a
/// multiple of `alignment`. Largest buffers are placed first, each at the
/// lowest offset that fits beside those already placed (greedy by size, as
/// TFLite's arena planner): within a few percent of the lower bound (the
/// largest sum of sizes alive at one step) on real graphs.
MemoryPlan planMemory(const std::vector<int64_t> &sizes,
                      const std::vector<Lifetime> &lifetimes, int64_t alignment = 64);

/// Arenas for the calls of one program, reused across calls, in the memory
/// of one device. acquire() hands out an arena no other call holds; a Lease
/// gives it back when destroyed.
class ArenaPool {
  /// 64-byte aligned device memory, freed with the arena.
  struct Arena {
    DeviceBuffer memory;
    size_t bytes = 0;
  };

public:
  class Lease {
  public:
    Lease() = default;
    Lease(Lease &&other) noexcept;
    Lease &operator=(Lease &&other) noexcept;
    Lease(const Lease &) = delete;
    Lease &operator=(const Lease &) = delete;
    ~Lease();
    /// The arena's device address.
    void *data() const { return arena_ ? arena_->memory.address() : nullptr; }

  private:
    friend class ArenaPool;
    Lease(ArenaPool *pool, std::unique_ptr<Arena> arena);
    ArenaPool *pool_ = nullptr;
    std::unique_ptr<Arena> arena_;
  };

  explicit ArenaPool(Device &device) : device_(device) {}
  ArenaPool(const ArenaPool &) = delete;
  ArenaPool &operator=(const ArenaPool &) = delete;
  ~ArenaPool();

  /// An arena of at least `bytes` bytes, 64-byte aligned; data() is null
  /// only if memory ran out (or for 0 bytes).
  Lease acquire(size_t bytes);
  /// Arenas allocated so far and not freed: the most calls that ran at once.
  size_t arenasAllocated() const;
  /// Bytes of those arenas: memory the program holds between calls.
  size_t bytesHeld() const;

private:
  void giveBack(std::unique_ptr<Arena> arena);
  Device &device_;
  mutable std::mutex mutex_;
  std::vector<std::unique_ptr<Arena>> free_;
  size_t allocated_ = 0;
  std::atomic<size_t> bytesHeld_{0};
};

} // namespace kiln::runtime

#endif // KILN_RUNTIME_MEMORYPLAN_H
