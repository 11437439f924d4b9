//===- VulkanDriver.h - The Vulkan driver's entry into the registry -------===//
//
// Free of Vulkan headers, so that Device.cpp registers the driver the same
// way whether or not this build has it (NoVulkanDriver.cpp stands in when
// vulkan/vulkan.h was missing at configure time).
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_VULKAN_VULKANDRIVER_H
#define KILN_RUNTIME_VULKAN_VULKANDRIVER_H

#include "kiln/runtime/Device.h"

namespace kiln::runtime {

/// Registers "vulkan" (DriverRegistry::global() does, on first use); does
/// nothing in a build without the driver.
Status registerVulkanDriver(DriverRegistry &registry);

} // namespace kiln::runtime

#endif // KILN_RUNTIME_VULKAN_VULKANDRIVER_H
