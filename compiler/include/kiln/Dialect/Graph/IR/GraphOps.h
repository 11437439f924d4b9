#ifndef KILN_DIALECT_GRAPH_IR_GRAPHOPS_H
#define KILN_DIALECT_GRAPH_IR_GRAPHOPS_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "kiln/Dialect/Graph/IR/GraphOpsDialect.h.inc"

#define GET_OP_CLASSES
#include "kiln/Dialect/Graph/IR/GraphOps.h.inc"

namespace kiln::graph {
/// The NumPy broadcast of two shapes, or failure if they are incompatible.
mlir::FailureOr<llvm::SmallVector<int64_t>>
broadcastShapes(llvm::ArrayRef<int64_t> a, llvm::ArrayRef<int64_t> b);

/// True for the ops that compute each result element from the operand
/// elements at the same (broadcast) index.
bool isElementwise(mlir::Operation *op);
} // namespace kiln::graph

#endif
