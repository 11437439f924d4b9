//===- SpirvContainer.h - The "vulkan-spirv" executable format ------------===//
//
// A "vulkan-spirv" executable's bytes (ExecutableDesc::bytes) hold one SPIR-V
// module per kernel, so that each kernel is a pipeline of its own. The
// compiler encodes them, the Vulkan driver and the artifact verifier decode
// them. Little-endian:
//
//   u32 magic kSpirvContainerMagic ("KSPV"), u32 version (2), u32 kernelCount,
//   kernelCount x { u32 nameBytes, name bytes (no NUL; the kernel's symbol
//                   and its module's OpEntryPoint name), zero padding to a
//                   multiple of 4 bytes, u32 wordCount, wordCount x u32 }
//
// The kernels' interface (version 2): storage buffers at set 0, bindings
// 0..n-1 the kernel's n bindings, binding n the device's status buffer
// (u32 words); push-constant words 0..n-1 the bindings' byte offsets in what
// is bound, then the size symbols' values, then the launch's status slot.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_SPIRVCONTAINER_H
#define KILN_RUNTIME_SPIRVCONTAINER_H

#include "kiln/runtime/Artifact.h"
#include "kiln/runtime/Status.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::runtime {

/// Device::executableFormat() of the Vulkan driver.
inline constexpr char kVulkanSpirvFormat[] = "vulkan-spirv";
inline constexpr uint32_t kSpirvContainerMagic = 0x5650534B; // "KSPV"
inline constexpr uint32_t kSpirvContainerVersion = 2;
/// The first word of every SPIR-V module.
inline constexpr uint32_t kSpirvMagic = 0x07230203;

struct SpirvKernelBinary {
  std::string entryPoint;
  std::vector<uint32_t> words;
};

std::vector<uint8_t> encodeSpirvContainer(const std::vector<SpirvKernelBinary> &kernels);

/// Any byte string is safe: bad input (truncated, a wrong magic or version, a
/// module that does not start with the SPIR-V magic) is an error naming the
/// problem and its byte offset.
StatusOr<std::vector<SpirvKernelBinary>> decodeSpirvContainer(const std::vector<uint8_t> &bytes);

/// The LocalSize that OpExecutionMode gives the OpEntryPoint named
/// `entryPoint`, or nullopt when the module has no such entry point or mode;
/// for checking ExecutableDesc::blockSizes. Safe on any words.
std::optional<BlockSize> spirvLocalSize(const std::vector<uint32_t> &words,
                                        std::string_view entryPoint);

/// The capabilities a module declares (its OpCapability operands, in order),
/// so a driver can refuse a kernel that needs what its device lacks; empty
/// for words that are not a module. Safe on any words.
std::vector<uint32_t> spirvCapabilities(const std::vector<uint32_t> &words);

/// SPIR-V capability numbers (the specification's) a driver checks for.
inline constexpr uint32_t kSpirvCapabilityInt64Atomics = 12;
inline constexpr uint32_t kSpirvCapabilityAtomicFloat32AddEXT = 6033;

} // namespace kiln::runtime

#endif // KILN_RUNTIME_SPIRVCONTAINER_H
