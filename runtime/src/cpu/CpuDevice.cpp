//===- CpuDevice.cpp - The host CPU as a Kiln device ----------------------===//

#include "CpuDevice.h"

#include "CpuExecutable.h"
#include "kiln/runtime/HostCpu.h"

#include <cstdlib>
#include <cstring>

namespace kiln::runtime {

CpuDevice::CpuDevice(int numThreads)
    : pool_(numThreads > 0 ? numThreads : defaultThreadCount()) {}

std::string CpuDevice::describe() const {
  return std::string(hostCpuTarget()) + ", " + std::to_string(pool_.size()) + " threads";
}

StatusOr<DeviceBuffer> CpuDevice::allocate(size_t bytes) {
  // Whole alignment units, at least one, so that even 0 bytes get a real,
  // unique address.
  size_t rounded = bytes == 0 ? kMinAlignment
                              : (bytes + kMinAlignment - 1) / kMinAlignment * kMinAlignment;
  void *data = nullptr;
  if (rounded < bytes || ::posix_memalign(&data, kMinAlignment, rounded) != 0)
    return Status::error(StatusCode::OutOfMemory,
                         "out of host memory allocating " + std::to_string(bytes) + " bytes");
  return adoptBuffer(data, bytes);
}

void CpuDevice::deallocate(void *address, size_t, uint64_t) noexcept { std::free(address); }

Status CpuDevice::copyHostToDevice(void *device, const void *host, size_t bytes) {
  if (bytes)
    std::memcpy(device, host, bytes);
  return Status::OK();
}

Status CpuDevice::copyDeviceToHost(void *host, const void *device, size_t bytes) {
  if (bytes)
    std::memcpy(host, device, bytes);
  return Status::OK();
}

Status CpuDevice::copyDeviceToDevice(void *target, const void *source, size_t bytes) {
  if (bytes)
    std::memmove(target, source, bytes);
  return Status::OK();
}

StatusOr<std::unique_ptr<Executable>>
CpuDevice::loadExecutable(const ExecutableDesc &executable,
                          const std::vector<KernelInfo> &kernels) {
  if (executable.format != executableFormat())
    return Status::error("an executable of format '" + executable.format +
                         "' cannot load on a device that runs '" +
                         std::string(executableFormat()) + "'");
  if (std::vector<std::string> missing = missingCpuFeatures(executable.cpuFeatures);
      !missing.empty()) {
    std::string names;
    for (const std::string &feature : missing)
      names += (names.empty() ? "" : ", ") + feature;
    return Status::error("it was compiled for CPU '" + executable.cpu +
                         "', and this CPU lacks " + names +
                         "; recompile the graph on this machine");
  }
  StatusOr<std::unique_ptr<CpuExecutable>> loaded =
      CpuExecutable::load(*this, executable.bytes, kernels);
  if (!loaded.ok())
    return loaded.status();
  return std::unique_ptr<Executable>(std::move(*loaded));
}

Status CpuDevice::launch(const Executable &executable, uint32_t kernel,
                         const LaunchParams &params) {
  if (&executable.device() != this)
    return Status::error("launch of an executable that another device loaded");
  if (kernel >= executable.numKernels())
    return Status::error("launch of kernel " + std::to_string(kernel) +
                         ", but the executable has " +
                         std::to_string(executable.numKernels()) + " kernels");
  const KernelInfo &info = executable.kernel(kernel);
  if (params.numBindings != info.numBindings || params.numValues != info.numSymbols)
    return Status::error("kernel '" + info.name + "' takes " +
                         std::to_string(info.numBindings) + " bindings and " +
                         std::to_string(info.numSymbols) + " values, the launch passes " +
                         std::to_string(params.numBindings) + " and " +
                         std::to_string(params.numValues));
  const WorkgroupGrid &grid = params.workgroups;
  if (grid.x < 0 || grid.y < 0 || grid.z < 0)
    return Status::error("kernel '" + info.name + "': negative workgroup count");
  int64_t count = 0;
  if (__builtin_mul_overflow(grid.x, grid.y, &count) ||
      __builtin_mul_overflow(count, grid.z, &count))
    return Status::error("kernel '" + info.name + "': the workgroup grid " +
                         std::to_string(grid.x) + "x" + std::to_string(grid.y) + "x" +
                         std::to_string(grid.z) + " overflows");
  if (count == 0)
    return Status::OK();

  // The kernel's argument array: the bindings, then the values in pointer
  // slots. On the stack for any real kernel, so a launch allocates nothing.
  static_assert(sizeof(void *) == sizeof(int64_t), "values travel in pointer slots");
  constexpr size_t kInlineSlots = 64;
  void *inlineSlots[kInlineSlots];
  std::vector<void *> heapSlots;
  size_t numSlots = size_t(params.numBindings) + params.numValues;
  void **slots = inlineSlots;
  if (numSlots > kInlineSlots) {
    heapSlots.resize(numSlots);
    slots = heapSlots.data();
  }
  if (params.numBindings)
    std::memcpy(slots, params.bindings, params.numBindings * sizeof(void *));
  if (params.numValues)
    std::memcpy(slots + params.numBindings, params.values, params.numValues * sizeof(int64_t));

  struct Call {
    KernelFn fn;
    int64_t count;
    void **slots;
  } call{static_cast<const CpuExecutable &>(executable).function(kernel), count, slots};
  // One reference captured: fits std::function's inline storage.
  pool_.parallelFor(count, [&call](int64_t wg) { call.fn(wg, call.count, call.slots); });
  return Status::OK();
}

Status registerCpuDriver(DriverRegistry &registry) {
  return registry.registerDriver(
      "cpu", [](const DeviceOptions &options) -> StatusOr<std::unique_ptr<Device>> {
        return std::unique_ptr<Device>(new CpuDevice(options.numThreads));
      });
}

} // namespace kiln::runtime
