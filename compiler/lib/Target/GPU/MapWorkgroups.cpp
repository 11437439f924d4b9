// Spreads a kernel's loop nests over the threads of its workgroups: the
// mapping layer every GPU target shares (see Passes.td).
#include "kiln/Target/GPU/Passes.h"

#include "kiln/Dialect/Kernel/IR/KernelOps.h"
#include "kiln/Dialect/Kernel/Transforms/Passes.h"

#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/TypeSwitch.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace kiln::gpu {
#define GEN_PASS_DEF_GPUMAPWORKGROUPSPASS
#include "kiln/Target/GPU/Passes.h.inc"
} // namespace kiln::gpu

using namespace mlir;

namespace {

constexpr int64_t kMaxThreads = 256;

/// Whether `op` (itself; not what it holds) may write memory.
bool writes(Operation *op) {
  if (op->hasTrait<OpTrait::HasRecursiveMemoryEffects>())
    return false;
  auto effects = dyn_cast<MemoryEffectOpInterface>(op);
  if (!effects)
    return true;
  return effects.hasEffect<MemoryEffects::Write>() || effects.hasEffect<MemoryEffects::Free>();
}

/// Whether `op` or anything inside it may write memory.
bool writesAnything(Operation *op) {
  return op->walk([](Operation *inner) {
               return writes(inner) ? WalkResult::interrupt() : WalkResult::advance();
             })
      .wasInterrupted();
}

/// Whether distinct iterations of `loop` write distinct elements: every
/// store inside indexes with all of the loop's induction variables directly
/// (the other indices being loop-invariant or inner loops' variables), as
/// the loops of a linalg op's outputs do. A scatter's stores, through
/// computed indices, do not.
bool iterationsWriteApart(scf::ParallelOp loop) {
  if (loop->hasAttr(kiln::kernel::kWritesApartAttr))
    return true; // a GPU lowering's loop, which says so
  bool apart = true;
  loop.getBody()->walk([&](Operation *op) {
    auto store = dyn_cast<memref::StoreOp>(op);
    if (!store) {
      // Any other writer (an atomic, a copy) is not a linalg op's output.
      if (writes(op))
        apart = false;
      return;
    }
    for (Value iv : loop.getInductionVars())
      if (!llvm::is_contained(store.getIndices(), iv))
        apart = false;
    for (Value index : store.getIndices()) {
      bool direct = llvm::is_contained(loop.getInductionVars(), index) ||
                    !loop->isAncestor(index.getParentRegion()->getParentOp()) ||
                    matchPattern(index, m_Constant());
      if (!direct && isa<BlockArgument>(index)) {
        // An inner (reduction) loop's induction variable.
        direct = isa<scf::ForOp>(index.getParentRegion()->getParentOp());
      }
      if (!direct)
        apart = false;
    }
  });
  return apart;
}

/// Rewrites an scf.parallel into nested scf.for loops (a parallel loop
/// inside a thread's share of the work runs sequentially).
void sequentialize(scf::ParallelOp loop) {
  OpBuilder b(loop);
  SmallVector<Value> ivs;
  Block *body = nullptr;
  for (auto [lb, ub, step] :
       llvm::zip(loop.getLowerBound(), loop.getUpperBound(), loop.getStep())) {
    auto inner = scf::ForOp::create(b, loop.getLoc(), lb, ub, step);
    ivs.push_back(inner.getInductionVar());
    body = inner.getBody();
    b.setInsertionPoint(body->getTerminator());
  }
  Block &old = *loop.getBody();
  old.getTerminator()->erase();
  body->getOperations().splice(Block::iterator(body->getTerminator()), old.getOperations());
  for (auto [from, to] : llvm::zip(loop.getInductionVars(), ivs))
    from.replaceAllUsesWith(to);
  loop.erase();
}

/// A reduction of a loop nest into one element, as a linalg reduction into a
/// scalar becomes: a perfect nest of scf.for whose innermost body loads the
/// accumulator (`out[indices]`, the same loop-invariant indices throughout),
/// combines it with a value that does not depend on it, and stores the
/// result back, writing nothing else.
struct ScalarReduction {
  SmallVector<scf::ForOp> nest; // outermost first
  memref::LoadOp load;
  memref::StoreOp store;
  Operation *combine;
  TypedAttr identity;
};

/// The identity of a combining op, when reordering it is allowed: float
/// sums and products only with the reassoc flag (the CPU kernels reassociate
/// them too); min, max and the bitwise ops always.
TypedAttr reductionIdentity(Operation *combine, Type type) {
  Builder b(combine->getContext());
  if (auto fastmath = dyn_cast<arith::ArithFastMathInterface>(combine);
      isa<arith::AddFOp, arith::MulFOp>(combine) &&
      (!fastmath || !arith::bitEnumContainsAll(fastmath.getFastMathFlagsAttr().getValue(),
                                               arith::FastMathFlags::reassoc)))
    return {};
  if (auto floatType = dyn_cast<FloatType>(type)) {
    const llvm::fltSemantics &semantics = floatType.getFloatSemantics();
    APFloat value = llvm::TypeSwitch<Operation *, APFloat>(combine)
                        .Case([&](arith::AddFOp) { return APFloat::getZero(semantics, true); })
                        .Case([&](arith::MulFOp) { return APFloat::getOne(semantics); })
                        .Case([&](arith::MaximumFOp) { return APFloat::getInf(semantics, true); })
                        .Case([&](arith::MinimumFOp) { return APFloat::getInf(semantics); })
                        .Case<arith::MaxNumFOp, arith::MinNumFOp>(
                            [&](Operation *) { return APFloat::getNaN(semantics); })
                        .Default([&](Operation *) { return APFloat::getZero(semantics); });
    if (!isa<arith::AddFOp, arith::MulFOp, arith::MaximumFOp, arith::MinimumFOp, arith::MaxNumFOp,
             arith::MinNumFOp>(combine))
      return {};
    return b.getFloatAttr(floatType, value);
  }
  auto intType = dyn_cast<IntegerType>(type);
  if (!intType || intType.getWidth() < 8) // no booleans in workgroup memory
    return {};
  unsigned width = intType.getWidth();
  std::optional<APInt> value =
      llvm::TypeSwitch<Operation *, std::optional<APInt>>(combine)
          .Case<arith::AddIOp, arith::OrIOp, arith::XOrIOp, arith::MaxUIOp>(
              [&](Operation *) { return APInt::getZero(width); })
          .Case([&](arith::MulIOp) { return APInt(width, 1); })
          .Case<arith::AndIOp, arith::MinUIOp>([&](Operation *) { return APInt::getAllOnes(width); })
          .Case([&](arith::MaxSIOp) { return APInt::getSignedMinValue(width); })
          .Case([&](arith::MinSIOp) { return APInt::getSignedMaxValue(width); })
          .Default([&](Operation *) { return std::nullopt; });
  return value ? b.getIntegerAttr(intType, *value) : TypedAttr();
}

std::optional<ScalarReduction> matchScalarReduction(scf::ForOp outer) {
  ScalarReduction reduction;
  scf::ForOp loop = outer;
  while (true) {
    if (loop.getNumResults() != 0)
      return std::nullopt;
    reduction.nest.push_back(loop);
    auto inner = llvm::to_vector(loop.getBody()->getOps<scf::ForOp>());
    if (inner.empty())
      break;
    // A perfect nest: the inner loop is all (its bounds' arithmetic aside).
    if (inner.size() != 1 || llvm::any_of(loop.getBody()->without_terminator(), [&](Operation &op) {
          return &op != inner.front() && !isPure(&op);
        }))
      return std::nullopt;
    loop = inner.front();
  }
  Block *body = loop.getBody();
  for (Operation &op : body->without_terminator()) {
    if (auto store = dyn_cast<memref::StoreOp>(op)) {
      if (reduction.store)
        return std::nullopt;
      reduction.store = store;
    } else if (isa<scf::ForOp, scf::IfOp, scf::WhileOp>(op) || writes(&op)) {
      return std::nullopt;
    }
  }
  memref::StoreOp store = reduction.store;
  if (!store)
    return std::nullopt;
  // The accumulator's indices are invariant in the whole nest.
  for (Value index : store.getIndices())
    if (outer->isAncestor(index.getParentRegion()->getParentOp()))
      return std::nullopt;
  Operation *combine = store.getValueToStore().getDefiningOp();
  if (!combine || combine->getBlock() != body || combine->getNumOperands() != 2)
    return std::nullopt;
  for (unsigned i : {0u, 1u}) {
    auto load = combine->getOperand(i).getDefiningOp<memref::LoadOp>();
    if (load && load.getMemRef() == store.getMemRef() && load.getIndices() == store.getIndices() &&
        load->hasOneUse() && combine->getOperand(1 - i) != load.getResult())
      reduction.load = load;
  }
  if (!reduction.load)
    return std::nullopt;
  // No other read of the accumulator's buffer inside: the value combined
  // must not depend on it.
  bool readsOut = false;
  outer.walk([&](memref::LoadOp other) {
    if (other != reduction.load && other.getMemRef() == store.getMemRef())
      readsOut = true;
  });
  if (readsOut)
    return std::nullopt;
  reduction.combine = combine;
  reduction.identity = reductionIdentity(combine, store.getValueToStore().getType());
  if (!reduction.identity)
    return std::nullopt;
  return reduction;
}

struct GpuMapWorkgroupsPass
    : kiln::gpu::impl::GpuMapWorkgroupsPassBase<GpuMapWorkgroupsPass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (!func->hasAttr(kiln::kernel::kKernelAttr) || func.isExternal())
      return;
    auto target = kiln::kernel::requireTarget(func, getArgument());
    if (failed(target))
      return signalPassFailure();
    int64_t threads = kMaxThreads;
    if (int64_t max = (*target).getMaxWorkgroupSize(); max > 0)
      threads = std::min(threads, max);
    if (func.getNumArguments() < 2 || !func.getArgument(0).getType().isIndex() ||
        !func.getArgument(1).getType().isIndex()) {
      func.emitOpError("kernel must start with (index workgroup_id, index workgroup_count)");
      return signalPassFailure();
    }
    if (failed(map(func, threads)))
      return signalPassFailure();
    MLIRContext *context = func.getContext();
    func->setAttr(kiln::kernel::kWorkgroupSizeAttr,
                  DenseI64ArrayAttr::get(context, {threads, 1, 1}));
  }

  LogicalResult map(func::FuncOp func, int64_t threads) {
    Block &entry = func.getBody().front();
    // Kiln's own kernel ops (attention, convolution) need a GPU strategy of
    // their own, which this mapping does not provide yet.
    WalkResult kernelOps = func.walk([](Operation *op) {
      if (op->getDialect() && op->getDialect()->getNamespace() == "kiln_kernel") {
        op->emitOpError("has no GPU lowering (kiln-gpu-lower-kernel-ops lowers convolution and "
                       "attention)");
        return WalkResult::interrupt();
      }
      return WalkResult::advance();
    });
    if (kernelOps.wasInterrupted())
      return failure();
    Attribute extentAttr = func->getAttr(kiln::kernel::kExtentAttr);
    auto symbolicExtent = dyn_cast_or_null<AffineMapAttr>(extentAttr);
    auto staticExtent = dyn_cast_or_null<IntegerAttr>(extentAttr);
    bool splitRows = symbolicExtent || (staticExtent && staticExtent.getInt() > 1);
    SmallVector<Operation *> topLevel;
    for (Operation &op : entry.without_terminator())
      topLevel.push_back(&op);

    // Rows per workgroup: about one element of work per thread.
    int64_t rows = 1;
    if (splitRows) {
      int64_t perRow = threads;
      for (Operation *op : topLevel)
        if (auto loop = dyn_cast<scf::ParallelOp>(op)) {
          int64_t inner = 1;
          for (auto [lb, ub, step] : llvm::drop_begin(llvm::zip(
                   loop.getLowerBound(), loop.getUpperBound(), loop.getStep()))) {
            auto l = getConstantIntValue(lb), u = getConstantIntValue(ub),
                 s = getConstantIntValue(step);
            inner = l && u && s && *s > 0 ? inner * llvm::divideCeil(std::max<int64_t>(*u - *l, 0), *s)
                                          : threads;
          }
          perRow = std::min(perRow, std::max<int64_t>(inner, 1));
        }
      rows = llvm::divideCeil(threads, perRow);
    }
    MLIRContext *context = func.getContext();
    func->setAttr(kiln::kernel::kAlignmentAttr,
                  IntegerAttr::get(IntegerType::get(context, 64), rows));

    OpBuilder b = OpBuilder::atBlockBegin(&entry);
    Location loc = func.getLoc();
    Value thread = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
    Value threadCount = arith::ConstantIndexOp::create(b, loc, threads);
    Value workgroup = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
    Value workgroupCount = gpu::GridDimOp::create(b, loc, gpu::Dimension::x);
    func.getArgument(0).replaceAllUsesWith(workgroup);
    func.getArgument(1).replaceAllUsesWith(workgroupCount);
    Value zero = arith::ConstantIndexOp::create(b, loc, 0);
    Value isFirstThread =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, thread, zero);
    // The chunk of rows, as kiln::kernel::workgroupChunk computes it (and
    // the plan, which sizes the grid from the alignment).
    Value begin, end;
    if (splitRows) {
      Value extent = symbolicExtent
                         ? kiln::kernel::sizeValue(b, loc, symbolicExtent.getValue().getResult(0))
                         : arith::ConstantIndexOp::create(b, loc, staticExtent.getInt()).getResult();
      Value align = arith::ConstantIndexOp::create(b, loc, rows);
      Value chunk = arith::MulIOp::create(
          b, loc,
          arith::CeilDivUIOp::create(
              b, loc, arith::CeilDivUIOp::create(b, loc, extent, workgroupCount), align),
          align);
      begin = arith::MinUIOp::create(b, loc, arith::MulIOp::create(b, loc, workgroup, chunk),
                                     extent);
      end = arith::MinUIOp::create(b, loc, arith::AddIOp::create(b, loc, begin, chunk), extent);
    }

    for (Operation *op : topLevel) {
      // What only reads (views, a scalar's load) every thread does itself.
      if (!writesAnything(op))
        continue;
      auto loop = dyn_cast<scf::ParallelOp>(op);
      if (loop && loop.getNumResults() == 0 && iterationsWriteApart(loop)) {
        op = spreadOverThreads(loop, thread, threadCount, begin, end);
      } else if (auto reduction = !splitRows && isa<scf::ForOp>(op)
                                      ? matchScalarReduction(cast<scf::ForOp>(op))
                                      : std::nullopt) {
        op = reduceAcrossThreads(*reduction, thread, threadCount, isFirstThread, threads);
      } else {
        if (op->getNumResults() != 0 && !op->use_empty())
          return op->emitOpError("has results a GPU workgroup's threads would need to share");
        if (splitRows) {
          if (auto serial = dyn_cast<scf::ForOp>(op))
            clamp(serial, begin, end);
          else if (loop)
            clamp(loop, begin, end);
        }
        b.setInsertionPoint(op);
        auto guard = scf::IfOp::create(b, op->getLoc(), isFirstThread, /*withElse=*/false);
        op->moveBefore(guard.thenBlock()->getTerminator());
        op = guard;
      }
      b.setInsertionPointAfter(op);
      gpu::BarrierOp::create(b, op->getLoc());
    }
    // Parallel loops left inside a thread's work run sequentially.
    SmallVector<scf::ParallelOp> nested;
    func.walk([&](scf::ParallelOp loop) { nested.push_back(loop); });
    for (scf::ParallelOp loop : llvm::reverse(nested))
      sequentialize(loop);
    return success();
  }

  /// A scalar reduction over all threads: each thread folds its share of the
  /// outer loop (every threads-th iteration) into a partial starting at the
  /// combine's identity, the partials meet in workgroup memory, and thread
  /// 0 folds them into the accumulator. Returns the last op.
  static Operation *reduceAcrossThreads(ScalarReduction &reduction, Value thread,
                                        Value threadCount, Value isFirstThread, int64_t threads) {
    scf::ForOp outer = reduction.nest.front();
    OpBuilder b(outer);
    Location loc = outer.getLoc();
    Value identity = arith::ConstantOp::create(b, loc, reduction.identity);
    // The nest again, carrying the partial.
    IRMapping mapping;
    std::function<Value(unsigned, Value)> rebuild = [&](unsigned level, Value partial) -> Value {
      scf::ForOp old = reduction.nest[level];
      Value lb = mapping.lookupOrDefault(old.getLowerBound());
      Value ub = mapping.lookupOrDefault(old.getUpperBound());
      Value step = mapping.lookupOrDefault(old.getStep());
      if (level == 0) {
        lb = arith::AddIOp::create(b, loc, lb, arith::MulIOp::create(b, loc, thread, step));
        step = arith::MulIOp::create(b, loc, step, threadCount);
      }
      auto loop = scf::ForOp::create(b, loc, lb, ub, step, ValueRange{partial});
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(loop.getBody());
      mapping.map(old.getInductionVar(), loop.getInductionVar());
      Value carried = loop.getRegionIterArgs().front();
      Value result;
      if (level + 1 < reduction.nest.size()) {
        for (Operation &op : old.getBody()->without_terminator())
          if (&op != reduction.nest[level + 1].getOperation())
            b.clone(op, mapping);
        result = rebuild(level + 1, carried);
      } else {
        mapping.map(reduction.load.getResult(), carried);
        for (Operation &op : old.getBody()->without_terminator())
          if (&op != reduction.load.getOperation() && &op != reduction.store.getOperation())
            b.clone(op, mapping);
        result = mapping.lookup(reduction.combine->getResult(0));
      }
      scf::YieldOp::create(b, loc, result);
      return loop.getResult(0);
    };
    Value partial = rebuild(0, identity);
    Type type = partial.getType();
    auto workgroupSpace = ::mlir::gpu::AddressSpaceAttr::get(b.getContext(),
                                                             ::mlir::gpu::AddressSpace::Workgroup);
    auto partials = memref::AllocOp::create(
        b, loc, MemRefType::get({threads}, type, MemRefLayoutAttrInterface(), workgroupSpace));
    memref::StoreOp::create(b, loc, partial, partials, ValueRange{thread});
    ::mlir::gpu::BarrierOp::create(b, loc);
    auto first = scf::IfOp::create(b, loc, isFirstThread, /*withElse=*/false);
    b.setInsertionPoint(first.thenBlock()->getTerminator());
    IRMapping accumulator;
    Value total = memref::LoadOp::create(b, loc, reduction.store.getMemRef(),
                                         reduction.store.getIndices());
    Value zero = arith::ConstantIndexOp::create(b, loc, 0);
    Value one = arith::ConstantIndexOp::create(b, loc, 1);
    auto fold = scf::ForOp::create(b, loc, zero, threadCount, one, ValueRange{total});
    b.setInsertionPointToStart(fold.getBody());
    Value next = memref::LoadOp::create(b, loc, partials, ValueRange{fold.getInductionVar()});
    Operation *combined = b.clone(*reduction.combine);
    combined->setOperands({fold.getRegionIterArgs().front(), next});
    scf::YieldOp::create(b, loc, combined->getResult(0));
    b.setInsertionPointAfter(fold);
    memref::StoreOp::create(b, loc, fold.getResult(0), reduction.store.getMemRef(),
                            reduction.store.getIndices());
    outer.erase();
    return first;
  }

  /// `for (l = thread; l < trips; l += threads)` over the loop's linearized
  /// iteration space, the first dimension clamped to [begin, end) when set.
  static Operation *spreadOverThreads(scf::ParallelOp loop, Value thread, Value threadCount,
                                Value begin, Value end) {
    if (begin)
      clamp(loop, begin, end);
    OpBuilder b(loop);
    Location loc = loop.getLoc();
    SmallVector<Value> trips;
    Value total = arith::ConstantIndexOp::create(b, loc, 1);
    for (auto [lb, ub, step] :
         llvm::zip(loop.getLowerBound(), loop.getUpperBound(), loop.getStep())) {
      Value span = arith::SubIOp::create(b, loc, arith::MaxSIOp::create(b, loc, ub, lb), lb);
      Value trip = arith::CeilDivUIOp::create(b, loc, span, step);
      trips.push_back(trip);
      total = arith::MulIOp::create(b, loc, total, trip);
    }
    auto spread = scf::ForOp::create(b, loc, thread, total, threadCount);
    b.setInsertionPointToStart(spread.getBody());
    // Delinearize, the last dimension fastest (consecutive threads touch
    // consecutive elements).
    Value rest = spread.getInductionVar();
    SmallVector<Value> ivs(trips.size());
    for (int64_t i = trips.size() - 1; i >= 0; --i) {
      Value index = i == 0 ? rest : arith::RemUIOp::create(b, loc, rest, trips[i]).getResult();
      if (i > 0)
        rest = arith::DivUIOp::create(b, loc, rest, trips[i]);
      ivs[i] = arith::AddIOp::create(
          b, loc, loop.getLowerBound()[i],
          arith::MulIOp::create(b, loc, index, loop.getStep()[i]));
    }
    Block &old = *loop.getBody();
    old.getTerminator()->erase();
    spread.getBody()->getOperations().splice(Block::iterator(spread.getBody()->getTerminator()),
                                             old.getOperations());
    for (auto [from, to] : llvm::zip(loop.getInductionVars(), ivs))
      from.replaceAllUsesWith(to);
    loop.erase();
    return spread;
  }

  /// Narrows the first dimension of `loop` to [lb, ub) ∩ [begin, end).
  template <typename Loop> static void clamp(Loop loop, Value begin, Value end) {
    OpBuilder b(loop);
    Location loc = loop.getLoc();
    if constexpr (std::is_same_v<Loop, scf::ForOp>) {
      loop.getLowerBoundMutable().assign(
          arith::MaxUIOp::create(b, loc, loop.getLowerBound(), begin).getResult());
      loop.getUpperBoundMutable().assign(
          arith::MinUIOp::create(b, loc, loop.getUpperBound(), end).getResult());
    } else {
      loop.getLowerBoundMutable()[0].assign(
          arith::MaxUIOp::create(b, loc, loop.getLowerBound()[0], begin).getResult());
      loop.getUpperBoundMutable()[0].assign(
          arith::MinUIOp::create(b, loc, loop.getUpperBound()[0], end).getResult());
    }
  }
};

} // namespace
