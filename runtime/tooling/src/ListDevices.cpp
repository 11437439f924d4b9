//===- ListDevices.cpp - kiln-run --devices -------------------------------===//

#include "kiln/tooling/ListDevices.h"

#include "kiln/runtime/Device.h"
#include "kiln/runtime/VulkanDriver.h"

namespace kiln::runtime {

static std::string vulkanDevices() {
  StatusOr<std::vector<VulkanDeviceInfo>> devices = listVulkanDevices();
  if (!devices.ok())
    return ""; // the driver's own line already says why
  std::string text;
  for (const VulkanDeviceInfo &device : *devices)
    text += std::string(device.selected ? "  * " : "    ") + std::to_string(device.index) + ": " +
            device.name + " (" + device.type + ", Vulkan " + device.apiVersion +
            (device.hasComputeQueue ? "" : ", unusable: no compute queue or Vulkan < 1.1") + ")\n";
  return text;
}

std::string listDevices() {
  std::string text;
  for (const std::string &name : DriverRegistry::global().names()) {
    StatusOr<std::unique_ptr<Device>> device = createDevice(name);
    std::string line = device.ok() ? (*device)->describe()
                                   : "unavailable: " + device.status().message();
    // Some descriptions name their driver already ("vulkan: llvmpipe").
    if (line.rfind(name + ": ", 0) != 0)
      line = name + ": " + line;
    text += line + "\n";
    if (name == "vulkan")
      text += vulkanDevices();
  }
  return text;
}

} // namespace kiln::runtime
