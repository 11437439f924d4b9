//===- CudaDriver.cpp - Registering the CUDA driver -----------------------===//

#include "CudaDriver.h"

#include "CudaDevice.h"

namespace kiln::runtime {

Status registerCudaDriver(DriverRegistry &registry) {
  return registry.registerDriver(
      "cuda", [](const DeviceOptions &) -> StatusOr<std::unique_ptr<Device>> {
        StatusOr<std::unique_ptr<cuda::CudaDevice>> device = cuda::CudaDevice::create();
        if (!device.ok())
          return device.status();
        return std::unique_ptr<Device>(std::move(*device));
      });
}

} // namespace kiln::runtime
