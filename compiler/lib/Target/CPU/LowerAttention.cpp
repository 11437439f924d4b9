// Fused attention for the CPU: kiln_kernel.attention on buffers becomes the
// FlashAttention loop nest (online softmax over tiles of keys).
//
// For each (batch, head) pair, a workgroup's unit of work, and each block of
// query rows:
//   m = -inf, l = 0, acc = 0                      (per row of the block)
//   for each tile of keys (causal: up to the block's last row):
//     s = q_block @ k_tileᵀ                       (k_tile transposed into a
//                                                  scratch panel first)
//     s = s * scale + mask; causal: s[i, j > i] = -inf
//     m' = max(m, rowmax(s)); p = exp(s - m'); alpha = exp(m - m')
//     l = l * alpha + rowsum(p); acc = acc * alpha + p @ v_tile
//   out = acc / l, logsumexp = m + log(l)     (all masked: 0 and 0, as ATen)
// The tile of scores lives in a scratch buffer of the workgroup; the [L, S]
// scores are never stored. Both products use the broadcast-FMA microkernel
// (B given as [K, N]), which needs no horizontal reductions: transposing a
// tile of keys costs E * 64 moves and serves the whole block of queries.
// The batch and the query and key lengths may be symbolic: the ragged last
// block of rows and the ragged last tile of keys are then sized at run time
// (the microkernels take any M, N and K), and run only when not empty.
#include "kiln/Dialect/Kernel/IR/KernelOps.h"
#include "kiln/Target/CPU/Passes.h"
#include "MatmulEmitter.h"

#include "mlir/Dialect/Arith/Utils/Utils.h"

#include <limits>

namespace kiln::cpu {
#define GEN_PASS_DEF_LOWERATTENTIONPASS
#include "kiln/Target/CPU/Passes.h.inc"
} // namespace kiln::cpu

using namespace mlir;
using kiln::cpu::MatmulEmitter;

namespace {

// Query rows per block: a multiple of the microkernel's 6 rows, and many, so
// that each transposed tile of keys serves many queries.
constexpr int64_t kQueryBlock = 192;
// Keys per tile: a multiple of the microkernel's column tile (two vectors:
// 32 floats on AVX-512, 16 on AVX2), so full tiles have no ragged columns.
constexpr int64_t kKeyBlock = 64;

/// A size known at compile time (an attribute) or computed at run time.
using Size = OpFoldResult;

class AttentionEmitter {
public:
  AttentionEmitter(OpBuilder &b, kiln::kernel::AttentionOp op,
                   const kiln::cpu::MatmulTiles &tiles)
      : b(b), loc(op.getLoc()), op(op), tiles(tiles), vl(tiles.vectorLength) {
    auto q = cast<MemRefType>(op.getQ().getType());
    auto k = cast<MemRefType>(op.getK().getType());
    auto v = cast<MemRefType>(op.getV().getType());
    element = q.getElementType();
    heads = q.getDimSize(1);
    headSize = q.getDimSize(3);
    kvHeads = k.getDimSize(1);
    valueSize = v.getDimSize(3);
    batch = memref::getMixedSize(b, loc, op.getQ(), 0);
    queries = memref::getMixedSize(b, loc, op.getQ(), 2);
    keys = memref::getMixedSize(b, loc, op.getK(), 2);
    // Static lengths shorter than a block get scratch of their own size; a
    // symbolic one gets a whole block.
    rowBlock = std::min(known(queries).value_or(kQueryBlock), kQueryBlock);
    keyBlock = std::min(known(keys).value_or(kKeyBlock), kKeyBlock);
    flags = arith::FastMathFlagsAttr::get(
        b.getContext(), arith::FastMathFlags::reassoc | arith::FastMathFlags::contract);
  }

  /// The dims that must be static: heads and head sizes shape the scratch
  /// buffers and the grouping of query heads.
  static LogicalResult verifyStaticDims(kiln::kernel::AttentionOp op) {
    auto q = cast<MemRefType>(op.getQ().getType());
    auto k = cast<MemRefType>(op.getK().getType());
    auto v = cast<MemRefType>(op.getV().getType());
    for (auto [type, dim, name] :
         {std::tuple{q, 1, "query heads"}, std::tuple{q, 3, "the head size"},
          std::tuple{k, 1, "key heads"}, std::tuple{v, 3, "the value head size"}})
      if (type.isDynamicDim(dim))
        return op.emitOpError("needs static ") << name << "; only batch and lengths may be symbolic";
    return success();
  }

