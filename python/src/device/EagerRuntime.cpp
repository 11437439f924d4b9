// The kiln device's devices, streams, events and generators, and the one
// place that registers the device with PyTorch.
//
// kiln:0..N-1 are virtual devices over one runtime device, which runs work
// in order (the CPU driver synchronously, a GPU driver in submitted
// batches): a stream is a name, and an event is complete when recorded (it
// keeps the time, for elapsed_time) once the runtime device has finished
// what was issued before it.
#include "EagerDevice.h"

#include "kiln/runtime/Device.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/detail/PrivateUse1HooksInterface.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstring>
#include <mutex>

namespace rt = kiln::runtime;

namespace kiln::python::eager {
namespace {

constexpr c10::DeviceType kKiln = c10::DeviceType::PrivateUse1;

std::atomic<int> registeredCount{0};
rt::Device *registeredDevice = nullptr; // set once, before registeredCount
bool registeredOnHost = true;
thread_local c10::DeviceIndex currentIndex = 0;
/// The current stream of each device, per thread, as CUDA has it.
thread_local std::array<c10::StreamId, kMaxDevices> currentStreams{};
std::atomic<c10::StreamId> nextStreamId{1};

//===--- Generator ------------------------------------------------------===//

/// A counter-based generator: its whole state is (seed, offset), 16 bytes,
/// so saving and restoring it (activation checkpointing, get_rng_state)
/// replays exactly. Each random op draws from the stream (seed, offset) and
/// advances the offset.
class KilnGenerator final : public c10::GeneratorImpl {
public:
  explicit KilnGenerator(c10::DeviceIndex index, uint64_t seed = c10::default_rng_seed_val)
      : c10::GeneratorImpl(c10::Device(kKiln, index), c10::DispatchKeySet(c10::DispatchKey::PrivateUse1)),
        seed_(seed) {}

  static c10::DeviceType device_type() { return kKiln; }

  void set_current_seed(uint64_t seed) override {
    seed_ = seed;
    offset_ = 0;
  }
  void set_offset(uint64_t offset) override { offset_ = offset; }
  uint64_t get_offset() const override { return offset_; }
  uint64_t current_seed() const override { return seed_; }
  uint64_t seed() override {
    uint64_t seed = c10::detail::getNonDeterministicRandom();
    set_current_seed(seed);
    return seed;
  }
  void set_state(const c10::TensorImpl &state) override {
    TORCH_CHECK(state.dtype() == caffe2::TypeMeta::Make<uint8_t>() && state.numel() == 16,
                "a kiln generator's state is a torch.uint8 tensor of 16 bytes (seed, offset); got ",
                state.numel(), " elements of ", state.dtype());
    const auto *bytes = static_cast<const uint8_t *>(state.data());
    std::memcpy(&seed_, bytes, 8);
    std::memcpy(&offset_, bytes + 8, 8);
  }
  c10::intrusive_ptr<c10::TensorImpl> get_state() const override {
    at::Tensor state = at::empty({16}, at::TensorOptions().dtype(at::kByte));
    std::memcpy(state.data_ptr(), &seed_, 8);
    std::memcpy(static_cast<uint8_t *>(state.data_ptr()) + 8, &offset_, 8);
    return state.getIntrusivePtr();
  }
  /// The seed of the CPU generator for the next random op (splitmix64 of
  /// the pair, so neighbouring offsets give unrelated streams).
  uint64_t nextStreamSeed() {
    uint64_t z = seed_ ^ (0x9e3779b97f4a7c15ull * (offset_++ + 1));
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }

private:
  KilnGenerator *clone_impl() const override {
    auto *copy = new KilnGenerator(device().index(), seed_);
    copy->offset_ = offset_;
    return copy;
  }

