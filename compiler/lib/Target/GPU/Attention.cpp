// Fused attention on the GPU (see Attention.h): the score and softmax
// arithmetic both strategies share, the query-block strategy through
// workgroup memory, and the row-per-thread one.
#include "Attention.h"

#include "Emitter.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"

#include <limits>

using namespace mlir;
using namespace kiln::gpu;
using kiln::kernel::AttentionOp;

namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

/// The static sizes of an attention: heads, key heads, head size (queries
/// and keys) and value size; and the type its sums run in.
struct AttentionSizes {
  int64_t heads, kvHeads, headSize, valueSize;
  Type acc;
  explicit AttentionSizes(AttentionOp op) {
    auto q = cast<MemRefType>(op.getQ().getType());
    heads = q.getDimSize(1), headSize = q.getDimSize(3);
    kvHeads = cast<MemRefType>(op.getK().getType()).getDimSize(1);
    valueSize = cast<MemRefType>(op.getV().getType()).getDimSize(3);
    acc = accumulatorType(q.getElementType());
  }
};

/// Whether both lowerings can take `op`; else, when `report`, an error at
/// it saying why.
LogicalResult checkLowerable(AttentionOp op, bool report) {
  auto q = dyn_cast<MemRefType>(op.getQ().getType());
  auto k = dyn_cast<MemRefType>(op.getK().getType());
  auto v = dyn_cast<MemRefType>(op.getV().getType());
  if (!q || !k || !v)
    return report ? op.emitOpError("must be bufferized before its GPU lowering") : failure();
  if (!isa<FloatType>(q.getElementType()))
    return report ? op.emitOpError("has no GPU lowering for ") << q.getElementType() << " elements"
                  : failure();
  for (auto [type, d] : {std::pair{q, 1}, std::pair{q, 3}, std::pair{k, 1}, std::pair{v, 3}})
    if (type.isDynamicDim(d))
      return report ? op.emitOpError("on the GPU needs static head counts and head sizes")
                    : failure();
  return success();
}

/// The score of query i against key j from their dot product: scaled,
/// plus the mask (broadcast where its dimensions are 1), -inf where causal
/// attention hides key j (j > i).
Value score(Emitter &e, AttentionOp op, Type acc, Value dot, Value batch, Value head, Value i,
            Value j) {
  OpBuilder &b = e.b;
  Location loc = e.loc;
  Value score = arith::MulFOp::create(b, loc, dot, e.constant(acc, op.getScale().convertToDouble()));
  if (Value mask = op.getMask()) {
    auto type = cast<MemRefType>(mask.getType());
    SmallVector<Value> at{batch, head, i, j};
    for (int64_t dim = 0; dim < 4; ++dim)
      if (type.getDimSize(dim) == 1)
        at[dim] = e.index(0); // broadcast
    score = arith::AddFOp::create(b, loc, score, e.loadAs(acc, mask, at));
  }
  if (op.getIsCausal()) {
    Value future = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ugt, j, i);
    score = arith::SelectOp::create(b, loc, future, e.constant(acc, kNegInf), score);
  }
  return score;
}

/// What the exponentials subtract for running max `max`: the max, or 0
/// while every key so far is masked (max -inf), so that exp gives 0
/// instead of exp(-inf - -inf) = NaN.
Value softmaxBase(Emitter &e, Type acc, Value max) {
  Value allMasked = arith::CmpFOp::create(e.b, e.loc, arith::CmpFPredicate::OEQ, max,
                                          e.constant(acc, kNegInf));
  return arith::SelectOp::create(e.b, e.loc, allMasked, e.constant(acc, 0.0), max);
}

Value expMinus(Emitter &e, Value x, Value base) {
  return math::ExpOp::create(e.b, e.loc, arith::SubFOp::create(e.b, e.loc, x, base));
}

