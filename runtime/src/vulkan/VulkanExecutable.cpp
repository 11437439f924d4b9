//===- VulkanExecutable.cpp - SPIR-V kernels as compute pipelines ---------===//

#include "VulkanExecutable.h"

#include "VulkanDevice.h"
#include "kiln/runtime/SpirvContainer.h"

namespace kiln::runtime::vulkan {

/// VK_KHR_push_descriptor guarantees at least this many per set.
static constexpr uint32_t kMinMaxPushDescriptors = 32;

VulkanExecutable::VulkanExecutable(VulkanDevice &device, std::vector<KernelInfo> kernels,
                                   std::vector<BlockSize> blockSizes)
    : Executable(device, std::move(kernels), std::move(blockSizes)), vulkan_(device) {}

static std::string blockText(const BlockSize &block) {
  return std::to_string(block.x) + "x" + std::to_string(block.y) + "x" + std::to_string(block.z);
}

StatusOr<std::unique_ptr<VulkanExecutable>>
VulkanExecutable::load(VulkanDevice &device, const ExecutableDesc &executable,
                       const std::vector<KernelInfo> &kernels) {
  if (kernels.empty())
    return std::unique_ptr<VulkanExecutable>(new VulkanExecutable(device, {}, {}));
  if (!executable.blockSizes.empty() && executable.blockSizes.size() != kernels.size())
    return Status::error("the executable has " + std::to_string(executable.blockSizes.size()) +
                         " block sizes for " + std::to_string(kernels.size()) + " kernels");
  StatusOr<std::vector<SpirvKernelBinary>> modules = decodeSpirvContainer(executable.bytes);
  if (!modules.ok())
    return modules.status();

  // The block sizes are the modules' LocalSizes, which the executable's own
  // must match where it states them.
  const VkPhysicalDeviceLimits &limits = device.limits();
  std::vector<const SpirvKernelBinary *> found(kernels.size());
  std::vector<BlockSize> blockSizes(kernels.size());
  for (size_t i = 0; i < kernels.size(); ++i) {
    const KernelInfo &info = kernels[i];
    std::string which = "kernel '" + info.name + "' (symbol '" + info.symbol + "')";
    for (const SpirvKernelBinary &module : *modules)
      if (module.entryPoint == info.symbol)
        found[i] = &module;
    if (!found[i])
      return Status::error(which + ": the executable has no SPIR-V module for it");
    std::optional<BlockSize> local = spirvLocalSize(found[i]->words, info.symbol);
    if (!local)
      return Status::error(which + ": its SPIR-V module has no entry point '" + info.symbol +
                           "' with a LocalSize execution mode (or is malformed)");
    if (!executable.blockSizes.empty() && !(executable.blockSizes[i] == *local))
      return Status::error(which + ": the executable's block size " +
                           blockText(executable.blockSizes[i]) +
                           " is not the module's LocalSize " + blockText(*local));
    uint64_t threads = uint64_t(local->x) * local->y * local->z;
    if (local->x > limits.maxComputeWorkGroupSize[0] ||
        local->y > limits.maxComputeWorkGroupSize[1] ||
        local->z > limits.maxComputeWorkGroupSize[2] ||
        threads > limits.maxComputeWorkGroupInvocations)
      return Status::error(which + ": its workgroup of " + blockText(*local) +
                           " threads exceeds this device's limits");
    // The status buffer and its slot's word come after the kernel's own.
    uint64_t pushBytes = (uint64_t(info.numBindings) + info.numSymbols + 1) * 4;
    if (pushBytes > limits.maxPushConstantsSize)
      return Status::error(which + " needs " + std::to_string(pushBytes) +
                           " bytes of push constants, above this device's maxPushConstantsSize of " +
                           std::to_string(limits.maxPushConstantsSize));
    if (info.numBindings + 1 > limits.maxPerStageDescriptorStorageBuffers)
      return Status::error(which + " takes " + std::to_string(info.numBindings + 1) +
                           " buffers, above this device's maxPerStageDescriptorStorageBuffers of " +
                           std::to_string(limits.maxPerStageDescriptorStorageBuffers));
    for (uint32_t capability : spirvCapabilities(found[i]->words))
      if (std::string missing = device.missingCapability(capability); !missing.empty())
        return Status::error(StatusCode::Unavailable,
                             which + " uses " + missing + ", which this device (" +
                                 device.deviceName() +
                                 ") lacks; run this graph on Kiln's CPU target");
    blockSizes[i] = *local;
  }

  std::unique_ptr<VulkanExecutable> loaded(
      new VulkanExecutable(device, kernels, std::move(blockSizes)));
  loaded->compiled_.resize(kernels.size());
  for (size_t i = 0; i < kernels.size(); ++i)
    KILN_RETURN_IF_ERROR(loaded->createKernel(kernels[i], found[i]->words, loaded->compiled_[i]));
  return loaded;
}

Status VulkanExecutable::createKernel(const KernelInfo &info, const std::vector<uint32_t> &words,
                                      Kernel &out) {
  const DeviceApi &vk = vulkan_.api();
  VkDevice device = vulkan_.handle();
  std::string call = "(" + info.name + ")";

  VkShaderModuleCreateInfo moduleInfo{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
  moduleInfo.codeSize = words.size() * 4;
  moduleInfo.pCode = words.data();
  KILN_RETURN_IF_ERROR(
      check(vk.vkCreateShaderModule(device, &moduleInfo, nullptr, &out.module), "vkCreateShaderModule" + call));

  // The kernel's bindings, then the device's status buffer.
  const uint32_t numDescriptors = info.numBindings + 1;
  out.pushDescriptors = vulkan_.pushDescriptors() && numDescriptors <= kMinMaxPushDescriptors;
  std::vector<VkDescriptorSetLayoutBinding> bindings(numDescriptors);
  for (uint32_t i = 0; i < numDescriptors; ++i)
    bindings[i] = {i, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1, VK_SHADER_STAGE_COMPUTE_BIT, nullptr};
  VkDescriptorSetLayoutCreateInfo setInfo{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
  setInfo.flags = out.pushDescriptors ? VK_DESCRIPTOR_SET_LAYOUT_CREATE_PUSH_DESCRIPTOR_BIT_KHR : 0;
  setInfo.bindingCount = numDescriptors;
  setInfo.pBindings = bindings.data();
  KILN_RETURN_IF_ERROR(check(vk.vkCreateDescriptorSetLayout(device, &setInfo, nullptr, &out.setLayout),
                             "vkCreateDescriptorSetLayout" + call));

  VkPushConstantRange range{VK_SHADER_STAGE_COMPUTE_BIT, 0,
                            (info.numBindings + info.numSymbols + 1) * 4};
  VkPipelineLayoutCreateInfo layoutInfo{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
  layoutInfo.setLayoutCount = 1;
  layoutInfo.pSetLayouts = &out.setLayout;
  layoutInfo.pushConstantRangeCount = range.size ? 1 : 0;
  layoutInfo.pPushConstantRanges = &range;
  KILN_RETURN_IF_ERROR(check(vk.vkCreatePipelineLayout(device, &layoutInfo, nullptr, &out.layout),
                             "vkCreatePipelineLayout" + call));

  VkComputePipelineCreateInfo pipelineInfo{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
  pipelineInfo.stage = {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO};
  pipelineInfo.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  pipelineInfo.stage.module = out.module;
  pipelineInfo.stage.pName = info.symbol.c_str();
  pipelineInfo.layout = out.layout;
  return check(vk.vkCreateComputePipelines(device, VK_NULL_HANDLE, 1, &pipelineInfo, nullptr,
                                           &out.pipeline),
               "vkCreateComputePipelines" + call);
}

VulkanExecutable::~VulkanExecutable() {
  if (compiled_.empty())
    return;
  vulkan_.drain();
  const DeviceApi &vk = vulkan_.api();
  VkDevice device = vulkan_.handle();
  for (const Kernel &kernel : compiled_) {
    if (kernel.pipeline)
      vk.vkDestroyPipeline(device, kernel.pipeline, nullptr);
    if (kernel.layout)
      vk.vkDestroyPipelineLayout(device, kernel.layout, nullptr);
    if (kernel.setLayout)
      vk.vkDestroyDescriptorSetLayout(device, kernel.setLayout, nullptr);
    if (kernel.module)
      vk.vkDestroyShaderModule(device, kernel.module, nullptr);
  }
}

} // namespace kiln::runtime::vulkan
