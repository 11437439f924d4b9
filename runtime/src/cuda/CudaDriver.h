//===- CudaDriver.h - The CUDA driver's entry into the registry -----------===//

#ifndef KILN_RUNTIME_CUDA_CUDADRIVER_H
#define KILN_RUNTIME_CUDA_CUDADRIVER_H

#include "kiln/runtime/Device.h"

namespace kiln::runtime {

/// Registers "cuda" (DriverRegistry::global() does, on first use). Every
/// build has it: without libcuda, creating a device is Unavailable.
Status registerCudaDriver(DriverRegistry &registry);

} // namespace kiln::runtime

#endif // KILN_RUNTIME_CUDA_CUDADRIVER_H
