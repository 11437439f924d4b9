// Scans along a long axis over a workgroup's threads: each thread takes a
// chunk of the axis, thread 0 scans the chunks' totals in workgroup
// memory, and each thread scans its chunk again from its offset (see
// Mapping.h).
#include "Mapping.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/Matchers.h"

using namespace mlir;
using namespace kiln::gpu;

namespace {

/// `bound`, or the size it asks of a reinterpret_cast (what canonicalize
/// would fold the memref.dim to: a symbolic scan's copy step takes its
/// rows' count from its carry).
Value resolvedBound(Value bound) {
  auto dim = bound.getDefiningOp<memref::DimOp>();
  if (!dim)
    return bound;
  std::optional<int64_t> index = dim.getConstantIndex();
  auto cast = dim.getSource().getDefiningOp<memref::ReinterpretCastOp>();
  if (!index || !cast)
    return bound;
  auto size = dyn_cast<Value>(cast.getMixedSizes()[*index]);
  return size ? size : bound;
}

/// Whether two steps run over the same iteration space.
bool sameSpace(scf::ParallelOp a, scf::ParallelOp b) {
  auto same = [](ValueRange x, ValueRange y) {
    return llvm::equal(x, y, [](Value u, Value v) {
      u = resolvedBound(u);
      v = resolvedBound(v);
      std::optional<int64_t> cu = getConstantIntValue(u), cv = getConstantIntValue(v);
      return u == v || (cu && cv && *cu == *cv);
    });
  };
  return same(a.getLowerBound(), b.getLowerBound()) &&
         same(a.getUpperBound(), b.getUpperBound()) && same(a.getStep(), b.getStep());
}

/// The accumulation `step`'s body is, when it is one: a single store,
/// C[ivs] = combine(C[ivs], v), the combine reorderable.
std::optional<Accumulator> matchAccumulation(scf::ParallelOp step) {
  Block *body = step.getBody();
  SmallVector<memref::StoreOp> stores;
  for (Operation &op : body->without_terminator()) {
    if (auto store = dyn_cast<memref::StoreOp>(op))
      stores.push_back(store);
    else if (writes(&op) || op.getNumRegions())
      return std::nullopt;
  }
  if (stores.size() != 1 || !llvm::equal(stores[0].getIndices(), step.getInductionVars()))
    return std::nullopt;
  std::optional<Accumulator> accumulator = matchAccumulator(stores[0]);
  if (!accumulator || !accumulator->identity)
    return std::nullopt;
  return accumulator;
}

/// `block`'s ops but its terminator and those in `skip` cloned at `b`.
void cloneBody(OpBuilder &b, Block *block, IRMapping &mapping,
               ArrayRef<Operation *> skip = {}) {
  for (Operation &op : block->without_terminator())
    if (!llvm::is_contained(skip, &op))
      b.clone(op, mapping);
}

} // namespace

std::optional<Scan> kiln::gpu::matchScan(scf::ForOp loop, ArrayRef<scf::ParallelOp> steps) {
  if (steps.empty())
    return std::nullopt;
  Scan scan{loop, SmallVector<scf::ParallelOp>(steps), 0, {}};
  for (scf::ParallelOp step : steps) {
    // A step of a loop inside the loop is no step along the scanned axis.
    if (step->getParentOp() != loop.getOperation())
      return std::nullopt;
    // The rows' bounds come from outside, or are constants: the rows run
    // outside the loop.
    if (!sameSpace(step, steps.front()) ||
        llvm::any_of(step->getOperands(), [&](Value bound) {
          bound = resolvedBound(bound);
          return loop->isAncestor(bound.getParentRegion()->getParentOp()) &&
                 !matchPattern(bound, m_Constant());
        }))
      return std::nullopt;
  }
  unsigned found = 0;
  for (auto [i, step] : llvm::enumerate(steps))
    if (std::optional<Accumulator> accumulation = matchAccumulation(step)) {
      scan.accumulating = i;
      scan.accumulator = *accumulation;
      ++found;
    }
  if (found != 1)
    return std::nullopt;
  Value carry = scan.accumulator.store.getMemRef();
  Value carryBase = rootBuffer(carry);
  // What the loop writes, by buffer; none but the carry is read in it, and
  // the carry only by the accumulation and, after it, at the rows (through
  // the accumulation's view of it).
  DenseSet<Value> written;
  loop.walk([&](memref::StoreOp store) { written.insert(rootBuffer(store.getMemRef())); });
  bool readsApart = true;
  loop.walk([&](memref::StoreOp store) {
    if (store != scan.accumulator.store && rootBuffer(store.getMemRef()) == carryBase)
      readsApart = false;
  });
  loop.walk([&](memref::LoadOp load) {
    Value base = rootBuffer(load.getMemRef());
    if (!written.contains(base) || load == scan.accumulator.load)
      return;
    auto step = load->getParentOfType<scf::ParallelOp>();
    auto position = llvm::find(steps, step);
    if (load.getMemRef() != carry || position == steps.end() ||
        unsigned(position - steps.begin()) <= scan.accumulating ||
        load->getBlock() != step.getBody() ||
        !llvm::equal(load.getIndices(), step.getInductionVars()))
      readsApart = false;
  });
  if (!readsApart)
    return std::nullopt;
  return scan;
}

