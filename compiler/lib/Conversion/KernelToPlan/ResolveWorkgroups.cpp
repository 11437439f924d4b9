// The launch's side of the kernel contract: a launch's workgroup count is
// settled here, from what code generation recorded on its kernel, so that
// serializing the plan is a copy and the runtime runs exactly this count.
#include "kiln/Conversion/Passes.h"
#include "kiln/Dialect/Kernel/IR/KernelOps.h"
#include "kiln/Dialect/Kernel/Transforms/Passes.h"
#include "kiln/Dialect/Plan/IR/PlanOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/SymbolTable.h"

#include <algorithm>

namespace kiln {
#define GEN_PASS_DEF_RESOLVEWORKGROUPSPASS
#include "kiln/Conversion/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace {

struct ResolveWorkgroupsPass : kiln::impl::ResolveWorkgroupsPassBase<ResolveWorkgroupsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    module.walk([&](kiln::plan::LaunchOp launch) {
      auto kernel = symbols.lookup<func::FuncOp>(launch.getKernel());
      if (!kernel)
        return;
      auto alignment = kernel->getAttrOfType<IntegerAttr>(kiln::kernel::kAlignmentAttr);
      bool grid = kernel->hasAttr(kiln::kernel::kColumnExtentAttr);
      OpBuilder b(launch);
      if (launch.getSymbolicExtentAttr()) {
        if (alignment)
          launch.setAlignmentAttr(b.getI64IntegerAttr(alignment.getInt()));
        launch.setGrid(grid);
        return;
      }
      launch.setWorkgroupsAttr(b.getI64IntegerAttr(usefulWorkgroups(launch, kernel, alignment, grid)));
    });
  }

  /// The workgroups of a static launch that get rows: chunks are aligned
  /// (e.g. to a micro-kernel's row block), so the plan's count can exceed
  /// the chunks there are. A kernel that splits its columns too keeps the
  /// plan's count up to one workgroup per aligned row chunk and column
  /// chunk (the grid is computed from the count, and with more, ids past
  /// its last cell would run nothing); a kernel that splits nothing runs
  /// once.
  static int64_t usefulWorkgroups(kiln::plan::LaunchOp launch, func::FuncOp kernel,
                                  IntegerAttr alignment, bool grid) {
    int64_t count = launch.getWorkgroups();
    auto extent = kernel->getAttrOfType<IntegerAttr>(kiln::kernel::kExtentAttr);
    if (grid)
      return std::min(count, kiln::kernel::gridCells(
                                 extent ? extent.getInt() : 1, alignment ? alignment.getInt() : 1,
                                 kernel->getAttrOfType<IntegerAttr>(kiln::kernel::kColumnExtentAttr)
                                     .getInt(),
                                 kernel->getAttrOfType<IntegerAttr>(
                                           kiln::kernel::kColumnAlignmentAttr)
                                     .getInt()));
    if (count <= 1)
      return count;
    if (!extent || !alignment || extent.getInt() <= 1)
      return 1;
    int64_t chunk = kiln::kernel::workgroupChunk(extent.getInt(), count, alignment.getInt());
    return std::max<int64_t>(1, (extent.getInt() + chunk - 1) / chunk);
  }
};

} // namespace
