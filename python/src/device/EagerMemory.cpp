// The kiln device's memory: allocations from its runtime device with
// per-device statistics (what torch.kiln.memory_allocated and
// torch.accelerator's memory functions read), pinned host memory, and the
// CPU tensors the fallback runs ATen's CPU kernels on: zero-copy views of
// host memory (the CPU driver), or host copies of a GPU driver's memory.
#include "EagerDevice.h"

#include "kiln/runtime/Device.h"

#include <ATen/ATen.h>
#include <c10/core/CPUAllocator.h>
#include <c10/core/impl/alloc_cpu.h>

#include <unistd.h>

#include <algorithm>
#include <array>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <unordered_set>

namespace rt = kiln::runtime;

namespace kiln::python::eager {
namespace {

constexpr size_t kAggregate = static_cast<size_t>(c10::CachingAllocator::StatType::AGGREGATE);

/// Statistics of one virtual device, as CUDA's caching allocator reports
/// them (only the aggregate pool; reserved equals allocated: the blocks a
/// GPU driver's cache keeps are not counted).
struct DeviceMemoryStats {
  std::mutex mutex;
  c10::CachingDeviceAllocator::DeviceStats stats;


  void allocated(size_t bytes) { update(bytes, &c10::CachingAllocator::Stat::increase); }
  void freed(size_t bytes) { update(bytes, &c10::CachingAllocator::Stat::decrease); }

private:
  void update(size_t bytes, void (c10::CachingAllocator::Stat::*change)(size_t)) {
    std::lock_guard<std::mutex> lock(mutex);
    for (c10::CachingAllocator::StatArray *array :
         {&stats.allocated_bytes, &stats.reserved_bytes, &stats.active_bytes,
          &stats.requested_bytes})
      ((*array)[kAggregate].*change)(bytes);
    for (c10::CachingAllocator::StatArray *array :
         {&stats.allocation, &stats.segment, &stats.active})
      ((*array)[kAggregate].*change)(1);
  }
};

std::array<DeviceMemoryStats, kMaxDevices> &memoryStats() {
  static std::array<DeviceMemoryStats, kMaxDevices> stats;
  return stats;
}

/// What a kiln DataPtr owns: the runtime's buffer, or memory adopted from
/// a CPU storage the fallback's kernel allocated.
struct Allocation {
  rt::DeviceBuffer buffer;
  c10::Storage adopted;
  c10::DeviceIndex device;
  size_t bytes;
};

/// Freed blocks of a GPU driver's memory, kept for the next allocation of
/// their size, as CUDA's caching allocator keeps them: freeing device memory
/// waits for the queued work that may use it (and allocating costs driver
/// calls). Reusing a block needs no wait: the device runs work in order, so
/// what writes a reused block runs after what read it. (The CPU driver's
/// memory is freed at once: nothing is queued there.)
class BlockCache {
public:
  /// Sizes are rounded up to this, so that near sizes share blocks.
  static constexpr size_t kGranule = 512;
  /// Beyond this many cached bytes, freed blocks are freed.
  static constexpr size_t kMaxCachedBytes = size_t(1) << 30;

  static size_t rounded(size_t bytes) {
    return std::max<size_t>(1, (bytes + kGranule - 1) / kGranule) * kGranule;
  }

  std::optional<rt::DeviceBuffer> take(size_t roundedBytes) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto found = blocks_.find(roundedBytes);
    if (found == blocks_.end())
      return std::nullopt;
    rt::DeviceBuffer block = std::move(found->second);
    blocks_.erase(found);
    cachedBytes_ -= roundedBytes;
    return block;
  }
  void give(rt::DeviceBuffer block) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (cachedBytes_ + block.size() <= kMaxCachedBytes) {
        cachedBytes_ += block.size();
        blocks_.emplace(block.size(), std::move(block));
        return;
      }
    }
    block.reset(); // outside the lock: it waits for the device
  }
  void clear() {
    std::unordered_multimap<size_t, rt::DeviceBuffer> blocks;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      blocks.swap(blocks_);
      cachedBytes_ = 0;
    }
  }

