//===- VulkanDriver.cpp - Registering the driver, listing devices ---------===//

#include "VulkanDriver.h"

#include "VulkanDevice.h"
#include "kiln/runtime/VulkanDriver.h"

namespace kiln::runtime {

Status registerVulkanDriver(DriverRegistry &registry) {
  return registry.registerDriver(
      "vulkan", [](const DeviceOptions &) -> StatusOr<std::unique_ptr<Device>> {
        StatusOr<std::unique_ptr<vulkan::VulkanDevice>> device = vulkan::VulkanDevice::create();
        if (!device.ok())
          return device.status();
        return std::unique_ptr<Device>(std::move(*device));
      });
}

StatusOr<std::vector<VulkanDeviceInfo>> listVulkanDevices() {
  StatusOr<std::shared_ptr<vulkan::Instance>> instance = vulkan::Instance::create();
  if (!instance.ok())
    return instance.status();
  StatusOr<std::vector<vulkan::PhysicalDevice>> devices = (*instance)->physicalDevices();
  if (!devices.ok())
    return devices.status();
  StatusOr<vulkan::PhysicalDevice> selected = (*instance)->selectPhysicalDevice();
  std::vector<VulkanDeviceInfo> infos;
  for (const vulkan::PhysicalDevice &device : *devices) {
    infos.push_back(device.info);
    infos.back().selected = selected.ok() && selected->info.index == device.info.index;
  }
  return infos;
}

} // namespace kiln::runtime
