//===- CudaDeviceTest.cpp - The CUDA driver's host logic, on a fake -------===//
//
// No GPU here: the driver runs against a fake libcuda (FakeCuda.cpp) that
// records module loads, entry names, grids, blocks and parameters, and
// fails a call on request. What only a GPU can check is in the GPU check
// script (benchmarks/gpu/).
//
//===----------------------------------------------------------------------===//

#include "kiln/runtime/CudaCapability.h"
#include "kiln/runtime/GpuImageContainer.h"
#include "kiln/runtime/Device.h"
#include "kiln/runtime/Program.h"

#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <gtest/gtest.h>

using namespace kiln::runtime;

namespace {

/// Points the runtime at a driver library for the test's scope.
class DriverLibrary {
public:
  explicit DriverLibrary(const char *path) { setenv("KILN_CUDA_DRIVER", path, 1); }
  ~DriverLibrary() { unsetenv("KILN_CUDA_DRIVER"); }
};

/// The fake's control functions, from the same library the runtime opened.
struct Fake {
  Fake() {
    library = dlopen(KILN_FAKE_CUDA_PATH, RTLD_NOW | RTLD_LOCAL);
    log = reinterpret_cast<const char *(*)()>(dlsym(library, "fakeCudaLog"));
    reset = reinterpret_cast<void (*)()>(dlsym(library, "fakeCudaReset"));
    failNext = reinterpret_cast<void (*)(const char *, int)>(dlsym(library, "fakeCudaFailNext"));
    setCapability = reinterpret_cast<void (*)(int, int)>(dlsym(library, "fakeCudaSetCapability"));
    reset();
  }
  ~Fake() { dlclose(library); }
  void *library;
  const char *(*log)();
  void (*reset)();
  void (*failNext)(const char *, int);
  void (*setCapability)(int, int);
};

/// A stand-in fatbin the fake loads: the magic, the parameter count, the
/// entry's name.
std::vector<uint8_t> image(const std::string &entry, uint32_t numParams) {
  std::vector<uint8_t> bytes(8);
  uint32_t magic = kFatbinMagic;
  std::memcpy(bytes.data(), &magic, 4);
  std::memcpy(bytes.data() + 4, &numParams, 4);
  bytes.insert(bytes.end(), entry.begin(), entry.end());
  bytes.push_back(0);
  return bytes;
}

ExecutableDesc executable(const std::string &format = "cuda-sm_90") {
  ExecutableDesc desc;
  desc.format = format;
  desc.blockSizes = {{128, 1, 1}, {256, 1, 1}};
  desc.bytes = encodeGpuImageContainer({{"scale", image("scale", 3)}, {"add", image("add", 3)}});
  return desc;
}

std::vector<KernelInfo> kernels() { return {{"scale", 2, "kernel_0_scale", 1}, {"add", 3, "kernel_1_add", 0}}; }

/// A launch of `grid` workgroups with these bindings and symbol values (the
/// arrays must outlive it).
LaunchParams launchOf(int64_t grid, std::vector<void *> &bindings, std::vector<int64_t> &symbols) {
  LaunchParams params;
  params.workgroups.x = grid;
  params.bindings = bindings.data();
  params.numBindings = static_cast<uint32_t>(bindings.size());
  params.values = symbols.data();
  params.numValues = static_cast<uint32_t>(symbols.size());
  return params;
}

void *at(uintptr_t address) { return reinterpret_cast<void *>(address); }

#define EXPECT_ERROR_HAS(status, text)                                                         \
  do {                                                                                         \
    Status s_ = (status);                                                                      \
    EXPECT_FALSE(s_.ok());                                                                     \
    EXPECT_NE(s_.message().find(text), std::string::npos) << s_.message();                     \
  } while (0)

TEST(CudaDeviceTest, WithoutADriverTheDeviceIsUnavailableAndSaysWhy) {
  DriverLibrary missing("/nonexistent/libcuda.so.1");
  StatusOr<std::unique_ptr<Device>> device = createDevice("cuda");
  ASSERT_FALSE(device.ok());
  EXPECT_EQ(device.status().code(), StatusCode::Unavailable);
  EXPECT_ERROR_HAS(device.status(), "no CUDA driver: cannot load /nonexistent/libcuda.so.1");
  EXPECT_ERROR_HAS(device.status(), "KILN_CUDA_DRIVER");
}

TEST(CudaDeviceTest, TheDeviceIsThePrimaryContextOfGpu0) {
  DriverLibrary fake(KILN_FAKE_CUDA_PATH);
  Fake control;
  StatusOr<std::unique_ptr<Device>> device = createDevice("cuda");
  ASSERT_TRUE(device.ok()) << device.status().message();
  EXPECT_EQ((*device)->driverName(), "cuda");
  EXPECT_EQ((*device)->executableFormat(), "cuda-sm_90");
  EXPECT_EQ((*device)->describe(), "cuda-sm_90, Fake H200, 132 SMs");
  EXPECT_FALSE((*device)->hostAddressable());
  device->reset();
  EXPECT_STREQ(control.log(), "cuDevicePrimaryCtxRetain\ncuDevicePrimaryCtxRelease\n");
}

TEST(CudaDeviceTest, MemoryRoundTrips) {
  DriverLibrary fake(KILN_FAKE_CUDA_PATH);
  Fake control;
  std::unique_ptr<Device> device = std::move(*createDevice("cuda"));
  StatusOr<DeviceBuffer> a = device->allocate(64), b = device->allocate(64);
  ASSERT_TRUE(a.ok() && b.ok());
  std::vector<float> in(16), out(16);
  for (int i = 0; i < 16; ++i)
    in[i] = 0.5f * static_cast<float>(i);
  ASSERT_TRUE(device->copyHostToDevice(a->address(), in.data(), 64).ok());
  ASSERT_TRUE(device->copyDeviceToDevice(b->address(), a->address(), 64).ok());
  ASSERT_TRUE(device->copyDeviceToHost(out.data(), b->address(), 64).ok());
  EXPECT_EQ(in, out);
  control.failNext("cuMemAlloc", 2);
  StatusOr<DeviceBuffer> tooMuch = device->allocate(1 << 20);
  ASSERT_FALSE(tooMuch.ok());
  EXPECT_EQ(tooMuch.status().code(), StatusCode::OutOfMemory);
  EXPECT_ERROR_HAS(tooMuch.status(), "cuMemAlloc(1048576 bytes): CUDA_ERROR_OUT_OF_MEMORY (2): out of memory");
}

TEST(CudaDeviceTest, ModulesLoadWithTheProgramAndLaunchesPassBindingsThenSymbols) {
  DriverLibrary fake(KILN_FAKE_CUDA_PATH);
  Fake control;
  std::unique_ptr<Device> device = std::move(*createDevice("cuda"));
  StatusOr<std::unique_ptr<Executable>> loaded = device->loadExecutable(executable(), kernels());
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  EXPECT_STREQ(control.log(), "cuDevicePrimaryCtxRetain\n"
                              "cuModuleLoadData scale\ncuModuleGetFunction scale\n"
                              "cuModuleLoadData add\ncuModuleGetFunction add\n");
  control.reset();
  std::vector<void *> two{at(4096), at(8192)}, three{at(4096), at(8192), at(12288)};
  std::vector<int64_t> symbol{77}, none;
  ASSERT_TRUE(device->launch(**loaded, 0, launchOf(7, two, symbol)).ok());
  LaunchParams add = launchOf(3, three, none);
  ASSERT_TRUE(device->launch(**loaded, 1, add).ok());
  add.workgroups.x = 0; // an empty grid launches nothing
  ASSERT_TRUE(device->launch(**loaded, 1, add).ok());
  ASSERT_TRUE(device->synchronize().ok());
  EXPECT_STREQ(control.log(),
               "cuLaunchKernel scale grid=7,1,1 block=128,1,1 shared=0 params=4096,8192,77\n"
               "cuLaunchKernel add grid=3,1,1 block=256,1,1 shared=0 params=4096,8192,12288\n"
               "cuCtxSynchronize\n");
}

TEST(CudaDeviceTest, DriverErrorsNameTheCallAndTheKernel) {
  DriverLibrary fake(KILN_FAKE_CUDA_PATH);
  Fake control;
  std::unique_ptr<Device> device = std::move(*createDevice("cuda"));
  control.failNext("cuModuleLoadData", 200);
  StatusOr<std::unique_ptr<Executable>> refused = device->loadExecutable(executable(), kernels());
  EXPECT_ERROR_HAS(refused.status(), "cuModuleLoadData(kernel_0_scale): unknown CUDA error (200)");
  StatusOr<std::unique_ptr<Executable>> other = device->loadExecutable(executable("cuda-sm_100"), kernels());
  EXPECT_ERROR_HAS(other.status(), "the executable is for 'cuda-sm_100', this GPU (Fake H200, compute "
                                   "capability 9.0) runs 'cuda-sm_90' and earlier chips' PTX");

  std::unique_ptr<Executable> loaded = std::move(*device->loadExecutable(executable(), kernels()));
  std::vector<void *> two{at(4096), at(8192)};
  std::vector<int64_t> symbol{5};
  LaunchParams params = launchOf(1, two, symbol);
  control.failNext("cuLaunchKernel", 1);
  EXPECT_ERROR_HAS(device->launch(*loaded, 0, params),
                   "cuLaunchKernel(kernel_0_scale): CUDA_ERROR_INVALID_VALUE (1): invalid argument");
  // A fault found when waiting: under KILN_CUDA_SYNC=1, at the launch.
  control.failNext("cuCtxSynchronize", 700);
  EXPECT_ERROR_HAS(device->synchronize(), "cuCtxSynchronize: CUDA_ERROR_ILLEGAL_ADDRESS (700)");
  params.numBindings = 1;
  EXPECT_ERROR_HAS(device->launch(*loaded, 0, params), "with 1 bindings, it takes 2");
}

TEST(CudaDeviceTest, SyncAfterEachLaunchNamesTheFaultingKernel) {
  DriverLibrary fake(KILN_FAKE_CUDA_PATH);
  setenv("KILN_CUDA_SYNC", "1", 1);
  Fake control;
  std::unique_ptr<Device> device = std::move(*createDevice("cuda"));
  unsetenv("KILN_CUDA_SYNC");
  std::unique_ptr<Executable> loaded = std::move(*device->loadExecutable(executable(), kernels()));
  std::vector<void *> three{at(4096), at(8192), at(12288)};
  std::vector<int64_t> none;
  control.failNext("cuCtxSynchronize", 700);
  EXPECT_ERROR_HAS(device->launch(*loaded, 1, launchOf(2, three, none)),
                   "cuCtxSynchronize(after kernel kernel_1_add, KILN_CUDA_SYNC=1): "
                   "CUDA_ERROR_ILLEGAL_ADDRESS (700): an illegal memory access was encountered");
}

} // namespace

