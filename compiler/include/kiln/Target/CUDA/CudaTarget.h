//===- CudaTarget.h - The NVIDIA (CUDA) targets ---------------------------===//
//
// NVIDIA GPUs: kernels are mapped onto workgroups of threads by the shared
// GPU layer (Target/GPU), become one gpu.module each (kiln-gpu-form-kernel-modules)
// and lower through MLIR's NVVM dialect to PTX; the CUDA toolkit's ptxas
// assembles each for the target's chip and fatbinary packs the cubin with
// its PTX, into the runtime's CUDA container (kiln/runtime/GpuImageContainer.h).
//
//===----------------------------------------------------------------------===//

#ifndef KILN_TARGET_CUDA_CUDATARGET_H
#define KILN_TARGET_CUDA_CUDATARGET_H

#include "kiln/Target/Target.h"

namespace kiln::cuda {

/// Registers the "cuda" target kind: cuda:sm_80, cuda:sm_90, cuda:sm_90a.
void registerCudaTarget();

/// A CUDA toolkit: what compiling for NVIDIA GPUs needs from it.
struct CudaToolkit {
  std::string root;      // the `toolkit` MLIR's NVVM target takes
  std::string ptxas;     // <root>/bin/ptxas
  std::string fatbinary; // <root>/bin/fatbinary
};

/// The toolkit, looked for in order: $KILN_CUDA_PATH (which must then be
/// one), $CUDA_HOME, $CUDA_PATH, $CUDA_ROOT, /usr/local/cuda, the newest
/// /usr/local/cuda-*, and the pip wheels nvidia-cuda-nvcc and nvidia-nvvm
/// (site-packages/nvidia/cu13: $KILN_CUDA_WHEELS, which the kiln package
/// sets from sys.path, or under $VIRTUAL_ENV or this process's prefix).
/// A toolkit has bin/ptxas, bin/fatbinary and nvvm/libdevice/libdevice.10.bc.
llvm::Expected<CudaToolkit> findCudaToolkit();

/// Serializes every gpu.module of `kernels` (one per kernel, lowered to
/// NVVM) for `chip` ("sm_90"): PTX through MLIR's NVVM target (libdevice
/// linked), a cubin from ptxas, both in a fatbin per kernel.
llvm::Expected<SerializedKernels> serializeNvvmKernels(mlir::ModuleOp kernels,
                                                       llvm::StringRef chip, bool keepText);

} // namespace kiln::cuda

#endif // KILN_TARGET_CUDA_CUDATARGET_H
