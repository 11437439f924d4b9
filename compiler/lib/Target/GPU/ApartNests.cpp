// A sequential loop nest whose writes fall apart by some of its loops (a
// scatter's nest: out[index[i, j], j] += src[i, j] writes apart by j): those
// loops spread over the threads, the others run in order inside each
// thread, so every element sees its updates in the nest's order
// (deterministic, no atomics). See Mapping.h.
#include "Mapping.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"

using namespace mlir;
using namespace kiln::gpu;

namespace {

/// The position of `iv` among `indices` when it appears there exactly once.
std::optional<unsigned> positionOf(ValueRange indices, Value iv) {
  std::optional<unsigned> position;
  for (auto [i, index] : llvm::enumerate(indices)) {
    if (index != iv)
      continue;
    if (position)
      return std::nullopt;
    position = i;
  }
  return position;
}

} // namespace

std::optional<SmallVector<scf::ForOp>> kiln::gpu::perfectNest(scf::ForOp outer) {
  SmallVector<scf::ForOp> nest;
  for (scf::ForOp level = outer;;) {
    if (level.getNumResults() != 0)
      return std::nullopt;
    for (Value bound : {level.getLowerBound(), level.getUpperBound(), level.getStep()})
      if (outer->isAncestor(bound.getParentRegion()->getParentOp()))
        return std::nullopt;
    nest.push_back(level);
    Block *body = level.getBody();
    auto inner = dyn_cast<scf::ForOp>(body->front());
    if (!inner || body->getOperations().size() != 2)
      return nest;
    level = inner;
  }
}

std::optional<ApartNest> kiln::gpu::matchApartNest(scf::ForOp outer) {
  ApartNest nest;
  std::optional<SmallVector<scf::ForOp>> loops = perfectNest(outer);
  if (!loops)
    return std::nullopt;
  nest.nest = std::move(*loops);
  scf::ForOp innermost = nest.nest.back();

  // The buffers the nest writes, by store only, each through one memref value.
  SmallVector<memref::StoreOp> stores;
  bool otherWriter = false;
  innermost.getBody()->walk([&](Operation *op) {
    if (auto store = dyn_cast<memref::StoreOp>(op))
      stores.push_back(store);
    else if (writes(op))
      otherWriter = true;
  });
  if (otherWriter || stores.empty())
    return std::nullopt;
  DenseMap<Value, Value> writtenByRoot; // root buffer -> the memref value written
  for (memref::StoreOp store : stores) {
    auto [it, inserted] = writtenByRoot.try_emplace(rootBuffer(store.getMemRef()), store.getMemRef());
    if (!inserted && it->second != store.getMemRef())
      return std::nullopt; // two views of one buffer: their elements may meet
  }
  // Every access to a written buffer: its stores and loads.
  SmallVector<std::pair<Value, ValueRange>> accesses;
  bool aliasedRead = false;
  innermost.getBody()->walk([&](Operation *op) {
    if (auto store = dyn_cast<memref::StoreOp>(op)) {
      accesses.push_back({store.getMemRef(), store.getIndices()});
    } else if (auto load = dyn_cast<memref::LoadOp>(op)) {
      auto written = writtenByRoot.find(rootBuffer(load.getMemRef()));
      if (written == writtenByRoot.end())
        return;
      if (written->second != load.getMemRef())
        aliasedRead = true;
      accesses.push_back({load.getMemRef(), load.getIndices()});
    }
  });
  if (aliasedRead)
    return std::nullopt;

  // A level writes apart when each access indexes with its variable
  // directly, at one position per buffer.
  for (scf::ForOp level : nest.nest) {
    Value iv = level.getInductionVar();
    DenseMap<Value, unsigned> positions;
    bool apart = true;
    for (auto [memref, indices] : accesses) {
      std::optional<unsigned> position = positionOf(indices, iv);
      auto [it, inserted] = positions.try_emplace(memref, position.value_or(0));
      apart &= position && it->second == *position;
    }
    nest.apart.push_back(apart);
  }
  if (llvm::none_of(nest.apart, [](bool apart) { return apart; }))
    return std::nullopt;
  return nest;
}

Operation *kiln::gpu::spreadApartNest(ApartNest &nest, const ThreadValues &values) {
  scf::ForOp outer = nest.nest.front();
  OpBuilder b(outer);
  Location loc = outer.getLoc();
  // The apart loops' bounds, and their trips.
  SmallVector<Value> lbs, ubs, steps;
  for (auto [level, apart] : llvm::zip(nest.nest, nest.apart))
    if (apart) {
      lbs.push_back(level.getLowerBound());
      ubs.push_back(level.getUpperBound());
      steps.push_back(level.getStep());
    }
  Value total;
  SmallVector<Value> trips = tripCounts(b, loc, lbs, ubs, steps, total);
  // Thread t takes positions t, t + T, ... of the apart loops' iteration
  // space (the last one fastest), and for each runs the other loops in
  // their order.
  auto spread = scf::ForOp::create(b, loc, values.thread, total, values.threadCount);
  b.setInsertionPointToStart(spread.getBody());
  IRMapping mapping;
  SmallVector<Value> apartIvs =
      delinearize(b, loc, spread.getInductionVar(), trips, lbs, steps);
  unsigned next = 0;
  for (auto [level, apart] : llvm::zip(nest.nest, nest.apart)) {
    if (apart) {
      mapping.map(level.getInductionVar(), apartIvs[next++]);
      continue;
    }
    auto serial = scf::ForOp::create(b, loc, level.getLowerBound(), level.getUpperBound(),
                                     level.getStep());
    mapping.map(level.getInductionVar(), serial.getInductionVar());
    b.setInsertionPoint(serial.getBody()->getTerminator());
  }
  for (Operation &op : nest.nest.back().getBody()->without_terminator())
    b.clone(op, mapping);
  outer.erase();
  return spread;
}
