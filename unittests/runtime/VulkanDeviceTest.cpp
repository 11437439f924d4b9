//===- VulkanDeviceTest.cpp - What only the Vulkan driver does ------------===//
//
// The conformance suite covers the Device interface; these cover the
// driver's own paths: finding the loader and the device, the synthetic
// addresses, the container and the kernel ABI's limits. They skip where the
// machine has no Vulkan device, except the loader test.
//
//===----------------------------------------------------------------------===//

#include "conformance/Conformance.h"
#include "kiln/runtime/SpirvContainer.h"
#include "kiln/runtime/VulkanDriver.h"

#include <cmath>
#include <cstdlib>
#include <numeric>

using namespace kiln::runtime;
using namespace kiln::runtime::conformance;

namespace {

/// Sets an environment variable for one scope.
class ScopedEnv {
public:
  ScopedEnv(const char *name, const char *value) : name_(name) {
    if (const char *old = std::getenv(name))
      old_ = old;
    ::setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (old_)
      ::setenv(name_, old_->c_str(), 1);
    else
      ::unsetenv(name_);
  }

private:
  const char *name_;
  std::optional<std::string> old_;
};

bool hasVulkanDriver() {
  std::vector<std::string> names = driverNames();
  return std::find(names.begin(), names.end(), "vulkan") != names.end();
}

TEST(VulkanDriverTest, MissingLoaderIsUnavailable) {
  if (!hasVulkanDriver())
    GTEST_SKIP() << "this runtime was built without the Vulkan driver";
  ScopedEnv loader("KILN_VULKAN_LOADER", "/nonexistent/libvulkan.so.1");
  StatusOr<std::unique_ptr<Device>> device = createDevice("vulkan");
  ASSERT_FALSE(device.ok());
  EXPECT_EQ(device.status().code(), StatusCode::Unavailable);
  EXPECT_ERROR_HAS(device.status(), "/nonexistent/libvulkan.so.1");
  EXPECT_ERROR_HAS(device.status(), "install libvulkan1");
  StatusOr<std::vector<VulkanDeviceInfo>> devices = listVulkanDevices();
  EXPECT_EQ(devices.status().code(), StatusCode::Unavailable);
}

/// A Vulkan device with the test kernels loaded, or a skip.
class VulkanTest : public ::testing::Test {
protected:
  const std::vector<KernelInfo> kKernels = {
      {"add_f32", 3, "kernel_add"},
      {"store_values", 1, "kernel_store", /*numSymbols=*/2},
      {"record_workgroups", 2, "kernel_record"},
      {"double_f32", 1, "kernel_double"},
      {"report_status", 1, "kernel_report"},
  };
  static constexpr uint32_t kAdd = 0, kStore = 1, kRecord = 2, kDouble = 3, kReport = 4;

  void SetUp() override {
    if (!hasVulkanDriver())
      GTEST_SKIP() << "this runtime was built without the Vulkan driver";
    StatusOr<std::unique_ptr<Device>> created = createDevice("vulkan");
    if (!created.ok() && created.status().code() == StatusCode::Unavailable)
      GTEST_SKIP() << created.status().message();
    ASSERT_TRUE(created.ok()) << created.status().message();
    device = std::move(*created);
    StatusOr<std::unique_ptr<Executable>> loaded = device->loadExecutable(spirv(), kKernels);
    ASSERT_TRUE(loaded.ok()) << loaded.status().message();
    executable = std::move(*loaded);
  }

  ExecutableDesc spirv() {
    ExecutableDesc desc;
    desc.format = kVulkanSpirvFormat;
    std::optional<std::vector<uint8_t>> bytes = testKernelLibrary(desc.format);
    EXPECT_TRUE(bytes) << "no SPIR-V test kernels in this build";
    if (bytes)
      desc.bytes = std::move(*bytes);
    return desc;
  }

  Status launch(uint32_t kernel, std::vector<void *> bindings, WorkgroupGrid grid = {},
                std::vector<int64_t> values = {}, std::vector<uint64_t> bytes = {}) {
    LaunchParams params;
    params.workgroups = grid;
    params.bindings = bindings.data();
    params.numBindings = static_cast<uint32_t>(bindings.size());
    params.bindingBytes = bytes.empty() ? nullptr : bytes.data();
    params.values = values.data();
    params.numValues = static_cast<uint32_t>(values.size());
    return device->launch(*executable, kernel, params);
  }

  DeviceBuffer upload(const std::vector<float> &values) {
    StatusOr<DeviceBuffer> buffer = device->allocate(values.size() * 4);
    EXPECT_TRUE(buffer.ok()) << buffer.status().message();
    if (!buffer.ok())
      return DeviceBuffer();
    EXPECT_TRUE(device->copyHostToDevice(buffer->address(), values.data(), values.size() * 4).ok());
    return std::move(*buffer);
  }
  std::vector<float> download(const void *address, size_t count) {
    std::vector<float> values(count);
    Status status = device->copyDeviceToHost(values.data(), address, count * 4);
    EXPECT_TRUE(status.ok()) << status.message();
    return values;
  }

