// Reductions shared over a workgroup's threads: each thread folds its share
// of the iterations into partials from the combines' identities, which meet
// in workgroup memory and fold in a tree (see Mapping.h).
#include "Mapping.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"

using namespace mlir;
using namespace kiln::gpu;

namespace {

/// The type a partial of `type` has in workgroup memory: booleans as
/// 32-bit integers (Vulkan's workgroup memory has no 1-bit elements).
Type partialType(Type type) {
  return type.isInteger(1) ? IntegerType::get(type.getContext(), 32) : type;
}

/// `partials[at] = value`, and the value at `partials[at]` as `type`.
void storePartial(OpBuilder &b, Location loc, Value value, Value partials, Value at) {
  Type stored = cast<MemRefType>(partials.getType()).getElementType();
  if (value.getType() != stored)
    value = arith::ExtUIOp::create(b, loc, stored, value);
  memref::StoreOp::create(b, loc, value, partials, ValueRange{at});
}
Value loadPartial(OpBuilder &b, Location loc, Type type, Value partials, Value at) {
  Value value = memref::LoadOp::create(b, loc, partials, ValueRange{at});
  return value.getType() == type ? value : arith::TruncIOp::create(b, loc, type, value);
}

/// The reduction nest again at `b`, each thread folding every T-th
/// iteration of its outer loop into partials that start at the combines'
/// identities; `mapping` gives the values the nest uses from outside.
/// Returns the partials, one per accumulator.
SmallVector<Value> foldThreadShare(OpBuilder &b, Location loc, Reduction &reduction,
                                   IRMapping &mapping, const ThreadValues &values) {
  SmallVector<Value> identities;
  for (Accumulator &accumulator : reduction.accumulators)
    identities.push_back(arith::ConstantOp::create(b, loc, accumulator.identity));
  std::function<SmallVector<Value>(unsigned, ValueRange)> rebuild =
      [&](unsigned level, ValueRange partials) -> SmallVector<Value> {
    scf::ForOp old = reduction.nest[level];
    Value lb = mapping.lookupOrDefault(old.getLowerBound());
    Value ub = mapping.lookupOrDefault(old.getUpperBound());
    Value step = mapping.lookupOrDefault(old.getStep());
    if (level == 0) {
      lb = arith::AddIOp::create(b, loc, lb, arith::MulIOp::create(b, loc, values.thread, step));
      step = arith::MulIOp::create(b, loc, step, values.threadCount);
    }
    auto loop = scf::ForOp::create(b, loc, lb, ub, step, partials);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    mapping.map(old.getInductionVar(), loop.getInductionVar());
    ValueRange carried = loop.getRegionIterArgs();
    SmallVector<Value> results;
    if (level + 1 < reduction.nest.size()) {
      for (Operation &op : old.getBody()->without_terminator())
        if (&op != reduction.nest[level + 1].getOperation())
          b.clone(op, mapping);
      results = rebuild(level + 1, carried);
    } else {
      for (auto [accumulator, value] : llvm::zip(reduction.accumulators, carried))
        mapping.map(accumulator.load.getResult(), value);
      for (Operation &op : old.getBody()->without_terminator()) {
        bool accumulatorAccess = llvm::any_of(reduction.accumulators, [&](Accumulator &a) {
          return &op == a.load.getOperation() || &op == a.store.getOperation();
        });
        if (!accumulatorAccess)
          b.clone(op, mapping);
      }
      for (Accumulator &accumulator : reduction.accumulators)
        results.push_back(mapping.lookup(accumulator.combine->getResult(0)));
    }
    scf::YieldOp::create(b, loc, results);
    return SmallVector<Value>(loop.getResults());
  };
  return rebuild(0, identities);
}

/// `combine(lhs, rhs)`, cloned from an accumulator's combining op.
Value combine(OpBuilder &b, const Accumulator &accumulator, Value lhs, Value rhs) {
  Operation *combined = b.clone(*accumulator.combine);
  combined->setOperands({lhs, rhs});
  return combined->getResult(0);
}

/// Workgroup arrays for the partials, one element per thread.
SmallVector<Value> allocatePartials(OpBuilder &b, Location loc, const Reduction &reduction,
                                    int64_t threads) {
  SmallVector<Value> buffers;
  for (const Accumulator &accumulator : reduction.accumulators)
    buffers.push_back(
        workgroupBuffer(b, loc, partialType(accumulator.identity.getType()), threads));
  return buffers;
}

/// Each thread's partials into workgroup memory, a tree over the threads
/// (log2 T rounds, each halving the live partials), and thread 0 folding
/// the total into each accumulator, at its indices through `mapping`.
void combineAcrossThreads(OpBuilder &b, Location loc, Reduction &reduction,
                          ArrayRef<Value> partials, ArrayRef<Value> buffers, IRMapping &mapping,
                          const ThreadValues &values) {
  for (auto [partial, buffer] : llvm::zip(partials, buffers))
    storePartial(b, loc, partial, buffer, values.thread);
  ::mlir::gpu::BarrierOp::create(b, loc);
  // Rounds unrolled (T is a constant): thread t < s folds in t + s.
  for (int64_t half = int64_t(llvm::PowerOf2Ceil(values.threads)) / 2; half >= 1; half /= 2) {
    Value halfValue = arith::ConstantIndexOp::create(b, loc, half);
    Value other = arith::AddIOp::create(b, loc, values.thread, halfValue);
    Value folds = arith::AndIOp::create(
        b, loc,
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, values.thread, halfValue),
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, other, values.threadCount));
    auto round = scf::IfOp::create(b, loc, folds, /*withElse=*/false);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPoint(round.thenBlock()->getTerminator());
      for (auto [accumulator, buffer] : llvm::zip(reduction.accumulators, buffers)) {
        Type type = accumulator.identity.getType();
        Value mine = loadPartial(b, loc, type, buffer, values.thread);
        Value theirs = loadPartial(b, loc, type, buffer, other);
        storePartial(b, loc, combine(b, accumulator, mine, theirs), buffer, values.thread);
      }
    }
    ::mlir::gpu::BarrierOp::create(b, loc);
  }
  auto first = scf::IfOp::create(b, loc, values.isFirstThread, /*withElse=*/false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(first.thenBlock()->getTerminator());
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  for (auto [accumulator, buffer] : llvm::zip(reduction.accumulators, buffers)) {
    SmallVector<Value> indices;
    for (Value index : accumulator.store.getIndices())
      indices.push_back(mapping.lookupOrDefault(index));
    Value memref = accumulator.store.getMemRef();
    Value total = memref::LoadOp::create(b, loc, memref, indices);
    Value all = loadPartial(b, loc, accumulator.identity.getType(), buffer, zero);
    memref::StoreOp::create(b, loc, combine(b, accumulator, total, all), memref, indices);
  }
}

} // namespace

