#include "kiln/Target/CPU/Passes.h"

#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace kiln::cpu {
#define GEN_PASS_DEF_APPROXIMATEMATHPASS
#include "kiln/Target/CPU/Passes.h.inc"
} // namespace kiln::cpu

using namespace mlir;

namespace {
struct ApproximateMathPass
    : kiln::cpu::impl::ApproximateMathPassBase<ApproximateMathPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateMathPolynomialApproximationPatterns(patterns);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};
} // namespace
