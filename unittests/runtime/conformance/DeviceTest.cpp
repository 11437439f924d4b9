//===- DeviceTest.cpp - What every device driver must do -----------------===//
//
// Memory, copies, executables and launches through the Device interface
// alone, on every registered driver.
//
//===----------------------------------------------------------------------===//

#include "Conformance.h"

#include <numeric>

using namespace kiln::runtime;
using namespace kiln::runtime::conformance;

namespace {

const std::vector<KernelInfo> kKernels = {
    {"add_f32", 3, "add"},
    {"record_workgroups", 2, "record_workgroups"},
    {"store_values", 1, "store_values", /*numSymbols=*/2},
};
constexpr uint32_t kAdd = 0, kRecord = 1, kStore = 2;

TEST_P(DeviceTest, DescribesItself) {
  EXPECT_FALSE(device->executableFormat().empty());
  EXPECT_FALSE(device->describe().empty());
  std::vector<std::string> names = driverNames();
  EXPECT_NE(std::find(names.begin(), names.end(), GetParam()), names.end());
}

TEST_P(DeviceTest, AllocatesAlignedDistinctBuffers) {
  std::vector<DeviceBuffer> buffers;
  for (size_t bytes : {0, 1, 64, 1000, 1 << 20}) {
    StatusOr<DeviceBuffer> buffer = device->allocate(bytes);
    ASSERT_TRUE(buffer.ok()) << buffer.status().message();
    EXPECT_TRUE(*buffer) << bytes << " bytes";
    EXPECT_EQ(buffer->size(), bytes);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(buffer->address()) % Device::kMinAlignment, 0u);
    for (const DeviceBuffer &other : buffers)
      EXPECT_NE(other.address(), buffer->address());
    buffers.push_back(std::move(*buffer));
  }
  // Moving hands the memory over; reset frees it once.
  DeviceBuffer moved = std::move(buffers.back());
  EXPECT_FALSE(buffers.back());
  EXPECT_TRUE(moved);
  moved.reset();
  EXPECT_FALSE(moved);
  EXPECT_EQ(moved.address(), nullptr);
}

TEST_P(DeviceTest, OutOfMemoryIsAStatus) {
  StatusOr<DeviceBuffer> huge = device->allocate(size_t(1) << 62);
  ASSERT_FALSE(huge.ok());
  EXPECT_EQ(huge.status().code(), StatusCode::OutOfMemory); // Python's MemoryError
  StatusOr<DeviceBuffer> largest = device->allocate(SIZE_MAX);
  ASSERT_FALSE(largest.ok());
  EXPECT_EQ(largest.status().code(), StatusCode::OutOfMemory);
}

TEST_P(DeviceTest, CopiesRoundTrip) {
  std::vector<int32_t> values(1000);
  std::iota(values.begin(), values.end(), -500);
  DeviceBuffer a = upload(values);
  StatusOr<DeviceBuffer> b = device->allocate(values.size() * 4);
  ASSERT_TRUE(b.ok()) << b.status().message();
  EXPECT_EQ(download<int32_t>(a.address(), values.size()), values);
  // Device to device, at offsets.
  ASSERT_TRUE(device->copyDeviceToDevice(b->address(), a.address(), values.size() * 4).ok());
  ASSERT_TRUE(device->copyDeviceToDevice(static_cast<char *>(b->address()) + 40,
                                         static_cast<char *>(a.address()) + 400, 80)
                  .ok());
  std::vector<int32_t> expected = values;
  std::copy(values.begin() + 100, values.begin() + 120, expected.begin() + 10);
  EXPECT_EQ(download<int32_t>(b->address(), values.size()), expected);
  // Host to device at an offset; empty copies are fine.
  int32_t seven = 7;
  ASSERT_TRUE(device->copyHostToDevice(static_cast<char *>(b->address()) + 4, &seven, 4).ok());
  ASSERT_TRUE(device->copyHostToDevice(b->address(), &seven, 0).ok());
  EXPECT_EQ(download<int32_t>(b->address(), 2), (std::vector<int32_t>{expected[0], 7}));
}

