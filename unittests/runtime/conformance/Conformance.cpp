//===- Conformance.cpp - The suite's fixture and test kernels ------------===//

#include "Conformance.h"

#include "kiln/runtime/SpirvContainer.h"

#include <fstream>
#include <iterator>

namespace kiln::runtime::conformance {

static std::vector<uint8_t> readFile(const char *path) {
  std::ifstream file(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(file), {});
}

std::optional<std::vector<uint8_t>> testKernelLibrary(std::string_view format,
                                                      TestLibrary library) {
  // test_kernels*.c, built for this host as shared objects. A driver of
  // another format adds its build of the same kernels here.
  if (format == hostCpuTarget())
    return readFile(library == TestLibrary::Main ? KILN_TEST_KERNELS_PATH
                                                 : KILN_TEST_OTHER_KERNELS_PATH);
#ifdef KILN_TEST_SPIRV_KERNELS_PATH
  // vulkan/*.mlir, compiled to SPIR-V and packed at build time.
  if (format == kVulkanSpirvFormat)
    return readFile(library == TestLibrary::Main ? KILN_TEST_SPIRV_KERNELS_PATH
                                                 : KILN_TEST_OTHER_SPIRV_KERNELS_PATH);
#endif
  return std::nullopt;
}

std::vector<BlockSize> testBlockSizes(const ExecutableDesc &executable,
                                      const std::vector<KernelInfo> &kernels) {
  if (executable.format != kVulkanSpirvFormat)
    return {};
  StatusOr<std::vector<SpirvKernelBinary>> modules = decodeSpirvContainer(executable.bytes);
  std::vector<BlockSize> sizes;
  for (const KernelInfo &kernel : kernels) {
    BlockSize size;
    if (modules.ok())
      for (const SpirvKernelBinary &module : *modules)
        if (module.entryPoint == kernel.symbol)
          size = spirvLocalSize(module.words, kernel.symbol).value_or(BlockSize());
    sizes.push_back(size);
  }
  return sizes;
}

std::vector<std::string> driverNames() { return DriverRegistry::global().names(); }

void DeviceTest::SetUp() {
  DeviceOptions options;
  options.numThreads = 2;
  StatusOr<std::unique_ptr<Device>> created = createDevice(GetParam(), options);
  // A machine without the driver's hardware or library (no Vulkan loader,
  // say) skips its tests; any other failure to create a device fails them.
  if (!created.ok() && created.status().code() == StatusCode::Unavailable)
    GTEST_SKIP() << created.status().message();
  ASSERT_TRUE(created.ok()) << created.status().message();
  device = std::move(*created);
  EXPECT_EQ(device->driverName(), GetParam());
}

ExecutableDesc DeviceTest::testExecutable(TestLibrary library) {
  ExecutableDesc executable;
  executable.format = format();
  std::optional<std::vector<uint8_t>> bytes = testKernelLibrary(executable.format, library);
  if (!bytes) {
    ADD_FAILURE() << "no test kernels for format '" << executable.format << "'";
    return executable;
  }
  EXPECT_FALSE(bytes->empty()) << "the test kernel library is empty";
  executable.bytes = std::move(*bytes);
  return executable;
}

} // namespace kiln::runtime::conformance
