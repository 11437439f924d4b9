#include "kiln/Dialect/Kernel/Transforms/Passes.h"

#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace kiln::kernel {
#define GEN_PASS_DEF_FUSEELEMENTWISEPASS
#include "kiln/Dialect/Kernel/Transforms/Passes.h.inc"
} // namespace kiln::kernel

using namespace mlir;

namespace {
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
    linalg::GenericOp::getCanonicalizationPatterns(patterns, &getContext());
    tensor::EmptyOp::getCanonicalizationPatterns(patterns, &getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};
} // namespace
