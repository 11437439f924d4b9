// Splits a kernel's leading dimension across workgroups.
//
// Fusion guarantees that every op of a kernel iterates the kernel's leading
// dimension in its outermost loop and reads in-kernel values only at the same
// leading index, so each workgroup can run every loop nest on its own chunk
// [begin, end) with no synchronization between workgroups.
#include "kiln/Dialect/Kernel/Transforms/Passes.h"

#include "mlir/Dialect/Arith/Utils/Utils.h"

#include <numeric>

namespace kiln::kernel {
#define GEN_PASS_DEF_DISTRIBUTEWORKGROUPSPASS
#include "kiln/Dialect/Kernel/Transforms/Passes.h.inc"
} // namespace kiln::kernel

using namespace mlir;

namespace {

struct DistributeWorkgroupsPass
    : kiln::kernel::impl::DistributeWorkgroupsPassBase<DistributeWorkgroupsPass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    Attribute extentAttr = func->getAttr(kiln::kernel::kExtentAttr);
    if (!extentAttr || func.isExternal())
      return;
    // A symbolic extent (a map over the size symbols) is computed at entry.
    auto symbolicExtent = dyn_cast<AffineMapAttr>(extentAttr);
    int64_t extent = symbolicExtent ? -1 : cast<IntegerAttr>(extentAttr).getInt();
    if (!symbolicExtent && extent <= 1)
      return; // a single workgroup runs the whole kernel
    if (func.getNumArguments() < 2 || !func.getArgument(0).getType().isIndex() ||
        !func.getArgument(1).getType().isIndex()) {
      func.emitOpError("kernel must start with (index workgroup_id, index workgroup_count)");
      return signalPassFailure();
    }
    Block &entry = func.getBody().front();
    // Chunks are aligned to every top-level loop's step (a microkernel
    // handles several rows per iteration), so each loop's iterations split
    // cleanly at chunk boundaries.
    SmallVector<scf::ForOp> loops = llvm::to_vector(entry.getOps<scf::ForOp>());
    int64_t alignment = 1;
    for (scf::ForOp loop : loops) {
      auto lb = getConstantIntValue(loop.getLowerBound());
      auto ub = getConstantIntValue(loop.getUpperBound());
      auto step = getConstantIntValue(loop.getStep());
      // A symbolic extent's loops end at that extent by construction; their
      // upper bounds are values computed from the same symbols.
      // (A loop of step 1 may start anywhere: every chunk boundary is one of
      // its iterations.)
      if (symbolicExtent) {
        if (!step || (*step != 1 && (!lb || *step < 1 || *lb < 0 || *lb % *step))) {
          loop.emitOpError("top-level loop of a kernel with a symbolic workgroup extent must "
                           "have a constant step, and a constant lower bound that is a "
                           "multiple of it unless the step is 1");
          return signalPassFailure();
        }
        alignment = std::lcm(alignment, *step);
        continue;
      }
      if (!lb || !ub || !step || *step < 1 || *lb < 0 || *ub > extent || *lb % *step) {
        loop.emitOpError("top-level loop of a kernel with workgroup extent ")
            << extent << " must have constant bounds within [0, " << extent
            << ") and a lower bound that is a multiple of its step";
        return signalPassFailure();
      }
      alignment = std::lcm(alignment, *step);
    }
    func->setAttr(kiln::kernel::kAlignmentAttr,
                  IntegerAttr::get(IntegerType::get(func.getContext(), 64), alignment));
    OpBuilder b = OpBuilder::atBlockBegin(&entry);
    Location loc = func.getLoc();
    // The chunk of kiln::kernel::workgroupChunk, computed at run time from
    // the launch's count; each loop runs [lb, ub) ∩ [begin, end).
    Value id = func.getArgument(0), count = func.getArgument(1);
    Value extentValue =
        symbolicExtent
            ? kiln::kernel::sizeValue(b, loc, symbolicExtent.getValue().getResult(0))
            : arith::ConstantIndexOp::create(b, loc, extent).getResult();
    Value alignValue = arith::ConstantIndexOp::create(b, loc, alignment);
    Value chunk = arith::MulIOp::create(
        b, loc,
        arith::CeilDivUIOp::create(
            b, loc, arith::CeilDivUIOp::create(b, loc, extentValue, count), alignValue),
        alignValue);
    Value begin = arith::MinUIOp::create(
        b, loc, arith::MulIOp::create(b, loc, id, chunk), extentValue);
    Value end = arith::MinUIOp::create(
        b, loc, arith::AddIOp::create(b, loc, begin, chunk), extentValue);
    for (scf::ForOp loop : loops) {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPoint(loop);
      Value lb = arith::MaxUIOp::create(b, loop.getLoc(), loop.getLowerBound(), begin);
      Value ub = arith::MinUIOp::create(b, loop.getLoc(), loop.getUpperBound(), end);
      loop.getLowerBoundMutable().assign(lb);
      loop.getUpperBoundMutable().assign(ub);
    }
  }
};

} // namespace