  std::unique_ptr<Device> device;
  std::unique_ptr<Executable> executable;
};

TEST_F(VulkanTest, DescribesItsDevice) {
  EXPECT_EQ(device->driverName(), "vulkan");
  EXPECT_EQ(device->executableFormat(), "vulkan-spirv");
  EXPECT_EQ(device->describe().rfind("vulkan: ", 0), 0u) << device->describe();
  EXPECT_NE(device->describe().find(" device, Vulkan 1."), std::string::npos) << device->describe();
  StatusOr<std::vector<VulkanDeviceInfo>> devices = listVulkanDevices();
  ASSERT_TRUE(devices.ok()) << devices.status().message();
  ASSERT_FALSE(devices->empty());
  EXPECT_NE(device->describe().find((*devices)[0].name), std::string::npos);
  // The block size is the module's LocalSize.
  EXPECT_EQ(executable->blockSize(kAdd), (BlockSize{64, 1, 1}));
}

TEST_F(VulkanTest, SelectsDevicesByIndexOrName) {
  StatusOr<std::vector<VulkanDeviceInfo>> devices = listVulkanDevices();
  ASSERT_TRUE(devices.ok()) << devices.status().message();
  {
    ScopedEnv select("KILN_VULKAN_DEVICE", "0");
    StatusOr<std::unique_ptr<Device>> byIndex = createDevice("vulkan");
    ASSERT_TRUE(byIndex.ok()) << byIndex.status().message();
  }
  {
    std::string part = (*devices)[0].name.substr(0, 4);
    ScopedEnv select("KILN_VULKAN_DEVICE", part.c_str());
    StatusOr<std::unique_ptr<Device>> byName = createDevice("vulkan");
    ASSERT_TRUE(byName.ok()) << byName.status().message();
  }
  ScopedEnv select("KILN_VULKAN_DEVICE", "no-such-gpu-9000");
  StatusOr<std::unique_ptr<Device>> none = createDevice("vulkan");
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), StatusCode::Unavailable);
  EXPECT_ERROR_HAS(none.status(), "no-such-gpu-9000");
  EXPECT_ERROR_HAS(none.status(), (*devices)[0].name); // the devices there are
}

TEST_F(VulkanTest, HugeAllocationIsOutOfMemory) {
  StatusOr<DeviceBuffer> huge = device->allocate(size_t(1) << 50);
  ASSERT_FALSE(huge.ok());
  EXPECT_EQ(huge.status().code(), StatusCode::OutOfMemory);
  EXPECT_ERROR_HAS(huge.status(), "out of Vulkan device memory");
}

TEST_F(VulkanTest, AddressesOutsideAllocationsAreErrors) {
  DeviceBuffer x = upload(std::vector<float>(1000, 1.0f));
  char *base = static_cast<char *>(x.address());
  float value = 0;
  void *nowhere = reinterpret_cast<void *>(uintptr_t(0x1000));
  EXPECT_ERROR_HAS(launch(kAdd, {x.address(), nowhere, x.address()}, {1, 1, 1}),
                   "kernel 'kernel_add', binding 1");
  EXPECT_ERROR_HAS(device->copyDeviceToHost(&value, nowhere, 4), "not inside one allocation");
  // Past the end, or running over it.
  EXPECT_FALSE(device->copyDeviceToHost(&value, base + 4000, 4).ok());
  EXPECT_FALSE(device->copyHostToDevice(base + 3998, &value, 4).ok());
  EXPECT_FALSE(device->copyDeviceToDevice(base, base + 4096, 4).ok());
  EXPECT_FALSE(launch(kDouble, {base + 8192}, {1, 1, 1}).ok());
  EXPECT_TRUE(device->synchronize().ok());
}

// Bindings inside allocations, at offsets the kernels must add: the
// push-constant words of the ABI.
// With their sizes given (add_f32 touches 1000 elements of each), bindings
// are bound to just those bytes, and compute the same.
TEST_F(VulkanTest, LaunchesAtOffsetsIntoAllocations) {
  std::vector<float> x(1100), y(1100);
  std::iota(x.begin(), x.end(), 0.0f);
  std::iota(y.begin(), y.end(), 5000.0f);
  DeviceBuffer dx = upload(x), dy = upload(y);
  char *px = static_cast<char *>(dx.address()), *py = static_cast<char *>(dy.address());
  for (std::vector<uint64_t> bytes : {std::vector<uint64_t>{}, {4000, 4000, 4000}}) {
    DeviceBuffer out = upload(std::vector<float>(1100, -1.0f));
    char *po = static_cast<char *>(out.address());
    ASSERT_TRUE(launch(kAdd, {px + 4, py + 400, po + 256}, {3, 2, 1}, {}, bytes).ok());
    std::vector<float> result = download(out.address(), 1100);
    for (size_t i = 0; i < 1100; ++i) {
      float expected = i >= 64 && i < 1064 ? x[i - 64 + 1] + y[i - 64 + 100] : -1.0f;
      ASSERT_EQ(result[i], expected) << "element " << i << ", " << bytes.size() << " sizes";
    }
  }
  // More bytes than the allocation holds from the address.
  EXPECT_ERROR_HAS(launch(kAdd, {px + 4, py, py}, {}, {}, {4400, 4000, 4000}),
                   "are not inside one allocation");
}