/// A query's logsumexp (m + log(l)) and the factor its output row is
/// multiplied by (1 / l), from its final max m and sum l. A row whose keys
/// are all masked gives 0 and logsumexp 0 (as ATen's CPU flash attention),
/// or NaN where the softmax written out would.
std::pair<Value, Value> finishSoftmax(Emitter &e, AttentionOp op, Type acc, Value max,
                                      Value sum) {
  OpBuilder &b = e.b;
  Location loc = e.loc;
  Value zero = e.constant(acc, 0.0), one = e.constant(acc, 1.0);
  Value masked = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, sum, zero);
  Value safeSum = arith::SelectOp::create(b, loc, masked, one, sum);
  Value logsumexp = arith::AddFOp::create(b, loc, softmaxBase(e, acc, max),
                                          math::LogOp::create(b, loc, safeSum));
  Value reciprocal = arith::DivFOp::create(b, loc, one, op.getMaskedRowsNan() ? sum : safeSum);
  return {logsumexp, reciprocal};
}

/// The outputs viewed as [B * H, L, Ev] and [B * H, L], so that the pairs
/// index them directly.
std::pair<Value, Value> pairViews(Emitter &e, AttentionOp op) {
  Value out = memref::CollapseShapeOp::create(e.b, e.loc, op.getInit(),
                                              ArrayRef<ReassociationIndices>{{0, 1}, {2}, {3}});
  Value logsumexp = memref::CollapseShapeOp::create(
      e.b, e.loc, op.getLogsumexpInit(), ArrayRef<ReassociationIndices>{{0, 1}, {2}});
  return {out, logsumexp};
}

/// A pair's batch, head and key head.
struct PairIndices {
  Value batch, head, kvHead;
  PairIndices(Emitter &e, const AttentionSizes &sizes, Value pair) {
    batch = arith::DivUIOp::create(e.b, e.loc, pair, e.index(sizes.heads));
    head = arith::RemUIOp::create(e.b, e.loc, pair, e.index(sizes.heads));
    kvHead = arith::DivUIOp::create(e.b, e.loc, head, e.index(sizes.heads / sizes.kvHeads));
  }
};

} // namespace

int64_t kiln::gpu::attentionBlockBytes(AttentionOp op, AttentionBlockShape shape) {
  AttentionSizes sizes(op);
  int64_t elements = shape.queries * sizes.headSize + shape.keys * sizes.headSize +
                     shape.keys * sizes.valueSize + shape.queries * shape.keys +
                     3 * shape.queries;
  return elements * llvm::divideCeil(sizes.acc.getIntOrFloatBitWidth(), 8);
}

std::optional<AttentionBlockShape> kiln::gpu::matchAttentionBlocks(AttentionOp op,
                                                                   int64_t threads,
                                                                   int64_t sharedBytes) {
  if (failed(checkLowerable(op, /*report=*/false)))
    return std::nullopt;
  // No larger than a constant count of queries or keys (a decode step's one
  // query gets a block of 1).
  auto fitTo = [](int64_t block, int64_t extent) {
    return ShapedType::isDynamic(extent)
               ? block
               : std::min<int64_t>(block, llvm::PowerOf2Ceil(std::max<int64_t>(extent, 1)));
  };
  int64_t queries = cast<MemRefType>(op.getQ().getType()).getDimSize(2);
  int64_t keys = cast<MemRefType>(op.getK().getType()).getDimSize(2);
  for (auto [blockQueries, tileKeys] :
       {std::pair<int64_t, int64_t>{32, 32}, {32, 16}, {16, 16}, {8, 8}, {4, 4}}) {
    AttentionBlockShape shape{fitTo(blockQueries, queries), fitTo(tileKeys, keys)};
    if (shape.queries <= threads && attentionBlockBytes(op, shape) <= sharedBytes)
      return shape;
  }
  return std::nullopt;
}

