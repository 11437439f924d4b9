//===- RocmTarget.h - The AMD (ROCm) targets, compile-only ----------------===//
//
// AMD GPUs: kernels are mapped onto workgroups by the shared GPU layer
// (Target/GPU), become one gpu.module each (kiln-gpu-form-kernel-modules)
// and lower through MLIR's ROCDL dialect to an AMD GPU code object (HSACO)
// per kernel, linked by ld.lld with the ROCm device libraries (ocml, ockl)
// for math, into the runtime's GPU image container. No runtime driver runs
// them yet.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_TARGET_ROCM_ROCMTARGET_H
#define KILN_TARGET_ROCM_ROCMTARGET_H

#include "kiln/Target/Target.h"

namespace kiln::rocm {

/// Registers the "rocm" target kind: rocm:gfx942, rocm:gfx1100.
void registerRocmTarget();

/// The folder MLIR's ROCDL target takes as its toolkit: llvm/bin/ld.lld and
/// amdgcn/bitcode. In order: $KILN_ROCM_PATH (which must then be one),
/// $ROCM_PATH, /opt/rocm, then one Kiln makes of links to Debian's
/// packages (lld-22's ld.lld, rocm-device-libs' bitcode) in its cache
/// folder ($XDG_CACHE_HOME or ~/.cache, kiln/rocm-toolkit).
llvm::Expected<std::string> findRocmToolkit();

/// Serializes every gpu.module of `kernels` (one per kernel, lowered to
/// ROCDL) into a code object each.
llvm::Expected<SerializedKernels> serializeRocdlKernels(mlir::ModuleOp kernels, bool keepText);

} // namespace kiln::rocm

#endif // KILN_TARGET_ROCM_ROCMTARGET_H
