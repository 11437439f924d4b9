#include "kiln/Dialect/Graph/IR/GraphOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"
#include "mlir/IR/PatternMatch.h"

using namespace mlir;
using namespace kiln::graph;

#include "kiln/Dialect/Graph/IR/GraphOpsDialect.cpp.inc"
#include "kiln/Dialect/Graph/IR/GraphEnums.cpp.inc"
#define GET_ATTRDEF_CLASSES
#include "kiln/Dialect/Graph/IR/GraphAttrs.cpp.inc"

void GraphDialect::initialize() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "kiln/Dialect/Graph/IR/GraphAttrs.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "kiln/Dialect/Graph/IR/GraphOps.cpp.inc"
      >();
}

namespace {

/// ew(reshape(a), reshape(b)) -> reshape(ew(a, b)): pointwise ops commute
/// with reshapes. Moving reshapes below pointwise chains lets fusion put the
/// chain in the kernel of the producer (e.g. the GELU after a Linear on a 3-D
/// input, whose matmul runs on the flattened 2-D view).
struct SinkReshapeBelowElementwise : RewritePattern {
  SinkReshapeBelowElementwise(MLIRContext *context)
      : RewritePattern(MatchAnyOpTypeTag(), /*benefit=*/1, context) {}

  LogicalResult matchAndRewrite(Operation *op, PatternRewriter &rewriter) const override {
    if (!isElementwise(op) || op->getNumResults() != 1)
      return failure();
    auto resultType = cast<RankedTensorType>(op->getResult(0).getType());
    if (resultType.getRank() == 0)
      return failure();
    ReshapeOp source;
    for (Value operand : op->getOperands())
      if (auto reshape = operand.getDefiningOp<ReshapeOp>())
        source = reshape;
    if (!source || source.getInput().getType().getRank() == 0)
      return failure();
    // Only when every non-scalar operand is a reshape from the same shape:
    // then no reshape is added, and the rewrite cannot undo itself.
    RankedTensorType sourceType = source.getInput().getType();
    SmallVector<Value> operands;
    for (Value operand : op->getOperands()) {
      if (cast<RankedTensorType>(operand.getType()).getRank() == 0) {
        operands.push_back(operand);
        continue;
      }
      // Broadcasting operands do not commute with the reshape.
      auto reshape = operand.getDefiningOp<ReshapeOp>();
      if (!reshape || !sameShape(reshape.getType(), resultType) ||
          !sameShape(reshape.getInput().getType(), sourceType))
        return failure();
      operands.push_back(reshape.getInput());
    }
    OperationState state(op->getLoc(), op->getName(), operands,
                         {withElementType(sourceType, resultType.getElementType())},
                         op->getAttrs());
    Operation *sunk = rewriter.create(state);
    rewriter.replaceOpWithNewOp<ReshapeOp>(op, resultType, sunk->getResult(0));
    return success();
  }
};

/// softmax(reshape(a)) along the last dim -> reshape(softmax(a)) when the
/// reshape keeps the last dim: the rows are the same.
template <typename SoftmaxOp>
struct SinkReshapeBelowSoftmax : OpRewritePattern<SoftmaxOp> {
  using OpRewritePattern<SoftmaxOp>::OpRewritePattern;
  LogicalResult matchAndRewrite(SoftmaxOp op, PatternRewriter &rewriter) const override {
    auto reshape = op.getInput().template getDefiningOp<ReshapeOp>();
    if (!reshape)
      return failure();
    auto from = reshape.getInput().getType();
    auto to = op.getInput().getType();
    if (to.getRank() == 0 || op.getNormalizedDim() != to.getRank() - 1 || from.getRank() == 0 ||
        !sameSize(dimExpr(from, from.getRank() - 1), dimExpr(to, to.getRank() - 1)))
      return failure();
    Value sunk = SoftmaxOp::create(rewriter, op.getLoc(), from, reshape.getInput(),
                                   from.getRank() - 1);
    rewriter.replaceOpWithNewOp<ReshapeOp>(op, op.getType(), sunk);
    return success();
  }
};

} // namespace

void GraphDialect::getCanonicalizationPatterns(RewritePatternSet &results) const {
  results.add<SinkReshapeBelowElementwise, SinkReshapeBelowSoftmax<SoftmaxOp>,
              SinkReshapeBelowSoftmax<LogSoftmaxOp>>(getContext());
}

Operation *GraphDialect::materializeConstant(OpBuilder &builder,
                                             Attribute value, Type type,
                                             Location loc) {
  auto elements = dyn_cast<ElementsAttr>(value);
  if (!elements || elements.getType() != type)
    return nullptr;
  return ConstantOp::create(builder, loc, elements);
}