  /// Emits the loop nest in place of the op; the scratch buffers are
  /// allocated at the start of `entry` and freed before its terminator
  /// (hundreds of KB for big heads: too much for a worker's stack).
  void emit(Block &entry) {
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(&entry);
      auto scratch = [&](ArrayRef<int64_t> shape) -> Value {
        return memref::AllocOp::create(b, loc, MemRefType::get(shape, element));
      };
      scores = scratch({rowBlock, keyBlock});
      keysT = scratch({headSize, keyBlock});
      acc = scratch({rowBlock, valueSize});
      rowMax = scratch({rowBlock});
      rowSum = scratch({rowBlock});
      b.setInsertionPoint(entry.getTerminator());
      for (Value buffer : {scores, keysT, acc, rowMax, rowSum})
        memref::DeallocOp::create(b, loc, buffer);
    }
    // One iteration per (batch, head): the loop workgroups split.
    Value pairs = known(batch) ? index(*known(batch) * heads)
                               : arith::MulIOp::create(b, loc, value(batch), index(heads));
    forLoop(index(0), pairs, 1, [&](Value pair) {
      batchIndex = arith::DivUIOp::create(b, loc, pair, index(heads));
      headIndex = arith::RemUIOp::create(b, loc, pair, index(heads));
      kvHeadIndex = arith::DivUIOp::create(b, loc, headIndex, index(heads / kvHeads));
      Size fullRows = roundDown(queries, rowBlock);
      forLoop(index(0), value(fullRows), rowBlock,
              [&](Value i0) { queryBlock(i0, b.getIndexAttr(rowBlock)); });
      ifLess(fullRows, queries, [&] {
        queryBlock(value(fullRows), subtract(queries, fullRows));
      });
    });
    op.erase();
  }

private:
  Value index(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }
  Value constant(double v) {
    return arith::ConstantOp::create(b, loc, b.getFloatAttr(element, v));
  }
  static std::optional<int64_t> known(Size s) { return getConstantIntValue(s); }
  Value value(Size s) { return getValueOrCreateConstantIndexOp(b, loc, s); }
  /// x rounded down to a multiple of `step`.
  Size roundDown(Size x, int64_t step) {
    if (auto c = known(x))
      return b.getIndexAttr(*c - *c % step);
    Value s = index(step);
    return arith::MulIOp::create(b, loc, arith::DivUIOp::create(b, loc, value(x), s), s)
        .getResult();
  }
  Size subtract(Size x, Size y) {
    if (known(x) && known(y))
      return b.getIndexAttr(*known(x) - *known(y));
    return arith::SubIOp::create(b, loc, value(x), value(y)).getResult();
  }
  /// Emits `body` when lhs < rhs: not at all when both are known and not,
  /// unconditionally when both are known and it is, else under an scf.if.
  void ifLess(Size lhs, Size rhs, function_ref<void()> body) {
    if (known(lhs) && known(rhs)) {
      if (*known(lhs) < *known(rhs))
        body();
      return;
    }
    ifLess(value(lhs), value(rhs), body);
  }
  void ifLess(Value lhs, Value rhs, function_ref<void()> body) {
    Value less = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, lhs, rhs);
    auto ifOp = scf::IfOp::create(b, loc, less, /*withElseRegion=*/false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(ifOp.thenBlock());
    body();
  }
  void forLoop(Value lb, Value ub, int64_t step, function_ref<void(Value)> body) {
    auto loop = scf::ForOp::create(b, loc, lb, ub, index(step));
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    body(loop.getInductionVar());
  }
  /// source[lead..., offset : offset + count, 0 : width] as a 2-D view.
  Value rows(Value source, ArrayRef<Value> lead, Value offset, Size count, Size width) {
    auto type = cast<MemRefType>(source.getType());
    SmallVector<OpFoldResult> offsets(lead.begin(), lead.end());
    offsets.push_back(offset);
    offsets.push_back(b.getIndexAttr(0));
    SmallVector<OpFoldResult> sizes(lead.size(), b.getIndexAttr(1));
    sizes.push_back(count);
    sizes.push_back(width);
    SmallVector<OpFoldResult> strides(sizes.size(), b.getIndexAttr(1));
    int64_t shape[] = {known(count).value_or(ShapedType::kDynamic),
                       known(width).value_or(ShapedType::kDynamic)};
    auto viewType =
        memref::SubViewOp::inferRankReducedResultType(shape, type, offsets, sizes, strides);
    return memref::SubViewOp::create(b, loc, viewType, source, offsets, sizes, strides);
  }
  /// The top-left [count, width] corner of a 2-D scratch buffer.
  Value corner(Value buffer, Size count, Size width) {
    auto type = cast<MemRefType>(buffer.getType());
    if (known(count) == type.getDimSize(0) && known(width) == type.getDimSize(1))
      return buffer;
    return rows(buffer, {}, index(0), count, width);
  }
  /// The first `count` entries of a 1-D scratch buffer.
  Value prefix(Value buffer, Size count) {
    if (known(count) == cast<MemRefType>(buffer.getType()).getDimSize(0))
      return buffer;
    return memref::SubViewOp::create(b, loc, buffer, ArrayRef<OpFoldResult>{b.getIndexAttr(0)},
                                     ArrayRef<OpFoldResult>{count},
                                     ArrayRef<OpFoldResult>{b.getIndexAttr(1)});
  }