BlockScan kiln::gpu::blockScan(Scan &scan, const ThreadValues &values, WorkgroupMemory &memory,
                               std::optional<int64_t> maxRows) {
  scf::ForOp loop = scan.loop;
  Location loc = loop.getLoc();
  // The rows' bounds, before the loop: constants made inside it move out,
  // sizes asked of a view become the view's.
  scf::ParallelOp rowSpace = scan.steps.front();
  for (OpOperand &bound : rowSpace->getOpOperands()) {
    Value resolved = resolvedBound(bound.get());
    if (Operation *constant = resolved.getDefiningOp(); constant && loop->isAncestor(constant))
      constant->moveBefore(loop);
    bound.set(resolved);
  }
  BlockScan result;
  if (maxRows) {
    OpBuilder b(loop);
    Value rows;
    tripCounts(b, loc, rowSpace.getLowerBound(), rowSpace.getUpperBound(), rowSpace.getStep(),
               rows);
    Value few = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ule, rows,
                                      arith::ConstantIndexOp::create(b, loc, *maxRows));
    auto choice = scf::IfOp::create(b, loc, few, /*withElse=*/true);
    b.setInsertionPoint(choice.elseBlock()->getTerminator());
    result.stepwise = cast<scf::ForOp>(b.clone(*loop));
    loop->moveBefore(choice.thenBlock()->getTerminator());
    result.op = choice;
  }
  OpBuilder b(loop);
  Accumulator &accumulator = scan.accumulator;
  scf::ParallelOp accumulating = scan.steps[scan.accumulating];
  Value carry = accumulator.store.getMemRef();
  Type type = accumulator.type();
  // The chunks' exclusive prefixes, and at T the row's total.
  Value partials = memory.take(loc, type, values.threads + 1).front();
  IRMapping rowMapping;
  Operation *outermost =
      serialLoops(b, loc, scan.steps.front(), scan.steps.front().getNumLoops(), rowMapping);
  SmallVector<Value> rows;
  for (Value iv : scan.steps.front().getInductionVars())
    rows.push_back(rowMapping.lookup(iv));
  auto atRows = [&](IRMapping &mapping, scf::ParallelOp step) {
    for (auto [iv, row] : llvm::zip(step.getInductionVars(), rows))
      mapping.map(iv, row);
  };
  // What the loop's body makes besides its steps (the views of iteration
  // k), with `mapping` taking the loop's variable to k.
  auto cloneViews = [&](IRMapping &mapping) {
    for (Operation &op : loop.getBody()->without_terminator())
      if (!llvm::is_contained(scan.steps, &op))
        b.clone(op, mapping);
  };
  // The value iteration k adds: the accumulation's body, after the views.
  auto addedAt = [&](IRMapping &mapping) {
    atRows(mapping, accumulating);
    cloneBody(b, accumulating.getBody(), mapping,
              {accumulator.load, accumulator.combine, accumulator.store});
    Value added = accumulator.combine->getOperand(0) == accumulator.load.getResult()
                      ? accumulator.combine->getOperand(1)
                      : accumulator.combine->getOperand(0);
    return mapping.lookupOrDefault(added);
  };
  Value lb = loop.getLowerBound(), ub = loop.getUpperBound(), step = loop.getStep();
  auto [first, last] = chunkBounds(b, loc, lb, ub, step, values);
  Value identity = arith::ConstantOp::create(b, loc, accumulator.identity);
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);

  // Each thread's chunk total.
  auto total = scf::ForOp::create(b, loc, first, last, step, ValueRange{identity});
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(total.getBody());
    IRMapping mapping;
    mapping.map(loop.getInductionVar(), total.getInductionVar());
    cloneViews(mapping);
    Value added = addedAt(mapping);
    scf::YieldOp::create(
        b, loc, combineWith(b, accumulator, total.getRegionIterArgs().front(), added));
  }
  memref::StoreOp::create(b, loc, total.getResult(0), partials, values.thread);
  ::mlir::gpu::BarrierOp::create(b, loc);

  // Thread 0 turns the totals into exclusive prefixes, in thread order,
  // and keeps the row's total after them.
  {
    auto prefixes = scf::IfOp::create(b, loc, values.isFirstThread, /*withElse=*/false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(prefixes.thenBlock()->getTerminator());
    Value one = arith::ConstantIndexOp::create(b, loc, 1);
    auto scanTotals =
        scf::ForOp::create(b, loc, zero, values.threadCount, one, ValueRange{identity});
    {
      OpBuilder::InsertionGuard inner(b);
      b.setInsertionPointToStart(scanTotals.getBody());
      Value i = scanTotals.getInductionVar();
      Value before = scanTotals.getRegionIterArgs().front();
      Value chunk = memref::LoadOp::create(b, loc, partials, i);
      memref::StoreOp::create(b, loc, before, partials, i);
      scf::YieldOp::create(b, loc, combineWith(b, accumulator, before, chunk));
    }
    memref::StoreOp::create(b, loc, scanTotals.getResult(0), partials, values.threadCount);
  }
  ::mlir::gpu::BarrierOp::create(b, loc);

  // Each thread scans its chunk again from the carry and its prefix,
  // running every step of each iteration with the carry in a register.
  Value start = combineWith(b, accumulator, memref::LoadOp::create(b, loc, carry, rows),
                             memref::LoadOp::create(b, loc, partials, values.thread));
  auto rescan = scf::ForOp::create(b, loc, first, last, step, ValueRange{start});
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(rescan.getBody());
    IRMapping mapping;
    mapping.map(loop.getInductionVar(), rescan.getInductionVar());
    Value running = rescan.getRegionIterArgs().front();
    cloneViews(mapping);
    for (auto [i, stepLoop] : llvm::enumerate(scan.steps)) {
      if (i == scan.accumulating) {
        running = combineWith(b, accumulator, running, addedAt(mapping));
        continue;
      }
      atRows(mapping, stepLoop);
      SmallVector<Operation *> carryLoads;
      stepLoop.getBody()->walk([&](memref::LoadOp load) {
        if (load.getMemRef() == carry) {
          mapping.map(load.getResult(), running);
          carryLoads.push_back(load);
        }
      });
      cloneBody(b, stepLoop.getBody(), mapping, carryLoads);
    }
    scf::YieldOp::create(b, loc, running);
  }
  // Every thread has read the carry; thread 0 adds the row's total to it.
  ::mlir::gpu::BarrierOp::create(b, loc);
  {
    auto update = scf::IfOp::create(b, loc, values.isFirstThread, /*withElse=*/false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(update.thenBlock()->getTerminator());
    Value old = memref::LoadOp::create(b, loc, carry, rows);
    Value all = memref::LoadOp::create(b, loc, partials, values.threadCount);
    memref::StoreOp::create(b, loc, combineWith(b, accumulator, old, all), carry, rows);
  }
  // The next row's totals overwrite what thread 0 has just read.
  ::mlir::gpu::BarrierOp::create(b, loc);
  loop.erase();
  if (!result.op)
    result.op = outermost;
  return result;
}
