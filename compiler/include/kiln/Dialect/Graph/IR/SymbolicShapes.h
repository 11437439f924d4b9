//===- SymbolicShapes.h - Dims that are symbols of the graph ------------===//
//
// A kiln_graph tensor dim is either static or symbolic. A symbolic dim is `?`
// in the type, and the type's encoding says which size it is: an affine map
// with no dims whose results are the expressions of the `?` dims, in order,
// over the graph's size symbols (s0, s1, ... in the order of the graph's
// `kiln_graph.symbols` attribute, which names them as Dynamo did).
//
//   tensor<?x128xf32, affine_map<()[s0] -> (s0)>>         [s0, 128]
//   tensor<?x?xf32, affine_map<()[s0, s1] -> (s0 * s1, s1)>>
//
// Expressions are uniqued, so two dims with the same expression are the same
// size, and two types with the same dims are equal types. Every expression
// kept in an encoding is normalized: its map has exactly as many symbols as
// its highest symbol + 1.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_DIALECT_GRAPH_IR_SYMBOLICSHAPES_H
#define KILN_DIALECT_GRAPH_IR_SYMBOLICSHAPES_H

#include "mlir/IR/AffineExpr.h"
#include "mlir/IR/AffineMap.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/Support/LLVM.h"
#include "llvm/Support/LogicalResult.h"

namespace kiln::graph {

/// The name of the graph function attribute listing its size symbols:
/// an array of dictionaries {name, min, max}.
inline constexpr llvm::StringLiteral kSymbolsAttr = "kiln_graph.symbols";
/// The argument attribute of a 0-d int64 graph input whose value is a size
/// symbol (its index), for a symbol that is no input's dim.
inline constexpr llvm::StringLiteral kSymbolArgAttr = "kiln_graph.symbol";
/// The (unit) argument attribute of a graph input that is a module's
/// parameter or buffer: the same tensor on every call, changed only in
/// place (which bumps its version counter). Kept on the plan's arguments:
/// computations on parameters alone may be cached across calls.
inline constexpr llvm::StringLiteral kParameterArgAttr = "kiln_graph.parameter";
/// The graph function attribute listing the inputs the graph overwrites (an
/// in-place op on a graph input, functionalized): an array of [result,
/// input] pairs (DenseI64ArrayAttr), each saying that the result is the
/// input's new value. The caller writes it back; the plan may compute it in
/// the input's own buffer (kiln-write-inputs-in-place).
inline constexpr llvm::StringLiteral kInputWritesAttr = "kiln_graph.input_writes";

/// Every dim of `type` as an expression (constants for static dims).
llvm::SmallVector<mlir::AffineExpr> dimExprs(mlir::ShapedType type);
mlir::AffineExpr dimExpr(mlir::ShapedType type, unsigned dim);

/// The expressions of the dynamic dims alone, as the encoding lists them.
llvm::SmallVector<mlir::AffineExpr> dynamicDimExprs(mlir::RankedTensorType type);

/// A tensor type with these dims: constants become static dims, the rest `?`
/// described by the encoding.
mlir::RankedTensorType symbolicTensorType(llvm::ArrayRef<mlir::AffineExpr> dims,
                                          mlir::Type element);

/// `type` with another element type, keeping its symbolic dims.
mlir::RankedTensorType withElementType(mlir::RankedTensorType type, mlir::Type element);

/// A normalized map (no dims, symbols up to the highest one used) of `exprs`.
mlir::AffineMap symbolMap(mlir::MLIRContext *context, llvm::ArrayRef<mlir::AffineExpr> exprs);

/// Whether the encoding matches the `?` dims (one expression each, normalized,
/// none of them a constant). Static types must have no affine-map encoding.
bool hasValidSymbolicShape(mlir::Type type);

/// True if `type` has a `?` dim.
inline bool isSymbolic(mlir::Type type) {
  auto shaped = llvm::dyn_cast<mlir::ShapedType>(type);
  return shaped && shaped.hasRank() && !shaped.hasStaticShape();
}

/// Whether a loop of this extent is worth splitting across workgroups: a
/// constant above 1, or any symbolic size.
inline bool isParallelExtent(mlir::AffineExpr extent) {
  auto constant = llvm::dyn_cast_or_null<mlir::AffineConstantExpr>(extent);
  return extent && (!constant || constant.getValue() > 1);
}

/// The number of elements as an expression.
mlir::AffineExpr numElementsExpr(mlir::ShapedType type);

/// Whether two sizes are equal for every value of the symbols: the same
/// expression, or (for products written in another order) equal at a spread
/// of sample values.
bool sameSize(mlir::AffineExpr a, mlir::AffineExpr b);

/// The NumPy broadcast of two shapes given as dim expressions (trailing dims
/// aligned; a dim of 1 takes the other's size); failure where two dims are
/// neither 1 nor the same size.
mlir::FailureOr<llvm::SmallVector<mlir::AffineExpr>>
broadcastDims(llvm::ArrayRef<mlir::AffineExpr> a, llvm::ArrayRef<mlir::AffineExpr> b);

/// A size for a diagnostic: `8`, `s0`, `s0 * 4`.
std::string describeSize(mlir::AffineExpr size);

/// Whether two types have the same dims (element types aside).
bool sameShape(mlir::RankedTensorType a, mlir::RankedTensorType b);

/// The type without its encoding (what linalg and memrefs see).
mlir::RankedTensorType withoutEncoding(mlir::RankedTensorType type);

} // namespace kiln::graph

#endif