Operation *kiln::gpu::tileAttention(AttentionOp op, AttentionBlockShape shape,
                                    const ThreadValues &values, Value begin, Value end,
                                    Value firstColumn, Value lastColumn, int64_t columns) {
  OpBuilder b(op);
  Location loc = op.getLoc();
  Emitter e{b, loc};
  AttentionSizes sizes(op);
  Type acc = sizes.acc;
  const int64_t threads = values.threads, blockQueries = shape.queries, tileKeys = shape.keys,
                headSize = sizes.headSize, valueSize = sizes.valueSize;
  Value thread = values.thread, zero = e.constant(acc, 0.0), negInf = e.constant(acc, kNegInf);

  // Workgroup memory, row-major: the query block [Bq, E], the key and
  // value tiles [Bk, E] and [Bk, Ev], the scores [Bq, Bk] (then their
  // exponentials), and per query its running max, sum and the factor the
  // last tile rescaled its outputs by.
  Value queryBlock = workgroupBuffer(b, loc, acc, blockQueries * headSize);
  Value keyTile = workgroupBuffer(b, loc, acc, tileKeys * headSize);
  Value valueTile = workgroupBuffer(b, loc, acc, tileKeys * valueSize);
  Value scores = workgroupBuffer(b, loc, acc, blockQueries * tileKeys);
  Value runningMax = workgroupBuffer(b, loc, acc, blockQueries);
  Value runningSum = workgroupBuffer(b, loc, acc, blockQueries);
  Value rescale = workgroupBuffer(b, loc, acc, blockQueries);
  auto [out, logsumexp] = pairViews(e, op);
  Value queries = e.dim(op.getQ(), 2), keys = e.dim(op.getK(), 2);
  Value pairs = arith::MulIOp::create(b, loc, e.dim(op.getQ(), 0), e.index(sizes.heads));
  auto barrier = [&] { ::mlir::gpu::BarrierOp::create(b, loc); };

  // All threads over [0, count), consecutive threads on consecutive
  // elements.
  auto acrossThreads = [&](int64_t count, function_ref<void(Value)> body) {
    e.stridedLoop(thread, e.index(count), values.threadCount, {}, [&](Value at, ValueRange) {
      body(at);
      return SmallVector<Value>{};
    });
  };
  // This thread's share of [0, count), elements t + T * r for r <
  // ceil(count / T), unrolled (each thread keeps its share in registers):
  // `body(r, at)` computes element at, returning the thread's value r when
  // `keep` holds one per r (kept where at >= count), else nothing.
  auto ownShare = [&](int64_t count, ValueRange keep,
                      function_ref<SmallVector<Value>(int64_t, Value)> body) {
    SmallVector<Value> results;
    for (int64_t r = 0; r * threads < count; ++r) {
      Value at = arith::AddIOp::create(b, loc, thread, e.index(r * threads));
      if ((r + 1) * threads <= count) { // every thread has an element r
        llvm::append_range(results, body(r, at));
        continue;
      }
      Value inside = e.below(at, e.index(count));
      if (keep.empty()) {
        e.when(inside, [&] { body(r, at); });
        continue;
      }
      ValueRange kept = keep.slice(r, 1);
      auto branch = scf::IfOp::create(b, loc, kept.getTypes(), inside, /*withElseRegion=*/true);
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(branch.thenBlock());
      scf::YieldOp::create(b, loc, body(r, at));
      b.setInsertionPointToStart(branch.elseBlock());
      scf::YieldOp::create(b, loc, kept);
      llvm::append_range(results, branch.getResults());
    }
    return results;
  };
  int64_t outputsPerThread = llvm::divideCeil(blockQueries * valueSize, threads);

  auto pairLoop = scf::ForOp::create(b, loc, begin ? begin : e.index(0), end ? end : pairs,
                                     e.index(1));
  b.setInsertionPoint(pairLoop.getBody()->getTerminator());
  Value pair = pairLoop.getInductionVar();
  PairIndices at(e, sizes, pair);
  Value blockStart = e.index(0), blockEnd = queries;
  if (firstColumn) {
    // The chunks' blocks: ceil(blocks / columns) each.
    Value blocks = arith::CeilDivUIOp::create(b, loc, queries, e.index(blockQueries));
    Value perColumn = arith::CeilDivUIOp::create(b, loc, blocks, e.index(columns));
    Value perColumnQueries = arith::MulIOp::create(b, loc, perColumn, e.index(blockQueries));
    blockStart = arith::MinUIOp::create(
        b, loc, queries, arith::MulIOp::create(b, loc, firstColumn, perColumnQueries));
    blockEnd = arith::MinUIOp::create(
        b, loc, queries, arith::MulIOp::create(b, loc, lastColumn, perColumnQueries));
  }
  auto blockLoop = scf::ForOp::create(b, loc, blockStart, blockEnd, e.index(blockQueries));
  b.setInsertionPoint(blockLoop.getBody()->getTerminator());
  Value firstQuery = blockLoop.getInductionVar();

  // The query block (zeros past the last query), and each query's running
  // max and sum.
  acrossThreads(blockQueries * headSize, [&](Value element) {
    Value i = arith::AddIOp::create(b, loc, firstQuery,
                                    arith::DivUIOp::create(b, loc, element, e.index(headSize)));
    Value d = arith::RemUIOp::create(b, loc, element, e.index(headSize));
    Value q = e.ifElse(
        e.below(i, queries), [&] { return e.loadAs(acc, op.getQ(), {at.batch, at.head, i, d}); },
        zero);
    memref::StoreOp::create(b, loc, q, queryBlock, ValueRange{element});
  });
  Value ownsQuery = e.below(thread, e.index(blockQueries));
  e.when(ownsQuery, [&] {
    memref::StoreOp::create(b, loc, negInf, runningMax, ValueRange{thread});
    memref::StoreOp::create(b, loc, zero, runningSum, ValueRange{thread});
  });
  barrier();

  // The key tiles; causal attention stops after the block's last query.
  Value keyEnd = keys;
  if (op.getIsCausal())
    keyEnd = arith::MinUIOp::create(
        b, loc, keys, arith::AddIOp::create(b, loc, firstQuery, e.index(blockQueries)));
  SmallVector<Value> noOutputs(outputsPerThread, zero);
  ValueRange outputs = e.stridedLoop(
      e.index(0), keyEnd, e.index(tileKeys), noOutputs, [&](Value firstKey, ValueRange carried) {
        // The key and value tiles, zeros past the last key (a zero weight
        // times a value read past the end could be NaN).
        auto loadTile = [&](Value source, Value tile, int64_t width) {
          acrossThreads(tileKeys * width, [&](Value element) {
            Value j = arith::AddIOp::create(b, loc, firstKey,
                                            arith::DivUIOp::create(b, loc, element, e.index(width)));
            Value d = arith::RemUIOp::create(b, loc, element, e.index(width));
            Value value = e.ifElse(
                e.below(j, keys), [&] { return e.loadAs(acc, source, {at.batch, at.kvHead, j, d}); },
                zero);
            memref::StoreOp::create(b, loc, value, tile, ValueRange{element});
          });
        };
        loadTile(op.getK(), keyTile, headSize);
        loadTile(op.getV(), valueTile, valueSize);
        barrier();

        // The block's scores, -inf past the last query or key.
        ownShare(blockQueries * tileKeys, {}, [&](int64_t, Value element) {
          Value row = arith::DivUIOp::create(b, loc, element, e.index(tileKeys));
          Value column = arith::RemUIOp::create(b, loc, element, e.index(tileKeys));
          Value i = arith::AddIOp::create(b, loc, firstQuery, row);
          Value j = arith::AddIOp::create(b, loc, firstKey, column);
          Value inside = arith::AndIOp::create(b, loc, e.below(i, queries), e.below(j, keys));
          Value value = e.ifElse(
              inside,
              [&] {
                Value rowStart = arith::MulIOp::create(b, loc, row, e.index(headSize));
                Value columnStart = arith::MulIOp::create(b, loc, column, e.index(headSize));
                Value dot = e.forLoop(e.index(0), e.index(headSize), zero,
                                      [&](Value d, ValueRange sum) {
                                        Value q = e.load(queryBlock, {arith::AddIOp::create(
                                                                         b, loc, rowStart, d)});
                                        Value k = e.load(keyTile, {arith::AddIOp::create(
                                                                      b, loc, columnStart, d)});
                                        return SmallVector<Value>{arith::AddFOp::create(
                                            b, loc, sum[0], arith::MulFOp::create(b, loc, q, k))};
                                      })[0];
                return score(e, op, acc, dot, at.batch, at.head, i, j);
              },
              negInf);
          memref::StoreOp::create(b, loc, value, scores, ValueRange{element});
          return SmallVector<Value>{};
        });
        barrier();

        // A thread per query: the new running max, the scores' exponentials
        // in their place, the running sum, and the factor the outputs so
        // far are rescaled by.
        e.when(ownsQuery, [&] {
          Value rowStart = arith::MulIOp::create(b, loc, thread, e.index(tileKeys));
          auto scoreAt = [&](Value column) {
            return SmallVector<Value>{arith::AddIOp::create(b, loc, rowStart, column)};
          };
          Value max = e.load(runningMax, {thread});
          Value newMax = e.forLoop(e.index(0), e.index(tileKeys), max, [&](Value c, ValueRange m) {
            return SmallVector<Value>{
                arith::MaximumFOp::create(b, loc, m[0], e.load(scores, scoreAt(c)))};
          })[0];
          Value base = softmaxBase(e, acc, newMax);
          Value sum = e.forLoop(e.index(0), e.index(tileKeys), zero, [&](Value c, ValueRange s) {
            Value p = expMinus(e, e.load(scores, scoreAt(c)), base);
            memref::StoreOp::create(b, loc, p, scores, scoreAt(c));
            return SmallVector<Value>{arith::AddFOp::create(b, loc, s[0], p)};
          })[0];
          Value alpha = expMinus(e, max, base);
          Value oldSum = arith::MulFOp::create(b, loc, e.load(runningSum, {thread}), alpha);
          memref::StoreOp::create(b, loc, arith::AddFOp::create(b, loc, oldSum, sum), runningSum,
                                  ValueRange{thread});
          memref::StoreOp::create(b, loc, newMax, runningMax, ValueRange{thread});
          memref::StoreOp::create(b, loc, alpha, rescale, ValueRange{thread});
        });
        barrier();

        // Each thread's outputs: rescaled, plus the tile's weighted values.
        SmallVector<Value> next =
            ownShare(blockQueries * valueSize, carried, [&](int64_t r, Value element) {
              Value row = arith::DivUIOp::create(b, loc, element, e.index(valueSize));
              Value d = arith::RemUIOp::create(b, loc, element, e.index(valueSize));
              Value rowStart = arith::MulIOp::create(b, loc, row, e.index(tileKeys));
              Value added = e.forLoop(
                  e.index(0), e.index(tileKeys), zero, [&](Value c, ValueRange sum) {
                    Value p = e.load(scores, {arith::AddIOp::create(b, loc, rowStart, c)});
                    Value v = e.load(valueTile,
                                     {arith::AddIOp::create(
                                         b, loc, arith::MulIOp::create(b, loc, c, e.index(valueSize)),
                                         d)});
                    return SmallVector<Value>{
                        arith::AddFOp::create(b, loc, sum[0], arith::MulFOp::create(b, loc, p, v))};
                  })[0];
              Value old = arith::MulFOp::create(b, loc, carried[r], e.load(rescale, {row}));
              return SmallVector<Value>{arith::AddFOp::create(b, loc, old, added)};
            });
        // Every thread is done with the tiles before the next are loaded.
        barrier();
        return next;
      });

  // The outputs divided by their sums, and the logsumexps.
  SmallVector<Value> ownOutputs(outputs);
  ownShare(blockQueries * valueSize, {}, [&](int64_t r, Value element) {
    Value row = arith::DivUIOp::create(b, loc, element, e.index(valueSize));
    Value i = arith::AddIOp::create(b, loc, firstQuery, row);
    e.when(e.below(i, queries), [&] {
      Value d = arith::RemUIOp::create(b, loc, element, e.index(valueSize));
      auto [unused, reciprocal] =
          finishSoftmax(e, op, acc, e.load(runningMax, {row}), e.load(runningSum, {row}));
      e.storeAs(arith::MulFOp::create(b, loc, ownOutputs[r], reciprocal), out, {pair, i, d});
    });
    return SmallVector<Value>{};
  });
  Value i = arith::AddIOp::create(b, loc, firstQuery, thread);
  e.when(arith::AndIOp::create(b, loc, ownsQuery, e.below(i, queries)), [&] {
    auto [value, unused] =
        finishSoftmax(e, op, acc, e.load(runningMax, {thread}), e.load(runningSum, {thread}));
    e.storeAs(value, logsumexp, {pair, i});
  });
  // Every thread is done with the block's statistics before the next's.
  barrier();
  op.erase();
  return pairLoop;
}

