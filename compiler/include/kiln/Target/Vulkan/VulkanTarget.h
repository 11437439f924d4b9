//===- VulkanTarget.h - The Vulkan (SPIR-V) target ------------------------===//
//
// GPUs through Vulkan compute: kernels are mapped onto workgroups of threads
// by the shared GPU layer (Target/GPU), then lowered through MLIR's gpu and
// SPIR-V dialects into one SPIR-V module per kernel, packed into the
// runtime's "vulkan-spirv" container (kiln/runtime/SpirvContainer.h). The
// runtime's Vulkan driver runs them on any Vulkan 1.2 device, Mesa's
// lavapipe (the CPU) included.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_TARGET_VULKAN_VULKANTARGET_H
#define KILN_TARGET_VULKAN_VULKANTARGET_H

#include "kiln/Target/Target.h"

namespace kiln::vulkan {

/// Registers the "vulkan" target kind.
void registerVulkanTarget();

/// Serializes every spirv.module of `kernels` (one per kernel) into the
/// runtime's container.
llvm::Expected<SerializedKernels> serializeSpirvKernels(mlir::ModuleOp kernels, bool keepText);

} // namespace kiln::vulkan

#endif // KILN_TARGET_VULKAN_VULKANTARGET_H