  uint64_t seed_;
  uint64_t offset_ = 0;
};

//===--- Device guard ---------------------------------------------------===//

struct EventRecord {
  std::chrono::steady_clock::time_point time;
};

class KilnGuardImpl final : public c10::impl::DeviceGuardImplInterface {
public:
  c10::DeviceType type() const override { return kKiln; }
  c10::Device exchangeDevice(c10::Device device) const override {
    c10::Device old = getDevice();
    if (device.index() != old.index())
      setDevice(device);
    return old;
  }
  c10::Device getDevice() const override { return {kKiln, currentIndex}; }
  void setDevice(c10::Device device) const override {
    TORCH_CHECK(device.type() == kKiln, "expected a kiln device, got ", device);
    if (device.has_index())
      setCurrentDevice(device.index());
  }
  void uncheckedSetDevice(c10::Device device) const noexcept override {
    if (device.index() >= 0 && device.index() < registeredCount.load())
      currentIndex = device.index();
  }

  c10::Stream getStream(c10::Device device) const override {
    c10::DeviceIndex index = device.has_index() ? device.index() : currentIndex;
    return c10::Stream(c10::Stream::UNSAFE, c10::Device(kKiln, index), currentStreams[index]);
  }
  c10::Stream getDefaultStream(c10::Device device) const override {
    return c10::Stream(c10::Stream::DEFAULT, indexed(device));
  }
  c10::Stream getStreamFromGlobalPool(c10::Device device, bool) const override {
    return getNewStream(device, 0);
  }
  c10::Stream getNewStream(c10::Device device, int) const override {
    return c10::Stream(c10::Stream::UNSAFE, indexed(device), nextStreamId++);
  }
  c10::Stream exchangeStream(c10::Stream stream) const override {
    c10::DeviceIndex index = stream.device_index();
    c10::Stream old(c10::Stream::UNSAFE, stream.device(), currentStreams[index]);
    currentStreams[index] = stream.id();
    return old;
  }
  c10::DeviceIndex deviceCount() const noexcept override {
    return (c10::DeviceIndex)registeredCount.load();
  }

