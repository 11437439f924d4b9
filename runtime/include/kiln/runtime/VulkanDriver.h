//===- VulkanDriver.h - What tools may ask of the Vulkan driver -----------===//
//
// The Vulkan device itself is reached through the DriverRegistry ("vulkan");
// this is what a tool needs besides: the physical devices it could pick
// ($KILN_VULKAN_DEVICE selects one by index or by a part of its name).
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_VULKANDRIVER_H
#define KILN_RUNTIME_VULKANDRIVER_H

#include "kiln/runtime/Status.h"

#include <cstdint>
#include <string>
#include <vector>

namespace kiln::runtime {

struct VulkanDeviceInfo {
  uint32_t index = 0;      // what $KILN_VULKAN_DEVICE takes
  std::string name;        // "llvmpipe (LLVM 15.0.6, 256 bits)"
  std::string type;        // "discrete gpu", "integrated gpu", "cpu", ...
  std::string apiVersion;  // "1.3.230"
  bool hasComputeQueue = false;
  bool selected = false;   // what createDevice("vulkan") would use
};

/// The physical devices Vulkan reports; StatusCode::Unavailable with the
/// reason where there is no Vulkan (no loader, or this runtime was built
/// without the driver).
StatusOr<std::vector<VulkanDeviceInfo>> listVulkanDevices();

} // namespace kiln::runtime

#endif // KILN_RUNTIME_VULKANDRIVER_H
