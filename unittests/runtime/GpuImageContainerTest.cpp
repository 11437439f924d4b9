//===- GpuImageContainerTest.cpp - The CUDA and ROCm executable formats --===//

#include "kiln/runtime/GpuImageContainer.h"

#include <gtest/gtest.h>

#include <cstring>

using namespace kiln::runtime;

namespace {

std::vector<uint8_t> fatbin(uint8_t fill) {
  std::vector<uint8_t> bytes(16, fill);
  std::memcpy(bytes.data(), &kFatbinMagic, 4);
  return bytes;
}

std::vector<uint8_t> elf() { return {0x7f, 'E', 'L', 'F', 2, 1, 1, 0}; }

TEST(GpuImageContainerTest, RoundTripsEachKindOfImage) {
  std::vector<GpuKernelImage> kernels{{"kernel_0_add", fatbin(1)}, {"k", fatbin(2)}};
  StatusOr<std::vector<GpuKernelImage>> decoded =
      decodeGpuImageContainer(encodeGpuImageContainer(kernels), GpuImageKind::Fatbin);
  ASSERT_TRUE(decoded.ok()) << decoded.status().message();
  ASSERT_EQ(decoded->size(), 2u);
  EXPECT_EQ((*decoded)[1].entry, "k");
  EXPECT_EQ((*decoded)[1].image, fatbin(2));
  decoded = decodeGpuImageContainer(encodeGpuImageContainer({{"k", elf()}}), GpuImageKind::CodeObject);
  ASSERT_TRUE(decoded.ok()) << decoded.status().message();
  EXPECT_EQ((*decoded)[0].image, elf());
}

TEST(GpuImageContainerTest, FormatsNameTheirImages) {
  EXPECT_EQ(gpuImageKindOf("cuda-sm_90"), GpuImageKind::Fatbin);
  EXPECT_EQ(gpuImageKindOf("rocm-gfx942"), GpuImageKind::CodeObject);
  EXPECT_EQ(gpuImageKindOf("cuda-"), std::nullopt);
  EXPECT_EQ(gpuImageKindOf("vulkan-spirv"), std::nullopt);
}

TEST(GpuImageContainerTest, RejectsBadBytesNamingTheProblem) {
  std::vector<uint8_t> bytes = encodeGpuImageContainer({{"k", fatbin(1)}});
  // Another kind of image than the format's.
  StatusOr<std::vector<GpuKernelImage>> decoded = decodeGpuImageContainer(bytes, GpuImageKind::CodeObject);
  ASSERT_FALSE(decoded.ok());
  EXPECT_NE(decoded.status().message().find("the image of kernel 'k' is not an ELF code object"),
            std::string::npos) << decoded.status().message();
  // Every truncation fails cleanly.
  for (size_t size = 0; size < bytes.size(); ++size) {
    std::vector<uint8_t> cut(bytes.begin(), bytes.begin() + size);
    EXPECT_FALSE(decodeGpuImageContainer(cut, GpuImageKind::Fatbin).ok()) << size;
  }
  bytes[0] ^= 1;
  decoded = decodeGpuImageContainer(bytes, GpuImageKind::Fatbin);
  ASSERT_FALSE(decoded.ok());
  EXPECT_NE(decoded.status().message().find("magic \"KGPU\""), std::string::npos);
}

} // namespace