TEST(CudaDeviceTest, AGpuRunsItsChipAndEarlierChipsPtxButAnArchSpecificChipOnlyOnItsOwn) {
  CudaCapability h200{9, 0}, rtx4090{8, 9}, b200{10, 0};
  EXPECT_EQ(cudaChipFor(h200), "sm_90a");
  EXPECT_EQ(cudaChipFor(rtx4090), "sm_80");
  EXPECT_EQ(cudaChipFor(b200), "sm_90");
  EXPECT_EQ(cudaChipFor({7, 5}), "");
  EXPECT_EQ(cudaFormatDistance("cuda-sm_90a", h200), 0);
  EXPECT_EQ(cudaFormatDistance("cuda-sm_90", h200), 1);
  EXPECT_EQ(cudaFormatDistance("cuda-sm_80", h200), 11);
  EXPECT_EQ(cudaFormatDistance("cuda-sm_90a", b200), std::nullopt);
  EXPECT_EQ(cudaFormatDistance("cuda-sm_90", b200), 11);
  EXPECT_EQ(cudaFormatDistance("cuda-sm_90", rtx4090), std::nullopt);
  EXPECT_EQ(cudaFormatDistance("cuda-sm_80", rtx4090), 10);
  for (const char *bad : {"vulkan-spirv", "cuda-", "cuda-sm_", "cuda-sm_9x", "cuda-90", "cuda-sm_1000"})
    EXPECT_EQ(cudaFormatDistance(bad, h200), std::nullopt) << bad;
}