private:
  std::mutex mutex_;
  std::unordered_multimap<size_t, rt::DeviceBuffer> blocks_;
  size_t cachedBytes_ = 0;
};

BlockCache &blockCache() {
  static BlockCache *cache = new BlockCache; // never destroyed: blocks outlive no device
  return *cache;
}

void freeAllocation(void *context) {
  auto *allocation = static_cast<Allocation *>(context);
  memoryStats()[allocation->device].freed(allocation->bytes);
  if (allocation->buffer && !memoryIsHost())
    blockCache().give(std::move(allocation->buffer));
  delete allocation;
}

/// `bytes` of the runtime device's memory: a cached block on a GPU driver
/// where one fits, else a new allocation (after emptying the cache, if the
/// device is out of memory).
rt::StatusOr<rt::DeviceBuffer> allocateBuffer(size_t bytes) {
  if (memoryIsHost())
    return eagerRuntimeDevice().allocate(bytes);
  size_t size = BlockCache::rounded(bytes);
  if (std::optional<rt::DeviceBuffer> cached = blockCache().take(size))
    return std::move(*cached);
  rt::StatusOr<rt::DeviceBuffer> buffer = eagerRuntimeDevice().allocate(size);
  if (!buffer.ok() && buffer.status().code() == rt::StatusCode::OutOfMemory) {
    blockCache().clear();
    buffer = eagerRuntimeDevice().allocate(size);
  }
  return buffer;
}

class KilnDeviceAllocator final : public c10::DeviceAllocator {
public:
  c10::DataPtr allocate(size_t bytes) override {
    c10::DeviceIndex device = currentDevice();
    rt::StatusOr<rt::DeviceBuffer> buffer = allocateBuffer(bytes);
    TORCH_CHECK_WITH(OutOfMemoryError, buffer.ok(), "kiln:", static_cast<int>(device), ": ",
                     buffer.status().message());
    void *data = buffer->address();
    auto *allocation = new Allocation{std::move(*buffer), {}, device, bytes};
    memoryStats()[device].allocated(bytes);
    return {data, allocation, &freeAllocation, c10::Device(c10::kPrivateUse1, device)};
  }
  c10::DeleterFnPtr raw_deleter() const override { return nullptr; }
  void copy_data(void *dest, const void *src, std::size_t count) const override {
    throwIfFailed(eagerRuntimeDevice().copyDeviceToDevice(dest, src, count), "copying a storage");
  }

  bool initialized() override { return true; }
  void emptyCache(c10::MempoolId_t) override { blockCache().clear(); }
  void recordStream(const c10::DataPtr &, c10::Stream) override {} // one in-order queue
  c10::CachingDeviceAllocator::DeviceStats getDeviceStats(c10::DeviceIndex device) override {
    checkDeviceIndex(device);
    DeviceMemoryStats &entry = memoryStats()[device];
    std::lock_guard<std::mutex> lock(entry.mutex);
    return entry.stats;
  }
  void resetAccumulatedStats(c10::DeviceIndex device) override {
    forEachStat(device, [](c10::CachingAllocator::Stat &stat) { stat.reset_accumulated(); });
  }
  void resetPeakStats(c10::DeviceIndex device) override {
    forEachStat(device, [](c10::CachingAllocator::Stat &stat) { stat.reset_peak(); });
  }
  std::pair<size_t, size_t> getMemoryInfo(c10::DeviceIndex device) override {
    checkDeviceIndex(device);
    size_t page = (size_t)::sysconf(_SC_PAGESIZE);
    return {(size_t)::sysconf(_SC_AVPHYS_PAGES) * page, (size_t)::sysconf(_SC_PHYS_PAGES) * page};
  }

private:
  template <typename Fn> void forEachStat(c10::DeviceIndex device, Fn fn) {
    checkDeviceIndex(device);
    DeviceMemoryStats &entry = memoryStats()[device];
    std::lock_guard<std::mutex> lock(entry.mutex);
    auto &s = entry.stats;
    for (c10::CachingAllocator::StatArray *array :
         {&s.allocation, &s.segment, &s.active, &s.inactive_split, &s.allocated_bytes,
          &s.reserved_bytes, &s.active_bytes, &s.inactive_split_bytes, &s.requested_bytes})
      for (c10::CachingAllocator::Stat &stat : *array)
        fn(stat);
  }
};

