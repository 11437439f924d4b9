// Reductions shared over a workgroup's threads: each thread folds its share
// of the iterations into partials from the combines' identities, which
// combine by subgroups (where the target has them and the combine is a
// subgroup reduction) or meet in workgroup memory and fold in a tree; a
// selection's threads take chunks in order and merge them in order (see
// Mapping.h).
#include "Mapping.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "llvm/ADT/TypeSwitch.h"

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

/// `current` after a selection considers `candidates` (one value per
/// accumulator each): the condition cloned from the nest, then a select per
/// accumulator.
SmallVector<Value> selectInto(OpBuilder &b, Location loc, const Reduction &reduction,
                              ValueRange current, ValueRange candidates) {
  IRMapping mapping;
  for (auto [accumulator, value, candidate] :
       llvm::zip(reduction.accumulators, current, candidates)) {
    mapping.map(memref::LoadOp(accumulator.load).getResult(), value);
    mapping.map(accumulator.candidate, candidate);
  }
  for (Operation *op : reduction.conditionOps)
    b.clone(*op, mapping);
  Value condition = mapping.lookupOrDefault(reduction.selectCondition);
  SmallVector<Value> selected;
  for (auto [value, candidate] : llvm::zip(current, candidates))
    selected.push_back(arith::SelectOp::create(b, loc, condition, candidate, value));
  return selected;
}

/// The partials a thread's share starts from: the combines' identities, or
/// for a selection, placeholders and a false "has chosen" flag after them.
SmallVector<Value> initialPartials(OpBuilder &b, Location loc, const Reduction &reduction) {
  SmallVector<Value> initial;
  for (const Accumulator &accumulator : reduction.accumulators)
    initial.push_back(arith::ConstantOp::create(
        b, loc, reduction.selects() ? cast<TypedAttr>(b.getZeroAttr(accumulator.type()))
                                    : accumulator.identity));
  if (reduction.selects())
    initial.push_back(arith::ConstantIntOp::create(b, loc, b.getI1Type(), 0));
  return initial;
}

/// The reduction nest again at `b`, each thread folding its share of the
/// iterations of the outer loop into partials (initialPartials): every T-th
/// iteration where the combines may be reordered, else a chunk in order,
/// the selection taking each iteration's candidates once it has chosen and
/// the first iteration's before. `mapping` gives the values the nest uses
/// from outside. Returns the partials.
SmallVector<Value> foldThreadShare(OpBuilder &b, Location loc, Reduction &reduction,
                                   IRMapping &mapping, const ThreadValues &values) {
  bool inOrder = reduction.selects();
  std::function<SmallVector<Value>(unsigned, ValueRange)> rebuild =
      [&](unsigned level, ValueRange partials) -> SmallVector<Value> {
    scf::ForOp old = reduction.nest[level];
    Value lb = mapping.lookupOrDefault(old.getLowerBound());
    Value ub = mapping.lookupOrDefault(old.getUpperBound());
    Value step = mapping.lookupOrDefault(old.getStep());
    if (level == 0 && inOrder) {
      std::tie(lb, ub) = chunkBounds(b, loc, lb, ub, step, values);
    } else if (level == 0) {
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
      if (inOrder) {
        Value chosen = carried.back();
        for (size_t i = 0; i < results.size(); ++i)
          results[i] = arith::SelectOp::create(
              b, loc, chosen, results[i],
              mapping.lookupOrDefault(reduction.accumulators[i].candidate));
        results.push_back(arith::ConstantIntOp::create(b, loc, b.getI1Type(), 1));
      }
    }
    scf::YieldOp::create(b, loc, results);
    return SmallVector<Value>(loop.getResults());
  };
  return rebuild(0, initialPartials(b, loc, reduction));
}

/// An accumulator's indices, through `mapping`.
SmallVector<Value> accumulatorIndices(Accumulator &accumulator, IRMapping &mapping) {
  SmallVector<Value> indices;
  for (Value index : accumulator.store.getIndices())
    indices.push_back(mapping.lookupOrDefault(index));
  return indices;
}

