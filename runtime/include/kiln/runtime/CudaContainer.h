//===- CudaContainer.h - The "cuda-sm_XY" executable formats --------------===//
//
// A CUDA executable's bytes (ExecutableDesc::bytes) hold one image per
// kernel, a fatbin with the cubin for the format's chip and its PTX (which a
// newer GPU's driver compiles), so that each kernel is a module of its own,
// loaded when the program loads. The compiler encodes them, the CUDA driver
// and the artifact verifier decode them. Little-endian:
//
//   u32 magic kCudaContainerMagic ("KCUD"), u32 version (1), u32 kernelCount,
//   kernelCount x { u32 nameBytes, name bytes (no NUL; the kernel's symbol
//                   and its image's entry function), u64 imageBytes, image }
//
// The kernels' interface (version 1): the parameters are the kernel's
// bindings' device pointers in order, then the size symbols' values as
// int64; the grid is the launch's workgroups along x, the block the
// executable's block size of the kernel.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_CUDACONTAINER_H
#define KILN_RUNTIME_CUDACONTAINER_H

#include "kiln/runtime/Status.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::runtime {

/// Device::executableFormat() of a CUDA device: "cuda-" and its chip,
/// "cuda-sm_90"; "cuda-sm_90a" for kernels that use sm_90a's instructions.
inline constexpr std::string_view kCudaFormatPrefix = "cuda-";
inline constexpr uint32_t kCudaContainerMagic = 0x4455434B; // "KCUD"
inline constexpr uint32_t kCudaContainerVersion = 1;
/// The first word of a fatbin (fatbinary's output).
inline constexpr uint32_t kFatbinMagic = 0xBA55ED50;

bool isCudaFormat(std::string_view format);

struct CudaKernelImage {
  std::string entry;
  std::vector<uint8_t> image;
};

std::vector<uint8_t> encodeCudaContainer(const std::vector<CudaKernelImage> &kernels);

/// Any byte string is safe: bad input (truncated, a wrong magic or version,
/// an image that is not a fatbin) is an error naming the problem and its
/// byte offset.
StatusOr<std::vector<CudaKernelImage>> decodeCudaContainer(const std::vector<uint8_t> &bytes);

} // namespace kiln::runtime

#endif // KILN_RUNTIME_CUDACONTAINER_H
