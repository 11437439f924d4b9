#include "kiln/Dialect/Kernel/Transforms/Passes.h"

#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"
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

/// A map that reads an epilogue input at the output index, or broadcast
/// along some dims: every result a dim or the constant 0.
bool isBroadcastMap(AffineMap map) {
  return llvm::all_of(map.getResults(), [](AffineExpr e) {
    if (auto constant = dyn_cast<AffineConstantExpr>(e))
      return constant.getValue() == 0;
    return isa<AffineDimExpr>(e);
  });
}

/// Folds the pointwise generic that reads a convolution's result into the
/// convolution's epilogue: the generic's body runs on each result element in
/// registers, before the store. Kernel formation only lets elementwise ops
/// join a convolution's kernel as such a chain, which fusion has made one
/// generic by now.
void foldConvolutionEpilogues(func::FuncOp func) {
  SmallVector<linalg::GenericOp> generics;
  func.walk([&](linalg::GenericOp op) { generics.push_back(op); });
  for (linalg::GenericOp op : generics) {
    if (op.getNumDpsInits() != 1 || op.getNumResults() != 1 ||
        op.getNumParallelLoops() != op.getNumLoops() || op.getNumLoops() != 4 ||
        op.payloadUsesValueFromOperand(op.getDpsInitOperand(0)) ||
        !op.getMatchingIndexingMap(op.getDpsInitOperand(0)).isIdentity())
      continue;
    // The convolution's result, read (possibly by several operands: silu is
    // x * sigmoid(x)) only by this generic, at the output index.
    kiln::kernel::Conv2dOp conv;
    for (OpOperand *input : op.getDpsInputOperands())
      if (auto def = input->get().getDefiningOp<kiln::kernel::Conv2dOp>())
        conv = def;
    auto readsConv = [&](OpOperand *input) { return conv && input->get() == conv.getResult(0); };
    if (!conv || !conv.getEpilogue().empty() ||
        conv.getResult(0).getType() != op.getResult(0).getType() ||
        llvm::any_of(conv.getResult(0).getUsers(), [&](Operation *user) { return user != op; }) ||
        !llvm::all_of(op.getDpsInputOperands(), [&](OpOperand *input) {
          AffineMap map = op.getMatchingIndexingMap(input);
          return readsConv(input) ? map.isIdentity() : isBroadcastMap(map);
        }))
      continue;
    SmallVector<Value> inputs;
    SmallVector<Attribute> maps;
    for (OpOperand *input : op.getDpsInputOperands())
      if (!readsConv(input)) {
        inputs.push_back(input->get());
        maps.push_back(AffineMapAttr::get(op.getMatchingIndexingMap(input)));
      }
    OpBuilder b(op);
    auto fused = kiln::kernel::Conv2dOp::create(
        b, conv.getLoc(), op.getResultTypes(), conv.getInput(), conv.getWeight(), conv.getBias(),
        op.getDpsInitOperand(0)->get(), inputs, conv.getStridesAttr(), conv.getDilationsAttr(),
        b.getArrayAttr(maps), conv.getGroupsAttr());
    // The block: the convolution's value first, then the other inputs' elements.
    Block &old = op.getRegion().front();
    Block *body = b.createBlock(&fused.getEpilogue());
    IRMapping mapping;
    Value value = body->addArgument(getElementTypeOrSelf(conv.getResult(0).getType()), op.getLoc());
    for (OpOperand *input : op.getDpsInputOperands()) {
      BlockArgument arg = old.getArgument(input->getOperandNumber());
      mapping.map(arg, readsConv(input) ? value : body->addArgument(arg.getType(), arg.getLoc()));
    }
    for (Operation &inner : old.without_terminator())
      b.clone(inner, mapping);
    kiln::kernel::EpilogueYieldOp::create(
        b, op.getLoc(), mapping.lookupOrDefault(old.getTerminator()->getOperand(0)));
    op.getResult(0).replaceAllUsesWith(fused.getResult(0));
    op.erase();
    Operation *oldInit = conv.getInit().getDefiningOp();
    conv.erase();
    if (oldInit && isa<tensor::EmptyOp>(oldInit) && oldInit->use_empty())
      oldInit->erase();
  }
}

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
    foldConvolutionEpilogues(getOperation());
  }
};
} // namespace