/// Each accumulator's combine folded with the reduction's total,
/// `totals`, at its indices through `mapping`.
void foldIntoAccumulators(OpBuilder &b, Location loc, Reduction &reduction, ValueRange totals,
                          IRMapping &mapping) {
  for (auto [accumulator, all] : llvm::zip(reduction.accumulators, totals)) {
    SmallVector<Value> indices = accumulatorIndices(accumulator, mapping);
    Value memref = accumulator.store.getMemRef();
    Value total = memref::LoadOp::create(b, loc, memref, indices);
    memref::StoreOp::create(b, loc, combineWith(b, accumulator, total, all), memref, indices);
  }
}

/// Each thread's partials into workgroup memory, a tree over the threads
/// (log2 T rounds, each halving the live partials), and thread 0 folding
/// the total into each accumulator, at its indices through `mapping`.
void combineByTree(OpBuilder &b, Location loc, Reduction &reduction, ArrayRef<Value> partials,
                   ArrayRef<Value> buffers, IRMapping &mapping, const ThreadValues &values) {
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
        Type type = accumulator.type();
        Value mine = loadPartial(b, loc, type, buffer, values.thread);
        Value theirs = loadPartial(b, loc, type, buffer, other);
        storePartial(b, loc, combineWith(b, accumulator, mine, theirs), buffer, values.thread);
      }
    }
    ::mlir::gpu::BarrierOp::create(b, loc);
  }
  auto first = scf::IfOp::create(b, loc, values.isFirstThread, /*withElse=*/false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(first.thenBlock()->getTerminator());
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  SmallVector<Value> totals;
  for (auto [accumulator, buffer] : llvm::zip(reduction.accumulators, buffers))
    totals.push_back(loadPartial(b, loc, accumulator.type(), buffer, zero));
  foldIntoAccumulators(b, loc, reduction, totals, mapping);
  // The next reduction's partials overwrite only what thread 0 no longer
  // reads: buffer[0] is thread 0's own.
}

/// Thread `mine`'s partials of a selection followed by `theirs`, whose
/// chunk comes after: theirs considered as candidates, where both have
/// chosen.
SmallVector<Value> mergeInOrder(OpBuilder &b, Location loc, const Reduction &reduction,
                                ArrayRef<Value> mine, ArrayRef<Value> theirs) {
  Value myChoice = mine.back(), theirChoice = theirs.back();
  SmallVector<Value> selected =
      selectInto(b, loc, reduction, mine.drop_back(), theirs.drop_back());
  SmallVector<Value> merged;
  for (auto [value, selection, their] : llvm::zip(mine.drop_back(), selected, theirs.drop_back()))
    merged.push_back(arith::SelectOp::create(
        b, loc, theirChoice, arith::SelectOp::create(b, loc, myChoice, selection, their), value));
  merged.push_back(arith::OrIOp::create(b, loc, myChoice, theirChoice));
  return merged;
}

/// A selection's partials combined in thread order: into workgroup
/// memory, then rounds in which thread t, a multiple of 2s, merges in
/// t + s (s = 1, 2, 4, ...), so that each merge joins adjacent runs of
/// chunks in order; thread 0 has the workgroup's choice, which its
/// accumulators consider as one more candidate (at their indices through
/// `mapping`).
void combineInOrder(OpBuilder &b, Location loc, Reduction &reduction, ArrayRef<Value> partials,
                    ArrayRef<Value> buffers, IRMapping &mapping, const ThreadValues &values) {
  SmallVector<Type> types;
  for (Value partial : partials)
    types.push_back(partial.getType());
  auto loadAll = [&](Value at) {
    SmallVector<Value> loaded;
    for (auto [type, buffer] : llvm::zip(types, buffers))
      loaded.push_back(loadPartial(b, loc, type, buffer, at));
    return loaded;
  };
  for (auto [partial, buffer] : llvm::zip(partials, buffers))
    storePartial(b, loc, partial, buffer, values.thread);
  ::mlir::gpu::BarrierOp::create(b, loc);
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  for (int64_t span = 1; span < values.threads; span *= 2) {
    Value mask = arith::ConstantIndexOp::create(b, loc, 2 * span - 1);
    Value other =
        arith::AddIOp::create(b, loc, values.thread, arith::ConstantIndexOp::create(b, loc, span));
    Value merges = arith::AndIOp::create(
        b, loc,
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                              arith::AndIOp::create(b, loc, values.thread, mask), zero),
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, other, values.threadCount));
    auto round = scf::IfOp::create(b, loc, merges, /*withElse=*/false);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPoint(round.thenBlock()->getTerminator());
      SmallVector<Value> mine = loadAll(values.thread);
      SmallVector<Value> theirs = loadAll(other);
      for (auto [value, buffer] : llvm::zip(mergeInOrder(b, loc, reduction, mine, theirs), buffers))
        storePartial(b, loc, value, buffer, values.thread);
    }
    ::mlir::gpu::BarrierOp::create(b, loc);
  }
  auto first = scf::IfOp::create(b, loc, values.isFirstThread, /*withElse=*/false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(first.thenBlock()->getTerminator());
  SmallVector<Value> total = loadAll(zero);
  auto chosen = scf::IfOp::create(b, loc, total.back(), /*withElse=*/false);
  b.setInsertionPoint(chosen.thenBlock()->getTerminator());
  SmallVector<Value> current;
  for (Accumulator &accumulator : reduction.accumulators)
    current.push_back(memref::LoadOp::create(b, loc, accumulator.store.getMemRef(),
                                             accumulatorIndices(accumulator, mapping)));
  SmallVector<Value> selected =
      selectInto(b, loc, reduction, current, ArrayRef<Value>(total).drop_back());
  for (auto [accumulator, value] : llvm::zip(reduction.accumulators, selected))
    memref::StoreOp::create(b, loc, value, accumulator.store.getMemRef(),
                            accumulatorIndices(accumulator, mapping));
  // As in the tree, the next reduction's partials overwrite only what
  // thread 0 no longer reads.
}

