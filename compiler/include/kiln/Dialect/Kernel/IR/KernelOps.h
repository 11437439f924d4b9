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

#define GET_OP_CLASSES
#include "kiln/Dialect/Kernel/IR/KernelOps.h.inc"

#endif
