// A matmul-like row reduction computed by tiles through workgroup memory:
// the GPU mapping's strategy for matmuls and batched matmuls, their
// epilogues fused after them (see Mapping.h and Passes.td).
#include "MatmulTiler.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/IRMapping.h"

#include <numeric>
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/SetVector.h"

using namespace mlir;
using namespace kiln::gpu;

namespace {

/// Whether `value` is defined outside `op` (an argument, or computed before).
bool definedOutside(Value value, Operation *op) {
  return !op->isAncestor(value.getParentRegion()->getParentOp());
}

/// `load` at `b` with the arithmetic in its block that computes its
/// indices, their inputs taken through `mapping`.
Value cloneWithAddress(OpBuilder &b, memref::LoadOp load, IRMapping &mapping) {
  SetVector<Operation *> slice;
  SmallVector<Value> worklist(load.getIndices());
  while (!worklist.empty()) {
    Operation *def = worklist.pop_back_val().getDefiningOp();
    if (!def || def->getBlock() != load->getBlock() || !slice.insert(def))
      continue;
    worklist.append(def->operand_begin(), def->operand_end());
  }
  SmallVector<Operation *> ordered(slice.begin(), slice.end());
  llvm::sort(ordered, [](Operation *x, Operation *y) { return x->isBeforeInBlock(y); });
  for (Operation *op : ordered)
    b.clone(*op, mapping);
  return b.clone(*load, mapping)->getResult(0);
}

/// Threads per row of the thread grid (each takes threadColumns outputs of
/// a tile row, strided by this much so that neighbours touch neighbours).
constexpr int64_t kThreadColumns = 16;

/// The tile for `threads` threads and `columnTrips` columns (nullopt when
/// not a constant): 4 rows per thread, 32 rows for 128 threads; 4 columns
/// per thread (64 in all), fewer for narrow outputs (16 or 32 columns), so
/// that a tile is not mostly empty; stages 16 deep.
std::optional<MatmulTileShape> tileShape(int64_t threads, std::optional<int64_t> columnTrips) {
  if (threads < 2 * kThreadColumns || threads % kThreadColumns != 0)
    return std::nullopt;
  MatmulTileShape shape;
  shape.threadRows = 4;
  shape.threadColumns = 4;
  if (columnTrips && *columnTrips <= kThreadColumns)
    shape.threadColumns = 1;
  else if (columnTrips && *columnTrips <= 2 * kThreadColumns)
    shape.threadColumns = 2;
  shape.rows = shape.threadRows * (threads / kThreadColumns);
  shape.columns = shape.threadColumns * kThreadColumns;
  shape.depth = 16;
  return shape;
}

} // namespace

int64_t kiln::gpu::tileBytes(const TiledMatmul &matmul) {
  auto bytes = [](memref::LoadOp load) {
    return llvm::divideCeil(load.getType().getIntOrFloatBitWidth(), 8);
  };
  const MatmulTileShape &shape = matmul.shape;
  int64_t total = matmul.scratchBytes;
  for (memref::LoadOp load : matmul.rowLoads)
    total += shape.rows * shape.depth * bytes(load);
  for (memref::LoadOp load : matmul.columnLoads)
    total += shape.depth * shape.columns * bytes(load);
  return total;
}

int64_t kiln::gpu::rowAlignment(const TiledMatmul &matmul) {
  if (matmul.firstRowDim != 0)
    return 1;
  // Rows of the first dimension per chunk so that the chunk's flattened
  // rows are a multiple of the tile's: rows / gcd(rows, the other row
  // dimensions' extent).
  scf::ParallelOp loop = matmul.loop;
  int64_t inner = 1;
  for (unsigned d = 1; d + 1 < loop.getNumLoops(); ++d) {
    auto trips = constantTrips(loop.getLowerBound()[d], loop.getUpperBound()[d], loop.getStep()[d]);
    inner = trips && *trips > 0 ? inner * *trips : inner;
  }
  return matmul.shape.rows / std::gcd(matmul.shape.rows, inner);
}

