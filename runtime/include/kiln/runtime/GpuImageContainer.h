//===- GpuImageContainer.h - The "cuda-sm_XY" and "rocm-gfxN" formats -----===//
//
// A CUDA or ROCm executable's bytes (ExecutableDesc::bytes) hold one image
// per kernel, so that each kernel is a module of its own, loaded when the
// program loads: for "cuda-sm_XY" a fatbin with the cubin for the chip and
// its PTX (which a newer GPU's driver compiles), for "rocm-gfxN" an AMD GPU
// code object (an ELF, HSACO). The compiler encodes them, the drivers and
// the artifact verifier decode them. Little-endian:
//
//   u32 magic kGpuImageContainerMagic ("KGPU"), u32 version (1),
//   u32 kernelCount, kernelCount x { u32 nameBytes, name bytes (no NUL; the
//   kernel's symbol and its image's entry function), u64 imageBytes, image }
//
// The kernels' interface (version 1): the parameters are the kernel's
// bindings' device pointers in order, then the size symbols' values as
// int64; the grid is the launch's workgroups along x, the block the
// executable's block size of the kernel.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_GPUIMAGECONTAINER_H
#define KILN_RUNTIME_GPUIMAGECONTAINER_H

#include "kiln/runtime/Status.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::runtime {

/// Device::executableFormat() of a CUDA device: "cuda-" and its chip,
/// "cuda-sm_90" ("cuda-sm_90a" for kernels that use sm_90a's instructions);
/// of a ROCm device, "rocm-" and its chip, "rocm-gfx942".
inline constexpr std::string_view kCudaFormatPrefix = "cuda-";
inline constexpr std::string_view kRocmFormatPrefix = "rocm-";
inline constexpr uint32_t kGpuImageContainerMagic = 0x5550474B; // "KGPU"
inline constexpr uint32_t kGpuImageContainerVersion = 1;
/// The first word of a fatbin (fatbinary's output).
inline constexpr uint32_t kFatbinMagic = 0xBA55ED50;

enum class GpuImageKind { Fatbin, CodeObject };

/// The images a format's container holds; nullopt for other formats.
std::optional<GpuImageKind> gpuImageKindOf(std::string_view format);

struct GpuKernelImage {
  std::string entry;
  std::vector<uint8_t> image;
};

std::vector<uint8_t> encodeGpuImageContainer(const std::vector<GpuKernelImage> &kernels);

/// Any byte string is safe: bad input (truncated, a wrong magic or version,
/// an image that is not of `kind`) is an error naming the problem and its
/// byte offset.
StatusOr<std::vector<GpuKernelImage>> decodeGpuImageContainer(const std::vector<uint8_t> &bytes,
                                                              GpuImageKind kind);

} // namespace kiln::runtime

#endif // KILN_RUNTIME_GPUIMAGECONTAINER_H
