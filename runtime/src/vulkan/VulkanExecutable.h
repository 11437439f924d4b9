//===- VulkanExecutable.h - SPIR-V kernels as compute pipelines -----------===//
//
// A "vulkan-spirv" executable (SpirvContainer.h) loaded onto a VulkanDevice:
// per kernel a shader module and a compute pipeline, created at load so that
// a launch only records. The pipeline layout is the Kiln kernel ABI: one
// descriptor set of numBindings storage buffers (binding i for launch
// binding i) and a push-constant range of numBindings + numSymbols words.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_VULKAN_VULKANEXECUTABLE_H
#define KILN_RUNTIME_VULKAN_VULKANEXECUTABLE_H

#include "VulkanApi.h"
#include "kiln/runtime/Executable.h"

#include <memory>
#include <vector>

namespace kiln::runtime::vulkan {

class VulkanDevice;

class VulkanExecutable final : public Executable {
public:
  struct Kernel {
    VkShaderModule module = VK_NULL_HANDLE;
    VkDescriptorSetLayout setLayout = VK_NULL_HANDLE;
    VkPipelineLayout layout = VK_NULL_HANDLE;
    VkPipeline pipeline = VK_NULL_HANDLE;
    bool pushDescriptors = false; // else a set from the device's pool
  };

  /// Any bytes are safe: a corrupt container, a kernel without a module or
  /// entry point, a block size that disagrees with the module's LocalSize
  /// or a pipeline the driver refuses is an error naming the kernel.
  static StatusOr<std::unique_ptr<VulkanExecutable>>
  load(VulkanDevice &device, const ExecutableDesc &executable,
       const std::vector<KernelInfo> &kernels);

  /// Waits for queued launches before destroying their pipelines.
  ~VulkanExecutable() override;

  /// `i` indexes the kernels given to load().
  const Kernel &compiled(size_t i) const { return compiled_[i]; }

private:
  VulkanExecutable(VulkanDevice &device, std::vector<KernelInfo> kernels,
                   std::vector<BlockSize> blockSizes);
  Status createKernel(const KernelInfo &info, const std::vector<uint32_t> &words, Kernel &out);

  VulkanDevice &vulkan_;
  std::vector<Kernel> compiled_;
};

} // namespace kiln::runtime::vulkan

#endif // KILN_RUNTIME_VULKAN_VULKANEXECUTABLE_H