int64_t kiln::gpu::partialBytes(const Reduction &reduction, int64_t threads) {
  int64_t bytes = 0;
  for (const Accumulator &accumulator : reduction.accumulators)
    bytes += threads *
             llvm::divideCeil(partialType(accumulator.identity.getType()).getIntOrFloatBitWidth(),
                              8);
  return bytes;
}

Operation *kiln::gpu::reduceAcrossThreads(Reduction &reduction, const ThreadValues &values) {
  scf::ForOp outer = reduction.nest.front();
  OpBuilder b(outer);
  Location loc = outer.getLoc();
  IRMapping mapping;
  SmallVector<Value> buffers = allocatePartials(b, loc, reduction, values.threads);
  SmallVector<Value> partials = foldThreadShare(b, loc, reduction, mapping, values);
  combineAcrossThreads(b, loc, reduction, partials, buffers, mapping, values);
  Operation *last = &*std::prev(b.getInsertionPoint());
  outer.erase();
  return last;
}

Operation *kiln::gpu::reduceRowsAcrossThreads(scf::ParallelOp loop, Reduction &reduction,
                                              const ThreadValues &values, Value begin,
                                              Value end) {
  if (begin)
    clampFirstDim(loop, begin, end);
  OpBuilder b(loop);
  Location loc = loop.getLoc();
  SmallVector<Value> buffers = allocatePartials(b, loc, reduction, values.threads);
  IRMapping mapping;
  Operation *outermost = serialLoops(b, loc, loop, loop.getNumLoops(), mapping);
  scf::ForOp nest = reduction.nest.front();
  for (Operation &op : loop.getBody()->without_terminator())
    if (&op != nest.getOperation())
      b.clone(op, mapping);
  SmallVector<Value> partials = foldThreadShare(b, loc, reduction, mapping, values);
  combineAcrossThreads(b, loc, reduction, partials, buffers, mapping, values);
  // The next row's partials overwrite only what thread 0 no longer reads.
  loop.erase();
  return outermost;
}
