//===- Device.h - What every Kiln device driver implements ----------------===//
//
// A device owns memory, loads executables and launches their kernels; a
// Program runs an artifact's plan on any device through this interface. The
// model is IREE's HAL (hal/{device,allocator,executable,driver_registry}.h),
// cut down to what Kiln's plan needs: one implicit in-order queue per device,
// no command buffers yet.
//
// Memory is named by device addresses: what kernels receive in their binding
// slots, so the Program passes the same value to copies and launches. On the
// CPU it is a host pointer; on CUDA a CUdeviceptr; on Vulkan a buffer device
// address. A device address may be offset like a pointer, within the
// allocation it points into.
//
// Work is ordered: copies and launches on one device happen in the order they
// were issued. launch() may return before the kernel has run (a GPU queues
// it); synchronize() waits for everything issued and reports any failure the
// device saw meanwhile. The host reads device memory only through
// copyDeviceToHost, which waits for earlier work to finish.
//
// Every failure is a Status; a driver never throws and never crashes on
// input (a bad executable, an allocation too large, a kernel index out of
// range).
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_DEVICE_H
#define KILN_RUNTIME_DEVICE_H

#include "kiln/runtime/Allocator.h"
#include "kiln/runtime/Artifact.h"
#include "kiln/runtime/Executable.h"
#include "kiln/runtime/Status.h"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::runtime {

class Device;
class ThreadPool;

/// Memory allocated on a device; freed (through its device) when destroyed
/// or reset. Move-only; the device must outlive it.
class DeviceBuffer {
public:
  DeviceBuffer() = default;
  DeviceBuffer(DeviceBuffer &&other) noexcept { *this = std::move(other); }
  DeviceBuffer &operator=(DeviceBuffer &&other) noexcept;
  DeviceBuffer(const DeviceBuffer &) = delete;
  DeviceBuffer &operator=(const DeviceBuffer &) = delete;
  ~DeviceBuffer() { reset(); }

  /// The device address of the first byte; null for an empty handle.
  void *address() const { return address_; }
  /// The bytes asked for (the device may have allocated more).
  size_t size() const { return size_; }
  /// The driver's own handle for the allocation (0 on the CPU).
  uint64_t handle() const { return handle_; }
  explicit operator bool() const { return address_ != nullptr; }
  /// Frees the memory now; the handle becomes empty.
  void reset();

private:
  friend class Device;
  Device *device_ = nullptr;
  void *address_ = nullptr;
  size_t size_ = 0;
  uint64_t handle_ = 0;
};

/// The workgroups of a launch: a 3-D grid. The CPU kernel ABI numbers them
/// linearly, x fastest (id = x + X * (y + Y * z)), and passes x * y * z as the
/// count; codegen for the CPU uses x alone.
struct WorkgroupGrid {
  int64_t x = 1, y = 1, z = 1;
};

/// One kernel launch. The arrays belong to the caller and need only live
/// until launch() returns: a device that queues the launch copies them.
struct LaunchParams {
  WorkgroupGrid workgroups;
  /// Device addresses, one per binding the kernel takes (inputs, then
  /// outputs), in order.
  void *const *bindings = nullptr;
  uint32_t numBindings = 0;
  /// The bytes of each binding the kernel may touch from its address (its
  /// tensor's size), or null: up to the end of its allocation. A GPU driver
  /// binds just these, within its device's limits.
  const uint64_t *bindingBytes = nullptr;
  /// Push-constant-style integers after the bindings: the size symbols'
  /// values, for a kernel of a graph with symbolic shapes.
  const int64_t *values = nullptr;
  uint32_t numValues = 0;
};

/// Settings a driver's factory may honour.
struct DeviceOptions {
  /// Host threads that run workgroups (the CPU driver); 0 for the default
  /// ($KILN_NUM_THREADS, else every hardware thread).
  int numThreads = 0;
};

class Device {
public:
  /// Every allocation's address is a multiple of this.
  static constexpr size_t kMinAlignment = 64;

  virtual ~Device();
  Device(const Device &) = delete;
  Device &operator=(const Device &) = delete;

  /// The driver's registered name: "cpu".
  virtual std::string_view driverName() const = 0;
  /// The ExecutableDesc::format this device loads, e.g. "cpu-x86_64".
  virtual std::string_view executableFormat() const = 0;
  /// How far an executable of `format` is from what runs best here: 0 for
  /// the device's own, more for one it runs less well (a CUDA GPU runs an
  /// older chip's PTX), nullopt for one it cannot load. Program::load takes
  /// the artifact's nearest.
  virtual std::optional<int> formatDistance(std::string_view format) const {
    return format == executableFormat() ? std::optional<int>(0) : std::nullopt;
  }
  /// One line for tools: "cpu-x86_64, 8 threads".
  virtual std::string describe() const = 0;

