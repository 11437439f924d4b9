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

/// A scalar math op -> a call to libm's `name` (f64) or `name`f (f32),
/// declared once per module. For the functions LLVM has no lowering for and
/// whose MLIR polynomial approximations are less accurate than ATen's
/// (inverse trigonometric and hyperbolic functions, f64 erf); they are rare
/// in models, so the scalar call costs little.
template <typename MathOp>
struct MathToLibmCall : OpRewritePattern<MathOp> {
  MathToLibmCall(MLIRContext *ctx, StringRef name, bool float64Only = false)
      : OpRewritePattern<MathOp>(ctx, /*benefit=*/2), name(name), float64Only(float64Only) {}

  LogicalResult matchAndRewrite(MathOp op, PatternRewriter &rewriter) const override {
    Type type = op.getType();
    if (!type.isF64() && (float64Only || !type.isF32()))
      return failure();
    std::string symbol = (name + (type.isF32() ? "f" : "")).str();
    auto module = op->template getParentOfType<ModuleOp>();
    auto callee = module.template lookupSymbol<func::FuncOp>(symbol);
    if (!callee) {
      OpBuilder::InsertionGuard guard(rewriter);
      rewriter.setInsertionPointToStart(module.getBody());
      SmallVector<Type> operands(op->getNumOperands(), type);
      callee = func::FuncOp::create(rewriter, op.getLoc(), symbol,
                                    rewriter.getFunctionType(operands, {type}));
      callee.setPrivate();
    }
    rewriter.replaceOpWithNewOp<func::CallOp>(op, callee, op->getOperands());
    return success();
  }

  StringRef name;
  bool float64Only;
};

struct ApproximateMathPass
    : kiln::cpu::impl::ApproximateMathPassBase<ApproximateMathPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateMathPolynomialApproximationPatterns(patterns);
    MLIRContext *ctx = &getContext();
    patterns.add<MathToLibmCall<math::ErfOp>>(ctx, "erf", /*float64Only=*/true);
    patterns.add<MathToLibmCall<math::AsinOp>>(ctx, "asin");
    patterns.add<MathToLibmCall<math::AcosOp>>(ctx, "acos");
    patterns.add<MathToLibmCall<math::AsinhOp>>(ctx, "asinh");
    patterns.add<MathToLibmCall<math::AcoshOp>>(ctx, "acosh");
    patterns.add<MathToLibmCall<math::AtanhOp>>(ctx, "atanh");
    patterns.add<MathToLibmCall<math::Atan2Op>>(ctx, "atan2");
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};
} // namespace
