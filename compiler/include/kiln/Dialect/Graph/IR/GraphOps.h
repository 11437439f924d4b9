#ifndef KILN_DIALECT_GRAPH_IR_GRAPHOPS_H
#define KILN_DIALECT_GRAPH_IR_GRAPHOPS_H

#include "kiln/Dialect/Graph/IR/SymbolicShapes.h"

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace kiln::graph {
/// How an op iterates its leading dimension, as kernel formation sees it
/// (FusableOpInterface).
struct LeadingDim {
  /// Extent of the op's outermost loop if that loop is parallel: a constant,
  /// or an expression over the graph's size symbols.
  std::optional<mlir::AffineExpr> extent;
  /// Per operand: read at the same leading index the op writes.
  llvm::SmallVector<bool> aligned;
};

/// The FusableOpInterface rule for elementwise ops.
LeadingDim elementwiseLeadingDim(mlir::Operation *op);

/// Verifies an elementwise op: broadcast shapes and element types.
mlir::LogicalResult verifyElementwise(mlir::Operation *op);

/// What every reduction (Graph_ReduceOp in ODS) shares: the reduced dims
/// normalized (sorted, non-negative, all dims when `dims` is empty), the
/// verifier and the FusableOpInterface rule.
llvm::SmallVector<int64_t> reducedDims(mlir::Value input, llvm::ArrayRef<int64_t> dims);
mlir::LogicalResult verifyReduce(mlir::Operation *op, mlir::Value input,
                                 llvm::ArrayRef<int64_t> dims, bool keepdim);
LeadingDim reduceLeadingDim(mlir::Operation *op, llvm::ArrayRef<int64_t> reducedDims);
/// The verifier of argmax and argmin (Graph_ArgReduceOp).
mlir::LogicalResult verifyArgReduce(mlir::Operation *op, mlir::Value input, int64_t dim,
                                    bool keepdim);

/// Marks ops that compute each result element from the operand elements at
/// the same (broadcast) index.
template <typename ConcreteType>
class Elementwise : public mlir::OpTrait::TraitBase<ConcreteType, Elementwise> {
public:
  static mlir::LogicalResult verifyTrait(mlir::Operation *op) { return verifyElementwise(op); }
};
/// Element-type rules of elementwise ops (see GraphInterfaces.td).
template <typename ConcreteType>
class Comparison : public mlir::OpTrait::TraitBase<ConcreteType, Comparison> {};
template <typename ConcreteType>
class FloatOnly : public mlir::OpTrait::TraitBase<ConcreteType, FloatOnly> {};
template <typename ConcreteType>
class IntegerOnly : public mlir::OpTrait::TraitBase<ConcreteType, IntegerOnly> {};
/// Ops that run alone in their kernel (see GraphOps.td).
template <typename ConcreteType>
class OwnKernel : public mlir::OpTrait::TraitBase<ConcreteType, OwnKernel> {};
template <typename ConcreteType>
class TakesEpilogue : public mlir::OpTrait::TraitBase<ConcreteType, TakesEpilogue> {};
template <typename ConcreteType>
class OwnElementTypes : public mlir::OpTrait::TraitBase<ConcreteType, OwnElementTypes> {};
} // namespace kiln::graph

#include "kiln/Dialect/Graph/IR/GraphInterfaces.h.inc"
#include "kiln/Dialect/Graph/IR/GraphOpsDialect.h.inc"
#include "kiln/Dialect/Graph/IR/GraphEnums.h.inc"
#define GET_ATTRDEF_CLASSES
#include "kiln/Dialect/Graph/IR/GraphAttrs.h.inc"

#define GET_OP_CLASSES
#include "kiln/Dialect/Graph/IR/GraphOps.h.inc"

namespace kiln::graph {
/// The (unit) module attribute of a graph whose float32 matmuls may round
/// their operands to TF32 (the user's torch.set_float32_matmul_precision
/// is "high" or "medium", as for cuBLAS): GPU targets then put them on
/// tensor cores. The graph JSON's "float32_matmul_precision" sets it.
inline constexpr llvm::StringLiteral kAllowTf32Attr = "kiln_graph.allow_tf32";

/// The NumPy broadcast of two shapes, or failure if they are incompatible.
mlir::FailureOr<llvm::SmallVector<int64_t>>
broadcastShapes(llvm::ArrayRef<int64_t> a, llvm::ArrayRef<int64_t> b);

/// True for the ops with the Elementwise trait.
inline bool isElementwise(mlir::Operation *op) { return op->hasTrait<Elementwise>(); }
} // namespace kiln::graph

#endif