TEST_F(VulkanTest, ValuesOutsideInt32AreErrors) {
  DeviceBuffer out = upload(std::vector<float>(4));
  EXPECT_ERROR_HAS(launch(kStore, {out.address()}, {}, {1, int64_t(1) << 40}), "kernel_store");
  EXPECT_ERROR_HAS(launch(kStore, {out.address()}, {}, {INT64_MIN, 1}), "outside the int32 range");
  ASSERT_TRUE(launch(kStore, {out.address()}, {}, {INT32_MIN, INT32_MAX}).ok());
  std::vector<int64_t> stored(2);
  ASSERT_TRUE(device->copyDeviceToHost(stored.data(), out.address(), 16).ok());
  EXPECT_EQ(stored, (std::vector<int64_t>{INT32_MIN, INT32_MAX}));
}

TEST_F(VulkanTest, GridsAboveTheDeviceLimitAreErrors) {
  DeviceBuffer counts = upload(std::vector<float>(4));
  EXPECT_ERROR_HAS(launch(kRecord, {counts.address(), counts.address()}, {int64_t(1) << 40, 1, 1}),
                   "maxComputeWorkGroupCount");
  EXPECT_ERROR_HAS(launch(kRecord, {counts.address(), counts.address()}, {1, 1, int64_t(1) << 40}),
                   "kernel_record");
}

// A binding larger than the device's maxStorageBufferRange is an error, not
// a descriptor the device may read wrong (lavapipe's range is 128 MiB).
TEST_F(VulkanTest, BindingsAboveTheDeviceRangeAreErrors) {
  if (device->describe().find("llvmpipe") == std::string::npos)
    GTEST_SKIP() << "the limit checked is lavapipe's";
  const size_t bytes = (size_t(128) << 20) + 4096;
  StatusOr<DeviceBuffer> big = device->allocate(bytes);
  ASSERT_TRUE(big.ok()) << big.status().message();
  EXPECT_ERROR_HAS(launch(kDouble, {big->address()}, {}, {}, {bytes}), "maxStorageBufferRange");
  // A slice of it within the range binds.
  EXPECT_TRUE(launch(kDouble, {big->address()}, {}, {}, {4096}).ok());
  EXPECT_TRUE(device->synchronize().ok());
}

TEST_F(VulkanTest, KernelStatusIsAnErrorNamingTheKernel) {
  DeviceBuffer x = upload({1, 2});
  // A batch of launches: the one that reports is named, whichever slot.
  ASSERT_TRUE(launch(kDouble, {x.address()}).ok());
  ASSERT_TRUE(launch(kReport, {static_cast<float *>(x.address()) + 1}).ok());
  Status status = device->synchronize();
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.message().find("kernel 'kernel_report' ended a loop before its last iteration"),
            std::string::npos)
      << status.message();
  // The batch ran; the next one starts with clean slots.
  EXPECT_EQ(download(x.address(), 2), (std::vector<float>{2, 7}));
  ASSERT_TRUE(launch(kDouble, {x.address()}).ok());
  EXPECT_TRUE(device->synchronize().ok());
  // A status found while freeing memory (which cannot report it) is the
  // next call's error.
  {
    DeviceBuffer freed = upload({0});
    ASSERT_TRUE(launch(kReport, {freed.address()}).ok());
  }
  EXPECT_FALSE(device->synchronize().ok());
  EXPECT_TRUE(device->synchronize().ok());
}

