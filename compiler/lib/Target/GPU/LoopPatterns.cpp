// What the GPU mapping recognizes in a kernel's loop nests: writers,
// loops whose iterations write apart, reductions (see Mapping.h).
#include "Mapping.h"

#include "kiln/Dialect/Kernel/IR/KernelOps.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "llvm/ADT/TypeSwitch.h"

#include <limits>

using namespace mlir;
using namespace kiln::gpu;

bool kiln::gpu::writes(Operation *op) {
  if (op->hasTrait<OpTrait::HasRecursiveMemoryEffects>())
    return false;
  auto effects = dyn_cast<MemoryEffectOpInterface>(op);
  if (!effects)
    return true;
  return effects.hasEffect<MemoryEffects::Write>() || effects.hasEffect<MemoryEffects::Free>();
}

bool kiln::gpu::writesAnything(Operation *op) {
  return op->walk([](Operation *inner) {
               return writes(inner) ? WalkResult::interrupt() : WalkResult::advance();
             })
      .wasInterrupted();
}

bool kiln::gpu::iterationsWriteApart(scf::ParallelOp loop) {
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

TypedAttr kiln::gpu::reorderableIdentity(Operation *combine, Type type) {
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
  if (!intType)
    return {};
  unsigned width = intType.getWidth();
  std::optional<APInt> value =
      llvm::TypeSwitch<Operation *, std::optional<APInt>>(combine)
          .Case<arith::AddIOp, arith::OrIOp, arith::XOrIOp, arith::MaxUIOp>(
              [&](Operation *) { return APInt::getZero(width); })
          .Case([&](arith::MulIOp) { return APInt(width, 1); })
          .Case<arith::AndIOp, arith::MinUIOp>(
              [&](Operation *) { return APInt::getAllOnes(width); })
          .Case([&](arith::MaxSIOp) { return APInt::getSignedMinValue(width); })
          .Case([&](arith::MinSIOp) { return APInt::getSignedMaxValue(width); })
          .Default([&](Operation *) { return std::nullopt; });
  return value ? b.getIntegerAttr(intType, *value) : TypedAttr();
}

/// Whether `value`'s computation in the nest's innermost body reads an
/// accumulator.
static bool readsAccumulators(const Reduction &reduction, Value value) {
  Block *body = scf::ForOp(reduction.nest.back()).getBody();
  SmallVector<Value> pending{value};
  DenseSet<Operation *> seen;
  while (!pending.empty()) {
    Operation *def = pending.pop_back_val().getDefiningOp();
    if (!def || def->getBlock() != body || !seen.insert(def).second)
      continue;
    if (llvm::any_of(reduction.accumulators,
                     [&](const Accumulator &a) { return def == a.load; }))
      return true;
    llvm::append_range(pending, def->getOperands());
  }
  return false;
}

/// Whether a reduction's element stores each write an element of their
/// own per iteration (every loop of the nest indexes them directly), to a
/// buffer nothing else in the nest touches, a value computed without the
/// accumulators: then the threads may run the iterations in any order.
static bool elementStoresApart(const Reduction &reduction) {
  scf::ForOp outer = reduction.nest.front();
  DenseSet<Value> roots;
  for (memref::StoreOp store : reduction.elementStores) {
    for (scf::ForOp loop : reduction.nest)
      if (!llvm::is_contained(store.getIndices(), loop.getInductionVar()))
        return false;
    if (!roots.insert(rootBuffer(store.getMemRef())).second)
      return false;
    if (readsAccumulators(reduction, store.getValueToStore()))
      return false;
  }
  for (const Accumulator &accumulator : reduction.accumulators)
    if (roots.contains(rootBuffer(memref::StoreOp(accumulator.store).getMemRef())))
      return false;
  bool readsWritten = false;
  outer.walk([&](memref::LoadOp load) {
    if (roots.contains(rootBuffer(load.getMemRef())))
      readsWritten = true;
  });
  return !readsWritten;
}

/// The ops of the innermost body that compute a selection's condition from
/// its leaves (the candidates, the accumulators' loads, values from outside
/// the nest), in order; nullopt where it needs anything else.
static std::optional<SmallVector<Operation *>>
selectConditionOps(const Reduction &reduction) {
  Operation *outer = reduction.nest.front();
  Block *body = scf::ForOp(reduction.nest.back()).getBody();
  auto isLeaf = [&](Value value) {
    return !outer->isAncestor(value.getParentRegion()->getParentOp()) ||
           llvm::any_of(reduction.accumulators, [&](const Accumulator &a) {
             return value == a.candidate || value == memref::LoadOp(a.load).getResult();
           });
  };
  DenseSet<Operation *> slice;
  SmallVector<Value> pending{reduction.selectCondition};
  while (!pending.empty()) {
    Value value = pending.pop_back_val();
    if (isLeaf(value))
      continue;
    Operation *def = value.getDefiningOp();
    // An induction variable, another load or anything else the partials
    // of other iterations do not carry.
    if (!def || def->getBlock() != body || !isPure(def) || def->getNumRegions())
      return std::nullopt;
    if (slice.insert(def).second)
      llvm::append_range(pending, def->getOperands());
  }
  SmallVector<Operation *> ordered;
  for (Operation &op : body->without_terminator())
    if (slice.contains(&op))
      ordered.push_back(&op);
  return ordered;
}

/// Whether a selection's parts come from where Mapping.h says: no
/// candidate from an accumulator, and the condition from the candidates
/// and the accumulators alone (selectConditionOps).
static bool selectionIsClosed(Reduction &reduction) {
  for (const Accumulator &accumulator : reduction.accumulators) {
    if (!isa<arith::SelectOp>(accumulator.combine))
      return false;
    if (readsAccumulators(reduction, accumulator.candidate))
      return false;
  }
  std::optional<SmallVector<Operation *>> conditionOps = selectConditionOps(reduction);
  if (!conditionOps)
    return false;
  reduction.conditionOps = std::move(*conditionOps);
  return true;
}

std::optional<Accumulator> kiln::gpu::matchAccumulator(memref::StoreOp store) {
  Accumulator accumulator;
  accumulator.store = store;
  Operation *combine = store.getValueToStore().getDefiningOp();
  if (!combine || combine->getBlock() != store->getBlock() || combine->getNumResults() != 1 ||
      !combine->getResult(0).hasOneUse())
    return std::nullopt;
  auto accumulatorLoad = [&](Value value) {
    auto load = value.getDefiningOp<memref::LoadOp>();
    return load && load.getMemRef() == store.getMemRef() &&
                   load.getIndices() == store.getIndices()
               ? load
               : memref::LoadOp();
  };
  if (auto select = dyn_cast<arith::SelectOp>(combine)) {
    accumulator.load = accumulatorLoad(select.getFalseValue());
    accumulator.candidate = select.getTrueValue();
  } else if (combine->getNumOperands() == 2) {
    for (unsigned i : {0u, 1u}) {
      memref::LoadOp load = accumulatorLoad(combine->getOperand(i));
      if (load && load->hasOneUse() && combine->getOperand(1 - i) != load.getResult())
        accumulator.load = load;
    }
    accumulator.identity = reorderableIdentity(combine, store.getValueToStore().getType());
  }
  if (!accumulator.load)
    return std::nullopt;
  accumulator.combine = combine;
  return accumulator;
}

Value kiln::gpu::combineWith(OpBuilder &b, const Accumulator &accumulator, Value accumulated,
                            Value value) {
  Operation *combined = b.clone(*accumulator.combine);
  bool accumulatorFirst =
      accumulator.combine->getOperand(0) == memref::LoadOp(accumulator.load).getResult();
  combined->setOperands(accumulatorFirst ? ValueRange{accumulated, value}
                                         : ValueRange{value, accumulated});
  return combined->getResult(0);
}

std::optional<Reduction> kiln::gpu::matchReduction(scf::ForOp outer) {
  Reduction reduction;
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
  SmallVector<memref::StoreOp> stores;
  for (Operation &op : body->without_terminator()) {
    if (auto store = dyn_cast<memref::StoreOp>(op))
      stores.push_back(store);
    else if (isa<scf::ForOp, scf::IfOp, scf::WhileOp>(op) || writes(&op))
      return std::nullopt;
  }
  if (stores.empty())
    return std::nullopt;
  for (memref::StoreOp store : stores) {
    // Each accumulator is a buffer of its own, at indices invariant in the
    // whole nest; a store at indices that vary writes elements of its own
    // (checked below).
    if (llvm::any_of(store.getIndices(), [&](Value index) {
          return outer->isAncestor(index.getParentRegion()->getParentOp());
        })) {
      reduction.elementStores.push_back(store);
      continue;
    }
    if (llvm::any_of(reduction.accumulators, [&](Accumulator &other) {
          return other.store.getMemRef() == store.getMemRef();
        }))
      return std::nullopt;
    std::optional<Accumulator> accumulator = matchAccumulator(store);
    if (!accumulator)
      return std::nullopt;
    if (auto select = dyn_cast<arith::SelectOp>(accumulator->combine)) {
      if (reduction.selectCondition && reduction.selectCondition != select.getCondition())
        return std::nullopt;
      reduction.selectCondition = select.getCondition();
    }
    reduction.accumulators.push_back(*accumulator);
  }
  if (reduction.accumulators.empty() || !elementStoresApart(reduction) ||
      (reduction.selects() && !selectionIsClosed(reduction)))
    return std::nullopt;
  // No other read of an accumulator's buffer inside: the values combined
  // must not depend on them.
  bool readsAccumulator = false;
  outer.walk([&](memref::LoadOp other) {
    for (Accumulator &accumulator : reduction.accumulators)
      if (other != accumulator.load && other.getMemRef() == accumulator.store.getMemRef())
        readsAccumulator = true;
  });
  if (readsAccumulator)
    return std::nullopt;
  return reduction;
}

std::optional<Reduction> kiln::gpu::matchRowReduction(scf::ParallelOp loop) {
  if (loop.getNumResults() != 0)
    return std::nullopt;
  scf::ForOp nest;
  for (Operation &op : loop.getBody()->without_terminator()) {
    if (auto inner = dyn_cast<scf::ForOp>(op); inner && !nest)
      nest = inner;
    else if (!isPure(&op))
      return std::nullopt;
  }
  return nest ? matchReduction(nest) : std::nullopt;
}

int64_t kiln::gpu::saturatingMultiply(int64_t a, int64_t b) {
  return b > 0 && a > std::numeric_limits<int64_t>::max() / b
             ? std::numeric_limits<int64_t>::max()
             : a * b;
}

std::optional<int64_t> kiln::gpu::constantTrips(OpFoldResult lb, OpFoldResult ub,
                                                OpFoldResult step) {
  auto l = getConstantIntValue(lb), u = getConstantIntValue(ub), s = getConstantIntValue(step);
  if (!l || !u || !s || *s <= 0)
    return std::nullopt;
  return llvm::divideCeil(std::max<int64_t>(*u - *l, 0), *s);
}

std::optional<int64_t> kiln::gpu::constantTrips(const Reduction &reduction) {
  int64_t trips = 1;
  for (scf::ForOp loop : reduction.nest) {
    auto count = constantTrips(loop.getLowerBound(), loop.getUpperBound(), loop.getStep());
    if (!count)
      return std::nullopt;
    trips *= *count;
  }
  return trips;
}

bool Reduction::reorderable() const {
  return llvm::all_of(accumulators, [](const Accumulator &a) { return bool(a.identity); });
}

void kiln::gpu::clampFirstDim(scf::ParallelOp loop, Value begin, Value end) {
  OpBuilder b(loop);
  Location loc = loop.getLoc();
  loop.getLowerBoundMutable()[0].assign(
      arith::MaxUIOp::create(b, loc, loop.getLowerBound()[0], begin).getResult());
  loop.getUpperBoundMutable()[0].assign(
      arith::MinUIOp::create(b, loc, loop.getUpperBound()[0], end).getResult());
}

SmallVector<Value> kiln::gpu::tripCounts(OpBuilder &b, Location loc, ValueRange lbs,
                                         ValueRange ubs, ValueRange steps, Value &total) {
  SmallVector<Value> trips;
  total = arith::ConstantIndexOp::create(b, loc, 1);
  for (auto [lb, ub, step] : llvm::zip(lbs, ubs, steps)) {
    Value span = arith::SubIOp::create(b, loc, arith::MaxSIOp::create(b, loc, ub, lb), lb);
    trips.push_back(arith::CeilDivUIOp::create(b, loc, span, step));
    total = arith::MulIOp::create(b, loc, total, trips.back());
  }
  return trips;
}

SmallVector<Value> kiln::gpu::tripCounts(OpBuilder &b, Location loc, scf::ParallelOp loop,
                                         unsigned first, unsigned last, Value &total) {
  unsigned count = last - first;
  return tripCounts(b, loc, loop.getLowerBound().slice(first, count),
                    loop.getUpperBound().slice(first, count), loop.getStep().slice(first, count),
                    total);
}

SmallVector<Value> kiln::gpu::delinearize(OpBuilder &b, Location loc, Value flat,
                                          ArrayRef<Value> trips, ValueRange lbs,
                                          ValueRange steps) {
  SmallVector<Value> ivs(trips.size());
  Value rest = flat;
  for (int64_t i = trips.size() - 1; i >= 0; --i) {
    Value position =
        i == 0 ? rest : arith::RemUIOp::create(b, loc, rest, trips[i]).getResult();
    if (i > 0)
      rest = arith::DivUIOp::create(b, loc, rest, trips[i]);
    ivs[i] = arith::AddIOp::create(b, loc, lbs[i], arith::MulIOp::create(b, loc, position, steps[i]));
  }
  return ivs;
}

SmallVector<Value> kiln::gpu::delinearize(OpBuilder &b, Location loc, Value flat,
                                          ArrayRef<Value> trips, scf::ParallelOp loop,
                                          unsigned first) {
  return delinearize(b, loc, flat, trips, loop.getLowerBound().slice(first, trips.size()),
                     loop.getStep().slice(first, trips.size()));
}

Value kiln::gpu::rootBuffer(Value memref) {
  while (auto view = memref.getDefiningOp<ViewLikeOpInterface>())
    memref = view.getViewSource();
  return memref;
}

Value kiln::gpu::workgroupBuffer(OpBuilder &b, Location loc, Type type, int64_t elements) {
  auto space = ::mlir::gpu::AddressSpaceAttr::get(b.getContext(),
                                                  ::mlir::gpu::AddressSpace::Workgroup);
  return memref::AllocOp::create(
      b, loc, MemRefType::get({elements}, type, MemRefLayoutAttrInterface(), space));
}

Operation *kiln::gpu::serialLoops(OpBuilder &b, Location loc, scf::ParallelOp loop,
                                  unsigned count, IRMapping &mapping) {
  Operation *outermost = nullptr;
  for (unsigned d = 0; d < count; ++d) {
    auto serial = scf::ForOp::create(b, loc, loop.getLowerBound()[d], loop.getUpperBound()[d],
                                     loop.getStep()[d]);
    if (!outermost)
      outermost = serial;
    mapping.map(loop.getInductionVars()[d], serial.getInductionVar());
    b.setInsertionPoint(serial.getBody()->getTerminator());
  }
  return outermost;
}
