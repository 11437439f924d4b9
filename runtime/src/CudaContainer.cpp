//===- CudaContainer.cpp - The "cuda-sm_XY" executable formats ------------===//

#include "kiln/runtime/CudaContainer.h"

#include "ByteIO.h"

#include <cstring>

namespace kiln::runtime {

bool isCudaFormat(std::string_view format) {
  return format.size() > kCudaFormatPrefix.size() &&
         format.substr(0, kCudaFormatPrefix.size()) == kCudaFormatPrefix;
}

std::vector<uint8_t> encodeCudaContainer(const std::vector<CudaKernelImage> &kernels) {
  ByteWriter out;
  out.u32(kCudaContainerMagic);
  out.u32(kCudaContainerVersion);
  out.u32(static_cast<uint32_t>(kernels.size()));
  for (const CudaKernelImage &kernel : kernels) {
    out.string(kernel.entry);
    out.blob(kernel.image);
  }
  return std::move(out.bytes());
}

StatusOr<std::vector<CudaKernelImage>> decodeCudaContainer(const std::vector<uint8_t> &bytes) {
  ByteReader in(bytes.data(), bytes.size());
  auto bad = [&](const std::string &message) {
    return Status::error("invalid CUDA container: " + message + " at byte offset " +
                         std::to_string(in.offset()));
  };
  uint32_t magic = in.u32("the magic");
  if (in.ok() && magic != kCudaContainerMagic)
    return bad("it does not start with the magic \"KCUD\"");
  uint32_t version = in.u32("the version");
  if (in.ok() && version != kCudaContainerVersion)
    return bad("version " + std::to_string(version) + ", this runtime reads " +
               std::to_string(kCudaContainerVersion));
  // Each kernel takes at least 12 bytes (its two sizes).
  uint32_t count = in.count("kernels", 12);
  std::vector<CudaKernelImage> kernels;
  for (uint32_t i = 0; in.ok() && i < count; ++i) {
    CudaKernelImage kernel;
    kernel.entry = in.string("a kernel's name");
    size_t imageAt = in.offset();
    kernel.image = in.blob("a kernel's image");
    if (!in.ok())
      break;
    uint32_t first = 0;
    if (kernel.image.size() >= 4)
      std::memcpy(&first, kernel.image.data(), 4);
    if (first != kFatbinMagic)
      return Status::error("invalid CUDA container: the image of kernel '" + kernel.entry +
                           "' is not a fatbin, at byte offset " + std::to_string(imageAt));
    kernels.push_back(std::move(kernel));
  }
  if (!in.ok())
    return in.status().withContext("invalid CUDA container");
  return kernels;
}

} // namespace kiln::runtime
