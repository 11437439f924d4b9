// Loop-carried accumulators in registers instead of memory (see Passes.td).
#include "kiln/Dialect/Kernel/Transforms/Passes.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/PatternMatch.h"

namespace kiln::kernel {
#define GEN_PASS_DEF_PROMOTEACCUMULATORSPASS
#include "kiln/Dialect/Kernel/Transforms/Passes.h.inc"
} // namespace kiln::kernel

using namespace mlir;

namespace {

/// A buffer no other memref aliases: an allocation only loaded, stored and
/// freed (a view would be a second name for its bytes).
bool isPrivateBuffer(Value memref) {
  if (!memref.getDefiningOp<memref::AllocOp>() && !memref.getDefiningOp<memref::AllocaOp>())
    return false;
  return llvm::all_of(memref.getUsers(), [](Operation *user) {
    return isa<memref::LoadOp, memref::StoreOp, memref::DeallocOp>(user);
  });
}

/// The loop's accumulators: a load and a later store of the same element of
/// a private buffer, at indices fixed during the loop, both directly in its
/// body, and no other access to that buffer inside the loop.
SmallVector<std::pair<memref::LoadOp, memref::StoreOp>> accumulators(scf::ForOp loop) {
  SmallVector<std::pair<memref::LoadOp, memref::StoreOp>> found;
  Block *body = loop.getBody();
  for (auto load : body->getOps<memref::LoadOp>()) {
    Value memref = load.getMemRef();
    if (!loop.isDefinedOutsideOfLoop(memref) || !isPrivateBuffer(memref) ||
        !llvm::all_of(load.getIndices(), [&](Value v) { return loop.isDefinedOutsideOfLoop(v); }))
      continue;
    memref::StoreOp store;
    bool single = true;
    for (Operation *user : memref.getUsers()) {
      if (user == load.getOperation() || !loop->isAncestor(user))
        continue;
      auto candidate = dyn_cast<memref::StoreOp>(user);
      if (!store && candidate && candidate->getBlock() == body &&
          load->isBeforeInBlock(candidate) && candidate.getIndices() == load.getIndices()) {
        store = candidate;
        continue;
      }
      single = false;
    }
    if (single && store)
      found.push_back({load, store});
  }
  return found;
}

void promote(scf::ForOp loop) {
  auto pairs = accumulators(loop);
  if (pairs.empty())
    return;
  IRRewriter rewriter(loop.getContext());
  rewriter.setInsertionPoint(loop);
  SmallVector<Value> inits;
  for (auto [load, store] : pairs)
    inits.push_back(memref::LoadOp::create(rewriter, load.getLoc(), load.getMemRef(),
                                           load.getIndices()));
  SmallVector<Value> stored;
  for (auto [load, store] : pairs)
    stored.push_back(store.getValueToStore());
  FailureOr<LoopLikeOpInterface> replaced = loop.replaceWithAdditionalYields(
      rewriter, inits, /*replaceInitOperandUsesInLoop=*/false,
      [&](OpBuilder &, Location, ArrayRef<BlockArgument>) { return stored; });
  if (failed(replaced))
    return;
  auto newLoop = cast<scf::ForOp>(replaced->getOperation());
  unsigned first = newLoop.getNumResults() - pairs.size();
  rewriter.setInsertionPointAfter(newLoop);
  for (auto [index, pair] : llvm::enumerate(pairs)) {
    auto [load, store] = pair;
    rewriter.replaceAllUsesWith(load.getResult(), newLoop.getRegionIterArgs()[first + index]);
    memref::StoreOp::create(rewriter, store.getLoc(), newLoop.getResult(first + index),
                            store.getMemRef(), store.getIndices());
    rewriter.eraseOp(store);
    rewriter.eraseOp(load);
  }
}

struct PromoteAccumulatorsPass
    : kiln::kernel::impl::PromoteAccumulatorsPassBase<PromoteAccumulatorsPass> {
  void runOnOperation() override {
    // Innermost loops first (post-order), so an outer loop can then carry
    // what its inner loop now stores once.
    SmallVector<scf::ForOp> loops;
    getOperation().walk([&](scf::ForOp loop) { loops.push_back(loop); });
    for (scf::ForOp loop : loops)
      promote(loop);
  }
};

} // namespace