  /// The block of `count` query rows starting at i0.
  void queryBlock(Value i0, Size count) {
    Value out = corner(acc, count, b.getIndexAttr(valueSize));
    Value q = rows(op.getQ(), {batchIndex, headIndex}, i0, count, b.getIndexAttr(headSize));
    linalg::FillOp::create(b, loc, constant(0.0), out);
    linalg::FillOp::create(b, loc, constant(0.0), prefix(rowSum, count));
    linalg::FillOp::create(b, loc, constant(-std::numeric_limits<double>::infinity()),
                           prefix(rowMax, count));
    // Causal: the block's last row sees keys [0, i0 + count).
    Value keyEnd = value(keys);
    if (op.getIsCausal())
      keyEnd = arith::MinUIOp::create(b, loc, keyEnd,
                                      arith::AddIOp::create(b, loc, i0, value(count)));
    Size fullKeys = roundDown(keys, keyBlock);
    Value fullEnd = arith::MinUIOp::create(b, loc, keyEnd, value(fullKeys));
    forLoop(index(0), fullEnd, keyBlock, [&](Value j0) {
      keyTile(q, out, i0, count, j0, b.getIndexAttr(keyBlock));
    });
    // The ragged last tile of keys, if the block reaches it.
    if (!known(keys) || known(fullKeys) != known(keys))
      ifLess(value(fullKeys), keyEnd, [&] {
        keyTile(q, out, i0, count, value(fullKeys), subtract(keys, fullKeys));
      });
    // out = acc / l and logsumexp = m + log(l), row by row. A row whose keys
    // are all masked (m = -inf, l = 0) gives 0 and logsumexp 0, as ATen's
    // CPU flash attention: it takes m = 0 and l = 1 for them.
    forLoop(index(0), value(count), 1, [&](Value r) {
      Value i = arith::AddIOp::create(b, loc, i0, r);
      Value max = memref::LoadOp::create(b, loc, rowMax, r);
      Value sum = memref::LoadOp::create(b, loc, rowSum, r);
      Value masked = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, sum, constant(0.0));
      max = arith::SelectOp::create(
          b, loc,
          arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, max,
                                constant(-std::numeric_limits<double>::infinity())),
          constant(0.0), max);
      Value rawSum = sum;
      sum = arith::SelectOp::create(b, loc, masked, constant(1.0), sum);
      memref::StoreOp::create(b, loc,
                              arith::AddFOp::create(b, loc, max, math::LogOp::create(b, loc, sum)),
                              op.getLogsumexpInit(), ValueRange{batchIndex, headIndex, i});
      // Softmax written out gives NaN there (0 * 1 / 0): so does its match.
      Value reciprocal =
          arith::DivFOp::create(b, loc, constant(1.0), op.getMaskedRowsNan() ? rawSum : sum);
      forLoop(index(0), index(valueSize), 1, [&](Value e) {
        Value x = memref::LoadOp::create(b, loc, out, ValueRange{r, e});
        memref::StoreOp::create(b, loc, arith::MulFOp::create(b, loc, x, reciprocal),
                                op.getInit(), ValueRange{batchIndex, headIndex, i, e});
      });
    });
  }

  /// One tile of `width` keys starting at j0 for the rows [i0, i0 + count).
  void keyTile(Value q, Value out, Value i0, Size count, Value j0, Size width) {
    Value s = corner(scores, count, width);
    Value kT = corner(keysT, b.getIndexAttr(headSize), width);
    Value k = rows(op.getK(), {batchIndex, kvHeadIndex}, j0, width, b.getIndexAttr(headSize));
    forLoop(index(0), value(width), 1, [&](Value c) {
      forLoop(index(0), index(headSize), 1, [&](Value e) {
        memref::StoreOp::create(b, loc, memref::LoadOp::create(b, loc, k, ValueRange{c, e}), kT,
                                ValueRange{e, c});
      });
    });
    linalg::FillOp::create(b, loc, constant(0.0), s);
    MatmulEmitter(b, loc, q, kT, s, /*transposed=*/false, tiles).emit({});
    forLoop(index(0), value(count), 1, [&](Value r) { softmaxRow(s, out, i0, r, j0, width); });
    Value v = rows(op.getV(), {batchIndex, kvHeadIndex}, j0, width, b.getIndexAttr(valueSize));
    MatmulEmitter(b, loc, s, v, out, /*transposed=*/false, tiles).emit({});
  }

  /// Scales and masks row r of the tile, turns it into probabilities against
  /// the new running maximum, and rescales the row's sum and accumulator.
  /// Whole vectors first, then the columns left over (none in full tiles).
  void softmaxRow(Value s, Value out, Value i0, Value r, Value j0, Size width) {
    Value i = arith::AddIOp::create(b, loc, i0, r);
    Value negInf = constant(-std::numeric_limits<double>::infinity());
    Value oldMax = memref::LoadOp::create(b, loc, rowMax, r);
    Value newMax = rowLoop(width, negInf, vector::CombiningKind::MAXIMUMF,
                           [&](Value c, Value runningMax, int64_t lanes) {
      Value j = arith::AddIOp::create(b, loc, j0, c);
      Value x = load(s, {r, c}, lanes);
      x = arith::MulFOp::create(b, loc, x, splat(constant(op.getScale().convertToDouble()), lanes));
      if (Value mask = op.getMask())
        x = arith::AddFOp::create(b, loc, x, maskAt(mask, i, j, lanes));
      if (op.getIsCausal()) {
        Value future = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ugt,
                                             keyIndices(j, lanes), splat(i, lanes));
        x = arith::SelectOp::create(b, loc, future, splat(negInf, lanes), x);
      }
      store(x, s, {r, c});
      return arith::MaximumFOp::create(b, loc, runningMax, x);
    });
    newMax = arith::MaximumFOp::create(b, loc, newMax, oldMax);
    // A row masked so far has max -inf: subtract 0 instead, so exp gives 0
    // rather than exp(-inf - -inf) = NaN.
    Value allMasked = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, newMax, negInf);
    Value base = arith::SelectOp::create(b, loc, allMasked, constant(0.0), newMax);
    Value tileSum = rowLoop(width, constant(0.0), vector::CombiningKind::ADD,
                            [&](Value c, Value sum, int64_t lanes) {
      Value x = load(s, {r, c}, lanes);
      Value p = math::ExpOp::create(b, loc, arith::SubFOp::create(b, loc, x, splat(base, lanes)));
      store(p, s, {r, c});
      return arith::AddFOp::create(b, loc, sum, p, flags);
    });
    Value alpha = math::ExpOp::create(b, loc, arith::SubFOp::create(b, loc, oldMax, base));
    Value oldSum = memref::LoadOp::create(b, loc, rowSum, r);
    Value sum = arith::AddFOp::create(b, loc, arith::MulFOp::create(b, loc, oldSum, alpha),
                                      tileSum);
    memref::StoreOp::create(b, loc, sum, rowSum, r);
    memref::StoreOp::create(b, loc, newMax, rowMax, r);
    int64_t accLanes = valueSize % vl == 0 ? vl : 1;
    auto loop = scf::ForOp::create(b, loc, index(0), index(valueSize), index(accLanes));
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    Value e = loop.getInductionVar();
    Value x = load(out, {r, e}, accLanes);
    store(arith::MulFOp::create(b, loc, x, splat(alpha, accLanes)), out, {r, e});
  }

  /// Folds body(c, running, lanes) over the columns [0, width) of a row into
  /// one scalar: whole vectors of vl lanes (their lanes combined by `kind`
  /// at the end), then the columns left over one at a time.
  Value rowLoop(Size width, Value init, vector::CombiningKind kind,
                function_ref<Value(Value, Value, int64_t)> body) {
    auto loop = [&](Value lb, Value ub, int64_t lanes, Value start) {
      auto forOp = scf::ForOp::create(b, loc, lb, ub, index(lanes), ValueRange{start});
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(forOp.getBody());
      scf::YieldOp::create(
          b, loc, body(forOp.getInductionVar(), forOp.getRegionIterArgs()[0], lanes));
      return forOp.getResult(0);
    };
    Size vectorEnd = roundDown(width, vl);
    Value result = init;
    if (known(vectorEnd) != 0) {
      Value folded = loop(index(0), value(vectorEnd), vl, splat(init, vl));
      result = vector::ReductionOp::create(b, loc, kind, folded,
                                           kind == vector::CombiningKind::ADD
                                               ? arith::FastMathFlags::reassoc
                                               : arith::FastMathFlags::none);
    }
    if (known(vectorEnd) != known(width) || !known(width))
      result = loop(value(vectorEnd), value(width), 1, result);
    return result;
  }
  Value splat(Value scalar, int64_t lanes) {
    if (lanes == 1)
      return scalar;
    return vector::BroadcastOp::create(b, loc, VectorType::get({lanes}, scalar.getType()),
                                       scalar);
  }
  Value load(Value memref, ValueRange at, int64_t lanes) {
    if (lanes == 1)
      return memref::LoadOp::create(b, loc, memref, at);
    return vector::LoadOp::create(b, loc, VectorType::get({lanes}, element), memref, at);
  }
  void store(Value value, Value memref, ValueRange at) {
    if (isa<VectorType>(value.getType()))
      vector::StoreOp::create(b, loc, value, memref, at);
    else
      memref::StoreOp::create(b, loc, value, memref, at);
  }
  /// j, j + 1, ..., j + lanes - 1.
  Value keyIndices(Value j, int64_t lanes) {
    if (lanes == 1)
      return j;
    auto type = VectorType::get({lanes}, b.getIndexType());
    SmallVector<APInt> steps;
    for (int64_t lane = 0; lane < lanes; ++lane)
      steps.push_back(APInt(64, lane));
    Value iota = arith::ConstantOp::create(b, loc, DenseElementsAttr::get(type, steps));
    return arith::AddIOp::create(b, loc, splat(j, lanes), iota);
  }

  /// mask[b, h, i, j : j + lanes], with size-1 dims broadcast.
  Value maskAt(Value mask, Value i, Value j, int64_t lanes) {
    auto type = cast<MemRefType>(mask.getType());
    Value zero = index(0);
    SmallVector<Value> at{batchIndex, headIndex, i, j};
    for (int64_t d = 0; d < 4; ++d)
      if (type.getDimSize(d) == 1)
        at[d] = zero;
    if (type.getDimSize(3) == 1) // one value for every key
      return splat(memref::LoadOp::create(b, loc, mask, at), lanes);
    return load(mask, at, lanes);
  }

  OpBuilder &b;
  Location loc;
  kiln::kernel::AttentionOp op;
  kiln::cpu::MatmulTiles tiles;
  int64_t vl;
  Type element;
  int64_t heads = 0, headSize = 0, kvHeads = 0, valueSize = 0, rowBlock = 0, keyBlock = 0;
  Size batch, queries, keys; // symbolic in a dynamic graph
  arith::FastMathFlagsAttr flags;
  Value scores, keysT, acc, rowMax, rowSum;
  Value batchIndex, headIndex, kvHeadIndex; // of the (batch, head) being emitted
};

struct LowerAttentionPass : kiln::cpu::impl::LowerAttentionPassBase<LowerAttentionPass> {
  using Base::Base;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    SmallVector<kiln::kernel::AttentionOp> ops;
    func.walk([&](kiln::kernel::AttentionOp op) { ops.push_back(op); });
    if (ops.empty())
      return;
    auto target = kiln::kernel::requireTarget(func, getArgument());
    if (failed(target))
      return signalPassFailure();
    for (kiln::kernel::AttentionOp op : ops) {
      if (!op.hasPureBufferSemantics()) {
        op.emitOpError("must be bufferized before kiln-lower-attention");
        return signalPassFailure();
      }
      auto q = cast<MemRefType>(op.getQ().getType());
      if (q.getRank() != 4 || !q.getLayout().isIdentity()) {
        op.emitOpError("expects identity-layout rank-4 buffers");
        return signalPassFailure();
      }
      if (failed(AttentionEmitter::verifyStaticDims(op)))
        return signalPassFailure();
      OpBuilder b(op);
      AttentionEmitter(b, op, kiln::cpu::matmulTiles(*target, q.getElementType()))
          .emit(func.getBody().front());
    }
  }
};

} // namespace
