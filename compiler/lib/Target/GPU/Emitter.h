// Helpers for emitting the scalar loops of Kiln's kernel ops (attention,
// convolution) on the GPU: internal to compiler/lib/Target/GPU.
#ifndef KILN_TARGET_GPU_EMITTER_H
#define KILN_TARGET_GPU_EMITTER_H

#include "kiln/Dialect/Kernel/IR/KernelOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

namespace kiln::gpu {

struct Emitter {
  mlir::OpBuilder &b;
  mlir::Location loc;

  mlir::Value index(int64_t v) { return mlir::arith::ConstantIndexOp::create(b, loc, v); }
  mlir::Value constant(mlir::Type type, double v) {
    return mlir::arith::ConstantOp::create(b, loc, b.getFloatAttr(type, v));
  }
  mlir::Value dim(mlir::Value memref, int64_t d) {
    return mlir::getValueOrCreateConstantIndexOp(b, loc,
                                                 mlir::memref::getMixedSize(b, loc, memref, d));
  }
  mlir::Value load(mlir::Value memref, mlir::ValueRange at) {
    return mlir::memref::LoadOp::create(b, loc, memref, at);
  }
  /// The value of `memref` at `at`, as `type` (loads of half precision are
  /// widened: sums run in float32).
  mlir::Value loadAs(mlir::Type type, mlir::Value memref, mlir::ValueRange at) {
    mlir::Value value = load(memref, at);
    if (value.getType() != type)
      value = mlir::arith::ExtFOp::create(b, loc, type, value);
    return value;
  }
  void storeAs(mlir::Value value, mlir::Value memref, mlir::ValueRange at) {
    mlir::Type element = mlir::cast<mlir::MemRefType>(memref.getType()).getElementType();
    if (value.getType() != element)
      value = mlir::arith::TruncFOp::create(b, loc, element, value);
    mlir::memref::StoreOp::create(b, loc, value, memref, at);
  }
  mlir::Value below(mlir::Value value, mlir::Value bound) {
    return mlir::arith::CmpIOp::create(b, loc, mlir::arith::CmpIPredicate::ult, value, bound);
  }
  /// for (i = lb; i < ub; i += step) carrying `init`; body returns the new
  /// values.
  mlir::ValueRange stridedLoop(
      mlir::Value lb, mlir::Value ub, mlir::Value step, mlir::ValueRange init,
      llvm::function_ref<llvm::SmallVector<mlir::Value>(mlir::Value, mlir::ValueRange)> body) {
    auto loop = mlir::scf::ForOp::create(
        b, loc, lb, ub, step, init,
        [&](mlir::OpBuilder &nested, mlir::Location, mlir::Value iv, mlir::ValueRange carried) {
          mlir::OpBuilder::InsertionGuard guard(b);
          b.setInsertionPointToStart(nested.getInsertionBlock());
          mlir::scf::YieldOp::create(b, loc, body(iv, carried));
        });
    return loop.getResults();
  }
  /// for (i = lb; i < ub; ++i) carrying `init`.
  mlir::ValueRange forLoop(
      mlir::Value lb, mlir::Value ub, mlir::ValueRange init,
      llvm::function_ref<llvm::SmallVector<mlir::Value>(mlir::Value, mlir::ValueRange)> body) {
    return stridedLoop(lb, ub, index(1), init, body);
  }
  /// `then()` where `condition` holds, else `otherwise` (what `then`
  /// computes, loads included, runs only where it holds).
  mlir::Value ifElse(mlir::Value condition, llvm::function_ref<mlir::Value()> then,
                     mlir::Value otherwise) {
    auto branch = mlir::scf::IfOp::create(b, loc, mlir::TypeRange{otherwise.getType()}, condition,
                                          /*withElseRegion=*/true);
    mlir::OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(branch.thenBlock());
    mlir::scf::YieldOp::create(b, loc, then());
    b.setInsertionPointToStart(branch.elseBlock());
    mlir::scf::YieldOp::create(b, loc, otherwise);
    return branch.getResult(0);
  }
  /// `body()` where `condition` holds.
  void when(mlir::Value condition, llvm::function_ref<void()> body) {
    auto branch = mlir::scf::IfOp::create(b, loc, condition, /*withElseRegion=*/false);
    mlir::OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(branch.thenBlock()->getTerminator());
    body();
  }
  /// A parallel loop over [0, ubs) whose iterations write distinct
  /// elements (so the GPU mapping spreads it over threads).
  mlir::scf::ParallelOp parallelLoop(mlir::ValueRange ubs,
                                     llvm::function_ref<void(mlir::ValueRange)> body) {
    llvm::SmallVector<mlir::Value> zeros(ubs.size(), index(0)), ones(ubs.size(), index(1));
    auto loop = mlir::scf::ParallelOp::create(
        b, loc, zeros, ubs, ones, [&](mlir::OpBuilder &nested, mlir::Location, mlir::ValueRange ivs) {
          mlir::OpBuilder::InsertionGuard guard(b);
          b.setInsertionPointToStart(nested.getInsertionBlock());
          body(ivs);
        });
    loop->setAttr(kiln::kernel::kWritesApartAttr, b.getUnitAttr());
    return loop;
  }
};

/// The type sums of `element` values run in: float32 for half precision.
inline mlir::Type accumulatorType(mlir::Type element) {
  return element.isF16() || element.isBF16() ? mlir::Float32Type::get(element.getContext())
                                             : element;
}

} // namespace kiln::gpu

#endif // KILN_TARGET_GPU_EMITTER_H
