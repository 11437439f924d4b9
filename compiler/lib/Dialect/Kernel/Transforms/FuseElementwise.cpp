#include "kiln/Dialect/Kernel/Transforms/Passes.h"

#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace kiln::kernel {
#define GEN_PASS_DEF_FUSEELEMENTWISEPASS
#include "kiln/Dialect/Kernel/Transforms/Passes.h.inc"
} // namespace kiln::kernel

using namespace mlir;

namespace {

/// A pointwise generic writing into a fresh tensor.empty while it reads a
/// same-shaped, single-use result of another linalg op: write into that
/// operand instead. Bufferization then computes e.g. a matmul's epilogue in
/// place in the matmul's buffer (and that buffer in the kernel's output),
/// instead of allocating an intermediate.
struct ReuseInputAsInit : OpRewritePattern<linalg::GenericOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(linalg::GenericOp op,
                                PatternRewriter &rewriter) const override {
    if (op.getNumDpsInits() != 1 || op.getNumParallelLoops() != op.getNumLoops() ||
        !op.getDpsInitOperand(0)->get().getDefiningOp<tensor::EmptyOp>() ||
        op.payloadUsesValueFromOperand(op.getDpsInitOperand(0)) ||
        !op.getMatchingIndexingMap(op.getDpsInitOperand(0)).isIdentity())
      return failure();
    Type resultType = op.getResult(0).getType();
    for (OpOperand *input : op.getDpsInputOperands()) {
      Value value = input->get();
      if (value.getType() != resultType || !value.hasOneUse() ||
          !value.getDefiningOp<linalg::LinalgOp>() ||
          !op.getMatchingIndexingMap(input).isIdentity())
        continue;
      unsigned index = input->getOperandNumber();
      SmallVector<Value> inputs;
      SmallVector<AffineMap> maps;
      for (OpOperand *other : op.getDpsInputOperands()) {
        if (other == input)
          continue;
        inputs.push_back(other->get());
        maps.push_back(op.getMatchingIndexingMap(other));
      }
      maps.push_back(op.getMatchingIndexingMap(op.getDpsInitOperand(0)));
      auto fused = linalg::GenericOp::create(
          rewriter, op.getLoc(), TypeRange{resultType}, inputs, ValueRange{value},
          maps, op.getIteratorTypesArray());
      Block &oldBody = op.getRegion().front();
      Block *body = rewriter.createBlock(&fused.getRegion());
      SmallVector<Value> replacements;
      for (BlockArgument arg : oldBody.getArguments())
        if (arg.getArgNumber() != index && arg.getArgNumber() + 1 != oldBody.getNumArguments())
          body->addArgument(arg.getType(), arg.getLoc());
      BlockArgument out = body->addArgument(
          oldBody.getArgument(index).getType(), oldBody.getArgument(index).getLoc());
      unsigned next = 0;
      for (BlockArgument arg : oldBody.getArguments()) {
        if (arg.getArgNumber() == index)
          replacements.push_back(out);
        else if (arg.getArgNumber() + 1 == oldBody.getNumArguments())
          replacements.push_back(out); // unused by the payload
        else
          replacements.push_back(body->getArgument(next++));
      }
      rewriter.mergeBlocks(&oldBody, body, replacements);
      rewriter.replaceOp(op, fused.getResults());
      return success();
    }
    return failure();
  }
};

struct FuseElementwisePass
    : kiln::kernel::impl::FuseElementwisePassBase<FuseElementwisePass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    // A producer used more than once stays materialized: fusing it into each
    // consumer would recompute it, which only pays off for cheap producers.
    linalg::ControlFusionFn control = [](OpOperand *operand) {
      Operation *producer = operand->get().getDefiningOp();
      return producer && producer->hasOneUse();
    };
    linalg::populateElementwiseOpsFusionPatterns(patterns, control);
    patterns.add<ReuseInputAsInit>(&getContext(), /*benefit=*/0);
    linalg::GenericOp::getCanonicalizationPatterns(patterns, &getContext());
    tensor::EmptyOp::getCanonicalizationPatterns(patterns, &getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};
} // namespace
