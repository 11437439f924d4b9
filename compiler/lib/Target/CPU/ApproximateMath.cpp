#include "kiln/Target/CPU/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace kiln::cpu {
#define GEN_PASS_DEF_APPROXIMATEMATHPASS
#include "kiln/Target/CPU/Passes.h.inc"
} // namespace kiln::cpu

using namespace mlir;

namespace {

/// math.erf on f64 -> a call to libm's erf (declared once per module).
struct Float64ErfToLibm : OpRewritePattern<math::ErfOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(math::ErfOp op, PatternRewriter &rewriter) const override {
    if (!op.getType().isF64())
      return failure();
    auto module = op->getParentOfType<ModuleOp>();
    auto callee = module.lookupSymbol<func::FuncOp>("erf");
    if (!callee) {
      OpBuilder::InsertionGuard guard(rewriter);
      rewriter.setInsertionPointToStart(module.getBody());
      callee = func::FuncOp::create(rewriter, op.getLoc(), "erf",
                                    rewriter.getFunctionType({op.getType()}, {op.getType()}));
      callee.setPrivate();
    }
    rewriter.replaceOpWithNewOp<func::CallOp>(op, callee, op.getOperand());
    return success();
  }
};

struct ApproximateMathPass
    : kiln::cpu::impl::ApproximateMathPassBase<ApproximateMathPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateMathPolynomialApproximationPatterns(patterns);
    patterns.add<Float64ErfToLibm>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};
} // namespace
