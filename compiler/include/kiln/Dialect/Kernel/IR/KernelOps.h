#ifndef KILN_DIALECT_KERNEL_IR_KERNELOPS_H
#define KILN_DIALECT_KERNEL_IR_KERNELOPS_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/DestinationStyleOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "kiln/Dialect/Kernel/IR/KernelOpsDialect.h.inc"

#define GET_ATTRDEF_CLASSES
#include "kiln/Dialect/Kernel/IR/KernelAttrs.h.inc"

#define GET_OP_CLASSES
#include "kiln/Dialect/Kernel/IR/KernelOps.h.inc"

namespace kiln::kernel {

/// The target of the module enclosing `op` (its `kiln_kernel.target`), or
/// null when it has none.
TargetAttr getTarget(mlir::Operation *op);

/// The target of the module enclosing `op`; without one, an error at `op`
/// saying that `pass` needs it.
mlir::FailureOr<TargetAttr> requireTarget(mlir::Operation *op, llvm::StringRef pass);

} // namespace kiln::kernel

#endif
