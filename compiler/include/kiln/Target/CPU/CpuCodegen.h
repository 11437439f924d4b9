#ifndef KILN_TARGET_CPU_CPUCODEGEN_H
#define KILN_TARGET_CPU_CPUCODEGEN_H

#include "kiln/Target/CPU/CpuTarget.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/Error.h"

namespace kiln::cpu {

/// Splits an LLVM-dialect module into one module per kernel (SplitKernels.h),
/// translates each to LLVM IR, optimizes it at O3 and emits an object file
/// for `target`, in parallel across the cores, and links the objects into
/// one shared object with lld: the executable. Identical kernels are
/// compiled once per process. `keepText` keeps each kernel's optimized LLVM
/// IR and assembly.
llvm::Expected<SerializedKernels> generateSharedObject(mlir::ModuleOp module,
                                                       const CpuTarget &target, bool keepText);

} // namespace kiln::cpu

#endif