TEST_F(VulkanTest, BadContainersAreErrors) {
  ExecutableDesc desc = spirv();
  // A module that is not SPIR-V.
  ExecutableDesc garbage = desc;
  garbage.bytes = encodeSpirvContainer({{"add_f32", {1, 2, 3, 4, 5, 6}}});
  EXPECT_ERROR_HAS(device->loadExecutable(garbage, kKernels).status(), "not SPIR-V");
  // A module without the entry point its container names.
  StatusOr<std::vector<SpirvKernelBinary>> modules = decodeSpirvContainer(desc.bytes);
  ASSERT_TRUE(modules.ok());
  std::vector<SpirvKernelBinary> renamed = *modules;
  for (SpirvKernelBinary &module : renamed)
    if (module.entryPoint == "add_f32")
      module.entryPoint = "add_f32_renamed";
  ExecutableDesc wrongName = desc;
  wrongName.bytes = encodeSpirvContainer(renamed);
  Status status = device->loadExecutable(wrongName, {{"add_f32_renamed", 3, "kernel_0_add"}}).status();
  EXPECT_ERROR_HAS(status, "kernel_0_add");
  EXPECT_ERROR_HAS(status, "no entry point 'add_f32_renamed'");
  // A truncated module is refused before the driver sees it.
  std::vector<SpirvKernelBinary> truncated = *modules;
  for (SpirvKernelBinary &module : truncated)
    module.words.resize(module.words.size() / 2);
  ExecutableDesc cut = desc;
  cut.bytes = encodeSpirvContainer(truncated);
  EXPECT_ERROR_HAS(device->loadExecutable(cut, {{"add_f32", 3, "kernel_0_add"}}).status(),
                   "kernel_0_add");
  // Block sizes must be the modules'.
  ExecutableDesc sized = desc;
  sized.blockSizes = {BlockSize{32, 1, 1}};
  EXPECT_ERROR_HAS(device->loadExecutable(sized, {{"add_f32", 3, "kernel_0_add"}}).status(),
                   "block size 32x1x1 is not the module's LocalSize 64x1x1");
  sized.blockSizes = {BlockSize{64, 1, 1}};
  EXPECT_TRUE(device->loadExecutable(sized, {{"add_f32", 3, "kernel_0_add"}}).ok());
  // More push constants than the device has.
  KernelInfo greedy{"add_f32", 3, "kernel_greedy", /*numSymbols=*/100000};
  EXPECT_ERROR_HAS(device->loadExecutable(desc, {greedy}).status(), "maxPushConstantsSize");
}

/// The paths lavapipe does not take by default: staging copies (memory the
/// host cannot map) and descriptor sets from a pool (no push descriptors),
/// with more launches than one pool holds.
TEST(VulkanFallbackTest, StagingCopiesAndDescriptorPools) {
  if (!hasVulkanDriver())
    GTEST_SKIP() << "this runtime was built without the Vulkan driver";
  ScopedEnv noMapping("KILN_VULKAN_HOST_VISIBLE", "0");
  ScopedEnv noPush("KILN_VULKAN_PUSH_DESCRIPTORS", "0");
  StatusOr<std::unique_ptr<Device>> created = createDevice("vulkan");
  if (!created.ok() && created.status().code() == StatusCode::Unavailable)
    GTEST_SKIP() << created.status().message();
  ASSERT_TRUE(created.ok()) << created.status().message();
  Device &device = **created;
  ExecutableDesc desc;
  desc.format = kVulkanSpirvFormat;
  desc.bytes = *testKernelLibrary(desc.format);
  StatusOr<std::unique_ptr<Executable>> executable =
      device.loadExecutable(desc, {{"double_f32", 1, "kernel_double"}});
  ASSERT_TRUE(executable.ok()) << executable.status().message();

  std::vector<float> values(1000);
  std::iota(values.begin(), values.end(), 1.0f);
  StatusOr<DeviceBuffer> buffer = device.allocate(4000);
  ASSERT_TRUE(buffer.ok()) << buffer.status().message();
  ASSERT_TRUE(device.copyHostToDevice(buffer->address(), values.data(), 4000).ok());
  void *address = buffer->address();
  LaunchParams params;
  params.workgroups = {4, 1, 1};
  params.bindings = &address;
  params.numBindings = 1;
  for (int i = 0; i < 300; ++i) // more than one pool of 256 sets
    ASSERT_TRUE(device.launch(**executable, 0, params).ok()) << i;
  // 2^300 is infinite in float.
  std::vector<float> back(1000);
  ASSERT_TRUE(device.copyDeviceToHost(back.data(), address, 4000).ok());
  EXPECT_TRUE(std::isinf(back[0]));

  ASSERT_TRUE(device.copyHostToDevice(address, values.data(), 4000).ok());
  for (int i = 0; i < 3; ++i)
    ASSERT_TRUE(device.launch(**executable, 0, params).ok());
  // Overlapping device-to-device copy, through a scratch buffer.
  char *bytes = static_cast<char *>(address);
  ASSERT_TRUE(device.copyDeviceToDevice(bytes + 8, bytes, 16).ok());
  ASSERT_TRUE(device.copyDeviceToHost(back.data(), address, 4000).ok());
  std::vector<float> expected(1000);
  for (size_t i = 0; i < 1000; ++i)
    expected[i] = values[i] * 8;
  std::copy(expected.begin(), expected.begin() + 4, expected.begin() + 2);
  EXPECT_EQ(back, expected);
}

} // namespace
