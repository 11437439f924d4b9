//===- Conformance.cpp - The suite's fixture and test kernels ------------===//

#include "Conformance.h"

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
  return std::nullopt;
}

std::vector<std::string> driverNames() { return DriverRegistry::global().names(); }

void DeviceTest::SetUp() {
  DeviceOptions options;
  options.numThreads = 2;
  StatusOr<std::unique_ptr<Device>> created = createDevice(GetParam(), options);
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
