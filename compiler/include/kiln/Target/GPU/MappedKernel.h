//===- MappedKernel.h - A kernel function mapped onto GPU threads ---------===//
//
// What every GPU target's kernel-forming pass (kiln-spirv-form-kernels,
// kiln-gpu-form-kernel-modules) reads of a kernel function after
// kiln-gpu-map-workgroups: its arguments are the workgroup id and count
// (unused once mapped), the bindings, then the size symbols.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_TARGET_GPU_MAPPEDKERNEL_H
#define KILN_TARGET_GPU_MAPPEDKERNEL_H

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <cstdint>

namespace kiln::gpu {

struct MappedKernel {
  llvm::SmallVector<int32_t, 3> workgroupSize; // threads, [x, y, z]
  unsigned numBindings = 0;
  unsigned numSymbols = 0;
};

/// The interface of `func`, or failure with an error on it: not mapped yet,
/// or still reading its workgroup id or count.
mlir::FailureOr<MappedKernel> mappedKernel(mlir::func::FuncOp func);

} // namespace kiln::gpu

#endif // KILN_TARGET_GPU_MAPPEDKERNEL_H