  //===--- Memory -----------------------------------------------------===//

  /// `bytes` bytes (a distinct, valid address even for 0), aligned to
  /// kMinAlignment. Running out is a Status with StatusCode::OutOfMemory.
  virtual StatusOr<DeviceBuffer> allocate(size_t bytes) = 0;
  /// Copies between host memory and device addresses, or within the device.
  /// copyDeviceToHost waits for the work issued before it.
  virtual Status copyHostToDevice(void *device, const void *host, size_t bytes) = 0;
  virtual Status copyDeviceToHost(void *host, const void *device, size_t bytes) = 0;
  virtual Status copyDeviceToDevice(void *target, const void *source, size_t bytes) = 0;

  //===--- Executables and launches -----------------------------------===//

  /// Loads `executable` (whose format must be executableFormat()) exporting
  /// `kernels`; a binary the device cannot load, or one missing a kernel,
  /// is an error naming it. The result must not outlive the device.
  virtual StatusOr<std::unique_ptr<Executable>>
  loadExecutable(const ExecutableDesc &executable, const std::vector<KernelInfo> &kernels) = 0;
  /// Runs kernel `kernel` of `executable` (loaded by this device) over
  /// `params.workgroups`, each workgroup of the kernel's block size. An
  /// empty grid (a 0 in any dimension) launches nothing. Bindings and values
  /// must be as many as the kernel takes.
  virtual Status launch(const Executable &executable, uint32_t kernel,
                        const LaunchParams &params) = 0;
  /// Waits for all work issued so far; an error the device reported for it
  /// (a kernel fault) is returned here.
  virtual Status synchronize() = 0;
  /// Issues the calling thread's launches on `stream`, a stream of the
  /// driver's native API that the caller owns and keeps alive (torch's
  /// current CUDA stream), until called again with null (the device's
  /// own); synchronize() and the copies then wait for that stream. Devices
  /// without native streams refuse a non-null one.
  virtual Status useExternalStream(void *stream) {
    if (!stream)
      return Status::OK();
    return Status::error("the " + std::string(driverName()) + " driver takes no external stream");
  }

  /// Whether the host reads and writes this device's addresses directly
  /// (the CPU driver): a collective then runs on the buffers themselves.
  virtual bool hostAddressable() const { return false; }

  /// The host threads that run workgroups, for a host to size (the Python
  /// bridge follows torch.get_num_threads()); null for a device that runs
  /// them elsewhere.
  virtual ThreadPool *threadPool() { return nullptr; }

protected:
  Device() = default;
  /// A buffer of this device at `address`, freed by deallocate().
  DeviceBuffer adoptBuffer(void *address, size_t size, uint64_t handle = 0) {
    DeviceBuffer buffer;
    buffer.device_ = this;
    buffer.address_ = address;
    buffer.size_ = size;
    buffer.handle_ = handle;
    return buffer;
  }
  /// Frees what allocate() returned; called once per buffer.
  virtual void deallocate(void *address, size_t size, uint64_t handle) noexcept = 0;

private:
  friend class DeviceBuffer;
};

/// Hands Program::run's output buffers out of a device's memory (as
/// HostAllocator does out of the host's): what a host without its own
/// allocator (kiln-run) uses on any device.
class DeviceAllocator : public Allocator {
public:
  explicit DeviceAllocator(Device &device) : device_(device) {}
  StatusOr<std::shared_ptr<Buffer>> allocate(const TensorDesc &desc) override;

private:
  Device &device_;
};

/// The drivers this runtime was built with, by name, as IREE's
/// iree_hal_driver_registry_t: tools (`kiln-run --device NAME`) and the
/// conformance tests enumerate them. The built-in drivers ("cpu") are
/// registered when the global registry is first used.
class DriverRegistry {
public:
  using Factory = std::function<StatusOr<std::unique_ptr<Device>>(const DeviceOptions &)>;

  static DriverRegistry &global();

  /// Fails if `name` is taken.
  Status registerDriver(std::string name, Factory factory);
  /// Registered names, sorted.
  std::vector<std::string> names() const;
  /// A new device of driver `name`; an unknown name is an error listing the
  /// known ones.
  StatusOr<std::unique_ptr<Device>> create(const std::string &name,
                                           const DeviceOptions &options = {}) const;

private:
  mutable std::mutex mutex_;
  std::vector<std::pair<std::string, Factory>> drivers_;
};

/// DriverRegistry::global().create(name, options).
StatusOr<std::unique_ptr<Device>> createDevice(const std::string &driver,
                                               const DeviceOptions &options = {});

/// The executable of `artifact` that `device` runs best (its nearest format
/// by Device::formatDistance), or null when it runs none.
const ExecutableDesc *executableFor(const Artifact &artifact, const Device &device);

} // namespace kiln::runtime

#endif // KILN_RUNTIME_DEVICE_H
