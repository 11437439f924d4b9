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

/// Attribute on outlined kernel functions: the kernel's name.
inline constexpr llvm::StringLiteral kKernelAttr = "kiln.kernel";
/// Attribute on outlined kernel functions: the leading parallel extent, an
/// integer or, when symbolic, the map of its expression over the symbols.
inline constexpr llvm::StringLiteral kExtentAttr = "kiln.workgroup_extent";
/// Attribute on outlined kernel functions of graphs with symbolic sizes: the
/// number of size symbols, passed as the kernel's last `index` arguments.
inline constexpr llvm::StringLiteral kNumSymbolsAttr = "kiln.num_symbols";
/// Set by kiln-distribute-workgroups: the row alignment of workgroup chunks.
inline constexpr llvm::StringLiteral kAlignmentAttr = "kiln.workgroup_alignment";
/// Set by kiln-distribute-workgroups on a kernel whose temporaries moved
/// into a scratch buffer: its size in bytes. The kernel takes that buffer
/// (memref<N x i8>) as its last memref argument, and the plan binds a
/// buffer of that size, private to the launch, after the others.
inline constexpr llvm::StringLiteral kScratchBytesAttr = "kiln.scratch_bytes";
/// Set by kiln-mark-in-place-operands: pairs of binding indices [input,
/// output, ...] that one buffer may serve both (see the pass).
inline constexpr llvm::StringLiteral kInPlaceOperandsAttr = "kiln.in_place_operands";
/// Attribute on kernel functions whose every top-level loop nest iterates
/// rows and, directly inside (or in loops marked kColumnLoopAttr), the
/// columns of one [rows, N] output space
/// (a matmul and its epilogue): N, a constant. Workgroups then split the
/// columns as well as the rows (kiln-distribute-workgroups), so a matmul
/// with few rows still runs on every core.
inline constexpr llvm::StringLiteral kColumnExtentAttr = "kiln.column_extent";
/// On an scf.for inside a top-level loop nest of such a kernel: this loop,
/// not the one directly inside the top-level loop, iterates the columns.
inline constexpr llvm::StringLiteral kColumnLoopAttr = "kiln.column_loop";
/// With kColumnExtentAttr: column chunks are multiples of this.
inline constexpr llvm::StringLiteral kColumnAlignmentAttr = "kiln.column_alignment";
/// Marks the linalg.generic a graph matmul lowers to: "ikj" (B is [K, N]) or
/// "ijk" (B is [N, K]), the loop order of its iteration space. Targets use it
/// to pick a microkernel.
inline constexpr llvm::StringLiteral kContractionAttr = "kiln.contraction";

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
