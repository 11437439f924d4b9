//===- VulkanDevice.h - A Vulkan physical device as a Kiln device ---------===//
//
// Memory: one VkBuffer and VkDeviceMemory per allocation, named by a
// synthetic device address (a private, 64-byte aligned 64-bit range) that
// the device maps back to (buffer, offset) for copies and launches, so that
// addresses offset into an allocation (arena slices, views) work as on the
// CPU. Where the device's memory is host visible and coherent (lavapipe,
// integrated GPUs) it stays mapped and the host copies directly; otherwise
// copies go through staging buffers.
//
// Work: launches, device-to-device copies and small copies from the host
// are recorded into one command buffer, a full memory barrier before each
// (a kernel sees the previous kernel's writes), and submitted when the host
// needs the results: at synchronize(), at a copy to the host or a large one
// from it, and before memory or pipelines that queued work may use are
// freed. The device is one mutex:
// Programs run from several threads share it.
//
// Status: every kernel takes one more storage buffer after its bindings,
// the device's status buffer, and one more push-constant word after its
// values, its launch's slot there. A kernel writes a nonzero code to its
// slot when it went wrong (a loop the device cut short); the device reads
// the slots of a batch when the batch completes and reports the first as
// an error naming the kernel.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_VULKAN_VULKANDEVICE_H
#define KILN_RUNTIME_VULKAN_VULKANDEVICE_H

#include "VulkanInstance.h"
#include "kiln/runtime/Device.h"

#include <map>
#include <mutex>

namespace kiln::runtime::vulkan {

class VulkanExecutable;

class VulkanDevice final : public Device {
public:
  /// The largest host-to-device copy recorded into the command buffer
  /// rather than waiting for queued work (vkCmdUpdateBuffer takes up to 64
  /// KiB; a small limit keeps command buffers small).
  static constexpr size_t kInlineUploadBytes = 4096;

  /// The device $KILN_VULKAN_DEVICE selects; StatusCode::Unavailable where
  /// this machine has no Vulkan or no such device.
  static StatusOr<std::unique_ptr<VulkanDevice>> create();
  ~VulkanDevice() override;

  std::string_view driverName() const override { return "vulkan"; }
  std::string_view executableFormat() const override;
  std::string describe() const override;

  StatusOr<DeviceBuffer> allocate(size_t bytes) override;
  Status copyHostToDevice(void *device, const void *host, size_t bytes) override;
  Status copyDeviceToHost(void *host, const void *device, size_t bytes) override;
  Status copyDeviceToDevice(void *target, const void *source, size_t bytes) override;

  StatusOr<std::unique_ptr<Executable>>
  loadExecutable(const ExecutableDesc &executable,
                 const std::vector<KernelInfo> &kernels) override;
  Status launch(const Executable &executable, uint32_t kernel,
                const LaunchParams &params) override;
  Status synchronize() override;

  //===--- For VulkanExecutable ---------------------------------------===//

  const DeviceApi &api() const { return api_; }
  VkDevice handle() const { return device_; }
  const VkPhysicalDeviceLimits &limits() const { return properties_.limits; }
  /// Whether launches push their descriptors (VK_KHR_push_descriptor)
  /// rather than allocating sets from a pool.
  bool pushDescriptors() const { return pushDescriptors_; }
  /// The SPIR-V capabilities a kernel may declare that some devices lack,
  /// each present where the device has (and Kiln enabled) it: 64-bit
  /// integer atomics, float32 atomic adds. Returns what `capability` needs
  /// that this device lacks, or an empty string.
  std::string missingCapability(uint32_t capability) const;
  /// The device's name, for messages.
  std::string deviceName() const { return properties_.deviceName; }
  /// Runs the work queued so far to completion, before an executable
  /// destroys pipelines it may use.
  void drain() noexcept;

protected:
  void deallocate(void *address, size_t size, uint64_t handle) noexcept override;

private:
  struct Allocation {
    VkBuffer buffer = VK_NULL_HANDLE;
    VkDeviceMemory memory = VK_NULL_HANDLE;
    VkDeviceSize bufferSize = 0; // at least 64 bytes, even for size 0
    size_t size = 0;             // as asked
    uint8_t *mapped = nullptr;   // where the host sees it, if it does
  };
  /// An address resolved to the allocation it points into.
  struct Resolved {
    Allocation *allocation;
    VkDeviceSize offset;
  };

  VulkanDevice() = default;
  Status init(std::shared_ptr<Instance> instance, const PhysicalDevice &physical);

  /// `bytes` bytes at `address` inside one allocation (`what` names the
  /// access in the message otherwise).
  StatusOr<Resolved> resolve(const void *address, size_t bytes, const std::string &what);
  /// A buffer of `bytes` bytes; host visible (and mapped) when asked.
  StatusOr<Allocation> createAllocation(VkDeviceSize bytes, bool hostVisible);
  void destroyAllocation(const Allocation &allocation) noexcept;

  /// Begins the command buffer if nothing is recorded yet, else records a
  /// barrier after the commands before.
  Status beginCommand();
  /// Submits what is recorded and waits for it; resets the descriptor pool.
  /// A kernel's status error is returned here, or, where `report` is false
  /// (the caller cannot pass it on), by the next flush that reports.
  Status flush(bool report = true);
  /// The first nonzero status slot of the batch that completed, as an
  /// error; clears the batch's slots.
  Status takeKernelStatus();
  /// The descriptor set of a pool-path launch, flushing once if the pool is
  /// spent.
  StatusOr<VkDescriptorSet> allocateSet(VkDescriptorSetLayout layout, const std::string &kernel);
  /// Copies within the device through the command buffer.
  Status recordCopy(VkBuffer source, VkDeviceSize sourceOffset, VkBuffer target,
                    VkDeviceSize targetOffset, VkDeviceSize bytes);
  /// Host copies where the device memory is not mapped.
  Status stagedUpload(const Resolved &target, const void *host, size_t bytes);
  Status stagedDownload(void *host, const Resolved &source, size_t bytes);

  std::mutex mutex_;
  std::shared_ptr<Instance> instance_;
  VkPhysicalDevice physical_ = VK_NULL_HANDLE;
  VkPhysicalDeviceProperties properties_{};
  VkPhysicalDeviceMemoryProperties memory_{};
  DeviceApi api_;
  VkDevice device_ = VK_NULL_HANDLE;
  VkQueue queue_ = VK_NULL_HANDLE;
  VkCommandPool commandPool_ = VK_NULL_HANDLE;
  VkCommandBuffer commands_ = VK_NULL_HANDLE;
  VkFence fence_ = VK_NULL_HANDLE;
  VkDescriptorPool descriptorPool_ = VK_NULL_HANDLE;
  bool recording_ = false;
  Allocation status_;                    // the kernels' status words, mapped
  std::vector<std::string> statusSlots_; // the kernel launched at each slot
  Status unreported_;                    // a status error no caller took yet
  bool pushDescriptors_ = false;
  bool int64Atomics_ = false;     // shaderBufferInt64Atomics
  bool float32AtomicAdd_ = false; // VK_EXT_shader_atomic_float's shaderBufferFloat32AtomicAdd
  bool hostAccess_ = false;          // allocations are mapped
  VkDeviceSize largestHeap_ = 0;     // no allocation can be larger
  std::map<uintptr_t, Allocation> allocations_; // by synthetic address
  uintptr_t nextAddress_ = uintptr_t(1) << 40;
};

} // namespace kiln::runtime::vulkan

#endif // KILN_RUNTIME_VULKAN_VULKANDEVICE_H