std::optional<TiledMatmul> kiln::gpu::matchTiledMatmul(scf::ParallelOp loop, int64_t threads,
                                                       int64_t sharedBytes) {
  unsigned numLoops = loop.getNumLoops();
  if (numLoops < 2 || numLoops > 64)
    return std::nullopt;
  std::optional<Reduction> reduction = matchRowReduction(loop);
  if (!reduction || reduction->selects() || !reduction->elementStores.empty() ||
      reduction->nest.size() != 1 ||
      reduction->accumulators.size() != 1 ||
      !iterationsWriteApart(loop))
    return std::nullopt;
  scf::ForOp nest = reduction->nest.front();
  // The loop holds the nest alone, whose bounds do not vary with it.
  if (loop.getBody()->getOperations().size() != 2 ||
      llvm::any_of(ValueRange{nest.getLowerBound(), nest.getUpperBound(), nest.getStep()},
                   [&](Value bound) { return !definedOutside(bound, loop); }))
    return std::nullopt;
  Value k = nest.getInductionVar();
  Accumulator &accumulator = reduction->accumulators.front();

  // The loop dimensions `value` varies with (a bit each), through pure
  // arithmetic in the nest's body (an implicit GEMM's addresses); nullopt
  // where it comes from anything else (a gather's loaded index).
  std::function<std::optional<uint64_t>(Value)> varies =
      [&](Value value) -> std::optional<uint64_t> {
    if (auto it = llvm::find(loop.getInductionVars(), value); it != loop.getInductionVars().end())
      return uint64_t(1) << (it - loop.getInductionVars().begin());
    if (value == k || definedOutside(value, loop))
      return uint64_t(0);
    Operation *def = value.getDefiningOp();
    if (!def || def->getBlock() != nest.getBody() || !isPure(def) || def->getNumRegions())
      return std::nullopt;
    uint64_t all = 0;
    for (Value operand : def->getOperands()) {
      auto operandVaries = varies(operand);
      if (!operandVaries)
        return std::nullopt;
      all |= *operandVaries;
    }
    return all;
  };
  TiledMatmul matmul{loop, *reduction, {}, {}, 0, {}};
  uint64_t column = uint64_t(1) << (numLoops - 1);
  uint64_t columnLoadsVary = 0;
  SmallVector<std::pair<memref::LoadOp, uint64_t>> rowCandidates;
  for (memref::LoadOp load : nest.getBody()->getOps<memref::LoadOp>()) {
    if (load == accumulator.load)
      continue;
    if (!definedOutside(load.getMemRef(), loop))
      return std::nullopt;
    uint64_t dims = 0;
    for (Value index : load.getIndices()) {
      auto indexVaries = varies(index);
      if (!indexVaries)
        return std::nullopt;
      dims |= *indexVaries;
    }
    if (dims & column) {
      matmul.columnLoads.push_back(load);
      columnLoadsVary |= dims & ~column;
    } else if (dims) {
      rowCandidates.push_back({load, dims});
    }
  }
  // The row dimensions: those after the last one a column load varies
  // with, up to the one before last.
  matmul.firstRowDim = columnLoadsVary ? llvm::Log2_64(columnLoadsVary) + 1 : 0;
  if (matmul.firstRowDim + 1 >= numLoops)
    return std::nullopt;
  uint64_t rowDims = (column - 1) & ~((uint64_t(1) << matmul.firstRowDim) - 1);
  for (auto [load, dims] : rowCandidates)
    if (dims & rowDims)
      matmul.rowLoads.push_back(load);
  if (matmul.rowLoads.empty() || matmul.columnLoads.empty())
    return std::nullopt;

  // Too few rows or columns (under 8) to fill a quarter of a tile or half
  // of the narrowest: a thread per output is better.
  auto trips = [&](unsigned d) {
    return constantTrips(loop.getLowerBound()[d], loop.getUpperBound()[d], loop.getStep()[d]);
  };
  std::optional<int64_t> rowTrips = 1;
  for (unsigned d = matmul.firstRowDim; d + 1 < numLoops; ++d) {
    auto dimTrips = trips(d);
    rowTrips = rowTrips && dimTrips ? std::optional<int64_t>(*rowTrips * *dimTrips) : std::nullopt;
  }
  std::optional<int64_t> columnTrips = trips(numLoops - 1);
  auto shape = tileShape(threads, columnTrips);
  if (!shape || (rowTrips && *rowTrips < shape->rows / 4) || (columnTrips && *columnTrips < 8))
    return std::nullopt;
  matmul.shape = *shape;
  if (tileBytes(matmul) > sharedBytes)
    return std::nullopt;
  return matmul;
}

