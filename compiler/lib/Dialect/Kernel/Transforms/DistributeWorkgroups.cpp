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
      // A single workgroup runs the whole kernel (and the launch is told so):
      // every temporary is its own.
      func->setAttr(kiln::kernel::kAlignmentAttr,
                    IntegerAttr::get(IntegerType::get(func.getContext(), 64), 1));
      moveToScratch(func, llvm::to_vector(func.getBody().front().getOps<memref::AllocOp>()));
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
    kiln::kernel::WorkgroupShare share = kiln::kernel::workgroupShare(
        b, loc, id, count, splitRows ? extentValue : Value(), alignment,
        columnExtent ? columnExtent.getInt() : 0,
        columnAlignment ? columnAlignment.getInt() : 1);
    Value begin = share.begin, end = share.end;
    Value columnBegin = share.columnBegin, columnEnd = share.columnEnd;
    if (!symbolicExtent && !columnExtent && extent > 1)
      moveToScratch(func, llvm::filter_to_vector(entry.getOps<memref::AllocOp>(),
                                                 [&](memref::AllocOp alloc) {
                                                   return touchesOwnRowsOnly(alloc, loops, extent);
                                                 }));
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

  /// Whether `index` is `iv`, or `iv` clamped as padding reads it,
  /// minsi(maxsi(iv, 0), extent - 1), which is `iv` itself: the top-level
  /// loops run within the rows [0, extent).
  static bool isRowOf(Value index, Value iv, int64_t extent) {
    if (index == iv)
      return true;
    auto min = index.getDefiningOp<arith::MinSIOp>();
    auto max = min ? min.getLhs().getDefiningOp<arith::MaxSIOp>() : nullptr;
    return max && max.getLhs() == iv && getConstantIntValue(max.getRhs()) == 0 &&
           getConstantIntValue(min.getRhs()) == extent - 1;
  }

  /// The memref an access reads or writes, and its leading index; null for
  /// any other op.
  static std::pair<Value, Value> accessOf(Operation *op) {
    if (auto load = dyn_cast<memref::LoadOp>(op))
      return {load.getMemRef(), load.getIndices().front()};
    if (auto store = dyn_cast<memref::StoreOp>(op))
      return {store.getMemRef(), store.getIndices().front()};
    if (auto load = dyn_cast<vector::LoadOp>(op))
      return {load.getBase(), load.getIndices().front()};
    if (auto store = dyn_cast<vector::StoreOp>(op))
      return {store.getBase(), store.getIndices().front()};
    return {};
  }

  /// Whether every workgroup touches only its own rows of the temporary
  /// [extent, ...] `alloc`: every access is a load or store, in a top-level
  /// loop, at that loop's index. The accesses may go through reshapes (a
  /// group norm regroups its rows' channels) as long as every reshaped view
  /// that is accessed still has the rows [extent, ...].
  static bool touchesOwnRowsOnly(memref::AllocOp alloc, ArrayRef<scf::ForOp> loops,
                                 int64_t extent) {
    auto hasRows = [&](MemRefType t) {
      return t.hasStaticShape() && t.getRank() >= 1 && t.getDimSize(0) == extent &&
             t.getLayout().isIdentity();
    };
    if (!hasRows(alloc.getType()))
      return false;
    SmallVector<Value> views{alloc.getResult()};
    for (size_t i = 0; i < views.size(); ++i) {
      Value view = views[i];
      for (Operation *user : view.getUsers()) {
        if (isa<memref::DeallocOp>(user) && i == 0)
          continue;
        if (isa<memref::ExpandShapeOp, memref::CollapseShapeOp>(user)) {
          views.push_back(user->getResult(0));
          continue;
        }
        auto [memref, row] = accessOf(user);
        if (memref != view || !hasRows(cast<MemRefType>(view.getType())))
          return false;
        auto loop = llvm::find_if(loops, [&](scf::ForOp l) { return l->isProperAncestor(user); });
        if (loop == loops.end() || !isRowOf(row, scf::ForOp(*loop).getInductionVar(), extent))
          return false;
      }
    }
    return true;
  }

  /// Moves the temporaries `allocs` (whole, for the kernel: all workgroups
  /// share them, each touching its own rows) into one scratch buffer that
  /// the plan allocates for the launch: a new `memref<N x i8>` argument
  /// (before any size symbols), marked kScratchBytesAttr on the function.
  /// The memory plan then shares its bytes with buffers that are dead
  /// during the launch, and the kernel allocates nothing itself. Temporaries
  /// with a dynamic shape stay allocations of their own.
  static void moveToScratch(func::FuncOp func, ArrayRef<memref::AllocOp> allocs) {
    constexpr int64_t kAlignment = 64;
    SmallVector<std::pair<memref::AllocOp, int64_t>> placed; // alloc, byte offset
    int64_t bytes = 0;
    for (memref::AllocOp alloc : allocs) {
      MemRefType type = alloc.getType();
      if (!type.hasStaticShape() || !type.getLayout().isIdentity() ||
          !type.getElementType().isIntOrFloat() || type.getNumElements() == 0)
        continue;
      int64_t size = type.getNumElements() * llvm::divideCeil(type.getElementTypeBitWidth(), 8);
      placed.push_back({alloc, bytes});
      bytes += llvm::alignTo(size, kAlignment);
    }
    if (placed.empty())
      return;
    MLIRContext *context = func.getContext();
    auto numSymbols = func->getAttrOfType<IntegerAttr>(kiln::kernel::kNumSymbolsAttr);
    unsigned position = func.getNumArguments() - (numSymbols ? numSymbols.getInt() : 0);
    auto scratchType = MemRefType::get({bytes}, IntegerType::get(context, 8));
    // No other binding of the launch overlaps it (the memory plan keeps
    // buffers alive at the same step apart), so LLVM may assume so too.
    if (failed(func.insertArgument(position, scratchType,
                                   DictionaryAttr::get(context, {NamedAttribute(
                                                                    StringAttr::get(context, "llvm.noalias"),
                                                                    UnitAttr::get(context))}),
                                   func.getLoc())))
      return;
    Value scratch = func.getArgument(position);
    func->setAttr(kiln::kernel::kScratchBytesAttr,
                  IntegerAttr::get(IntegerType::get(context, 64), bytes));
    for (auto [alloc, offset] : placed) {
      OpBuilder b(alloc);
      Value start = arith::ConstantIndexOp::create(b, alloc.getLoc(), offset);
      Value view = memref::ViewOp::create(b, alloc.getLoc(), alloc.getType(), scratch, start,
                                          ValueRange{});
      for (Operation *user : llvm::to_vector(alloc->getUsers()))
        if (isa<memref::DeallocOp>(user))
          user->erase();
      alloc.getResult().replaceAllUsesWith(view);
      alloc.erase();
    }
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
