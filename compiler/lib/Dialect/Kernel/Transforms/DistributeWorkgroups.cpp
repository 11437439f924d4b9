// Splits a kernel's leading dimension across workgroups.
//
// Fusion guarantees that every op of a kernel iterates the kernel's leading
// dimension in its outermost loop and reads in-kernel values only at the same
// leading index, so each workgroup can run every loop nest on its own chunk
// [begin, end) with no synchronization between workgroups.
//
// A kernel marked with a column extent (a matmul and its pointwise epilogue,
// see kiln::kernel::kColumnExtentAttr) is split on a grid instead: rows as
// above, and the count left per row chunk over the columns, which the one
// loop directly inside each top-level loop iterates (or the loops in it
// marked kiln::kernel::kColumnLoopAttr).
#include "kiln/Dialect/Kernel/Transforms/Passes.h"

#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

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
    auto columnExtent = func->getAttrOfType<IntegerAttr>(kiln::kernel::kColumnExtentAttr);
    auto columnAlignment =
        func->getAttrOfType<IntegerAttr>(kiln::kernel::kColumnAlignmentAttr);
    if (!symbolicExtent && extent <= 1 && !columnExtent) {
      // A single workgroup runs the whole kernel (and the launch is told so).
      func->setAttr(kiln::kernel::kAlignmentAttr,
                    IntegerAttr::get(IntegerType::get(func.getContext(), 64), 1));
      return;
    }
    if (columnExtent && (!columnAlignment || columnAlignment.getInt() < 1)) {
      func.emitOpError("a column extent needs a positive ")
          << kiln::kernel::kColumnAlignmentAttr;
      return signalPassFailure();
    }
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
    // Without a row extent (a single-workgroup kernel whose columns split),
    // every workgroup runs all rows of its column chunk.
    bool splitRows = symbolicExtent || extent >= 1;
    int64_t alignment = 1;
    for (scf::ForOp loop : llvm::make_range(splitRows ? loops.begin() : loops.end(), loops.end())) {
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
    // With split columns, `count` covers a grid: ceil(extent / chunk) row
    // chunks, each with count / that many column chunks.
    Value rowGroup = id;
    Value columnBegin, columnEnd;
    if (columnExtent) {
      Value one = arith::ConstantIndexOp::create(b, loc, 1);
      Value rowGroups =
          splitRows ? arith::MaxUIOp::create(
                          b, loc, one,
                          arith::CeilDivUIOp::create(b, loc, extentValue,
                                                     arith::MaxUIOp::create(b, loc, chunk, one)))
                          .getResult()
                    : one;
      Value columnGroups = arith::MaxUIOp::create(
          b, loc, one, arith::DivUIOp::create(b, loc, count, rowGroups));
      rowGroup = arith::DivUIOp::create(b, loc, id, columnGroups);
      Value columnGroup = arith::RemUIOp::create(b, loc, id, columnGroups);
      Value columns = arith::ConstantIndexOp::create(b, loc, columnExtent.getInt());
      Value columnAlign = arith::ConstantIndexOp::create(b, loc, columnAlignment.getInt());
      Value columnChunk = arith::MulIOp::create(
          b, loc,
          arith::CeilDivUIOp::create(
              b, loc, arith::CeilDivUIOp::create(b, loc, columns, columnGroups), columnAlign),
          columnAlign);
      columnBegin = arith::MinUIOp::create(
          b, loc, arith::MulIOp::create(b, loc, columnGroup, columnChunk), columns);
      columnEnd = arith::MinUIOp::create(
          b, loc, arith::AddIOp::create(b, loc, columnBegin, columnChunk), columns);
    }
    Value begin = arith::MinUIOp::create(
        b, loc, arith::MulIOp::create(b, loc, rowGroup, chunk), extentValue);
    Value end = arith::MinUIOp::create(
        b, loc, arith::AddIOp::create(b, loc, begin, chunk), extentValue);
    if (!symbolicExtent && !columnExtent && extent > 1)
      for (auto alloc : llvm::to_vector(entry.getOps<memref::AllocOp>()))
        shrinkToChunk(b, alloc, loops, extent, begin, end);
    for (scf::ForOp loop : loops) {
      if (splitRows)
        clamp(b, loop, begin, end);
      if (!columnExtent)
        continue;
      SmallVector<scf::ForOp> columnLoops;
      loop.getBody()->walk([&](scf::ForOp inner) {
        if (inner->hasAttr(kiln::kernel::kColumnLoopAttr))
          columnLoops.push_back(inner);
      });
      if (columnLoops.empty())
        columnLoops = llvm::to_vector(loop.getBody()->getOps<scf::ForOp>());
      if (columnLoops.empty()) {
        loop.emitOpError("top-level loop of a kernel with split columns holds no loop over "
                         "the columns");
        return signalPassFailure();
      }
      for (scf::ForOp inner : columnLoops) {
        auto step = getConstantIntValue(inner.getStep());
        auto lb = getConstantIntValue(inner.getLowerBound());
        if (columnLoops.size() > 1 && !inner->hasAttr(kiln::kernel::kColumnLoopAttr)) {
          loop.emitOpError("top-level loop of a kernel with split columns must hold exactly "
                           "one loop over the columns, or mark them ")
              << kiln::kernel::kColumnLoopAttr;
          return signalPassFailure();
        }
        if (!step || *step < 1 || columnAlignment.getInt() % *step || (lb && *lb % *step)) {
          inner.emitOpError("column loop of a kernel with split columns must have a constant "
                            "step that divides the column alignment ")
              << columnAlignment.getInt() << ", and start at a multiple of it";
          return signalPassFailure();
        }
        clamp(b, inner, columnBegin, columnEnd);
      }
    }
  }

  /// A temporary of the kernel [extent, ...] that the workgroup touches only
  /// at its own leading indices (every access is a load or store, in a
  /// top-level loop, at that loop's index) holds just the rows [begin, end):
  /// it is allocated that small and viewed with its offset moved back by
  /// `begin` rows, so the accesses stay as they are. (Every workgroup
  /// otherwise allocated the whole temporary per launch.)
  static void shrinkToChunk(OpBuilder &b, memref::AllocOp alloc, ArrayRef<scf::ForOp> loops,
                            int64_t extent, Value begin, Value end) {
    MemRefType type = alloc.getType();
    if (!type.hasStaticShape() || type.getRank() < 1 || type.getDimSize(0) != extent ||
        !type.getLayout().isIdentity() || type.getNumElements() == 0)
      return;
    SmallVector<memref::DeallocOp> deallocs;
    for (Operation *user : alloc->getUsers()) {
      if (auto dealloc = dyn_cast<memref::DeallocOp>(user)) {
        deallocs.push_back(dealloc);
        continue;
      }
      Value row;
      if (auto load = dyn_cast<memref::LoadOp>(user))
        row = load.getIndices().front();
      else if (auto store = dyn_cast<memref::StoreOp>(user); store && store.getMemRef() == alloc)
        row = store.getIndices().front();
      else if (auto load = dyn_cast<vector::LoadOp>(user))
        row = load.getIndices().front();
      else if (auto store = dyn_cast<vector::StoreOp>(user); store && store.getBase() == alloc)
        row = store.getIndices().front();
      if (!row)
        return;
      auto loop = llvm::find_if(loops, [&](scf::ForOp l) { return l->isProperAncestor(user); });
      if (loop == loops.end() || row != scf::ForOp(*loop).getInductionVar())
        return;
    }
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(alloc);
    Location loc = alloc.getLoc();
    SmallVector<int64_t> shape(type.getShape());
    shape[0] = ShapedType::kDynamic;
    Value rows = arith::SubIOp::create(b, loc, end, begin);
    auto small = memref::AllocOp::create(b, loc, MemRefType::get(shape, type.getElementType()),
                                         ValueRange{rows}, alloc.getAlignmentAttr());
    // Row i lives at small[i - begin]: the view starts begin rows before it.
    SmallVector<int64_t> strides(type.getRank(), 1);
    for (int64_t d = type.getRank() - 2; d >= 0; --d)
      strides[d] = strides[d + 1] * type.getDimSize(d + 1);
    Value offset = arith::SubIOp::create(
        b, loc, arith::ConstantIndexOp::create(b, loc, 0),
        arith::MulIOp::create(b, loc, begin, arith::ConstantIndexOp::create(b, loc, strides[0])));
    auto viewType = MemRefType::get(
        type.getShape(), type.getElementType(),
        StridedLayoutAttr::get(b.getContext(), ShapedType::kDynamic, strides));
    SmallVector<OpFoldResult> sizes = getAsIndexOpFoldResult(b.getContext(), type.getShape());
    SmallVector<OpFoldResult> strideValues = getAsIndexOpFoldResult(b.getContext(), strides);
    Value view =
        memref::ReinterpretCastOp::create(b, loc, viewType, small, offset, sizes, strideValues);
    for (memref::DeallocOp dealloc : deallocs)
      dealloc.getMemrefMutable().assign(small);
    alloc.getResult().replaceAllUsesWith(view);
    alloc.erase();
  }

  /// Narrows `loop` to [lb, ub) ∩ [begin, end).
  static void clamp(OpBuilder &b, scf::ForOp loop, Value begin, Value end) {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(loop);
    Value lb = arith::MaxUIOp::create(b, loop.getLoc(), loop.getLowerBound(), begin);
    Value ub = arith::MinUIOp::create(b, loop.getLoc(), loop.getUpperBound(), end);
    loop.getLowerBoundMutable().assign(lb);
    loop.getUpperBoundMutable().assign(ub);
  }
};

} // namespace