kiln::gpu::MatmulTiler::MatmulTiler(TiledMatmul &matmul, const ThreadValues &values, Value begin, Value end)
    : matmul(matmul), values(values), b(matmul.loop), loc(matmul.loop.getLoc()),
      nest(matmul.reduction.nest.front()), accumulator(matmul.reduction.accumulators.front()) {
  scf::ParallelOp loop = matmul.loop;
  if (begin)
    clampFirstDim(loop, begin, end);
  b.setInsertionPoint(loop);
  const MatmulTileShape &shape = matmul.shape;
  unsigned numLoops = loop.getNumLoops();
  auto tile = [&](memref::LoadOp load, int64_t elements) {
    return workgroupBuffer(b, loc, load.getType(), elements);
  };
  for (memref::LoadOp load : matmul.rowLoads)
    rowTiles.push_back(tile(load, shape.rows * shape.depth));
  for (memref::LoadOp load : matmul.columnLoads)
    columnTiles.push_back(tile(load, shape.depth * shape.columns));
  rowTrips = tripCounts(b, loc, loop, matmul.firstRowDim, numLoops - 1, flatRows);
  // The batch dimensions one after another, then the tiles.
  outermost = serialLoops(b, loc, loop, matmul.firstRowDim, outer);
  columnEnd = loop.getUpperBound()[numLoops - 1];
  columnStep = loop.getStep()[numLoops - 1];
  row0 = sequential(index(0), flatRows, index(shape.rows));
  column0 = sequential(loop.getLowerBound()[numLoops - 1], columnEnd,
                       arith::MulIOp::create(b, loc, columnStep, index(shape.columns)));
  kEnd = nest.getUpperBound();
  kStep = nest.getStep();
}

Value kiln::gpu::MatmulTiler::index(int64_t value) { return arith::ConstantIndexOp::create(b, loc, value); }

Value kiln::gpu::MatmulTiler::below(Value value, Value bound) {
  return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, value, bound).getResult();
}

Value kiln::gpu::MatmulTiler::sequential(Value lb, Value ub, Value step) {
  auto serial = scf::ForOp::create(b, loc, lb, ub, step);
  if (!outermost)
    outermost = serial;
  b.setInsertionPoint(serial.getBody()->getTerminator());
  return serial.getInductionVar();
}

void kiln::gpu::MatmulTiler::mapRows(Value flat, IRMapping &at) {
  for (auto [i, value] :
       llvm::enumerate(delinearize(b, loc, flat, rowTrips, matmul.loop, matmul.firstRowDim)))
    at.map(matmul.loop.getInductionVars()[matmul.firstRowDim + i], value);
}

Value kiln::gpu::MatmulTiler::column(Value offset) {
  return arith::AddIOp::create(b, loc, column0, arith::MulIOp::create(b, loc, offset, columnStep));
}

SmallVector<Value> kiln::gpu::MatmulTiler::outputIndices(const IRMapping &at) {
  SmallVector<Value> indices;
  for (Value i : accumulator.store.getIndices())
    indices.push_back(at.lookupOrDefault(i));
  return indices;
}

Value kiln::gpu::MatmulTiler::loadOutput(const IRMapping &at, Value inside) {
  Type type = accumulator.load.getType();
  auto load = scf::IfOp::create(b, loc, TypeRange{type}, inside, /*withElse=*/true);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(load.thenBlock());
  scf::YieldOp::create(
      b, loc,
      memref::LoadOp::create(b, loc, accumulator.store.getMemRef(), outputIndices(at)).getResult());
  b.setInsertionPointToStart(load.elseBlock());
  scf::YieldOp::create(
      b, loc, arith::ConstantOp::create(b, loc, cast<TypedAttr>(b.getZeroAttr(type))).getResult());
  return load.getResult(0);
}