TEST_P(DeviceTest, LoadsAndLaunches) {
  StatusOr<std::unique_ptr<Executable>> executable =
      device->loadExecutable(testExecutable(), kKernels);
  ASSERT_TRUE(executable.ok()) << executable.status().message();
  EXPECT_EQ(&(*executable)->device(), device.get());
  ASSERT_EQ((*executable)->numKernels(), kKernels.size());
  EXPECT_EQ((*executable)->kernel(kAdd).name, "add");
  // The block size the kernel was compiled with (1x1x1 on the CPU).
  std::vector<BlockSize> compiled = testBlockSizes(testExecutable(), kKernels);
  EXPECT_EQ((*executable)->blockSize(kAdd), compiled.empty() ? BlockSize() : compiled[kAdd]);

  std::vector<float> x(1000), y(1000);
  std::iota(x.begin(), x.end(), 1.0f);
  std::iota(y.begin(), y.end(), -3.0f);
  DeviceBuffer dx = upload(x), dy = upload(y), out = upload(std::vector<float>(1000));
  ASSERT_TRUE(
      launch(**executable, kAdd, {dx.address(), dy.address(), out.address()}, {7, 1, 1}).ok());
  ASSERT_TRUE(device->synchronize().ok());
  std::vector<float> result = download<float>(out.address(), 1000);
  for (size_t i = 0; i < result.size(); ++i)
    ASSERT_EQ(result[i], x[i] + y[i]) << "element " << i;
}

// Copies from the host take effect in issue order with launches that may
// still be queued: the launch before a copy reads the old bytes, the one
// after it the new ones (a GPU driver may record a small copy into its
// command stream rather than wait).
TEST_P(DeviceTest, HostCopiesAreOrderedWithQueuedLaunches) {
  StatusOr<std::unique_ptr<Executable>> executable =
      device->loadExecutable(testExecutable(), kKernels);
  ASSERT_TRUE(executable.ok()) << executable.status().message();
  std::vector<float> x(1000, 1.0f), y(1000, 2.0f);
  DeviceBuffer dx = upload(x), dy = upload(y);
  DeviceBuffer before = upload(std::vector<float>(1000)), after = upload(std::vector<float>(1000));
  ASSERT_TRUE(
      launch(**executable, kAdd, {dx.address(), dy.address(), before.address()}, {7, 1, 1}).ok());
  std::vector<float> small(4, 10.0f), large(1000, 100.0f);
  ASSERT_TRUE(device->copyHostToDevice(dx.address(), small.data(), small.size() * 4).ok());
  ASSERT_TRUE(
      launch(**executable, kAdd, {dx.address(), dy.address(), after.address()}, {7, 1, 1}).ok());
  ASSERT_TRUE(device->copyHostToDevice(dy.address(), large.data(), large.size() * 4).ok());
  ASSERT_TRUE(device->synchronize().ok());
  std::vector<float> first = download<float>(before.address(), 1000);
  std::vector<float> second = download<float>(after.address(), 1000);
  for (size_t i = 0; i < 1000; ++i) {
    ASSERT_EQ(first[i], 3.0f) << "element " << i;
    ASSERT_EQ(second[i], i < 4 ? 12.0f : 3.0f) << "element " << i;
  }
  EXPECT_EQ(download<float>(dy.address(), 1)[0], 100.0f);
}

