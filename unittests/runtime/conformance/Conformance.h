//===- Conformance.h - The device conformance suite's fixture ------------===//
//
// Every test of the suite runs once per registered driver (DriverRegistry),
// so a new driver passes the same tests unchanged. What a driver must add is
// the test kernels in its executable format (testKernelLibrary): the kernels
// of test_kernels.c and test_kernels_other.c, with the same bindings and
// semantics (workgroup ids linear, x fastest); without them the tests that
// launch kernels fail.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_UNITTESTS_RUNTIME_CONFORMANCE_H
#define KILN_UNITTESTS_RUNTIME_CONFORMANCE_H

#include "kiln/runtime/Runtime.h"

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace kiln::runtime::conformance {

enum class TestLibrary { Main, Other };

/// The test kernels compiled for `format`, or nullopt where this build has
/// none for it.
std::optional<std::vector<uint8_t>> testKernelLibrary(std::string_view format,
                                                      TestLibrary library = TestLibrary::Main);

/// The block sizes of `kernels` in the test kernels `executable` (the
/// SPIR-V modules' LocalSizes; none for CPU formats), as the compiler would
/// put them in ExecutableDesc::blockSizes.
std::vector<BlockSize> testBlockSizes(const ExecutableDesc &executable,
                                      const std::vector<KernelInfo> &kernels);

/// The registered drivers' names, for INSTANTIATE_TEST_SUITE_P.
std::vector<std::string> driverNames();

#define EXPECT_ERROR_HAS(status, text)                                         \
  do {                                                                         \
    ::kiln::runtime::Status s_ = (status);                                     \
    EXPECT_FALSE(s_.ok());                                                     \
    EXPECT_NE(s_.message().find(text), std::string::npos)                      \
        << "message: " << s_.message();                                        \
  } while (0)

/// A device of the driver under test (GetParam()), with two host threads
/// where the driver has any; the test is skipped where the driver says its
/// device is not on this machine (StatusCode::Unavailable).
class DeviceTest : public ::testing::TestWithParam<std::string> {
protected:
  void SetUp() override;

  /// The test kernels as an executable of this device's format (a failure
  /// where the driver has none).
  ExecutableDesc testExecutable(TestLibrary library = TestLibrary::Main);
  std::string format() const { return std::string(device->executableFormat()); }

  /// Device memory holding `values`.
  template <class T> DeviceBuffer upload(const std::vector<T> &values) {
    StatusOr<DeviceBuffer> buffer = device->allocate(values.size() * sizeof(T));
    EXPECT_TRUE(buffer.ok()) << buffer.status().message();
    if (!buffer.ok())
      return DeviceBuffer();
    Status copied = device->copyHostToDevice(buffer->address(), values.data(),
                                             values.size() * sizeof(T));
    EXPECT_TRUE(copied.ok()) << copied.message();
    return std::move(*buffer);
  }
  /// `count` values of type T at a device address.
  template <class T> std::vector<T> download(const void *address, size_t count) {
    std::vector<T> values(count);
    Status copied = device->copyDeviceToHost(values.data(), address, count * sizeof(T));
    EXPECT_TRUE(copied.ok()) << copied.message();
    return values;
  }

  /// Launches kernel `kernel` of `executable` on this device.
  Status launch(const Executable &executable, uint32_t kernel, std::vector<void *> bindings,
                WorkgroupGrid grid = {}, std::vector<int64_t> values = {}) {
    LaunchParams params;
    params.workgroups = grid;
    params.bindings = bindings.data();
    params.numBindings = static_cast<uint32_t>(bindings.size());
    params.values = values.data();
    params.numValues = static_cast<uint32_t>(values.size());
    return device->launch(executable, kernel, params);
  }

  std::unique_ptr<Device> device;
};

} // namespace kiln::runtime::conformance

#endif // KILN_UNITTESTS_RUNTIME_CONFORMANCE_H
