#ifndef KILN_DIALECT_PLAN_IR_PLANOPS_H
#define KILN_DIALECT_PLAN_IR_PLANOPS_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "kiln/Dialect/Plan/IR/PlanOpsDialect.h.inc"

#define GET_OP_CLASSES
#include "kiln/Dialect/Plan/IR/PlanOps.h.inc"

namespace kiln::plan {
/// The attribute marking the plan's entry function.
inline constexpr llvm::StringLiteral kEntryAttr = "kiln_plan.entry";
/// The argument attribute giving a symbolic input's `?` dims (an affine map).
inline constexpr llvm::StringLiteral kDimsAttr = "kiln_plan.dims";
} // namespace kiln::plan

#endif
