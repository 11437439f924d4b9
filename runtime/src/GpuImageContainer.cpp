//===- GpuImageContainer.cpp - The "cuda-sm_XY" and "rocm-gfxN" formats ---===//

#include "kiln/runtime/GpuImageContainer.h"

#include "ByteIO.h"

#include <cstring>

namespace kiln::runtime {

std::optional<GpuImageKind> gpuImageKindOf(std::string_view format) {
  auto startsWith = [&](std::string_view prefix) {
    return format.size() > prefix.size() && format.substr(0, prefix.size()) == prefix;
  };
  if (startsWith(kCudaFormatPrefix))
    return GpuImageKind::Fatbin;
  if (startsWith(kRocmFormatPrefix))
    return GpuImageKind::CodeObject;
  return std::nullopt;
}

std::vector<uint8_t> encodeGpuImageContainer(const std::vector<GpuKernelImage> &kernels) {
  ByteWriter out;
  out.u32(kGpuImageContainerMagic);
  out.u32(kGpuImageContainerVersion);
  out.u32(static_cast<uint32_t>(kernels.size()));
  for (const GpuKernelImage &kernel : kernels) {
    out.string(kernel.entry);
    out.blob(kernel.image);
  }
  return std::move(out.bytes());
}

/// Whether `image` starts as an image of `kind` does.
static bool looksLike(const std::vector<uint8_t> &image, GpuImageKind kind) {
  if (image.size() < 4)
    return false;
  if (kind == GpuImageKind::CodeObject)
    return std::memcmp(image.data(), "\x7f" "ELF", 4) == 0;
  uint32_t first = 0;
  std::memcpy(&first, image.data(), 4);
  return first == kFatbinMagic;
}

StatusOr<std::vector<GpuKernelImage>> decodeGpuImageContainer(const std::vector<uint8_t> &bytes,
                                                              GpuImageKind kind) {
  ByteReader in(bytes.data(), bytes.size());
  auto bad = [&](const std::string &message) {
    return Status::error("invalid GPU image container: " + message + " at byte offset " +
                         std::to_string(in.offset()));
  };
  uint32_t magic = in.u32("the magic");
  if (in.ok() && magic != kGpuImageContainerMagic)
    return bad("it does not start with the magic \"KGPU\"");
  uint32_t version = in.u32("the version");
  if (in.ok() && version != kGpuImageContainerVersion)
    return bad("version " + std::to_string(version) + ", this runtime reads " +
               std::to_string(kGpuImageContainerVersion));
  // Each kernel takes at least 12 bytes (its two sizes).
  uint32_t count = in.count("kernels", 12);
  std::vector<GpuKernelImage> kernels;
  for (uint32_t i = 0; in.ok() && i < count; ++i) {
    GpuKernelImage kernel;
    kernel.entry = in.string("a kernel's name");
    size_t imageAt = in.offset();
    kernel.image = in.blob("a kernel's image");
    if (!in.ok())
      break;
    if (!looksLike(kernel.image, kind))
      return Status::error("invalid GPU image container: the image of kernel '" + kernel.entry +
                           "' is not " +
                           (kind == GpuImageKind::Fatbin ? "a fatbin" : "an ELF code object") +
                           ", at byte offset " + std::to_string(imageAt));
    kernels.push_back(std::move(kernel));
  }
  if (!in.ok())
    return in.status().withContext("invalid GPU image container");
  return kernels;
}

} // namespace kiln::runtime