FailureOr<scf::ParallelOp> kiln::gpu::lowerAttentionByRows(AttentionOp op) {
  if (failed(checkLowerable(op, /*report=*/true)))
    return failure();
  OpBuilder b(op);
  Emitter e{b, op.getLoc()};
  Location loc = op.getLoc();
  AttentionSizes sizes(op);
  Type acc = sizes.acc;
  auto [out, logsumexp] = pairViews(e, op);
  Value pairs = arith::MulIOp::create(b, loc, e.dim(op.getQ(), 0), e.index(sizes.heads));
  Value queries = e.dim(op.getQ(), 2), keys = e.dim(op.getK(), 2);
  Value valueSize = e.index(sizes.valueSize);
  auto overValues = [&](function_ref<void(Value)> body) {
    e.forLoop(e.index(0), valueSize, {}, [&](Value d, ValueRange) {
      body(d);
      return SmallVector<Value>{};
    });
  };
  scf::ParallelOp loop = e.parallelLoop({pairs, queries}, [&](ValueRange ivs) {
    Value pair = ivs[0], i = ivs[1];
    PairIndices at(e, sizes, pair);
    overValues([&](Value d) { e.storeAs(e.constant(acc, 0.0), out, {pair, i, d}); });
    Value zero = e.constant(acc, 0.0);
    ValueRange stats = e.forLoop(
        e.index(0), keys, {e.constant(acc, kNegInf), zero}, [&](Value j, ValueRange carried) {
          Value max = carried[0], sum = carried[1];
          Value dot = e.forLoop(e.index(0), e.index(sizes.headSize), zero, [&](Value d, ValueRange s) {
            Value product = arith::MulFOp::create(
                b, loc, e.loadAs(acc, op.getQ(), {at.batch, at.head, i, d}),
                e.loadAs(acc, op.getK(), {at.batch, at.kvHead, j, d}));
            return SmallVector<Value>{arith::AddFOp::create(b, loc, s[0], product)};
          })[0];
          Value s = score(e, op, acc, dot, at.batch, at.head, i, j);
          Value newMax = arith::MaximumFOp::create(b, loc, max, s);
          Value base = softmaxBase(e, acc, newMax);
          Value p = expMinus(e, s, base);
          Value alpha = expMinus(e, max, base);
          Value newSum = arith::AddFOp::create(b, loc, arith::MulFOp::create(b, loc, sum, alpha), p);
          overValues([&](Value d) {
            Value old = e.loadAs(acc, out, {pair, i, d});
            Value add = arith::MulFOp::create(
                b, loc, p, e.loadAs(acc, op.getV(), {at.batch, at.kvHead, j, d}));
            e.storeAs(arith::AddFOp::create(b, loc, arith::MulFOp::create(b, loc, old, alpha), add),
                      out, {pair, i, d});
          });
          return SmallVector<Value>{newMax, newSum};
        });
    auto [value, reciprocal] = finishSoftmax(e, op, acc, stats[0], stats[1]);
    e.storeAs(value, logsumexp, {pair, i});
    overValues([&](Value d) {
      e.storeAs(arith::MulFOp::create(b, loc, e.loadAs(acc, out, {pair, i, d}), reciprocal), out,
                {pair, i, d});
    });
  });
  op.erase();
  return loop;
}
