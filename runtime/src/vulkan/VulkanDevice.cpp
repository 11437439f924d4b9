//===- VulkanDevice.cpp - A Vulkan physical device as a Kiln device -------===//

#include "VulkanDevice.h"

#include "VulkanExecutable.h"
#include "kiln/runtime/SpirvContainer.h"

#include <cstdlib>
#include <cstring>

namespace kiln::runtime::vulkan {

/// Descriptor sets one batch may allocate on the pool path before it is
/// submitted, and storage-buffer descriptors among them.
static constexpr uint32_t kSetsPerBatch = 256;
static constexpr uint32_t kDescriptorsPerBatch = kSetsPerBatch * 16;
/// Launches per batch, each with a status word: a batch this long is
/// submitted before the next launch.
static constexpr uint32_t kStatusSlots = 4096;
/// The status codes kernels write (kiln-spirv-form-kernels's).
static constexpr uint32_t kLoopCutShort = 1;
/// Between allocations' synthetic addresses, so that an address one past an
/// allocation's end is in no other allocation.
static constexpr uintptr_t kAddressGap = 1 << 16;

/// Test and debugging knobs: "0" turns a feature off.
static bool envOff(const char *name) {
  const char *value = std::getenv(name);
  return value && std::strcmp(value, "0") == 0;
}

StatusOr<std::unique_ptr<VulkanDevice>> VulkanDevice::create() {
  StatusOr<std::shared_ptr<Instance>> instance = Instance::create();
  if (!instance.ok())
    return instance.status();
  StatusOr<PhysicalDevice> physical = (*instance)->selectPhysicalDevice();
  if (!physical.ok())
    return physical.status();
  std::unique_ptr<VulkanDevice> device(new VulkanDevice());
  KILN_RETURN_IF_ERROR(device->init(std::move(*instance), *physical)
                           .withContext("creating a Vulkan device on '" + physical->info.name + "'"));
  return device;
}

std::string VulkanDevice::missingCapability(uint32_t capability) const {
  if (capability == kSpirvCapabilityInt64Atomics && !int64Atomics_)
    return "64-bit integer atomics (shaderBufferInt64Atomics)";
  if (capability == kSpirvCapabilityAtomicFloat32AddEXT && !float32AtomicAdd_)
    return "float32 atomic adds (VK_EXT_shader_atomic_float's shaderBufferFloat32AtomicAdd)";
  return "";
}

Status VulkanDevice::init(std::shared_ptr<Instance> instance, const PhysicalDevice &physical) {
  instance_ = std::move(instance);
  physical_ = physical.handle;
  const InstanceApi &vk = instance_->api();
  vk.vkGetPhysicalDeviceProperties(physical_, &properties_);
  vk.vkGetPhysicalDeviceMemoryProperties(physical_, &memory_);

  uint32_t count = 0;
  KILN_RETURN_IF_ERROR(check(vk.vkEnumerateDeviceExtensionProperties(physical_, nullptr, &count, nullptr),
                             "vkEnumerateDeviceExtensionProperties"));
  std::vector<VkExtensionProperties> extensions(count);
  KILN_RETURN_IF_ERROR(check(
      vk.vkEnumerateDeviceExtensionProperties(physical_, nullptr, &count, extensions.data()),
      "vkEnumerateDeviceExtensionProperties"));
  bool hasPushDescriptor = false, hasAtomicFloat = false;
  for (const VkExtensionProperties &extension : extensions) {
    hasPushDescriptor |= std::strcmp(extension.extensionName, VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME) == 0;
    hasAtomicFloat |=
        std::strcmp(extension.extensionName, VK_EXT_SHADER_ATOMIC_FLOAT_EXTENSION_NAME) == 0;
  }
  pushDescriptors_ = hasPushDescriptor && !envOff("KILN_VULKAN_PUSH_DESCRIPTORS");

  // The SPIR-V capabilities Kiln's Vulkan target compiles for (its
  // description's features): 64-bit integers and floats, and 8- and 16-bit
  // storage for bool, half and bfloat16 tensors.
  // Scatters' atomics, where the device has them: 64-bit integer ones and
  // float32 adds (a kernel that declares one is refused on a device
  // without it when it loads).
  VkPhysicalDeviceShaderAtomicFloatFeaturesEXT hasFloatAtomics{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_ATOMIC_FLOAT_FEATURES_EXT};
  VkPhysicalDeviceVulkan12Features has12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
  has12.pNext = hasAtomicFloat ? &hasFloatAtomics : nullptr;
  VkPhysicalDeviceVulkan11Features has11{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES};
  has11.pNext = &has12;
  VkPhysicalDeviceFeatures2 has{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  has.pNext = &has11;
  if (properties_.apiVersion < VK_API_VERSION_1_2)
    return Status::error(StatusCode::Unavailable,
                  "the device supports Vulkan " + std::to_string(VK_API_VERSION_MAJOR(properties_.apiVersion)) +
                      "." + std::to_string(VK_API_VERSION_MINOR(properties_.apiVersion)) +
                      "; Kiln's kernels need Vulkan 1.2");
  vk.vkGetPhysicalDeviceFeatures2(physical_, &has);
  std::string missing;
  auto need = [&](VkBool32 present, const char *name) {
    if (!present)
      missing += (missing.empty() ? "" : ", ") + std::string(name);
    return VK_TRUE;
  };
  VkPhysicalDeviceVulkan12Features use12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
  use12.shaderInt8 = need(has12.shaderInt8, "shaderInt8");
  use12.shaderFloat16 = need(has12.shaderFloat16, "shaderFloat16");
  use12.storageBuffer8BitAccess = need(has12.storageBuffer8BitAccess, "storageBuffer8BitAccess");
  int64Atomics_ = use12.shaderBufferInt64Atomics = has12.shaderBufferInt64Atomics;
  VkPhysicalDeviceShaderAtomicFloatFeaturesEXT useFloatAtomics{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_ATOMIC_FLOAT_FEATURES_EXT};
  float32AtomicAdd_ = useFloatAtomics.shaderBufferFloat32AtomicAdd =
      hasAtomicFloat && hasFloatAtomics.shaderBufferFloat32AtomicAdd;
  use12.pNext = float32AtomicAdd_ ? &useFloatAtomics : nullptr;
  VkPhysicalDeviceVulkan11Features use11{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES};
  use11.storageBuffer16BitAccess = need(has11.storageBuffer16BitAccess, "storageBuffer16BitAccess");
  use11.pNext = &use12;
  VkPhysicalDeviceFeatures2 use{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  use.features.shaderInt64 = need(has.features.shaderInt64, "shaderInt64");
  use.features.shaderInt16 = need(has.features.shaderInt16, "shaderInt16");
  use.features.shaderFloat64 = need(has.features.shaderFloat64, "shaderFloat64");
  use.pNext = &use11;
  // Reductions combine their threads' partials by subgroups.
  VkPhysicalDeviceSubgroupProperties subgroups{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
  VkPhysicalDeviceProperties2 properties2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
  properties2.pNext = &subgroups;
  vk.vkGetPhysicalDeviceProperties2(physical_, &properties2);
  constexpr VkSubgroupFeatureFlags kSubgroupOperations =
      VK_SUBGROUP_FEATURE_BASIC_BIT | VK_SUBGROUP_FEATURE_ARITHMETIC_BIT;
  need((subgroups.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) &&
           (subgroups.supportedOperations & kSubgroupOperations) == kSubgroupOperations,
       "subgroup arithmetic in compute shaders");
  if (!missing.empty())
    return Status::error(StatusCode::Unavailable,
                  "the device lacks features Kiln's Vulkan kernels use: " + missing);

  float priority = 1.0f;
  VkDeviceQueueCreateInfo queueInfo{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
  queueInfo.queueFamilyIndex = physical.computeQueueFamily;
  queueInfo.queueCount = 1;
  queueInfo.pQueuePriorities = &priority;
  std::vector<const char *> enabled;
  if (pushDescriptors_)
    enabled.push_back(VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME);
  if (float32AtomicAdd_)
    enabled.push_back(VK_EXT_SHADER_ATOMIC_FLOAT_EXTENSION_NAME);
  VkDeviceCreateInfo deviceInfo{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
  deviceInfo.queueCreateInfoCount = 1;
  deviceInfo.pQueueCreateInfos = &queueInfo;
  deviceInfo.pNext = &use;
  deviceInfo.enabledExtensionCount = static_cast<uint32_t>(enabled.size());
  deviceInfo.ppEnabledExtensionNames = enabled.data();
  KILN_RETURN_IF_ERROR(check(vk.vkCreateDevice(physical_, &deviceInfo, nullptr, &device_), "vkCreateDevice"));

#define KILN_VK_DEVICE(name)                                                   \
  api_.name = reinterpret_cast<PFN_##name>(vk.vkGetDeviceProcAddr(device_, #name));        \
  if (!api_.name)                                                              \
    return Status::error("the Vulkan driver has no " #name);
  KILN_VK_DEVICE_FUNCTIONS(KILN_VK_DEVICE)
#undef KILN_VK_DEVICE
  api_.vkCmdPushDescriptorSetKHR = reinterpret_cast<PFN_vkCmdPushDescriptorSetKHR>(
      vk.vkGetDeviceProcAddr(device_, "vkCmdPushDescriptorSetKHR"));
  pushDescriptors_ &= api_.vkCmdPushDescriptorSetKHR != nullptr;

  api_.vkGetDeviceQueue(device_, physical.computeQueueFamily, 0, &queue_);
  VkCommandPoolCreateInfo poolInfo{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
  poolInfo.flags = VK_COMMAND_POOL_CREATE_TRANSIENT_BIT;
  poolInfo.queueFamilyIndex = physical.computeQueueFamily;
  KILN_RETURN_IF_ERROR(
      check(api_.vkCreateCommandPool(device_, &poolInfo, nullptr, &commandPool_), "vkCreateCommandPool"));
  VkCommandBufferAllocateInfo commandInfo{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
  commandInfo.commandPool = commandPool_;
  commandInfo.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  commandInfo.commandBufferCount = 1;
  KILN_RETURN_IF_ERROR(check(api_.vkAllocateCommandBuffers(device_, &commandInfo, &commands_),
                             "vkAllocateCommandBuffers"));
  VkFenceCreateInfo fenceInfo{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
  KILN_RETURN_IF_ERROR(check(api_.vkCreateFence(device_, &fenceInfo, nullptr, &fence_), "vkCreateFence"));
  if (!pushDescriptors_) {
    VkDescriptorPoolSize size{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, kDescriptorsPerBatch};
    VkDescriptorPoolCreateInfo info{VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
    info.maxSets = kSetsPerBatch;
    info.poolSizeCount = 1;
    info.pPoolSizes = &size;
    KILN_RETURN_IF_ERROR(check(api_.vkCreateDescriptorPool(device_, &info, nullptr, &descriptorPool_),
                               "vkCreateDescriptorPool"));
  }

  // Kernels read mapped memory only where it is as fast to them as any: a
  // host-visible, coherent type in the largest device-local heap (all of
  // lavapipe's and an integrated GPU's memory; a discrete GPU's BAR window
  // is smaller and stays unused).
  VkDeviceSize largestLocal = 0, largestMapped = 0;
  const VkMemoryPropertyFlags mappedFlags =
      VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT | VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT |
      VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
  for (uint32_t i = 0; i < memory_.memoryTypeCount; ++i) {
    const VkMemoryType &type = memory_.memoryTypes[i];
    VkDeviceSize heap = memory_.memoryHeaps[type.heapIndex].size;
    if (heap > largestHeap_)
      largestHeap_ = heap;
    if ((type.propertyFlags & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT) && heap > largestLocal)
      largestLocal = heap;
    if ((type.propertyFlags & mappedFlags) == mappedFlags && heap > largestMapped)
      largestMapped = heap;
  }
  hostAccess_ = largestMapped > 0 && largestMapped >= largestLocal &&
                !envOff("KILN_VULKAN_HOST_VISIBLE");

  StatusOr<Allocation> status = createAllocation(kStatusSlots * 4, /*hostVisible=*/true);
  if (!status.ok())
    return status.status().withContext("the kernels' status buffer");
  status_ = *status;
  std::memset(status_.mapped, 0, kStatusSlots * 4);
  return Status::OK();
}

VulkanDevice::~VulkanDevice() {
  if (!device_)
    return;
  drain();
  (void)api_.vkDeviceWaitIdle(device_);
  for (const auto &[address, allocation] : allocations_)
    destroyAllocation(allocation);
  destroyAllocation(status_);
  if (descriptorPool_)
    api_.vkDestroyDescriptorPool(device_, descriptorPool_, nullptr);
  if (fence_)
    api_.vkDestroyFence(device_, fence_, nullptr);
  if (commandPool_)
    api_.vkDestroyCommandPool(device_, commandPool_, nullptr);
  api_.vkDestroyDevice(device_, nullptr);
}

std::string_view VulkanDevice::executableFormat() const { return kVulkanSpirvFormat; }

std::string VulkanDevice::describe() const {
  std::string type = "other";
  switch (properties_.deviceType) {
  case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU:
    type = "integrated gpu";
    break;
  case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU:
    type = "discrete gpu";
    break;
  case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU:
    type = "virtual gpu";
    break;
  case VK_PHYSICAL_DEVICE_TYPE_CPU:
    type = "cpu";
    break;
  default:
    break;
  }
  uint32_t v = properties_.apiVersion;
  return "vulkan: " + std::string(properties_.deviceName) + ", " + type + " device, Vulkan " +
         std::to_string(VK_API_VERSION_MAJOR(v)) + "." + std::to_string(VK_API_VERSION_MINOR(v));
}

//===--- Memory ---------------------------------------------------------===//

StatusOr<VulkanDevice::Allocation> VulkanDevice::createAllocation(VkDeviceSize bytes,
                                                                  bool hostVisible) {
  Allocation allocation;
  allocation.bufferSize = bytes;
  VkBufferCreateInfo bufferInfo{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  bufferInfo.size = bytes;
  bufferInfo.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                     VK_BUFFER_USAGE_TRANSFER_DST_BIT;
  bufferInfo.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  KILN_RETURN_IF_ERROR(
      check(api_.vkCreateBuffer(device_, &bufferInfo, nullptr, &allocation.buffer), "vkCreateBuffer"));
  VkMemoryRequirements requirements;
  api_.vkGetBufferMemoryRequirements(device_, allocation.buffer, &requirements);

  // The first allowed type with the flags wanted; device-local otherwise
  // preferred, any type as the last resort.
  VkMemoryPropertyFlags wanted =
      hostVisible ? VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT
                  : VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT;
  int chosen = -1;
  for (uint32_t i = 0; i < memory_.memoryTypeCount && chosen < 0; ++i)
    if ((requirements.memoryTypeBits & (1u << i)) &&
        (memory_.memoryTypes[i].propertyFlags & wanted) == wanted)
      chosen = static_cast<int>(i);
  for (uint32_t i = 0; i < memory_.memoryTypeCount && chosen < 0 && !hostVisible; ++i)
    if (requirements.memoryTypeBits & (1u << i))
      chosen = static_cast<int>(i);
  if (chosen < 0) {
    api_.vkDestroyBuffer(device_, allocation.buffer, nullptr);
    return Status::error("the Vulkan device has no memory type for a " +
                         std::string(hostVisible ? "host-visible " : "") + "storage buffer");
  }
  VkMemoryAllocateInfo memoryInfo{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
  memoryInfo.allocationSize = requirements.size;
  memoryInfo.memoryTypeIndex = static_cast<uint32_t>(chosen);
  Status status = check(api_.vkAllocateMemory(device_, &memoryInfo, nullptr, &allocation.memory),
                        "vkAllocateMemory");
  if (status.ok())
    status = check(api_.vkBindBufferMemory(device_, allocation.buffer, allocation.memory, 0),
                   "vkBindBufferMemory");
  if (status.ok() && hostVisible) {
    void *mapped = nullptr;
    status = check(api_.vkMapMemory(device_, allocation.memory, 0, VK_WHOLE_SIZE, 0, &mapped),
                   "vkMapMemory");
    allocation.mapped = static_cast<uint8_t *>(mapped);
  }
  if (!status.ok()) {
    destroyAllocation(allocation);
    return status;
  }
  return allocation;
}

void VulkanDevice::destroyAllocation(const Allocation &allocation) noexcept {
  // Freeing the memory unmaps it.
  if (allocation.buffer)
    api_.vkDestroyBuffer(device_, allocation.buffer, nullptr);
  if (allocation.memory)
    api_.vkFreeMemory(device_, allocation.memory, nullptr);
}

StatusOr<DeviceBuffer> VulkanDevice::allocate(size_t bytes) {
  auto outOfMemory = [&](const std::string &why) {
    return Status::error(StatusCode::OutOfMemory, "out of Vulkan device memory allocating " +
                                                      std::to_string(bytes) + " bytes" + why);
  };
  // Whole alignment units, at least one: a buffer cannot be empty, and even
  // 0 bytes get an address of their own.
  size_t rounded = bytes == 0 ? kMinAlignment
                              : (bytes + kMinAlignment - 1) / kMinAlignment * kMinAlignment;
  if (rounded < bytes || rounded > largestHeap_)
    return outOfMemory(" (the largest memory heap has " + std::to_string(largestHeap_) + ")");
  std::lock_guard<std::mutex> lock(mutex_);
  if (nextAddress_ > UINTPTR_MAX - rounded - kAddressGap)
    return outOfMemory(" (device addresses are spent)");
  StatusOr<Allocation> allocation = createAllocation(rounded, hostAccess_);
  if (!allocation.ok()) {
    if (allocation.status().code() == StatusCode::OutOfMemory)
      return outOfMemory(" (" + allocation.status().message() + ")");
    return allocation.status();
  }
  allocation->size = bytes;
  uintptr_t address = nextAddress_;
  nextAddress_ += rounded + kAddressGap;
  allocations_.emplace(address, *allocation);
  return adoptBuffer(reinterpret_cast<void *>(address), bytes);
}

void VulkanDevice::deallocate(void *address, size_t, uint64_t) noexcept {
  std::lock_guard<std::mutex> lock(mutex_);
  auto found = allocations_.find(reinterpret_cast<uintptr_t>(address));
  if (found == allocations_.end())
    return;
  // Queued work may use it: run that first. A failure here is the queued
  // work's; the device reports a lost device again at the next call.
  if (recording_)
    (void)flush(/*report=*/false);
  destroyAllocation(found->second);
  allocations_.erase(found);
}

StatusOr<VulkanDevice::Resolved> VulkanDevice::resolve(const void *address, size_t bytes,
                                                       const std::string &what) {
  uintptr_t at = reinterpret_cast<uintptr_t>(address);
  auto next = allocations_.upper_bound(at);
  if (next != allocations_.begin()) {
    auto &[base, allocation] = *std::prev(next);
    uintptr_t offset = at - base;
    if (offset <= allocation.size && bytes <= allocation.size - offset)
      return Resolved{&allocation, offset};
  }
  char text[32];
  std::snprintf(text, sizeof(text), "%p", address);
  return Status::error(what + ": " + std::to_string(bytes) + " bytes at device address " + text +
                       " are not inside one allocation of this Vulkan device");
}

//===--- Recording and submitting ------------------------------------===//

Status VulkanDevice::beginCommand() {
  if (!recording_) {
    VkCommandBufferBeginInfo info{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    info.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
    KILN_RETURN_IF_ERROR(check(api_.vkBeginCommandBuffer(commands_, &info), "vkBeginCommandBuffer"));
    recording_ = true;
    return Status::OK();
  }
  // Every command waits for the ones before: kernels and copies see earlier
  // writes, and none overwrites what an earlier one still reads.
  VkMemoryBarrier barrier{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  barrier.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
  barrier.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT |
                          VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
  VkPipelineStageFlags stages = VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT;
  api_.vkCmdPipelineBarrier(commands_, stages, stages, 0, 1, &barrier, 0, nullptr, 0, nullptr);
  return Status::OK();
}

Status VulkanDevice::flush(bool report) {
  auto reported = [&](Status status) {
    if (status.ok() && report && !unreported_.ok())
      std::swap(status, unreported_);
    return status;
  };
  if (!recording_)
    return reported(Status::OK());
  recording_ = false;
  // The host reads what the commands wrote once the fence signals.
  VkMemoryBarrier barrier{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  barrier.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
  barrier.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
  api_.vkCmdPipelineBarrier(commands_,
                            VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                            VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &barrier, 0, nullptr, 0, nullptr);
  Status status = check(api_.vkEndCommandBuffer(commands_), "vkEndCommandBuffer");
  if (status.ok()) {
    VkSubmitInfo submit{VK_STRUCTURE_TYPE_SUBMIT_INFO};
    submit.commandBufferCount = 1;
    submit.pCommandBuffers = &commands_;
    status = check(api_.vkQueueSubmit(queue_, 1, &submit, fence_), "vkQueueSubmit");
    if (status.ok()) {
      status = check(api_.vkWaitForFences(device_, 1, &fence_, VK_TRUE, UINT64_MAX),
                     "vkWaitForFences");
      (void)api_.vkResetFences(device_, 1, &fence_);
    }
  }
  Status kernels = takeKernelStatus();
  if (!kernels.ok() && unreported_.ok())
    unreported_ = kernels;
  // Whatever happened, the next batch starts afresh.
  (void)api_.vkResetCommandPool(device_, commandPool_, 0);
  if (descriptorPool_)
    (void)api_.vkResetDescriptorPool(device_, descriptorPool_, 0);
  return reported(status);
}

Status VulkanDevice::takeKernelStatus() {
  auto *words = reinterpret_cast<uint32_t *>(status_.mapped);
  Status status;
  for (size_t slot = 0; slot < statusSlots_.size() && status.ok(); ++slot) {
    if (words[slot] == 0)
      continue;
    std::string kernel = "kernel '" + statusSlots_[slot] + "'";
    if (words[slot] == kLoopCutShort)
      status = Status::error(
          kernel + " ended a loop before its last iteration: the Vulkan device (" +
          std::string(properties_.deviceName) +
          ") cut it short, so its results are wrong. Mesa's lavapipe stops a kernel "
          "invocation's loops after 65535 iterations in all; run this graph on a GPU or on "
          "Kiln's CPU target");
    else
      status = Status::error(kernel + " reported status " + std::to_string(words[slot]));
  }
  std::memset(words, 0, statusSlots_.size() * 4);
  statusSlots_.clear();
  return status;
}


void VulkanDevice::drain() noexcept {
  std::lock_guard<std::mutex> lock(mutex_);
  (void)flush(/*report=*/false);
}

Status VulkanDevice::synchronize() {
  std::lock_guard<std::mutex> lock(mutex_);
  return flush();
}

Status VulkanDevice::recordCopy(VkBuffer source, VkDeviceSize sourceOffset, VkBuffer target,
                                VkDeviceSize targetOffset, VkDeviceSize bytes) {
  KILN_RETURN_IF_ERROR(beginCommand());
  VkBufferCopy region{sourceOffset, targetOffset, bytes};
  api_.vkCmdCopyBuffer(commands_, source, target, 1, &region);
  return Status::OK();
}

//===--- Copies ------------------------------------------------------===//

Status VulkanDevice::stagedUpload(const Resolved &target, const void *host, size_t bytes) {
  StatusOr<Allocation> staging = createAllocation(bytes, /*hostVisible=*/true);
  if (!staging.ok())
    return staging.status().withContext("a staging buffer for a host-to-device copy");
  std::memcpy(staging->mapped, host, bytes);
  Status status = recordCopy(staging->buffer, 0, target.allocation->buffer, target.offset, bytes);
  if (status.ok())
    status = flush();
  destroyAllocation(*staging);
  return status;
}

Status VulkanDevice::stagedDownload(void *host, const Resolved &source, size_t bytes) {
  StatusOr<Allocation> staging = createAllocation(bytes, /*hostVisible=*/true);
  if (!staging.ok())
    return staging.status().withContext("a staging buffer for a device-to-host copy");
  Status status = recordCopy(source.allocation->buffer, source.offset, staging->buffer, 0, bytes);
  if (status.ok())
    status = flush();
  if (status.ok())
    std::memcpy(host, staging->mapped, bytes);
  destroyAllocation(*staging);
  return status;
}

Status VulkanDevice::copyHostToDevice(void *device, const void *host, size_t bytes) {
  if (bytes == 0)
    return Status::OK();
  std::lock_guard<std::mutex> lock(mutex_);
  StatusOr<Resolved> target = resolve(device, bytes, "copy from the host");
  if (!target.ok())
    return target.status();
  // Queued kernels may still read what this overwrites. A small copy goes
  // into the command buffer after them (vkCmdUpdateBuffer takes the bytes
  // now), so an eager op's scalars do not wait for the queue to drain.
  if (recording_ && bytes <= kInlineUploadBytes && bytes % 4 == 0 && target->offset % 4 == 0) {
    KILN_RETURN_IF_ERROR(beginCommand());
    api_.vkCmdUpdateBuffer(commands_, target->allocation->buffer, target->offset, bytes, host);
    return Status::OK();
  }
  KILN_RETURN_IF_ERROR(flush());
  if (!target->allocation->mapped)
    return stagedUpload(*target, host, bytes);
  std::memcpy(target->allocation->mapped + target->offset, host, bytes);
  return Status::OK();
}

Status VulkanDevice::copyDeviceToHost(void *host, const void *device, size_t bytes) {
  if (bytes == 0)
    return Status::OK();
  std::lock_guard<std::mutex> lock(mutex_);
  StatusOr<Resolved> source = resolve(device, bytes, "copy to the host");
  if (!source.ok())
    return source.status();
  KILN_RETURN_IF_ERROR(flush());
  if (!source->allocation->mapped)
    return stagedDownload(host, *source, bytes);
  std::memcpy(host, source->allocation->mapped + source->offset, bytes);
  return Status::OK();
}

Status VulkanDevice::copyDeviceToDevice(void *target, const void *source, size_t bytes) {
  if (bytes == 0)
    return Status::OK();
  std::lock_guard<std::mutex> lock(mutex_);
  StatusOr<Resolved> to = resolve(target, bytes, "device-to-device copy target");
  if (!to.ok())
    return to.status();
  StatusOr<Resolved> from = resolve(source, bytes, "device-to-device copy source");
  if (!from.ok())
    return from.status();
  bool overlap = to->allocation == from->allocation && to->offset < from->offset + bytes &&
                 from->offset < to->offset + bytes;
  if (!overlap)
    return recordCopy(from->allocation->buffer, from->offset, to->allocation->buffer, to->offset,
                      bytes);
  // vkCmdCopyBuffer forbids overlapping regions: go through a scratch
  // buffer (or the mapping), as memmove would.
  if (from->allocation->mapped) {
    KILN_RETURN_IF_ERROR(flush());
    std::memmove(to->allocation->mapped + to->offset, from->allocation->mapped + from->offset,
                 bytes);
    return Status::OK();
  }
  StatusOr<Allocation> scratch = createAllocation(bytes, /*hostVisible=*/false);
  if (!scratch.ok())
    return scratch.status().withContext("a scratch buffer for an overlapping copy");
  Status status = recordCopy(from->allocation->buffer, from->offset, scratch->buffer, 0, bytes);
  if (status.ok())
    status = recordCopy(scratch->buffer, 0, to->allocation->buffer, to->offset, bytes);
  if (status.ok())
    status = flush();
  destroyAllocation(*scratch);
  return status;
}

//===--- Executables and launches ---------------------------------------===//

StatusOr<std::unique_ptr<Executable>>
VulkanDevice::loadExecutable(const ExecutableDesc &executable,
                             const std::vector<KernelInfo> &kernels) {
  if (executable.format != executableFormat())
    return Status::error("an executable of format '" + executable.format +
                         "' cannot load on a device that runs '" +
                         std::string(executableFormat()) + "'");
  StatusOr<std::unique_ptr<VulkanExecutable>> loaded =
      VulkanExecutable::load(*this, executable, kernels);
  if (!loaded.ok())
    return loaded.status();
  return std::unique_ptr<Executable>(std::move(*loaded));
}

StatusOr<VkDescriptorSet> VulkanDevice::allocateSet(VkDescriptorSetLayout layout,
                                                    const std::string &kernel) {
  VkDescriptorSetAllocateInfo info{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
  info.descriptorPool = descriptorPool_;
  info.descriptorSetCount = 1;
  info.pSetLayouts = &layout;
  VkDescriptorSet set = VK_NULL_HANDLE;
  VkResult result = api_.vkAllocateDescriptorSets(device_, &info, &set);
  if (result == VK_ERROR_OUT_OF_POOL_MEMORY || result == VK_ERROR_FRAGMENTED_POOL) {
    // The batch's pool is spent: run the batch, which resets it.
    KILN_RETURN_IF_ERROR(flush());
    result = api_.vkAllocateDescriptorSets(device_, &info, &set);
  }
  KILN_RETURN_IF_ERROR(check(result, "vkAllocateDescriptorSets(" + kernel + ")"));
  return set;
}

Status VulkanDevice::launch(const Executable &executable, uint32_t kernel,
                            const LaunchParams &params) {
  if (&executable.device() != this)
    return Status::error("launch of an executable that another device loaded");
  if (kernel >= executable.numKernels())
    return Status::error("launch of kernel " + std::to_string(kernel) +
                         ", but the executable has " +
                         std::to_string(executable.numKernels()) + " kernels");
  const KernelInfo &info = executable.kernel(kernel);
  if (params.numBindings != info.numBindings || params.numValues != info.numSymbols)
    return Status::error("kernel '" + info.name + "' takes " +
                         std::to_string(info.numBindings) + " bindings and " +
                         std::to_string(info.numSymbols) + " values, the launch passes " +
                         std::to_string(params.numBindings) + " and " +
                         std::to_string(params.numValues));
  const WorkgroupGrid &grid = params.workgroups;
  if (grid.x < 0 || grid.y < 0 || grid.z < 0)
    return Status::error("kernel '" + info.name + "': negative workgroup count");
  int64_t count = 0;
  if (__builtin_mul_overflow(grid.x, grid.y, &count) ||
      __builtin_mul_overflow(count, grid.z, &count))
    return Status::error("kernel '" + info.name + "': the workgroup grid " +
                         std::to_string(grid.x) + "x" + std::to_string(grid.y) + "x" +
                         std::to_string(grid.z) + " overflows");
  const int64_t dims[3] = {grid.x, grid.y, grid.z};
  for (int d = 0; d < 3; ++d)
    if (dims[d] > properties_.limits.maxComputeWorkGroupCount[d])
      return Status::error("kernel '" + info.name + "': " + std::to_string(dims[d]) +
                           " workgroups in dimension " + "xyz"[d] + ", above this device's " +
                           "maxComputeWorkGroupCount of " +
                           std::to_string(properties_.limits.maxComputeWorkGroupCount[d]));

  // The push constants: each binding's offset within what is bound for it,
  // then the values as int32, then the launch's status slot.
  std::vector<uint32_t> words(size_t(params.numBindings) + params.numValues + 1);
  if (words.size() * 4 > properties_.limits.maxPushConstantsSize)
    return Status::error("kernel '" + info.name + "' needs " + std::to_string(words.size() * 4) +
                         " bytes of push constants, above this device's maxPushConstantsSize of " +
                         std::to_string(properties_.limits.maxPushConstantsSize));
  for (uint32_t i = 0; i < params.numValues; ++i) {
    int64_t value = params.values[i];
    if (value < INT32_MIN || value > INT32_MAX)
      return Status::error("kernel '" + info.name + "': value " + std::to_string(i) + " is " +
                           std::to_string(value) +
                           ", outside the int32 range Vulkan kernels take");
    words[params.numBindings + i] = static_cast<uint32_t>(static_cast<int32_t>(value));
  }
  if (count == 0)
    return Status::OK();

  const auto &vulkanExecutable = static_cast<const VulkanExecutable &>(executable);
  const VulkanExecutable::Kernel &compiled = vulkanExecutable.compiled(kernel);
  std::lock_guard<std::mutex> lock(mutex_);
  // Bound at the offset rounded down to the device's alignment, to the end
  // of the buffer; the kernel adds the rest (its push-constant word).
  const VkDeviceSize alignment = properties_.limits.minStorageBufferOffsetAlignment
                                     ? properties_.limits.minStorageBufferOffsetAlignment
                                     : 1;
  // A batch as long as the status buffer runs before this launch joins.
  if (statusSlots_.size() == kStatusSlots)
    KILN_RETURN_IF_ERROR(flush());
  std::vector<VkDescriptorBufferInfo> buffers(params.numBindings + 1);
  const VkDeviceSize maxRange = properties_.limits.maxStorageBufferRange;
  for (uint32_t i = 0; i < params.numBindings; ++i) {
    std::string which = "kernel '" + info.name + "', binding " + std::to_string(i);
    size_t bytes = params.bindingBytes ? params.bindingBytes[i] : 0;
    StatusOr<Resolved> binding = resolve(params.bindings[i], bytes, which);
    if (!binding.ok())
      return binding.status();
    // An address one past the end still binds inside the buffer.
    VkDeviceSize last = binding->allocation->bufferSize - 1;
    VkDeviceSize bound = (binding->offset < last ? binding->offset : last) / alignment * alignment;
    // The range: to the binding's last byte where its size is known (so
    // that a slice of a large arena binds within the device's limit), else
    // to the end of its allocation.
    VkDeviceSize range = binding->allocation->bufferSize - bound;
    if (params.bindingBytes) {
      VkDeviceSize used = (binding->offset - bound + bytes + 15) / 16 * 16;
      range = std::min<VkDeviceSize>(range, std::max<VkDeviceSize>(used, 16));
    }
    if (range > maxRange)
      return Status::error(which + ": " + std::to_string(range) +
                           " bytes, above this device's maxStorageBufferRange of " +
                           std::to_string(maxRange) + " (a tensor this large cannot be bound)");
    // Kernels index with 32-bit integers.
    if (range > VkDeviceSize(INT32_MAX))
      return Status::error(which + ": " + std::to_string(range) +
                           " bytes; Kiln's Vulkan kernels address at most 2 GiB per tensor");
    buffers[i] = {binding->allocation->buffer, bound, range};
    words[i] = static_cast<uint32_t>(binding->offset - bound);
  }
  buffers[params.numBindings] = {status_.buffer, 0, VK_WHOLE_SIZE};
  const uint32_t numDescriptors = params.numBindings + 1;
  std::vector<VkWriteDescriptorSet> writes(numDescriptors);
  for (uint32_t i = 0; i < numDescriptors; ++i) {
    writes[i] = {VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
    writes[i].dstBinding = i;
    writes[i].descriptorCount = 1;
    writes[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    writes[i].pBufferInfo = &buffers[i];
  }

  VkDescriptorSet set = VK_NULL_HANDLE;
  if (!compiled.pushDescriptors) {
    StatusOr<VkDescriptorSet> allocated = allocateSet(compiled.setLayout, info.name);
    if (!allocated.ok())
      return allocated.status();
    set = *allocated;
    for (VkWriteDescriptorSet &write : writes)
      write.dstSet = set;
    api_.vkUpdateDescriptorSets(device_, numDescriptors, writes.data(), 0, nullptr);
  }
  KILN_RETURN_IF_ERROR(beginCommand());
  api_.vkCmdBindPipeline(commands_, VK_PIPELINE_BIND_POINT_COMPUTE, compiled.pipeline);
  if (compiled.pushDescriptors)
    api_.vkCmdPushDescriptorSetKHR(commands_, VK_PIPELINE_BIND_POINT_COMPUTE, compiled.layout, 0,
                                   numDescriptors, writes.data());
  else if (set)
    api_.vkCmdBindDescriptorSets(commands_, VK_PIPELINE_BIND_POINT_COMPUTE, compiled.layout, 0, 1,
                                 &set, 0, nullptr);
  words.back() = static_cast<uint32_t>(statusSlots_.size());
  statusSlots_.push_back(info.name);
  if (!words.empty())
    api_.vkCmdPushConstants(commands_, compiled.layout, VK_SHADER_STAGE_COMPUTE_BIT, 0,
                            static_cast<uint32_t>(words.size() * 4), words.data());
  api_.vkCmdDispatch(commands_, static_cast<uint32_t>(grid.x), static_cast<uint32_t>(grid.y),
                     static_cast<uint32_t>(grid.z));
  return Status::OK();
}

} // namespace kiln::runtime::vulkan
