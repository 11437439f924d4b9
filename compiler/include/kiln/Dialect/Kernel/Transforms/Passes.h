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

/// The cells of a kernel's grid when it splits its columns too: one per
/// aligned chunk of rows (one when its extent is at most 1) times one per
/// aligned chunk of columns. More workgroups than this would run nothing.
inline int64_t gridCells(int64_t extent, int64_t alignment, int64_t columns,
                         int64_t columnAlignment) {
  auto chunks = [](int64_t n, int64_t align) {
    return std::max<int64_t>(1, (n + align - 1) / std::max<int64_t>(align, 1));
  };
  return chunks(extent, alignment) * chunks(columns, columnAlignment);
}

/// A workgroup's share of a kernel, as kiln-distribute-workgroups (and a GPU
/// mapping) computes it at run time: rows [begin, end), and on a grid its
/// columns [columnBegin, columnEnd). Unset where not split.
struct WorkgroupShare {
  mlir::Value begin, end, columnBegin, columnEnd;
};

/// Workgroup `id` of `count`'s share, emitted at `b`: the chunk of
/// workgroupChunk over `extent` (null where the rows are not split: every
/// workgroup runs all of them) aligned to `alignment`; with `columns` > 0,
/// `count` covers a grid of ceil(extent / chunk) row chunks, each with
/// count / that many chunks of the columns, aligned to `columnAlignment`.
WorkgroupShare workgroupShare(mlir::OpBuilder &b, mlir::Location loc, mlir::Value id,
                              mlir::Value count, mlir::Value extent, int64_t alignment,
                              int64_t columns = 0, int64_t columnAlignment = 1);

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
