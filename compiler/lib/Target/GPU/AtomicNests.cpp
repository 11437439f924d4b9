// A loop nest whose writes are all read-modify-writes an atomic does (a 1-D
// scatter's: out[index[i]] += src[i]), or stores of one value the nest does
// not compute: each update becomes a memref.atomic_rmw and the nest's
// iterations spread over the threads. See Mapping.h.
#include "Mapping.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace kiln::gpu;

namespace {

/// The atomic that does `combine`, for its type; nullopt when none does.
std::optional<arith::AtomicRMWKind> atomicKind(Operation *combine) {
  Type type = combine->getResult(0).getType();
  if (auto add = dyn_cast<arith::AddFOp>(combine))
    return type.isF32() && arith::bitEnumContainsAll(add.getFastmath(),
                                                     arith::FastMathFlags::reassoc)
               ? std::optional(arith::AtomicRMWKind::addf)
               : std::nullopt;
  if (!type.isInteger(32) && !type.isInteger(64))
    return std::nullopt;
  return llvm::TypeSwitch<Operation *, std::optional<arith::AtomicRMWKind>>(combine)
      .Case([](arith::AddIOp) { return arith::AtomicRMWKind::addi; })
      .Case([](arith::MaxSIOp) { return arith::AtomicRMWKind::maxs; })
      .Case([](arith::MinSIOp) { return arith::AtomicRMWKind::mins; })
      .Case([](arith::MaxUIOp) { return arith::AtomicRMWKind::maxu; })
      .Case([](arith::MinUIOp) { return arith::AtomicRMWKind::minu; })
      .Default([](Operation *) { return std::nullopt; });
}

/// A kernel binding, or reinterpretations of one (what a Vulkan kernel's
/// accesses are rewritten onto).
bool isBindingOrReinterpretation(Value memref) {
  while (auto view = memref.getDefiningOp<memref::ReinterpretCastOp>())
    memref = view.getSource();
  return isa<BlockArgument>(memref);
}

/// The update `store` ends, when it is one.
std::optional<AtomicUpdate> matchUpdate(memref::StoreOp store) {
  Operation *combine = store.getValueToStore().getDefiningOp();
  if (!combine || combine->getNumOperands() != 2 || combine->getBlock() != store->getBlock() ||
      !combine->hasOneUse() || !isBindingOrReinterpretation(store.getMemRef()))
    return std::nullopt;
  std::optional<arith::AtomicRMWKind> kind = atomicKind(combine);
  if (!kind)
    return std::nullopt;
  for (unsigned i = 0; i < 2; ++i) {
    auto load = combine->getOperand(i).getDefiningOp<memref::LoadOp>();
    if (load && load->hasOneUse() && load->getBlock() == store->getBlock() &&
        load.getMemRef() == store.getMemRef() && load.getIndices() == store.getIndices())
      return AtomicUpdate{load, combine, store, *kind, combine->getOperand(1 - i)};
  }
  return std::nullopt;
}

} // namespace

std::optional<AtomicNest> kiln::gpu::matchAtomicNest(scf::ForOp outer) {
  AtomicNest nest;
  std::optional<SmallVector<scf::ForOp>> loops = perfectNest(outer);
  if (!loops)
    return std::nullopt;
  nest.nest = std::move(*loops);
  // Every write an update, each buffer updated through one memref value
  // by one kind of combine, or a store of one value the nest does not
  // compute (a scatter resetting the positions it writes to an identity:
  // whichever thread writes an element last, it holds that value).
  bool otherWriter = false;
  // Root buffer -> the memref value written, and the combine (none: a store
  // of the same value everywhere).
  DenseMap<Value, std::pair<Value, std::optional<arith::AtomicRMWKind>>> written;
  nest.nest.back().getBody()->walk([&](Operation *op) {
    auto store = dyn_cast<memref::StoreOp>(op);
    std::optional<AtomicUpdate> update = store ? matchUpdate(store) : std::nullopt;
    bool sameValue = store && !update &&
                     !outer->isAncestor(store.getValueToStore().getParentRegion()->getParentOp());
    if (!update && !sameValue) {
      otherWriter |= writes(op);
      return;
    }
    std::optional<arith::AtomicRMWKind> kind;
    if (update)
      kind = update->kind;
    auto [it, inserted] =
        written.try_emplace(rootBuffer(store.getMemRef()), store.getMemRef(), kind);
    if (!inserted && (it->second.first != store.getMemRef() || it->second.second != kind))
      otherWriter = true;
    if (update)
      nest.updates.push_back(*update);
  });
  if (otherWriter || written.empty())
    return std::nullopt;
  // Nothing but the updates reads what the nest writes.
  DenseSet<Operation *> updateLoads;
  for (const AtomicUpdate &update : nest.updates)
    updateLoads.insert(update.load);
  WalkResult reads = nest.nest.back().getBody()->walk([&](memref::LoadOp load) {
    if (!updateLoads.contains(load) && written.count(rootBuffer(load.getMemRef())))
      return WalkResult::interrupt();
    return WalkResult::advance();
  });
  if (reads.wasInterrupted())
    return std::nullopt;
  return nest;
}

Operation *kiln::gpu::spreadAtomicNest(AtomicNest &nest, const ThreadValues &values) {
  for (AtomicUpdate &update : nest.updates) {
    OpBuilder b(update.store);
    memref::AtomicRMWOp::create(b, update.store.getLoc(), update.kind, update.value,
                                update.store.getMemRef(), update.store.getIndices());
    update.store.erase();
    update.combine->erase();
    update.load.erase();
  }
  scf::ForOp outer = nest.nest.front();
  OpBuilder b(outer);
  Location loc = outer.getLoc();
  SmallVector<Value> lbs, ubs, steps;
  for (scf::ForOp level : nest.nest) {
    lbs.push_back(level.getLowerBound());
    ubs.push_back(level.getUpperBound());
    steps.push_back(level.getStep());
  }
  Value total;
  SmallVector<Value> trips = tripCounts(b, loc, lbs, ubs, steps, total);
  // Thread t takes positions t, t + T, ... of the nest's iteration space,
  // in rounds every thread runs (each round's last threads guarded): the
  // loop's control flow stays uniform around the atomics. (With a loop
  // from t, lavapipe lost the later work of threads that left it early
  // once a kernel held two such loops.)
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  auto rounds = scf::ForOp::create(b, loc, zero, total, values.threadCount);
  b.setInsertionPointToStart(rounds.getBody());
  Value position = arith::AddIOp::create(b, loc, rounds.getInductionVar(), values.thread);
  Value inside = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, position, total);
  auto guard = scf::IfOp::create(b, loc, inside, /*withElse=*/false);
  b.setInsertionPointToStart(guard.thenBlock());
  IRMapping mapping;
  SmallVector<Value> ivs = delinearize(b, loc, position, trips, lbs, steps);
  for (auto [level, iv] : llvm::zip(nest.nest, ivs))
    mapping.map(level.getInductionVar(), iv);
  for (Operation &op : nest.nest.back().getBody()->without_terminator())
    b.clone(op, mapping);
  outer.erase();
  return rounds;
}