TEST_P(DeviceTest, LaunchesEveryWorkgroupOfA3DGridOnce) {
  StatusOr<std::unique_ptr<Executable>> executable =
      device->loadExecutable(testExecutable(), kKernels);
  ASSERT_TRUE(executable.ok()) << executable.status().message();
  for (WorkgroupGrid grid : {WorkgroupGrid{5, 1, 1}, WorkgroupGrid{4, 3, 1},
                             WorkgroupGrid{3, 2, 5}, WorkgroupGrid{1, 1, 1}}) {
    int64_t total = grid.x * grid.y * grid.z;
    DeviceBuffer counts = upload(std::vector<int32_t>(total, 0));
    DeviceBuffer count = upload(std::vector<int64_t>{-1});
    ASSERT_TRUE(launch(**executable, kRecord, {counts.address(), count.address()}, grid).ok());
    ASSERT_TRUE(device->synchronize().ok());
    std::string what = std::to_string(grid.x) + "x" + std::to_string(grid.y) + "x" +
                       std::to_string(grid.z);
    EXPECT_EQ(download<int32_t>(counts.address(), total), std::vector<int32_t>(total, 1))
        << what;
    EXPECT_EQ(download<int64_t>(count.address(), 1)[0], total) << what;
  }
  // An empty grid launches nothing.
  DeviceBuffer count = upload(std::vector<int64_t>{-1});
  ASSERT_TRUE(launch(**executable, kRecord, {count.address(), count.address()}, {4, 0, 2}).ok());
  ASSERT_TRUE(device->synchronize().ok());
  EXPECT_EQ(download<int64_t>(count.address(), 1)[0], -1);
}

TEST_P(DeviceTest, PassesValuesAfterBindings) {
  StatusOr<std::unique_ptr<Executable>> executable =
      device->loadExecutable(testExecutable(), kKernels);
  ASSERT_TRUE(executable.ok()) << executable.status().message();
  // Values every driver takes: int32 (Vulkan push constants are 32-bit).
  DeviceBuffer out = upload(std::vector<int64_t>{0, 0});
  ASSERT_TRUE(launch(**executable, kStore, {out.address()}, {}, {-42, INT32_MAX}).ok());
  ASSERT_TRUE(device->synchronize().ok());
  EXPECT_EQ(download<int64_t>(out.address(), 2), (std::vector<int64_t>{-42, INT32_MAX}));
}

TEST_P(DeviceTest, BadLaunchesAreErrors) {
  StatusOr<std::unique_ptr<Executable>> executable =
      device->loadExecutable(testExecutable(), kKernels);
  ASSERT_TRUE(executable.ok()) << executable.status().message();
  DeviceBuffer out = upload(std::vector<int64_t>{0, 0});
  void *address = out.address();
  EXPECT_ERROR_HAS(launch(**executable, 9, {address}), "kernel 9");
  EXPECT_ERROR_HAS(launch(**executable, kStore, {address}), "takes 1 bindings and 2 values");
  EXPECT_FALSE(launch(**executable, kRecord, {address, address}, {-1, 1, 1}).ok());
  EXPECT_ERROR_HAS(launch(**executable, kRecord, {address, address}, {INT64_MAX, INT64_MAX, 2}),
                   "overflows");
  EXPECT_TRUE(device->synchronize().ok());
}

TEST_P(DeviceTest, BadExecutablesAreErrors) {
  ExecutableDesc garbage = testExecutable();
  garbage.bytes = {'n', 'o', 't', ' ', 'a', 'n', ' ', 'e', 'x', 'e', 'c', 'u', 't', 'a', 'b', 'l', 'e'};
  EXPECT_FALSE(device->loadExecutable(garbage, kKernels).ok());
  ExecutableDesc empty = testExecutable();
  empty.bytes.clear();
  EXPECT_FALSE(device->loadExecutable(empty, kKernels).ok());
  // A kernel the executable lacks is named.
  StatusOr<std::unique_ptr<Executable>> missing =
      device->loadExecutable(testExecutable(), {{"no_such_kernel", 1, "kernel_7_missing"}});
  EXPECT_ERROR_HAS(missing.status(), "no_such_kernel");
  EXPECT_ERROR_HAS(missing.status(), "kernel_7_missing");
  // Another format's executable is refused.
  ExecutableDesc other = testExecutable();
  other.format = "kiln-test-no-such-format";
  EXPECT_ERROR_HAS(device->loadExecutable(other, kKernels).status(), "kiln-test-no-such-format");
  // Without kernels, nothing is loaded and nothing can fail.
  StatusOr<std::unique_ptr<Executable>> none = device->loadExecutable(testExecutable(), {});
  ASSERT_TRUE(none.ok()) << none.status().message();
  EXPECT_EQ((*none)->numKernels(), 0u);
}