void kiln::gpu::MatmulTiler::storeOutput(Value value, const IRMapping &at, Value inside) {
  auto store = scf::IfOp::create(b, loc, inside, /*withElse=*/false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(store.thenBlock()->getTerminator());
  memref::StoreOp::create(b, loc, value, accumulator.store.getMemRef(), outputIndices(at));
}

scf::ForOp kiln::gpu::MatmulTiler::openStages(ValueRange initial) {
  auto stages = scf::ForOp::create(b, loc, nest.getLowerBound(), kEnd,
                                   arith::MulIOp::create(b, loc, kStep, index(matmul.shape.depth)),
                                   initial);
  return stages;
}

void kiln::gpu::MatmulTiler::loadStage(Value k0, bool zeroOutside) {
  const MatmulTileShape &shape = matmul.shape;
  Value columnIv = matmul.loop.getInductionVars().back();
  // All threads load the stage's tiles, element e at e / width, e % width
  // (consecutive threads on consecutive elements).
  auto loadTile = [&](memref::LoadOp load, Value tileBuffer, int64_t height, int64_t width,
                      bool byRow) {
    auto elements =
        scf::ForOp::create(b, loc, values.thread, index(height * width), values.threadCount);
    OpBuilder::InsertionGuard inner(b);
    b.setInsertionPointToStart(elements.getBody());
    Value e = elements.getInductionVar();
    Value across = arith::DivUIOp::create(b, loc, e, index(width));
    Value along = arith::RemUIOp::create(b, loc, e, index(width));
    // Row tiles: across rows, along k; column tiles: across k, along
    // columns.
    Value kk = byRow ? along : across;
    Value other = byRow ? across : along;
    Value kIndex = arith::AddIOp::create(b, loc, k0, arith::MulIOp::create(b, loc, kk, kStep));
    Value otherIndex = byRow ? arith::AddIOp::create(b, loc, row0, other).getResult() : column(other);
    Value inside = arith::AndIOp::create(b, loc, below(kIndex, kEnd),
                                         below(otherIndex, byRow ? flatRows : columnEnd));
    auto guarded = scf::IfOp::create(b, loc, TypeRange{}, inside, /*withElse=*/zeroOutside);
    b.setInsertionPoint(guarded.thenBlock()->getTerminator());
    IRMapping at = outer;
    at.map(nest.getInductionVar(), kIndex);
    if (byRow)
      mapRows(otherIndex, at);
    else
      at.map(columnIv, otherIndex);
    Value element = cloneWithAddress(b, load, at);
    memref::StoreOp::create(b, loc, element, tileBuffer, ValueRange{e});
    if (zeroOutside) {
      b.setInsertionPoint(guarded.elseBlock()->getTerminator());
      Value zero = arith::ConstantOp::create(b, loc, cast<TypedAttr>(b.getZeroAttr(load.getType())));
      memref::StoreOp::create(b, loc, zero, tileBuffer, ValueRange{e});
    }
  };
  for (auto [load, tileBuffer] : llvm::zip(matmul.rowLoads, rowTiles))
    loadTile(load, tileBuffer, shape.rows, shape.depth, /*byRow=*/true);
  for (auto [load, tileBuffer] : llvm::zip(matmul.columnLoads, columnTiles))
    loadTile(load, tileBuffer, shape.depth, shape.columns, /*byRow=*/false);
  ::mlir::gpu::BarrierOp::create(b, loc);
}

Operation *kiln::gpu::MatmulTiler::finish() {
  matmul.loop.erase();
  return outermost;
}

Operation *kiln::gpu::tileMatmul(TiledMatmul &matmul, const ThreadValues &values, Value begin,
                                 Value end) {
  MatmulTiler tiler(matmul, values, begin, end);
  OpBuilder &b = tiler.b;
  Location loc = tiler.loc;
  const MatmulTileShape &shape = matmul.shape;
  scf::ForOp nest = tiler.nest;
  Accumulator &accumulator = tiler.accumulator;
  auto index = [&](int64_t value) { return tiler.index(value); };

  // The thread's place in the grid of gridColumns x gridRows threads: its
  // outputs are rows ty + gridRows * r, columns tx + gridColumns * c.
  int64_t gridColumns = shape.columns / shape.threadColumns;
  int64_t gridRows = shape.rows / shape.threadRows;
  Value tx = arith::RemUIOp::create(b, loc, values.thread, index(gridColumns));
  Value ty = arith::DivUIOp::create(b, loc, values.thread, index(gridColumns));

  // This thread's outputs and whether each is inside the loop's bounds.
  SmallVector<IRMapping> rowAt(shape.threadRows, tiler.outer);
  SmallVector<Value> columns, rowInside, columnInside;
  for (int64_t r = 0; r < shape.threadRows; ++r) {
    Value flat = arith::AddIOp::create(b, loc, tiler.row0,
                                       arith::AddIOp::create(b, loc, ty, index(gridRows * r)));
    rowInside.push_back(tiler.below(flat, tiler.flatRows));
    tiler.mapRows(flat, rowAt[r]);
  }
  for (int64_t c = 0; c < shape.threadColumns; ++c) {
    columns.push_back(tiler.column(arith::AddIOp::create(b, loc, tx, index(gridColumns * c))));
    columnInside.push_back(tiler.below(columns.back(), tiler.columnEnd));
  }
  Value columnIv = matmul.loop.getInductionVars().back();
  // The values the loop's variables have at output (r, c).
  auto outputAt = [&](int64_t r, int64_t c) {
    IRMapping at = rowAt[r];
    at.map(columnIv, columns[c]);
    return at;
  };
  auto inside = [&](int64_t r, int64_t c) {
    return arith::AndIOp::create(b, loc, rowInside[r], columnInside[c]).getResult();
  };

  // Each output starts from its value (the loop combined into it in k
  // order from there; so does this).
  SmallVector<Value> initial;
  for (int64_t r = 0; r < shape.threadRows; ++r)
    for (int64_t c = 0; c < shape.threadColumns; ++c)
      initial.push_back(tiler.loadOutput(outputAt(r, c), inside(r, c)));

  scf::ForOp stages = tiler.openStages(initial);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(stages.getBody());
    Value k0 = stages.getInductionVar();
    // What lies outside the loop's bounds is left unloaded: no output or
    // step reads it.
    tiler.loadStage(k0, /*zeroOutside=*/false);

    // The stage's k steps: as many as are left, at most its depth.
    Value left = arith::CeilDivUIOp::create(
        b, loc, arith::SubIOp::create(b, loc, tiler.kEnd, k0), tiler.kStep);
    Value count = arith::MinUIOp::create(b, loc, left, index(shape.depth));
    auto steps = scf::ForOp::create(b, loc, index(0), count, index(1),
                                    stages.getRegionIterArgs());
    {
      OpBuilder::InsertionGuard inner(b);
      b.setInsertionPointToStart(steps.getBody());
      Value kk = steps.getInductionVar();
      Value kIndex =
          arith::AddIOp::create(b, loc, k0, arith::MulIOp::create(b, loc, kk, tiler.kStep));
      // This thread's row-tile elements (one per output row) and
      // column-tile ones (one per output column) of step kk.
      SmallVector<SmallVector<Value>> rowValues, columnValues;
      for (Value tileBuffer : tiler.rowTiles) {
        rowValues.emplace_back();
        for (int64_t r = 0; r < shape.threadRows; ++r) {
          Value at = arith::AddIOp::create(
              b, loc,
              arith::MulIOp::create(b, loc, arith::AddIOp::create(b, loc, ty, index(gridRows * r)),
                                    index(shape.depth)),
              kk);
          rowValues.back().push_back(memref::LoadOp::create(b, loc, tileBuffer, ValueRange{at}));
        }
      }
      for (Value tileBuffer : tiler.columnTiles) {
        columnValues.emplace_back();
        for (int64_t c = 0; c < shape.threadColumns; ++c) {
          Value at = arith::AddIOp::create(
              b, loc, arith::MulIOp::create(b, loc, kk, index(shape.columns)),
              arith::AddIOp::create(b, loc, tx, index(gridColumns * c)));
          columnValues.back().push_back(
              memref::LoadOp::create(b, loc, tileBuffer, ValueRange{at}));
        }
      }
      // The loop's body once per output, its loads from the tiles.
      SmallVector<Value> next;
      ValueRange carried = steps.getRegionIterArgs();
      for (int64_t r = 0; r < shape.threadRows; ++r)
        for (int64_t c = 0; c < shape.threadColumns; ++c) {
          IRMapping at = outputAt(r, c);
          at.map(nest.getInductionVar(), kIndex);
          at.map(accumulator.load.getResult(), carried[r * shape.threadColumns + c]);
          for (auto [load, loaded] : llvm::zip(matmul.rowLoads, rowValues))
            at.map(load.getResult(), loaded[r]);
          for (auto [load, loaded] : llvm::zip(matmul.columnLoads, columnValues))
            at.map(load.getResult(), loaded[c]);
          for (Operation &op : nest.getBody()->without_terminator()) {
            if (&op == accumulator.store.getOperation() ||
                (isa<memref::LoadOp>(op) && at.contains(op.getResult(0))))
              continue;
            b.clone(op, at);
          }
          next.push_back(at.lookup(accumulator.combine->getResult(0)));
        }
      scf::YieldOp::create(b, loc, next);
    }
    // Every thread is done with the tiles before the next stage's load.
    ::mlir::gpu::BarrierOp::create(b, loc);
    scf::YieldOp::create(b, loc, steps.getResults());
  }

  // The outputs inside the bounds.
  for (int64_t r = 0; r < shape.threadRows; ++r)
    for (int64_t c = 0; c < shape.threadColumns; ++c)
      tiler.storeOutput(stages.getResult(r * shape.threadColumns + c), outputAt(r, c),
                        inside(r, c));
  return tiler.finish();
}