using SubgroupKind = ::mlir::gpu::AllReduceOperation;

/// The subgroup reduction that computes `accumulator`'s combine, for the
/// 32-bit types (and booleans, as 32-bit integers) that every Vulkan device
/// reduces over subgroups: other widths need shaderSubgroupExtendedTypes.
std::optional<SubgroupKind> subgroupKind(const Accumulator &accumulator) {
  Type type = accumulator.type();
  bool boolean = type.isInteger(1);
  if (!type.isF32() && !type.isInteger(32) && !boolean)
    return std::nullopt;
  using Result = std::optional<SubgroupKind>;
  // Booleans widen with zeros, so their signed order (true < false) has no
  // 32-bit counterpart; sums and products still truncate to xor and and.
  auto signedOrder = [boolean](SubgroupKind kind) -> Result {
    return boolean ? std::nullopt : Result(kind);
  };
  auto booleanOnly = [boolean](SubgroupKind kind) -> Result {
    return boolean ? Result(kind) : std::nullopt;
  };
  return llvm::TypeSwitch<Operation *, Result>(accumulator.combine)
      .Case<arith::AddFOp, arith::AddIOp>([](auto) { return SubgroupKind::ADD; })
      .Case<arith::MulFOp, arith::MulIOp>([](auto) { return SubgroupKind::MUL; })
      .Case([](arith::MaxNumFOp) { return SubgroupKind::MAXNUMF; })
      .Case([](arith::MinNumFOp) { return SubgroupKind::MINNUMF; })
      .Case([](arith::MaximumFOp) { return SubgroupKind::MAXIMUMF; })
      .Case([](arith::MinimumFOp) { return SubgroupKind::MINIMUMF; })
      .Case([&](arith::MaxSIOp) { return signedOrder(SubgroupKind::MAXSI); })
      .Case([&](arith::MinSIOp) { return signedOrder(SubgroupKind::MINSI); })
      .Case([](arith::MaxUIOp) { return SubgroupKind::MAXUI; })
      .Case([](arith::MinUIOp) { return SubgroupKind::MINUI; })
      // MLIR 22 converts no bitwise subgroup reduction to SPIR-V; on
      // booleans (0 or 1) and, or and xor are min, max and a sum's parity.
      .Case([&](arith::AndIOp) { return booleanOnly(SubgroupKind::MINUI); })
      .Case([&](arith::OrIOp) { return booleanOnly(SubgroupKind::MAXUI); })
      .Case([&](arith::XOrIOp) { return booleanOnly(SubgroupKind::ADD); })
      .Default([](Operation *) { return std::nullopt; });
}

/// Each accumulator's subgroup reduction, when all have one.
std::optional<SmallVector<SubgroupKind>> subgroupKinds(const Reduction &reduction) {
  SmallVector<SubgroupKind> kinds;
  for (const Accumulator &accumulator : reduction.accumulators) {
    std::optional<SubgroupKind> kind = subgroupKind(accumulator);
    if (!kind)
      return std::nullopt;
    kinds.push_back(*kind);
  }
  return kinds;
}

