//===- VulkanApi.h - The Vulkan entry points the driver uses --------------===//
//
// libvulkan is dlopen'ed, never linked, so that the runtime builds and loads
// on machines without it: prototypes are off and every entry point is a
// function pointer resolved through vkGetInstanceProcAddr (instance level)
// or vkGetDeviceProcAddr (device level). The lists below are the only place
// an entry point is named.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_VULKAN_VULKANAPI_H
#define KILN_RUNTIME_VULKAN_VULKANAPI_H

#ifndef VK_NO_PROTOTYPES
#define VK_NO_PROTOTYPES
#endif
#include <vulkan/vulkan.h>

#include "kiln/runtime/Status.h"

#include <string>

// Resolved with a null instance.
#define KILN_VK_GLOBAL_FUNCTIONS(X)                                            \
  X(vkCreateInstance)                                                          \
  X(vkEnumerateInstanceVersion)

#define KILN_VK_INSTANCE_FUNCTIONS(X)                                          \
  X(vkDestroyInstance)                                                         \
  X(vkEnumeratePhysicalDevices)                                                \
  X(vkGetPhysicalDeviceProperties)                                             \
  X(vkGetPhysicalDeviceQueueFamilyProperties)                                  \
  X(vkGetPhysicalDeviceMemoryProperties)                                       \
  X(vkGetPhysicalDeviceFeatures2)                                              \
  X(vkGetPhysicalDeviceProperties2)                                            \
  X(vkEnumerateDeviceExtensionProperties)                                      \
  X(vkCreateDevice)                                                            \
  X(vkGetDeviceProcAddr)

#define KILN_VK_DEVICE_FUNCTIONS(X)                                            \
  X(vkDestroyDevice)                                                           \
  X(vkGetDeviceQueue)                                                          \
  X(vkCreateBuffer)                                                            \
  X(vkDestroyBuffer)                                                           \
  X(vkGetBufferMemoryRequirements)                                             \
  X(vkAllocateMemory)                                                          \
  X(vkFreeMemory)                                                              \
  X(vkBindBufferMemory)                                                        \
  X(vkMapMemory)                                                               \
  X(vkCreateCommandPool)                                                       \
  X(vkDestroyCommandPool)                                                      \
  X(vkResetCommandPool)                                                        \
  X(vkAllocateCommandBuffers)                                                  \
  X(vkBeginCommandBuffer)                                                      \
  X(vkEndCommandBuffer)                                                        \
  X(vkCmdPipelineBarrier)                                                      \
  X(vkCmdCopyBuffer)                                                           \
  X(vkCmdUpdateBuffer)                                                         \
  X(vkCmdBindPipeline)                                                         \
  X(vkCmdBindDescriptorSets)                                                   \
  X(vkCmdPushConstants)                                                        \
  X(vkCmdDispatch)                                                             \
  X(vkCreateFence)                                                             \
  X(vkDestroyFence)                                                            \
  X(vkResetFences)                                                             \
  X(vkWaitForFences)                                                           \
  X(vkQueueSubmit)                                                             \
  X(vkDeviceWaitIdle)                                                          \
  X(vkCreateShaderModule)                                                      \
  X(vkDestroyShaderModule)                                                     \
  X(vkCreateDescriptorSetLayout)                                               \
  X(vkDestroyDescriptorSetLayout)                                              \
  X(vkCreatePipelineLayout)                                                    \
  X(vkDestroyPipelineLayout)                                                   \
  X(vkCreateComputePipelines)                                                  \
  X(vkDestroyPipeline)                                                         \
  X(vkCreateDescriptorPool)                                                    \
  X(vkDestroyDescriptorPool)                                                   \
  X(vkResetDescriptorPool)                                                     \
  X(vkAllocateDescriptorSets)                                                  \
  X(vkUpdateDescriptorSets)

// Present only where the device has VK_KHR_push_descriptor.
#define KILN_VK_OPTIONAL_DEVICE_FUNCTIONS(X) X(vkCmdPushDescriptorSetKHR)

namespace kiln::runtime::vulkan {

#define KILN_VK_DECLARE(name) PFN_##name name = nullptr;

struct InstanceApi {
  KILN_VK_GLOBAL_FUNCTIONS(KILN_VK_DECLARE)
  KILN_VK_INSTANCE_FUNCTIONS(KILN_VK_DECLARE)
};

struct DeviceApi {
  KILN_VK_DEVICE_FUNCTIONS(KILN_VK_DECLARE)
  KILN_VK_OPTIONAL_DEVICE_FUNCTIONS(KILN_VK_DECLARE)
};

#undef KILN_VK_DECLARE

/// "VK_ERROR_DEVICE_LOST", or the number for a code this header lacks.
std::string resultName(VkResult result);

/// OK for VK_SUCCESS, else an error naming the call ("vkCreateBuffer",
/// "vkCreateComputePipelines(kernel_3_softmax)") and the result. Out of
/// memory results carry StatusCode::OutOfMemory; a lost device says so.
Status check(VkResult result, const std::string &call);

} // namespace kiln::runtime::vulkan

#endif // KILN_RUNTIME_VULKAN_VULKANAPI_H
