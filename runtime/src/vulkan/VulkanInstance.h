//===- VulkanInstance.h - The Vulkan library, instance and devices --------===//
//
// Loading libvulkan.so.1 (or $KILN_VULKAN_LOADER), creating an instance and
// choosing a physical device ($KILN_VULKAN_DEVICE: an index or a part of the
// name). Anything missing is StatusCode::Unavailable: the machine lacks
// Vulkan, which callers (the conformance suite) treat differently from a
// driver that fails.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_VULKAN_VULKANINSTANCE_H
#define KILN_RUNTIME_VULKAN_VULKANINSTANCE_H

#include "VulkanApi.h"
#include "kiln/runtime/VulkanDriver.h"

#include <memory>
#include <vector>

namespace kiln::runtime::vulkan {

struct PhysicalDevice {
  VulkanDeviceInfo info;
  VkPhysicalDevice handle = VK_NULL_HANDLE;
  uint32_t computeQueueFamily = 0; // valid when info.hasComputeQueue
};

/// A VkInstance and its entry points; destroyed with the last reference
/// (devices hold one).
class Instance {
public:
  static StatusOr<std::shared_ptr<Instance>> create();
  ~Instance();
  Instance(const Instance &) = delete;
  Instance &operator=(const Instance &) = delete;

  const InstanceApi &api() const { return api_; }
  VkInstance handle() const { return instance_; }
  PFN_vkGetInstanceProcAddr getProcAddr() const { return getProcAddr_; }

  StatusOr<std::vector<PhysicalDevice>> physicalDevices() const;
  /// The device $KILN_VULKAN_DEVICE names, else the first with a compute
  /// queue.
  StatusOr<PhysicalDevice> selectPhysicalDevice() const;

private:
  Instance() = default;

  InstanceApi api_;
  PFN_vkGetInstanceProcAddr getProcAddr_ = nullptr;
  VkInstance instance_ = VK_NULL_HANDLE;
};

/// "1.3.230".
std::string versionString(uint32_t version);

} // namespace kiln::runtime::vulkan

#endif // KILN_RUNTIME_VULKAN_VULKANINSTANCE_H