TEST(CudaDeviceTest, AProgramLoadsTheArtifactsNearestChip) {
  DriverLibrary fake(KILN_FAKE_CUDA_PATH);
  Fake control;
  control.setCapability(8, 6);
  std::unique_ptr<Device> device = std::move(*createDevice("cuda"));
  EXPECT_EQ(device->formatDistance("cuda-sm_80"), 7);
  Artifact artifact;
  artifact.executables = {executable("cuda-sm_90"), executable("cuda-sm_80")};
  EXPECT_EQ(executableFor(artifact, *device), &artifact.executables[1]);
  artifact.executables.pop_back();
  EXPECT_EQ(executableFor(artifact, *device), nullptr);
  control.setCapability(9, 0);
  std::unique_ptr<Device> hopper = std::move(*createDevice("cuda"));
  artifact.executables = {executable("cuda-sm_80"), executable("cuda-sm_90a"), executable("cuda-sm_90")};
  EXPECT_EQ(executableFor(artifact, *hopper), &artifact.executables[1]);
}

TEST(CudaDeviceTest, FindingTheGpuNamesItsCapabilityOrWhyThereIsNone) {
  {
    DriverLibrary fake(KILN_FAKE_CUDA_PATH);
    Fake control;
    control.setCapability(8, 0);
    auto found = findCudaGpu();
    ASSERT_TRUE(found.ok()) << found.status().message();
    EXPECT_EQ(found->first.str(), "8.0");
    EXPECT_EQ(found->second, "Fake H200");
    control.failNext("cuInit", 100);
    EXPECT_EQ(findCudaGpu().status().code(), StatusCode::Unavailable);
  }
  DriverLibrary missing("/nonexistent/libcuda.so.1");
  auto none = findCudaGpu();
  EXPECT_EQ(none.status().code(), StatusCode::Unavailable);
  EXPECT_ERROR_HAS(none.status(), "no CUDA driver: cannot load /nonexistent/libcuda.so.1");
}