/// Pinned host memory: on the CPU driver any host memory is reachable, so
/// pinning only marks the allocation (is_pinned() reports it).
class PinnedHostAllocator final : public c10::Allocator {
public:
  c10::DataPtr allocate(size_t bytes) override {
    void *data = c10::alloc_cpu(bytes);
    {
      std::lock_guard<std::mutex> lock(mutex());
      pointers().insert(data);
    }
    return {data, data, &freePinned, c10::Device(c10::kCPU)};
  }
  c10::DeleterFnPtr raw_deleter() const override { return &freePinned; }
  void copy_data(void *dest, const void *src, std::size_t count) const override {
    default_copy_data(dest, src, count);
  }

  static bool contains(const void *data) {
    std::lock_guard<std::mutex> lock(mutex());
    return pointers().count(data) != 0;
  }

private:
  static std::mutex &mutex() {
    static std::mutex m;
    return m;
  }
  static std::unordered_set<const void *> &pointers() {
    static std::unordered_set<const void *> set;
    return set;
  }
  static void freePinned(void *data) {
    {
      std::lock_guard<std::mutex> lock(mutex());
      pointers().erase(data);
    }
    c10::free_cpu(data);
  }
};

} // namespace

c10::DeviceAllocator &deviceAllocator() {
  static KilnDeviceAllocator allocator;
  return allocator;
}

c10::Allocator &pinnedHostAllocator() {
  static PinnedHostAllocator allocator;
  return allocator;
}

bool isPinnedHostPointer(const void *data) { return PinnedHostAllocator::contains(data); }

at::Tensor cpuView(const at::Tensor &tensor) {
  TORCH_INTERNAL_ASSERT(memoryIsHost(), "a CPU view of a GPU driver's memory");
  const c10::Storage &storage = tensor.storage();
  // The view holds a reference to the kiln storage, so the memory outlives
  // whoever keeps the view (gloo's in-flight collective, say).
  auto *owner = new c10::Storage(storage);
  c10::DataPtr data(storage.mutable_data(), owner,
                    [](void *ctx) { delete static_cast<c10::Storage *>(ctx); },
                    c10::Device(c10::kCPU));
  // Resizable through the CPU allocator: a kernel that grows an out=
  // argument gets new CPU memory, which the fallback then adopts.
  auto impl = c10::make_intrusive<c10::StorageImpl>(
      c10::StorageImpl::use_byte_size_t(), storage.nbytes(), std::move(data),
      c10::GetCPUAllocator(), /*resizable=*/true);
  at::Tensor view = at::detail::make_tensor<c10::TensorImpl>(
      c10::Storage(std::move(impl)), c10::DispatchKeySet(c10::DispatchKey::CPU), tensor.dtype());
  view.unsafeGetTensorImpl()->set_sizes_and_strides(tensor.sizes(), tensor.strides(),
                                                    tensor.storage_offset());
  return view;
}

c10::Storage adoptCpuStorage(const c10::Storage &cpu, c10::DeviceIndex index) {
  size_t bytes = cpu.nbytes();
  auto *allocation = new Allocation{{}, cpu, index, bytes};
  memoryStats()[index].allocated(bytes);
  c10::DataPtr data(cpu.mutable_data(), allocation, &freeAllocation,
                    c10::Device(c10::kPrivateUse1, index));
  return c10::Storage(c10::make_intrusive<c10::StorageImpl>(
      c10::StorageImpl::use_byte_size_t(), bytes, std::move(data), &deviceAllocator(),
      /*resizable=*/true));
}