  void record(void **event, const c10::Stream &, const c10::DeviceIndex, const c10::EventFlag) const override {
    throwIfFailed(eagerRuntimeDevice().synchronize(), "recording an event");
    if (*event == nullptr)
      *event = new EventRecord;
    static_cast<EventRecord *>(*event)->time = std::chrono::steady_clock::now();
  }
  void block(void *, const c10::Stream &) const override {}
  bool queryEvent(void *) const override { return true; }
  void destroyEvent(void *event, const c10::DeviceIndex) const noexcept override {
    delete static_cast<EventRecord *>(event);
  }
  void synchronizeEvent(void *) const override {}
  double elapsedTime(void *start, void *end, const c10::DeviceIndex) const override {
    TORCH_CHECK(start && end, "both events must be recorded before elapsed_time");
    auto span = static_cast<EventRecord *>(end)->time - static_cast<EventRecord *>(start)->time;
    return std::chrono::duration<double, std::milli>(span).count();
  }
  bool queryStream(const c10::Stream &) const override { return true; }
  void synchronizeStream(const c10::Stream &) const override {
    throwIfFailed(eagerRuntimeDevice().synchronize(), "synchronize");
  }
  void synchronizeDevice(const c10::DeviceIndex) const override {
    throwIfFailed(eagerRuntimeDevice().synchronize(), "synchronize");
  }
  void recordDataPtrOnStream(const c10::DataPtr &, const c10::Stream &) const override {}

private:
  static c10::Device indexed(c10::Device device) {
    return {kKiln, device.has_index() ? device.index() : currentIndex};
  }
};

//===--- PrivateUse1 hooks ----------------------------------------------===//

class KilnHooks final : public at::PrivateUse1HooksInterface {
public:
  bool isBuilt() const override { return true; }
  bool isAvailable() const override { return true; }
  bool hasPrimaryContext(c10::DeviceIndex) const override { return true; }
  c10::DeviceIndex deviceCount() const override { return (c10::DeviceIndex)registeredCount.load(); }
  void setCurrentDevice(c10::DeviceIndex device) const override { eager::setCurrentDevice(device); }
  c10::DeviceIndex getCurrentDevice() const override { return currentIndex; }
  c10::DeviceIndex exchangeDevice(c10::DeviceIndex device) const override {
    c10::DeviceIndex old = currentIndex;
    eager::setCurrentDevice(device);
    return old;
  }
  c10::DeviceIndex maybeExchangeDevice(c10::DeviceIndex device) const override {
    return exchangeDevice(device);
  }
  const at::Generator &getDefaultGenerator(c10::DeviceIndex device) const override {
    return defaultGenerator(device < 0 ? currentIndex : device);
  }
  at::Generator getNewGenerator(c10::DeviceIndex device) const override {
    c10::DeviceIndex index = device < 0 ? currentIndex : device;
    checkDeviceIndex(index);
    return at::make_generator<KilnGenerator>(index);
  }
  at::Device getDeviceFromPtr(void *) const override { return {kKiln, currentIndex}; }
  bool isPinnedPtr(const void *data) const override { return isPinnedHostPointer(data); }
  at::Allocator *getPinnedMemoryAllocator() const override { return &pinnedHostAllocator(); }
  void resizePrivateUse1Bytes(const c10::Storage &storage, size_t bytes) const override {
    resizeKilnStorage(storage, bytes);
  }
};

} // namespace

c10::DeviceIndex deviceCount() { return (c10::DeviceIndex)registeredCount.load(); }

c10::DeviceIndex currentDevice() { return currentIndex; }

void checkDeviceIndex(c10::DeviceIndex index) {
  TORCH_CHECK_INDEX(index >= 0 && index < registeredCount.load(), "invalid device ordinal: kiln:",
                    static_cast<int>(index), " (this process has ", registeredCount.load(),
                    " kiln device(s); set KILN_NUM_DEVICES for more)");
}

void setCurrentDevice(c10::DeviceIndex index) {
  checkDeviceIndex(index);
  currentIndex = index;
}

const at::Generator &defaultGenerator(c10::DeviceIndex index) {
  checkDeviceIndex(index);
  static std::array<at::Generator, kMaxDevices> generators;
  static std::array<std::once_flag, kMaxDevices> made;
  std::call_once(made[index], [index] {
    generators[index] = at::make_generator<KilnGenerator>(index);
  });
  return generators[index];
}

namespace {
uint64_t nextStreamSeed(const at::Generator &kilnGenerator) {
  at::Generator shared = kilnGenerator; // mutex() is not const
  auto *generator = at::check_generator<KilnGenerator>(shared);
  std::lock_guard<std::mutex> lock(shared.mutex());
  return generator->nextStreamSeed();
}
} // namespace

at::Generator cpuGeneratorFor(const at::Generator &kilnGenerator) {
  return at::detail::createCPUGenerator(nextStreamSeed(kilnGenerator));
}

int64_t nextKernelSeed(const at::Generator &kilnGenerator) {
  // kiln.randomness hashes seeds below 2**31 as 32-bit words.
  return static_cast<int64_t>(nextStreamSeed(kilnGenerator) & 0x7fffffffu);
}

bool isRegistered() { return registeredCount.load() > 0; }

rt::Device &eagerRuntimeDevice() {
  TORCH_CHECK(registeredDevice, "kiln: the kiln device is not registered (import kiln.device)");
  return *registeredDevice;
}

bool memoryIsHost() { return registeredOnHost; }

void throwIfFailed(const rt::Status &status, const char *what) {
  TORCH_CHECK(status.ok(), "kiln: ", what, ": ", status.message());
}

void registerEagerDevice(int count, const std::string &driver) {
  static std::once_flag once;
  std::call_once(once, [count, &driver] {
    TORCH_CHECK(count >= 1 && count <= kMaxDevices, "kiln: the number of kiln devices must be in [1, ",
                kMaxDevices, "]; got ", count);
    try {
      registeredDevice = &runtimeDevice(driver);
    } catch (const std::exception &err) {
      TORCH_CHECK(false, "kiln: KILN_DEVICE=", driver, ": ", err.what());
    }
    registeredOnHost = registeredDevice == &cpuRuntimeDevice();
    registeredCount = count;
    c10::SetAllocator(kKiln, &deviceAllocator());
    static c10::impl::DeviceGuardImplRegistrar guard(kKiln, new KilnGuardImpl());
    at::RegisterPrivateUse1HooksInterface(new KilnHooks());
    registerEagerOps();
    registerEagerAutocast();
  });
}

} // namespace kiln::python::eager