TEST(CudaDeviceTest, AnExternalStreamTakesTheThreadsLaunchesAndWaits) {
  DriverLibrary fake(KILN_FAKE_CUDA_PATH);
  Fake control;
  std::unique_ptr<Device> device = std::move(*createDevice("cuda"));
  std::unique_ptr<Executable> loaded = std::move(*device->loadExecutable(executable(), kernels()));
  std::vector<void *> two{at(4096), at(8192)};
  std::vector<int64_t> symbol{5};
  void *torchStream = at(0xabc0);
  ASSERT_TRUE(device->useExternalStream(torchStream).ok());
  ASSERT_TRUE(device->launch(*loaded, 0, launchOf(2, two, symbol)).ok());
  ASSERT_TRUE(device->synchronize().ok());
  StatusOr<DeviceBuffer> memory = device->allocate(16);
  ASSERT_TRUE(memory.ok());
  std::vector<uint8_t> host(16);
  ASSERT_TRUE(device->copyDeviceToHost(host.data(), memory->address(), 16).ok());
  // Back to the context's own stream.
  ASSERT_TRUE(device->useExternalStream(nullptr).ok());
  ASSERT_TRUE(device->launch(*loaded, 0, launchOf(2, two, symbol)).ok());
  ASSERT_TRUE(device->synchronize().ok());
  std::string log = control.log();
  EXPECT_NE(log.find("cuLaunchKernel scale grid=2,1,1 block=128,1,1 shared=0 stream=0xabc0 params="),
            std::string::npos) << log;
  EXPECT_NE(log.find("cuStreamSynchronize 0xabc0\ncuStreamSynchronize 0xabc0\n"), std::string::npos)
      << log; // synchronize(), then before the copy
  EXPECT_NE(log.find("cuLaunchKernel scale grid=2,1,1 block=128,1,1 shared=0 params="), std::string::npos)
      << log;
  EXPECT_NE(log.find("cuCtxSynchronize"), std::string::npos) << log;
  // Drivers without native streams refuse one.
  std::unique_ptr<Device> cpu = std::move(*createDevice("cpu"));
  EXPECT_ERROR_HAS(cpu->useExternalStream(torchStream), "the cpu driver takes no external stream");
  EXPECT_TRUE(cpu->useExternalStream(nullptr).ok());
}
