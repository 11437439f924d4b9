// The scalar semantics of kiln_graph ops, for the bodies of the linalg ops
// GraphToLinalg builds.
//
// kiln_graph types uint8 as ui8; linalg and arith take signless integers, so
// ConvertGraphToLinalg makes every type signless before lowering and marks
// the ops that compute on unsigned values with kUnsignedAttr. Comparisons,
// min/max, division, remainder, sign and casts then choose their unsigned
// forms; the others (add, mul, bitwise ops, data movement) are the same bits.
#ifndef KILN_CONVERSION_GRAPHTOLINALG_SCALAROPS_H
#define KILN_CONVERSION_GRAPHTOLINALG_SCALAROPS_H

#include "kiln/Dialect/Kernel/IR/KernelOps.h"
#include "mlir/IR/Builders.h"

namespace kiln::scalar {

/// Set on an op whose operands (for a convert: its input) were unsigned.
using kiln::kernel::kUnsignedAttr;
bool computesUnsigned(mlir::Operation *op);

bool isFloat(mlir::Type type);

/// `value` in `type`: floats, bools (nonzero is true), integers as the bits
/// of the two's complement value.
mlir::Value scalarConstant(mlir::OpBuilder &b, mlir::Location loc, mlir::Type type, double value);

/// The identity of a min (`lowest` false) or max (`lowest` true) reduction.
mlir::Value extremeConstant(mlir::OpBuilder &b, mlir::Location loc, mlir::Type element,
                            bool lowest, bool isUnsigned = false);

mlir::Value addScalar(mlir::OpBuilder &b, mlir::Location loc, mlir::Value x, mlir::Value y);
mlir::Value subScalar(mlir::OpBuilder &b, mlir::Location loc, mlir::Value x, mlir::Value y);
mlir::Value mulScalar(mlir::OpBuilder &b, mlir::Location loc, mlir::Value x, mlir::Value y);
/// NaN-propagating for floats, like ATen; or and and for bools.
mlir::Value maxScalar(mlir::OpBuilder &b, mlir::Location loc, mlir::Value x, mlir::Value y,
                      bool isUnsigned = false);
mlir::Value minScalar(mlir::OpBuilder &b, mlir::Location loc, mlir::Value x, mlir::Value y,
                      bool isUnsigned = false);

/// ATen's casts: float to integer truncates (through int64), anything to
/// bool is != 0 (NaN is true), bool is 0 or 1.
mlir::Value convertScalar(mlir::OpBuilder &b, mlir::Location loc, mlir::Value x, mlir::Type to,
                          bool fromUnsigned = false);

/// A reduction's combining function (kiln_graph reductions, scatter_reduce).
enum class Combine { Sum, Prod, Max, Min };

/// Its start value: 0, 1, or the lowest (max) or highest (min) value.
mlir::Value combineIdentity(mlir::OpBuilder &b, mlir::Location loc, mlir::Type element,
                            Combine kind, bool isUnsigned = false);
/// acc combined with x. `reassociate` lets LLVM reorder float sums and
/// products (fast-math reassoc and contract) to vectorize a reduction loop.
mlir::Value combineScalar(mlir::OpBuilder &b, mlir::Location loc, Combine kind, mlir::Value acc,
                          mlir::Value x, bool isUnsigned, bool reassociate);

/// Does (x, i) come before (best, bestIndex) in an argmax (`isMax`) or
/// argmin? The larger (smaller) value wins, NaN above all, and the smaller
/// index breaks ties, so the result is the first extreme in any visiting
/// order.
mlir::Value beatsScalar(mlir::OpBuilder &b, mlir::Location loc, mlir::Value x, mlir::Value i,
                        mlir::Value best, mlir::Value bestIndex, bool isMax,
                        bool isUnsigned = false);

/// The scalar body of an elementwise graph op (failure: not elementwise).
mlir::FailureOr<mlir::Value> elementwiseBody(mlir::OpBuilder &b, mlir::Location loc,
                                             mlir::Operation *op, mlir::ValueRange args,
                                             mlir::Type resultElement);

} // namespace kiln::scalar

#endif // KILN_CONVERSION_GRAPHTOLINALG_SCALAROPS_H
