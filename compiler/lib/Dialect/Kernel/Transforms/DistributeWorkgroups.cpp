// Splits a kernel's leading dimension across workgroups.
//
// Fusion guarantees that every op of a kernel iterates the kernel's leading
// dimension in its outermost loop and reads in-kernel values only at the same
// leading index, so each workgroup can run every loop nest on its own chunk
// [begin, end) with no synchronization between workgroups.
#include "kiln/Dialect/Kernel/Transforms/Passes.h"

#include "mlir/Dialect/Arith/Utils/Utils.h"

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
    auto extentAttr = func->getAttrOfType<IntegerAttr>(kiln::kernel::kExtentAttr);
    if (!extentAttr || func.isExternal())
      return;
    int64_t extent = extentAttr.getInt();
    if (extent <= 1)
      return; // a single workgroup runs the whole kernel
    if (func.getNumArguments() < 2 || !func.getArgument(0).getType().isIndex() ||
        !func.getArgument(1).getType().isIndex()) {
      func.emitOpError("kernel must start with (index workgroup_id, index workgroup_count)");
      return signalPassFailure();
    }
    Block &entry = func.getBody().front();
    OpBuilder b = OpBuilder::atBlockBegin(&entry);
    Location loc = func.getLoc();
    // chunk = ceil(extent / count); begin = min(id * chunk, extent);
    // end = min(begin + chunk, extent).
    Value id = func.getArgument(0), count = func.getArgument(1);
    Value extentValue = arith::ConstantIndexOp::create(b, loc, extent);
    Value chunk = arith::CeilDivUIOp::create(b, loc, extentValue, count);
    Value begin = arith::MinUIOp::create(
        b, loc, arith::MulIOp::create(b, loc, id, chunk), extentValue);
    Value end = arith::MinUIOp::create(
        b, loc, arith::AddIOp::create(b, loc, begin, chunk), extentValue);

    for (auto loop : llvm::to_vector(entry.getOps<scf::ForOp>())) {
      auto lb = getConstantIntValue(loop.getLowerBound());
      auto ub = getConstantIntValue(loop.getUpperBound());
      auto step = getConstantIntValue(loop.getStep());
      if (lb != 0 || ub != extent || step != 1) {
        loop.emitOpError("top-level loop of a kernel with workgroup extent ")
            << extent << " must iterate [0, " << extent << ") with step 1";
        return signalPassFailure();
      }
      loop.getLowerBoundMutable().assign(begin);
      loop.getUpperBoundMutable().assign(end);
    }
  }
};

} // namespace
