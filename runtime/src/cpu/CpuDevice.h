//===- CpuDevice.h - The host CPU as a Kiln device ------------------------===//
//
// Memory is host memory, executables are kernel libraries loaded with dlopen
// (CpuExecutable), and a launch runs its workgroups on a thread pool before
// it returns: work is done when it is issued, so synchronize() has nothing to
// wait for.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_CPU_CPUDEVICE_H
#define KILN_RUNTIME_CPU_CPUDEVICE_H

#include "kiln/runtime/Device.h"
#include "kiln/runtime/ThreadPool.h"

namespace kiln::runtime {

class CpuDevice final : public Device {
public:
  /// `numThreads` below 1 means defaultThreadCount().
  explicit CpuDevice(int numThreads);

  std::string_view driverName() const override { return "cpu"; }
  std::string_view executableFormat() const override { return hostCpuTarget(); }
  std::string describe() const override;

  StatusOr<DeviceBuffer> allocate(size_t bytes) override;
  Status copyHostToDevice(void *device, const void *host, size_t bytes) override;
  Status copyDeviceToHost(void *host, const void *device, size_t bytes) override;
  Status copyDeviceToDevice(void *target, const void *source, size_t bytes) override;

  /// Refuses kernels compiled for CPU features this CPU lacks, naming them
  /// (running one would die on SIGILL).
  StatusOr<std::unique_ptr<Executable>>
  loadExecutable(const ExecutableDesc &executable,
                 const std::vector<KernelInfo> &kernels) override;
  Status launch(const Executable &executable, uint32_t kernel,
                const LaunchParams &params) override;
  Status synchronize() override { return Status::OK(); }
  bool hostAddressable() const override { return true; }

  ThreadPool *threadPool() override { return &pool_; }

protected:
  void deallocate(void *address, size_t size, uint64_t handle) noexcept override;

private:
  ThreadPool pool_;
};

/// Registers "cpu" (DriverRegistry::global() does, on first use).
Status registerCpuDriver(DriverRegistry &registry);

} // namespace kiln::runtime

#endif // KILN_RUNTIME_CPU_CPUDEVICE_H
