//===- NoVulkanDriver.cpp - A build without the Vulkan driver -------------===//
//
// Compiled instead of the driver where vulkan/vulkan.h was missing at
// configure time (install libvulkan-dev and reconfigure to get it).
//
//===----------------------------------------------------------------------===//

#include "VulkanDriver.h"

#include "kiln/runtime/VulkanDriver.h"

namespace kiln::runtime {

Status registerVulkanDriver(DriverRegistry &) { return Status::OK(); }

StatusOr<std::vector<VulkanDeviceInfo>> listVulkanDevices() {
  return Status::error(StatusCode::Unavailable,
                       "this Kiln runtime was built without the Vulkan driver (vulkan/vulkan.h "
                       "was missing; install libvulkan-dev and rebuild)");
}

} // namespace kiln::runtime