/// `value` reduced by `kind` over the active threads of its subgroup. A
/// maximumf or minimumf is NaN where any thread's value is, as on the CPU:
/// SPIR-V's FMax and FMin leave NaN operands undefined.
Value reduceOverSubgroup(OpBuilder &b, Location loc, SubgroupKind kind, Value value) {
  Type type = value.getType();
  Type i32 = b.getI32Type();
  if (type.isInteger(1))
    value = arith::ExtUIOp::create(b, loc, i32, value);
  Value reduced = ::mlir::gpu::SubgroupReduceOp::create(b, loc, value, kind, /*uniform=*/false);
  if (kind == SubgroupKind::MAXIMUMF || kind == SubgroupKind::MINIMUMF) {
    Value isNaN = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNO, value, value);
    Value nanCount = ::mlir::gpu::SubgroupReduceOp::create(
        b, loc, arith::ExtUIOp::create(b, loc, i32, isNaN), SubgroupKind::ADD, /*uniform=*/false);
    Value anyNaN = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, nanCount,
                                         arith::ConstantIntOp::create(b, loc, i32, 0));
    Value nan = arith::ConstantOp::create(
        b, loc, b.getFloatAttr(type, APFloat::getNaN(cast<FloatType>(type).getFloatSemantics())));
    reduced = arith::SelectOp::create(b, loc, anyNaN, nan, reduced);
  }
  if (type.isInteger(1))
    reduced = arith::TruncIOp::create(b, loc, type, reduced);
  return reduced;
}

/// The partials combined by subgroups: each subgroup reduces its threads'
/// partials and its first thread stores the result at the subgroup's index
/// in workgroup memory; the first subgroup folds those (each of its
/// threads every S-th, S the subgroup size, which only the device knows)
/// and reduces them again, and its first thread folds the totals into the
/// accumulators. The barrier after it keeps the next reduction's partials
/// from overwriting the ones the first subgroup still reads.
void combineBySubgroups(OpBuilder &b, Location loc, Reduction &reduction,
                        ArrayRef<SubgroupKind> kinds, ArrayRef<Value> partials,
                        ArrayRef<Value> buffers, IRMapping &mapping) {
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value lane = ::mlir::gpu::LaneIdOp::create(b, loc, /*upper_bound=*/nullptr);
  Value subgroup = ::mlir::gpu::SubgroupIdOp::create(b, loc, /*upper_bound=*/nullptr);
  Value firstLane = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, lane, zero);
  SmallVector<Value> reduced;
  for (auto [kind, partial] : llvm::zip(kinds, partials))
    reduced.push_back(reduceOverSubgroup(b, loc, kind, partial));
  {
    auto store = scf::IfOp::create(b, loc, firstLane, /*withElse=*/false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(store.thenBlock()->getTerminator());
    for (auto [value, buffer] : llvm::zip(reduced, buffers))
      storePartial(b, loc, value, buffer, subgroup);
  }
  ::mlir::gpu::BarrierOp::create(b, loc);
  {
    Value firstSubgroup = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, subgroup, zero);
    auto first = scf::IfOp::create(b, loc, firstSubgroup, /*withElse=*/false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(first.thenBlock()->getTerminator());
    Value count = ::mlir::gpu::NumSubgroupsOp::create(b, loc, /*upper_bound=*/nullptr);
    Value size = ::mlir::gpu::SubgroupSizeOp::create(b, loc, /*upper_bound=*/nullptr);
    SmallVector<Value> identities;
    for (Accumulator &accumulator : reduction.accumulators)
      identities.push_back(arith::ConstantOp::create(b, loc, accumulator.identity));
    auto gather = scf::ForOp::create(b, loc, lane, count, size, identities);
    {
      OpBuilder::InsertionGuard inner(b);
      b.setInsertionPointToStart(gather.getBody());
      SmallVector<Value> folded;
      for (auto [accumulator, buffer, carried] :
           llvm::zip(reduction.accumulators, buffers, gather.getRegionIterArgs())) {
        Value theirs = loadPartial(b, loc, accumulator.type(), buffer,
                                   gather.getInductionVar());
        folded.push_back(combineWith(b, accumulator, carried, theirs));
      }
      scf::YieldOp::create(b, loc, folded);
    }
    SmallVector<Value> totals;
    for (auto [kind, value] : llvm::zip(kinds, gather.getResults()))
      totals.push_back(reduceOverSubgroup(b, loc, kind, value));
    auto write = scf::IfOp::create(b, loc, firstLane, /*withElse=*/false);
    b.setInsertionPoint(write.thenBlock()->getTerminator());
    foldIntoAccumulators(b, loc, reduction, totals, mapping);
  }
  ::mlir::gpu::BarrierOp::create(b, loc);
}