void resizeKilnStorage(const c10::Storage &storage, size_t bytes) {
  c10::StorageImpl *impl = storage.unsafeGetStorageImpl();
  TORCH_CHECK(impl->resizable(), "Trying to resize storage that is not resizable");
  c10::DeviceGuard guard(storage.device());
  c10::DataPtr fresh = deviceAllocator().allocate(bytes);
  size_t kept = std::min(bytes, impl->nbytes());
  if (kept)
    throwIfFailed(eagerRuntimeDevice().copyDeviceToDevice(fresh.get(), impl->data(), kept),
                  "resizing a storage");
  impl->set_data_ptr_noswap(std::move(fresh));
  impl->set_nbytes(bytes);
}

c10::Storage uploadCpuStorage(const c10::Storage &cpu, c10::DeviceIndex index) {
  c10::DeviceGuard guard(c10::Device(c10::kPrivateUse1, index));
  size_t bytes = cpu.nbytes();
  c10::Storage storage(c10::Storage::use_byte_size_t(), bytes, &deviceAllocator(),
                       /*resizable=*/true);
  throwIfFailed(eagerRuntimeDevice().copyHostToDevice(storage.mutable_data(), cpu.data(), bytes),
                "copying to the device");
  return storage;
}

at::Tensor HostStaging::toHost(const at::Tensor &kiln) {
  const c10::Storage &storage = kiln.storage();
  auto found = std::find_if(copies_.begin(), copies_.end(), [&](const Copy &copy) {
    return copy.kiln.unsafeGetStorageImpl() == storage.unsafeGetStorageImpl();
  });
  if (found == copies_.end()) {
    size_t bytes = storage.nbytes();
    // Resizable through the CPU allocator, as a CPU view is: a kernel that
    // grows an out= argument gets new host memory, uploaded afterwards.
    c10::Storage host(c10::Storage::use_byte_size_t(), bytes, c10::GetCPUAllocator(),
                      /*resizable=*/true);
    throwIfFailed(eagerRuntimeDevice().copyDeviceToHost(host.mutable_data(), storage.data(), bytes),
                  "copying to the host");
    copies_.push_back({storage, host, host.data()});
    found = copies_.end() - 1;
  }
  at::Tensor view = at::detail::make_tensor<c10::TensorImpl>(
      c10::Storage(found->host), c10::DispatchKeySet(c10::DispatchKey::CPU), kiln.dtype());
  view.unsafeGetTensorImpl()->set_sizes_and_strides(kiln.sizes(), kiln.strides(),
                                                    kiln.storage_offset());
  return view;
}

void HostStaging::written(const at::Tensor &kiln) {
  for (Copy &copy : copies_)
    if (copy.kiln.unsafeGetStorageImpl() == kiln.storage().unsafeGetStorageImpl())
      copy.written = true;
}

const c10::Storage *HostStaging::kilnStorageOf(const c10::Storage &cpu) const {
  for (const Copy &copy : copies_)
    if (copy.host.unsafeGetStorageImpl() == cpu.unsafeGetStorageImpl() && cpu.data() == copy.hostData)
      return &copy.kiln;
  return nullptr;
}

void HostStaging::flush() {
  for (Copy &copy : copies_) {
    if (!copy.written || copy.host.data() != copy.hostData)
      continue;
    throwIfFailed(eagerRuntimeDevice().copyHostToDevice(copy.kiln.mutable_data(), copy.host.data(),
                                                        copy.kiln.nbytes()),
                  "copying to the device");
    copy.written = false;
  }
}

at::Tensor tensorOnStorage(const c10::Storage &storage, const at::Tensor &like) {
  at::Tensor tensor = at::detail::make_tensor<c10::TensorImpl>(
      c10::Storage(storage), c10::DispatchKeySet(c10::DispatchKey::PrivateUse1), like.dtype());
  tensor.unsafeGetTensorImpl()->set_sizes_and_strides(like.sizes(), like.strides(),
                                                      like.storage_offset());
  return tensor;
}

} // namespace kiln::python::eager
