//===- CpuDeviceTest.cpp - What only the CPU driver does ------------------===//
//
// The conformance suite (conformance/) covers what every driver does; this
// covers the CPU's own: kernels refused for a CPU that lacks their features,
// and kernel libraries loaded through a memfd or a temporary file.
//
//===----------------------------------------------------------------------===//

#include "conformance/Conformance.h" // EXPECT_ERROR_HAS
#include "kiln/runtime/HostCpu.h"

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <optional>

using namespace kiln::runtime;

namespace {

std::vector<uint8_t> readFile(const char *path) {
  std::ifstream file(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(file), {});
}

std::unique_ptr<Device> cpuDevice() {
  DeviceOptions options;
  options.numThreads = 1;
  StatusOr<std::unique_ptr<Device>> device = createDevice("cpu", options);
  EXPECT_TRUE(device.ok()) << device.status().message();
  return device.ok() ? std::move(*device) : nullptr;
}

ExecutableDesc executableOf(const char *path) {
  ExecutableDesc executable;
  executable.format = hostCpuTarget();
  executable.bytes = readFile(path);
  return executable;
}

const std::vector<KernelInfo> kNegate = {{"negate_f32", 2, "negate"}};

StatusOr<std::unique_ptr<Executable>> loadNegate(Device &device) {
  return device.loadExecutable(executableOf(KILN_TEST_OTHER_KERNELS_PATH), kNegate);
}

/// negate_f32 of {1, 2, 3, 4}, element 0.
float negateFirst(Device &device, const Executable &executable) {
  float in[4] = {1, 2, 3, 4}, out[4] = {};
  void *bindings[2] = {in, out}; // host memory is the CPU device's
  LaunchParams params;
  params.bindings = bindings;
  params.numBindings = 2;
  Status status = device.launch(executable, 0, params);
  EXPECT_TRUE(status.ok()) << status.message();
  return out[0];
}

/// Sets an environment variable for one scope.
class ScopedEnv {
public:
  ScopedEnv(const char *name, const char *value) : name_(name) {
    if (const char *old = std::getenv(name))
      old_ = old;
    if (value)
      setenv(name, value, 1);
    else
      unsetenv(name);
  }
  ~ScopedEnv() {
    if (old_)
      setenv(name_, old_->c_str(), 1);
    else
      unsetenv(name_);
  }

private:
  const char *name_;
  std::optional<std::string> old_;
};

} // namespace

TEST(CpuDeviceTest, RunsItsHostsFormatOnItsThreads) {
  DeviceOptions options;
  options.numThreads = 3;
  StatusOr<std::unique_ptr<Device>> device = createDevice("cpu", options);
  ASSERT_TRUE(device.ok()) << device.status().message();
  EXPECT_EQ((*device)->executableFormat(), hostCpuTarget());
  ASSERT_NE((*device)->threadPool(), nullptr);
  EXPECT_EQ((*device)->threadPool()->size(), 3);
  EXPECT_NE((*device)->describe().find("3 threads"), std::string::npos);
}

TEST(CpuDeviceTest, RejectsKernelsForAnotherCpu) {
  // The features are checked against the CPU before any kernel code runs
  // (a missing one would be SIGILL); the error names what is missing.
  std::vector<std::string> missing = missingCpuFeatures(
      {"avx2", "avx512f", "fast-gather", "avx512bf16"}, [](std::string_view name) {
        if (name == "fast-gather")
          return std::optional<bool>(); // a tuning flag: nothing to ask
        return std::optional<bool>(name == "avx2");
      });
  EXPECT_EQ(missing, (std::vector<std::string>{"avx512f", "avx512bf16"}));
#if defined(__x86_64__)
  if (hostHasCpuFeature("avx512er") != false)
    GTEST_SKIP() << "this CPU has AVX-512ER (a Xeon Phi): no feature left to miss";
  ASSERT_EQ(hostHasCpuFeature("sse4.1"), true) << "every x86-64 CPU Kiln runs on has SSE4.1";
  std::unique_ptr<Device> device = cpuDevice();
  ASSERT_TRUE(device);
  Artifact artifact;
  artifact.graphName = "for_knl";
  ExecutableDesc executable = executableOf(KILN_TEST_OTHER_KERNELS_PATH);
  executable.cpu = "knl";
  executable.cpuFeatures = {"sse4.1", "avx512er"};
  artifact.executables = {executable};
  artifact.kernels = kNegate;
  StatusOr<std::unique_ptr<Program>> program = Program::load(std::move(artifact), *device);
  ASSERT_FALSE(program.ok());
  EXPECT_ERROR_HAS(program.status(), "cannot load graph 'for_knl': it was compiled for CPU "
                                     "'knl', and this CPU lacks avx512er");
#endif
}

