//===- Device.cpp - Device buffers, the device allocator, the registry ----===//

#include "kiln/runtime/Device.h"

#include "cpu/CpuDevice.h"
#include "cuda/CudaDriver.h"
#include "vulkan/VulkanDriver.h"

#include <algorithm>

namespace kiln::runtime {

Device::~Device() = default;
Executable::~Executable() = default;

DeviceBuffer &DeviceBuffer::operator=(DeviceBuffer &&other) noexcept {
  if (this != &other) {
    reset();
    device_ = other.device_;
    address_ = other.address_;
    size_ = other.size_;
    handle_ = other.handle_;
    other.device_ = nullptr;
    other.address_ = nullptr;
    other.size_ = 0;
    other.handle_ = 0;
  }
  return *this;
}

void DeviceBuffer::reset() {
  if (device_ && address_)
    device_->deallocate(address_, size_, handle_);
  device_ = nullptr;
  address_ = nullptr;
  size_ = 0;
  handle_ = 0;
}

namespace {
/// A Program output in device memory.
class DeviceMemoryBuffer final : public Buffer {
public:
  explicit DeviceMemoryBuffer(DeviceBuffer buffer) : buffer_(std::move(buffer)) {}
  void *data() override { return buffer_.address(); }

private:
  DeviceBuffer buffer_;
};
} // namespace

StatusOr<std::shared_ptr<Buffer>> DeviceAllocator::allocate(const TensorDesc &desc) {
  KILN_RETURN_IF_ERROR(validateTensorDesc(desc));
  StatusOr<DeviceBuffer> buffer = device_.allocate(static_cast<size_t>(desc.byteSize()));
  if (!buffer.ok())
    return buffer.status().withContext("allocating " + desc.str());
  return std::shared_ptr<Buffer>(std::make_shared<DeviceMemoryBuffer>(std::move(*buffer)));
}

DriverRegistry &DriverRegistry::global() {
  static DriverRegistry *registry = [] {
    auto *created = new DriverRegistry();
    // Registered here rather than by static initializers, which a static
    // library's linker would drop.
    (void)registerCpuDriver(*created);
    (void)registerVulkanDriver(*created);
    (void)registerCudaDriver(*created);
    return created;
  }();
  return *registry;
}

Status DriverRegistry::registerDriver(std::string name, Factory factory) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto &[known, _] : drivers_)
    if (known == name)
      return Status::error("a device driver named '" + name + "' is already registered");
  drivers_.emplace_back(std::move(name), std::move(factory));
  return Status::OK();
}

std::vector<std::string> DriverRegistry::names() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<std::string> names;
  for (const auto &[name, _] : drivers_)
    names.push_back(name);
  std::sort(names.begin(), names.end());
  return names;
}

StatusOr<std::unique_ptr<Device>> DriverRegistry::create(const std::string &name,
                                                         const DeviceOptions &options) const {
  Factory factory;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const auto &[known, registered] : drivers_)
      if (known == name)
        factory = registered;
  }
  if (!factory) {
    std::string known;
    for (const std::string &driver : names())
      known += (known.empty() ? "" : ", ") + driver;
    return Status::error("no device driver named '" + name + "' (this runtime has: " + known +
                         ")");
  }
  return factory(options);
}

StatusOr<std::unique_ptr<Device>> createDevice(const std::string &driver,
                                               const DeviceOptions &options) {
  return DriverRegistry::global().create(driver, options);
}

const ExecutableDesc *executableFor(const Artifact &artifact, const Device &device) {
  const ExecutableDesc *best = nullptr;
  int bestDistance = 0;
  for (const ExecutableDesc &executable : artifact.executables) {
    std::optional<int> distance = device.formatDistance(executable.format);
    if (distance && (!best || *distance < bestDistance)) {
      best = &executable;
      bestDistance = *distance;
    }
  }
  return best;
}

} // namespace kiln::runtime
