//===- CudaCapability.h - Which NVIDIA executables run on which GPU -------===//
//
// A CUDA executable's format is "cuda-" and the chip it was compiled for
// ("cuda-sm_80", "cuda-sm_90", "cuda-sm_90a"). Its fatbin holds the chip's
// cubin and PTX, so it runs on GPUs of that compute capability and later:
// natively within the major version, through the driver's JIT compile of
// the PTX beyond it. An "a" chip (sm_90a: wgmma, TMA) runs on exactly its
// capability. The compiler's target "cuda" asks the driver which GPU is
// there and compiles for the chip that suits it best.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_CUDACAPABILITY_H
#define KILN_RUNTIME_CUDACAPABILITY_H

#include "kiln/runtime/Status.h"

#include <optional>
#include <string>
#include <string_view>

namespace kiln::runtime {

struct CudaCapability {
  int major = 0, minor = 0;
  std::string str() const { return std::to_string(major) + "." + std::to_string(minor); }
};

/// The capability of the first GPU the CUDA driver ($KILN_CUDA_DRIVER, else
/// libcuda.so.1) finds, and its name; Unavailable without a driver or GPU.
StatusOr<std::pair<CudaCapability, std::string>> findCudaGpu();

/// The chip Kiln compiles for on a GPU of `capability`: "sm_90a" on 9.0,
/// "sm_90" on later ones (their drivers compile its PTX), "sm_80" on 8.x;
/// empty before 8.0, which Kiln does not target.
std::string cudaChipFor(CudaCapability capability);

/// How far an executable of `format` is from what a GPU of `capability`
/// runs best: 0 for the chip cudaChipFor names, more for older chips;
/// nullopt where it cannot run there (not a CUDA format, a later chip, or
/// an "a" chip of another capability).
std::optional<int> cudaFormatDistance(std::string_view format, CudaCapability capability);

} // namespace kiln::runtime

#endif // KILN_RUNTIME_CUDACAPABILITY_H