TEST(CpuDeviceTest, GarbageLibraryIsADlopenError) {
  std::unique_ptr<Device> device = cpuDevice();
  ASSERT_TRUE(device);
  ExecutableDesc garbage = executableOf(KILN_TEST_OTHER_KERNELS_PATH);
  garbage.bytes = {'n', 'o', 't', ' ', 'e', 'l', 'f'};
  EXPECT_ERROR_HAS(device->loadExecutable(garbage, kNegate).status(), "dlopen failed");
}

TEST(HostAllocatorTest, AlignedAndNonNull) {
  HostAllocator allocator;
  for (TensorDesc desc : {TensorDesc{DType::F32, {0}},
                          TensorDesc{DType::Bool, {}},
                          TensorDesc{DType::F64, {3, 7}}}) {
    StatusOr<std::shared_ptr<Buffer>> buffer = allocator.allocate(desc);
    ASSERT_TRUE(buffer.ok()) << buffer.status().message();
    void *data = (*buffer)->data();
    ASSERT_NE(data, nullptr) << desc.str();
    EXPECT_EQ(reinterpret_cast<uintptr_t>(data) % HostAllocator::kAlignment, 0u);
  }
  EXPECT_FALSE(allocator.allocate({DType::F32, {-3}}).ok());
  StatusOr<std::shared_ptr<Buffer>> huge = allocator.allocate({DType::I64, {1ll << 58}});
  EXPECT_ERROR_HAS(huge.status(), "out of host memory");
  EXPECT_EQ(huge.status().code(), StatusCode::OutOfMemory); // Python's MemoryError
}

// Libraries load through a memfd, so an unusable temporary directory (a
// noexec /tmp, a TMPDIR that does not exist) does not matter.
TEST(CpuDeviceTest, LoadsThroughAMemfdWhateverTheTemporaryDirectory) {
  ScopedEnv tmpdir("TMPDIR", "/nonexistent/kiln-test");
  ScopedEnv loading("KILN_KERNEL_LOADING", nullptr);
  std::unique_ptr<Device> device = cpuDevice();
  ASSERT_TRUE(device);
  auto executable = loadNegate(*device);
  ASSERT_TRUE(executable.ok()) << executable.status().message();
  EXPECT_EQ(negateFirst(*device, **executable), -1.0f);
}

// Through a file, it honours TMPDIR, and says where it failed.
TEST(CpuDeviceTest, LoadsThroughAFileInTMPDIR) {
  ScopedEnv loading("KILN_KERNEL_LOADING", "file");
  std::unique_ptr<Device> device = cpuDevice();
  ASSERT_TRUE(device);
  std::string dir = ::testing::TempDir();
  {
    ScopedEnv tmpdir("TMPDIR", dir.c_str());
    auto executable = loadNegate(*device);
    ASSERT_TRUE(executable.ok()) << executable.status().message();
    EXPECT_EQ(negateFirst(*device, **executable), -1.0f);
  }
  ScopedEnv tmpdir("TMPDIR", "/nonexistent/kiln-test");
  EXPECT_ERROR_HAS(loadNegate(*device).status(), "/nonexistent/kiln-test/kiln-kernels-");
  ScopedEnv bad("KILN_KERNEL_LOADING", "disk");
  EXPECT_ERROR_HAS(loadNegate(*device).status(), "use memfd or file");
}

// Loading and unloading many libraries reuses descriptors (and their /proc
// paths) and never returns a stale library.
TEST(CpuDeviceTest, ReloadedLibrariesAreNeverStale) {
  ScopedEnv loading("KILN_KERNEL_LOADING", "memfd");
  std::unique_ptr<Device> device = cpuDevice();
  ASSERT_TRUE(device);
  for (int i = 0; i < 20; ++i) {
    auto executable =
        i % 2 ? loadNegate(*device)
              : device->loadExecutable(executableOf(KILN_TEST_KERNELS_PATH), {{"add_f32", 3, "add"}});
    ASSERT_TRUE(executable.ok()) << executable.status().message();
    if (i % 2) {
      EXPECT_EQ(negateFirst(*device, **executable), -1.0f);
    }
  }
}