/// The partials combined across the threads: a selection's in order, else
/// by subgroups where the target and the combines allow, else by the tree.
void combineAcrossThreads(OpBuilder &b, Location loc, Reduction &reduction,
                          ArrayRef<Value> partials, ArrayRef<Value> buffers, IRMapping &mapping,
                          const ThreadValues &values) {
  std::optional<SmallVector<SubgroupKind>> kinds;
  if (reduction.selects())
    combineInOrder(b, loc, reduction, partials, buffers, mapping, values);
  else if (values.subgroups && (kinds = subgroupKinds(reduction)))
    combineBySubgroups(b, loc, reduction, *kinds, partials, buffers, mapping);
  else
    combineByTree(b, loc, reduction, partials, buffers, mapping, values);
}

} // namespace

bool kiln::gpu::combinesBySubgroups(const Reduction &reduction, const ThreadValues &values) {
  return values.subgroups && subgroupKinds(reduction).has_value();
}

SmallVector<Type> kiln::gpu::partialTypes(const Reduction &reduction) {
  SmallVector<Type> types;
  for (const Accumulator &accumulator : reduction.accumulators)
    types.push_back(partialType(accumulator.type()));
  if (reduction.selects()) // the "has chosen" flags
    types.push_back(partialType(IntegerType::get(reduction.nest.front()->getContext(), 1)));
  return types;
}

Operation *kiln::gpu::reduceAcrossThreads(Reduction &reduction, const ThreadValues &values,
                                          WorkgroupMemory &memory) {
  scf::ForOp outer = reduction.nest.front();
  OpBuilder b(outer);
  Location loc = outer.getLoc();
  IRMapping mapping;
  SmallVector<Value> buffers = memory.take(loc, partialTypes(reduction), values.threads);
  SmallVector<Value> partials = foldThreadShare(b, loc, reduction, mapping, values);
  combineAcrossThreads(b, loc, reduction, partials, buffers, mapping, values);
  Operation *last = &*std::prev(b.getInsertionPoint());
  outer.erase();
  return last;
}

Operation *kiln::gpu::reduceRowsAcrossThreads(scf::ParallelOp loop, Reduction &reduction,
                                              const ThreadValues &values,
                                              WorkgroupMemory &memory, Value begin, Value end) {
  if (begin)
    clampFirstDim(loop, begin, end);
  OpBuilder b(loop);
  Location loc = loop.getLoc();
  SmallVector<Value> buffers = memory.take(loc, partialTypes(reduction), values.threads);
  IRMapping mapping;
  Operation *outermost = serialLoops(b, loc, loop, loop.getNumLoops(), mapping);
  scf::ForOp nest = reduction.nest.front();
  for (Operation &op : loop.getBody()->without_terminator())
    if (&op != nest.getOperation())
      b.clone(op, mapping);
  SmallVector<Value> partials = foldThreadShare(b, loc, reduction, mapping, values);
  combineAcrossThreads(b, loc, reduction, partials, buffers, mapping, values);
  loop.erase();
  return outermost;
}

std::pair<Value, Value> kiln::gpu::chunkBounds(OpBuilder &b, Location loc, Value lb, Value ub,
                                               Value step, const ThreadValues &values) {
  Value trips;
  tripCounts(b, loc, lb, ub, step, trips);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  Value chunk = arith::DivUIOp::create(
      b, loc,
      arith::AddIOp::create(b, loc, trips,
                            arith::SubIOp::create(b, loc, values.threadCount, one)),
      values.threadCount);
  Value first = arith::MulIOp::create(b, loc, values.thread, chunk);
  Value last = arith::MinUIOp::create(b, loc, arith::AddIOp::create(b, loc, first, chunk), trips);
  auto at = [&](Value iteration) {
    return arith::AddIOp::create(b, loc, lb, arith::MulIOp::create(b, loc, iteration, step));
  };
  return {at(first), at(last)};
}
