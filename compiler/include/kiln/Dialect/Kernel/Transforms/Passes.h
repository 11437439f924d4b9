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
/// Attribute on outlined kernel functions: the leading parallel extent.
inline constexpr llvm::StringLiteral kExtentAttr = "kiln.workgroup_extent";
/// Set by kiln-distribute-workgroups: the row alignment of workgroup chunks.
inline constexpr llvm::StringLiteral kAlignmentAttr = "kiln.workgroup_alignment";
/// Marks the linalg.generic a graph matmul lowers to: "ikj" (B is [K, N]) or
/// "ijk" (B is [N, K]), the loop order of its iteration space. Targets use it
/// to pick a microkernel.
inline constexpr llvm::StringLiteral kContractionAttr = "kiln.contraction";

#define GEN_PASS_DECL
#include "kiln/Dialect/Kernel/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "kiln/Dialect/Kernel/Transforms/Passes.h.inc"

} // namespace kiln::kernel

#endif