// Two live executables keep their own kernels.
TEST_P(DeviceTest, TwoLiveExecutablesStayDistinct) {
  auto a = device->loadExecutable(testExecutable(), {{"add_f32", 3, "add"}});
  ASSERT_TRUE(a.ok()) << a.status().message();
  auto b = device->loadExecutable(testExecutable(TestLibrary::Other), {{"negate_f32", 2, "negate"}});
  ASSERT_TRUE(b.ok()) << b.status().message();
  DeviceBuffer in = upload(std::vector<float>{1, 2, 3, 4}), out = upload(std::vector<float>(4));
  ASSERT_TRUE(launch(**b, 0, {in.address(), out.address()}).ok());
  EXPECT_ERROR_HAS(launch(**a, 0, {in.address(), out.address()}), "takes 3 bindings");
  EXPECT_EQ(download<float>(out.address(), 4), (std::vector<float>{-1, -2, -3, -4}));
}

TEST_P(DeviceTest, AllocatorHandsOutDeviceMemory) {
  DeviceAllocator allocator(*device);
  StatusOr<std::shared_ptr<Buffer>> buffer = allocator.allocate({DType::F32, {3, 5}});
  ASSERT_TRUE(buffer.ok()) << buffer.status().message();
  EXPECT_EQ(reinterpret_cast<uintptr_t>((*buffer)->data()) % Device::kMinAlignment, 0u);
  std::vector<float> values(15, 2.5f);
  ASSERT_TRUE(device->copyHostToDevice((*buffer)->data(), values.data(), 60).ok());
  EXPECT_EQ(download<float>((*buffer)->data(), 15), values);
  StatusOr<std::shared_ptr<Buffer>> empty = allocator.allocate({DType::F32, {0}});
  ASSERT_TRUE(empty.ok()) << empty.status().message();
  EXPECT_NE((*empty)->data(), nullptr);
  EXPECT_FALSE(allocator.allocate({DType::F32, {-3}}).ok());
  StatusOr<std::shared_ptr<Buffer>> huge = allocator.allocate({DType::I64, {1ll << 58}});
  EXPECT_EQ(huge.status().code(), StatusCode::OutOfMemory);
}

INSTANTIATE_TEST_SUITE_P(Drivers, DeviceTest, ::testing::ValuesIn(driverNames()),
                         [](const ::testing::TestParamInfo<std::string> &info) {
                           return info.param;
                         });

} // namespace

TEST(DriverRegistryTest, HasTheCpuAndRefusesUnknownNamesAndDuplicates) {
  std::vector<std::string> names = DriverRegistry::global().names();
  EXPECT_NE(std::find(names.begin(), names.end(), "cpu"), names.end());
  StatusOr<std::unique_ptr<Device>> unknown = createDevice("tpu");
  EXPECT_ERROR_HAS(unknown.status(), "no device driver named 'tpu'");
  EXPECT_ERROR_HAS(unknown.status(), "cpu");
  DriverRegistry registry;
  auto factory = [](const DeviceOptions &) -> StatusOr<std::unique_ptr<Device>> {
    return Status::error("unavailable");
  };
  ASSERT_TRUE(registry.registerDriver("fake", factory).ok());
  EXPECT_ERROR_HAS(registry.registerDriver("fake", factory), "already registered");
  EXPECT_EQ(registry.names(), std::vector<std::string>{"fake"});
  EXPECT_ERROR_HAS(registry.create("fake").status(), "unavailable");
}
