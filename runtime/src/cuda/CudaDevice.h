//===- CudaDevice.h - An NVIDIA GPU through the CUDA driver API -----------===//
//
// Device 0's primary context (the one the CUDA runtime, and so PyTorch,
// uses): memory from cuMemAlloc, synchronous copies, and kernels from the
// "cuda-sm_XY" container (kiln/runtime/GpuImageContainer.h), each a module
// loaded when the program loads, never during a run. Launches go to the
// context's default stream and return at once; synchronize() and the copies
// to the host wait, and report a kernel's fault. KILN_CUDA_SYNC=1 waits
// after every launch, so a fault names its kernel.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_CUDA_CUDADEVICE_H
#define KILN_RUNTIME_CUDA_CUDADEVICE_H

#include "CudaApi.h"

#include "kiln/runtime/CudaCapability.h"
#include "kiln/runtime/Device.h"
#include "kiln/runtime/Executable.h"

namespace kiln::runtime::cuda {

class CudaDevice final : public Device {
public:
  /// Device 0 of the driver CudaApi::load() opens.
  static StatusOr<std::unique_ptr<CudaDevice>> create();
  ~CudaDevice() override;

  std::string_view driverName() const override { return "cuda"; }
  /// "cuda-sm_" and the compute capability: "cuda-sm_90".
  std::string_view executableFormat() const override { return format_; }
  /// Its own chip's and earlier chips' executables (CudaCapability.h).
  std::optional<int> formatDistance(std::string_view format) const override;
  std::string describe() const override;

  StatusOr<DeviceBuffer> allocate(size_t bytes) override;
  Status copyHostToDevice(void *device, const void *host, size_t bytes) override;
  Status copyDeviceToHost(void *host, const void *device, size_t bytes) override;
  Status copyDeviceToDevice(void *target, const void *source, size_t bytes) override;

  StatusOr<std::unique_ptr<Executable>>
  loadExecutable(const ExecutableDesc &executable, const std::vector<KernelInfo> &kernels) override;
  Status launch(const Executable &executable, uint32_t kernel, const LaunchParams &params) override;
  Status synchronize() override;
  /// The calling thread's launches on `stream` (a CUstream), its waits on it.
  Status useExternalStream(void *stream) override;

protected:
  void deallocate(void *address, size_t size, uint64_t handle) noexcept override;

private:
  CudaDevice(std::shared_ptr<const CudaApi> api, CUdevice device, CUcontext context);
  /// Makes the primary context current on the calling thread.
  Status enter() const;
  /// Waits for the calling thread's external stream, if it has one (before
  /// a copy, which runs on the legacy default stream: torch's streams do
  /// not synchronize with it).
  Status waitForExternalStream() const;

  std::shared_ptr<const CudaApi> api_;
  CUdevice device_;
  CUcontext context_;
  std::string name_, format_;
  CudaCapability capability_;
  int multiprocessors_ = 0;
  bool syncEachLaunch_ = false;
};

} // namespace kiln::runtime::cuda

#endif // KILN_RUNTIME_CUDA_CUDADEVICE_H
