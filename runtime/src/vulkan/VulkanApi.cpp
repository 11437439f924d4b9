//===- VulkanApi.cpp - VkResult as Status ---------------------------------===//

#include "VulkanApi.h"

namespace kiln::runtime::vulkan {

std::string resultName(VkResult result) {
  switch (result) {
#define KILN_VK_RESULT(name)                                                   \
  case name:                                                                   \
    return #name;
    KILN_VK_RESULT(VK_SUCCESS)
    KILN_VK_RESULT(VK_NOT_READY)
    KILN_VK_RESULT(VK_TIMEOUT)
    KILN_VK_RESULT(VK_INCOMPLETE)
    KILN_VK_RESULT(VK_ERROR_OUT_OF_HOST_MEMORY)
    KILN_VK_RESULT(VK_ERROR_OUT_OF_DEVICE_MEMORY)
    KILN_VK_RESULT(VK_ERROR_INITIALIZATION_FAILED)
    KILN_VK_RESULT(VK_ERROR_DEVICE_LOST)
    KILN_VK_RESULT(VK_ERROR_MEMORY_MAP_FAILED)
    KILN_VK_RESULT(VK_ERROR_LAYER_NOT_PRESENT)
    KILN_VK_RESULT(VK_ERROR_EXTENSION_NOT_PRESENT)
    KILN_VK_RESULT(VK_ERROR_FEATURE_NOT_PRESENT)
    KILN_VK_RESULT(VK_ERROR_INCOMPATIBLE_DRIVER)
    KILN_VK_RESULT(VK_ERROR_TOO_MANY_OBJECTS)
    KILN_VK_RESULT(VK_ERROR_FORMAT_NOT_SUPPORTED)
    KILN_VK_RESULT(VK_ERROR_FRAGMENTED_POOL)
    KILN_VK_RESULT(VK_ERROR_UNKNOWN)
    KILN_VK_RESULT(VK_ERROR_OUT_OF_POOL_MEMORY)
    KILN_VK_RESULT(VK_ERROR_INVALID_EXTERNAL_HANDLE)
    KILN_VK_RESULT(VK_ERROR_FRAGMENTATION)
    KILN_VK_RESULT(VK_ERROR_INVALID_SHADER_NV)
#undef KILN_VK_RESULT
  default:
    return "VkResult " + std::to_string(static_cast<int>(result));
  }
}

Status check(VkResult result, const std::string &call) {
  if (result == VK_SUCCESS)
    return Status::OK();
  std::string message = call + ": " + resultName(result);
  switch (result) {
  case VK_ERROR_OUT_OF_HOST_MEMORY:
  case VK_ERROR_OUT_OF_DEVICE_MEMORY:
    return Status::error(StatusCode::OutOfMemory, message);
  case VK_ERROR_DEVICE_LOST:
    // Every later call fails too: say what it means and what to do.
    return Status::error(message + " (the Vulkan device was lost, e.g. a kernel faulted or "
                                   "ran too long; create a new device)");
  default:
    return Status::error(message);
  }
}

} // namespace kiln::runtime::vulkan
