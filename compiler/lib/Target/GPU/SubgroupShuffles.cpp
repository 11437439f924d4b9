// Subgroup reductions as butterflies of shuffles, and subgroup ids from
// thread ids, for a target of fixed subgroup size (see Passes.td).
#include "kiln/Target/GPU/Passes.h"

#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace kiln::gpu {
#define GEN_PASS_DEF_GPUSUBGROUPSTOSHUFFLESPASS
#include "kiln/Target/GPU/Passes.h.inc"
} // namespace kiln::gpu

using namespace mlir;

namespace {

/// gpu.subgroup_size as the constant.
struct ConstantSubgroupSize : OpRewritePattern<gpu::SubgroupSizeOp> {
  ConstantSubgroupSize(MLIRContext *context, unsigned size)
      : OpRewritePattern(context), size(size) {}
  LogicalResult matchAndRewrite(gpu::SubgroupSizeOp op, PatternRewriter &rewriter) const override {
    rewriter.replaceOpWithNewOp<arith::ConstantIndexOp>(op, size);
    return success();
  }
  unsigned size;
};

/// gpu.num_subgroups as the workgroup's threads over the size, rounded up.
struct NumSubgroupsFromBlock : OpRewritePattern<gpu::NumSubgroupsOp> {
  NumSubgroupsFromBlock(MLIRContext *context, unsigned size)
      : OpRewritePattern(context), size(size) {}
  LogicalResult matchAndRewrite(gpu::NumSubgroupsOp op, PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value threads = gpu::BlockDimOp::create(rewriter, loc, gpu::Dimension::x);
    for (gpu::Dimension dim : {gpu::Dimension::y, gpu::Dimension::z})
      threads = arith::MulIOp::create(rewriter, loc, threads,
                                      gpu::BlockDimOp::create(rewriter, loc, dim));
    rewriter.replaceOpWithNewOp<arith::CeilDivUIOp>(
        op, threads, arith::ConstantIndexOp::create(rewriter, loc, size));
    return success();
  }
  unsigned size;
};

struct GpuSubgroupsToShufflesPass
    : kiln::gpu::impl::GpuSubgroupsToShufflesPassBase<GpuSubgroupsToShufflesPass> {
  using Base::Base;

  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateGpuBreakDownSubgroupReducePatterns(patterns, /*maxShuffleBitwidth=*/32);
    populateGpuLowerSubgroupReduceToShufflePatterns(patterns, subgroupSize,
                                                    /*shuffleBitwidth=*/32);
    // gpu.subgroup_id as the linear thread id over gpu.subgroup_size, which
    // then becomes the constant.
    populateGpuSubgroupIdPatterns(patterns);
    patterns.add<ConstantSubgroupSize, NumSubgroupsFromBlock>(&getContext(), subgroupSize);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
    WalkResult left = getOperation().walk([](Operation *op) {
      if (isa<gpu::SubgroupReduceOp, gpu::SubgroupIdOp, gpu::NumSubgroupsOp>(op)) {
        op->emitOpError("has no lowering to shuffles here (a reduction wider than 32 bits?)");
        return WalkResult::interrupt();
      }
      return WalkResult::advance();
    });
    if (left.wasInterrupted())
      signalPassFailure();
  }
};

} // namespace
