#ifndef KILN_DIALECT_KERNEL_TRANSFORMS_PASSES_H
#define KILN_DIALECT_KERNEL_TRANSFORMS_PASSES_H

#include "kiln/Dialect/Graph/IR/GraphOps.h"
#include "kiln/Dialect/Kernel/IR/KernelOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Pass/Pass.h"

namespace kiln::kernel {

/// Rows per workgroup when `count` workgroups split a kernel's leading
/// extent: ceil(extent / count) rounded up to `alignment`. Workgroup `id`
/// runs [min(id * chunk, extent), min((id + 1) * chunk, extent)).
/// kiln-distribute-workgroups emits this computation into every kernel.
inline int64_t workgroupChunk(int64_t extent, int64_t count, int64_t alignment) {
  int64_t perWorkgroup = (extent + count - 1) / count;
  return (perWorkgroup + alignment - 1) / alignment * alignment;
}

/// The size-symbol arguments of an outlined kernel function (kNumSymbolsAttr),
/// or of the kernel function enclosing `op`; empty for static kernels.
llvm::SmallVector<mlir::Value> symbolArguments(mlir::Operation *op);

/// The value of `size` (a constant or an expression over the size symbols)
/// at `b`'s insertion point, inside an outlined kernel function.
mlir::Value sizeValue(mlir::OpBuilder &b, mlir::Location loc, mlir::AffineExpr size);

/// Every dim of a symbolic or static tensor type as index values / constants.
llvm::SmallVector<mlir::OpFoldResult> dimSizes(mlir::OpBuilder &b, mlir::Location loc,
                                               llvm::ArrayRef<mlir::AffineExpr> dims);

#define GEN_PASS_DECL
#include "kiln/Dialect/Kernel/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "kiln/Dialect/Kernel/Transforms/Passes.h.inc"

} // namespace kiln::kernel

#endif
