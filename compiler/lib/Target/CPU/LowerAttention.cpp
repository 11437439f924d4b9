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
// tile of keys costs E * 64 moves and serves the whole block of queries. Shapes are static, so the ragged last block of rows and the
// ragged last tile of keys are separate loop bodies of static sizes, which
// the microkernels need.
#include "kiln/Dialect/Kernel/IR/KernelOps.h"
#include "kiln/Target/CPU/Passes.h"
#include "MatmulEmitter.h"

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

class AttentionEmitter {
public:
  AttentionEmitter(OpBuilder &b, kiln::kernel::AttentionOp op, int64_t vl)
      : b(b), loc(op.getLoc()), op(op), vl(vl) {
    auto q = cast<MemRefType>(op.getQ().getType());
    auto k = cast<MemRefType>(op.getK().getType());
    auto v = cast<MemRefType>(op.getV().getType());
    element = q.getElementType();
    heads = q.getDimSize(1);
    queries = q.getDimSize(2);
    headSize = q.getDimSize(3);
    kvHeads = k.getDimSize(1);
    keys = k.getDimSize(2);
    valueSize = v.getDimSize(3);
    batch = q.getDimSize(0);
    rowBlock = std::min(queries, kQueryBlock);
    keyBlock = std::min(keys, kKeyBlock);
    flags = arith::FastMathFlagsAttr::get(
        b.getContext(), arith::FastMathFlags::reassoc | arith::FastMathFlags::contract);
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
    forLoop(index(0), index(batch * heads), 1, [&](Value pair) {
      batchIndex = arith::DivUIOp::create(b, loc, pair, index(heads));
      headIndex = arith::RemUIOp::create(b, loc, pair, index(heads));
      kvHeadIndex = arith::DivUIOp::create(b, loc, headIndex, index(heads / kvHeads));
      int64_t fullRows = queries - queries % rowBlock;
      forLoop(index(0), index(fullRows), rowBlock,
              [&](Value i0) { queryBlock(i0, rowBlock); });
      if (fullRows < queries)
        queryBlock(index(fullRows), queries - fullRows);
    });
    op.erase();
  }

private:
  Value index(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }
  Value constant(double v) {
    return arith::ConstantOp::create(b, loc, b.getFloatAttr(element, v));
  }
  void forLoop(Value lb, Value ub, int64_t step, function_ref<void(Value)> body) {
    auto loop = scf::ForOp::create(b, loc, lb, ub, index(step));
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    body(loop.getInductionVar());
  }
  /// source[lead..., offset : offset + count, 0 : width] as a 2-D view.
  Value rows(Value source, ArrayRef<Value> lead, Value offset, int64_t count, int64_t width) {
    auto type = cast<MemRefType>(source.getType());
    SmallVector<OpFoldResult> offsets(lead.begin(), lead.end());
    offsets.push_back(offset);
    offsets.push_back(b.getIndexAttr(0));
    SmallVector<OpFoldResult> sizes(lead.size(), b.getIndexAttr(1));
    sizes.push_back(b.getIndexAttr(count));
    sizes.push_back(b.getIndexAttr(width));
    SmallVector<OpFoldResult> strides(sizes.size(), b.getIndexAttr(1));
    auto viewType = memref::SubViewOp::inferRankReducedResultType({count, width}, type,
                                                                  offsets, sizes, strides);
    return memref::SubViewOp::create(b, loc, viewType, source, offsets, sizes, strides);
  }
  /// The top-left [count, width] corner of a 2-D scratch buffer.
  Value corner(Value buffer, int64_t count, int64_t width) {
    auto type = cast<MemRefType>(buffer.getType());
    if (type.getDimSize(0) == count && type.getDimSize(1) == width)
      return buffer;
    return rows(buffer, {}, index(0), count, width);
  }

  /// The block of `count` query rows starting at i0.
  void queryBlock(Value i0, int64_t count) {
    Value out = corner(acc, count, valueSize);
    Value q = rows(op.getQ(), {batchIndex, headIndex}, i0, count, headSize);
    linalg::FillOp::create(b, loc, constant(0.0), out);
    linalg::FillOp::create(b, loc, constant(0.0), rowSum);
    linalg::FillOp::create(b, loc, constant(-std::numeric_limits<double>::infinity()),
                           rowMax);
    // Causal: the block's last row sees keys [0, i0 + count).
    Value keyEnd = index(keys);
    if (op.getIsCausal())
      keyEnd = arith::MinUIOp::create(b, loc, keyEnd,
                                      arith::AddIOp::create(b, loc, i0, index(count)));
    int64_t fullKeys = keys - keys % keyBlock;
    Value fullEnd = arith::MinUIOp::create(b, loc, keyEnd, index(fullKeys));
    forLoop(index(0), fullEnd, keyBlock,
            [&](Value j0) { keyTile(q, out, i0, count, j0, keyBlock); });
    if (fullKeys < keys) {
      Value reached = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult,
                                            index(fullKeys), keyEnd);
      auto ifOp = scf::IfOp::create(b, loc, reached, /*withElseRegion=*/false);
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(ifOp.thenBlock());
      keyTile(q, out, i0, count, index(fullKeys), keys - fullKeys);
    }
    // out = acc / l and logsumexp = m + log(l), row by row. A row whose keys
    // are all masked (m = -inf, l = 0) gives 0 and logsumexp 0, as ATen's
    // CPU flash attention: it takes m = 0 and l = 1 for them.
    forLoop(index(0), index(count), 1, [&](Value r) {
      Value i = arith::AddIOp::create(b, loc, i0, r);
      Value max = memref::LoadOp::create(b, loc, rowMax, r);
      Value sum = memref::LoadOp::create(b, loc, rowSum, r);
      Value masked = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, sum, constant(0.0));
      max = arith::SelectOp::create(
          b, loc,
          arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, max,
                                constant(-std::numeric_limits<double>::infinity())),
          constant(0.0), max);
      sum = arith::SelectOp::create(b, loc, masked, constant(1.0), sum);
      memref::StoreOp::create(b, loc,
                              arith::AddFOp::create(b, loc, max, math::LogOp::create(b, loc, sum)),
                              op.getLogsumexpInit(), ValueRange{batchIndex, headIndex, i});
      Value reciprocal = arith::DivFOp::create(b, loc, constant(1.0), sum);
      forLoop(index(0), index(valueSize), 1, [&](Value e) {
        Value x = memref::LoadOp::create(b, loc, out, ValueRange{r, e});
        memref::StoreOp::create(b, loc, arith::MulFOp::create(b, loc, x, reciprocal),
                                op.getInit(), ValueRange{batchIndex, headIndex, i, e});
      });
    });
  }

  /// One tile of `width` keys starting at j0 for the rows [i0, i0 + count).
  void keyTile(Value q, Value out, Value i0, int64_t count, Value j0, int64_t width) {
    Value s = corner(scores, count, width);
    Value kT = corner(keysT, headSize, width);
    Value k = rows(op.getK(), {batchIndex, kvHeadIndex}, j0, width, headSize);
    forLoop(index(0), index(width), 1, [&](Value c) {
      forLoop(index(0), index(headSize), 1, [&](Value e) {
        memref::StoreOp::create(b, loc, memref::LoadOp::create(b, loc, k, ValueRange{c, e}), kT,
                                ValueRange{e, c});
      });
    });
    linalg::FillOp::create(b, loc, constant(0.0), s);
    MatmulEmitter(b, loc, q, kT, s, /*transposed=*/false, vl).emit({});
    forLoop(index(0), index(count), 1, [&](Value r) { softmaxRow(s, out, i0, r, j0, width); });
    Value v = rows(op.getV(), {batchIndex, kvHeadIndex}, j0, width, valueSize);
    MatmulEmitter(b, loc, s, v, out, /*transposed=*/false, vl).emit({});
  }

  /// Scales and masks row r of the tile, turns it into probabilities against
  /// the new running maximum, and rescales the row's sum and accumulator.
  /// Full tiles (a multiple of the vector length wide) use vectors; the
  /// ragged last tile scalars.
  void softmaxRow(Value s, Value out, Value i0, Value r, Value j0, int64_t width) {
    int64_t lanes = width % vl == 0 ? vl : 1;
    Value i = arith::AddIOp::create(b, loc, i0, r);
    Value negInf = constant(-std::numeric_limits<double>::infinity());
    Value oldMax = memref::LoadOp::create(b, loc, rowMax, r);
    Value newMax = stepLoop(width, lanes, splat(negInf, lanes), [&](Value c, Value runningMax) {
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
    if (lanes > 1)
      newMax = vector::ReductionOp::create(b, loc, vector::CombiningKind::MAXIMUMF, newMax);
    newMax = arith::MaximumFOp::create(b, loc, newMax, oldMax);
    // A row masked so far has max -inf: subtract 0 instead, so exp gives 0
    // rather than exp(-inf - -inf) = NaN.
    Value allMasked = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, newMax, negInf);
    Value base = arith::SelectOp::create(b, loc, allMasked, constant(0.0), newMax);
    Value tileSum = stepLoop(width, lanes, splat(constant(0.0), lanes), [&](Value c, Value sum) {
      Value x = load(s, {r, c}, lanes);
      Value p = math::ExpOp::create(b, loc, arith::SubFOp::create(b, loc, x, splat(base, lanes)));
      store(p, s, {r, c});
      return arith::AddFOp::create(b, loc, sum, p, flags);
    });
    if (lanes > 1)
      tileSum = vector::ReductionOp::create(b, loc, vector::CombiningKind::ADD, tileSum,
                                            arith::FastMathFlags::reassoc);
    Value alpha = math::ExpOp::create(b, loc, arith::SubFOp::create(b, loc, oldMax, base));
    Value oldSum = memref::LoadOp::create(b, loc, rowSum, r);
    Value sum = arith::AddFOp::create(b, loc, arith::MulFOp::create(b, loc, oldSum, alpha),
                                      tileSum);
    memref::StoreOp::create(b, loc, sum, rowSum, r);
    memref::StoreOp::create(b, loc, newMax, rowMax, r);
    int64_t accLanes = valueSize % vl == 0 ? vl : 1;
    stepLoop(valueSize, accLanes, Value(), [&](Value e, Value) {
      Value x = load(out, {r, e}, accLanes);
      store(arith::MulFOp::create(b, loc, x, splat(alpha, accLanes)), out, {r, e});
      return Value();
    });
  }

  /// A loop over [0, ub) in steps of `lanes`, carrying `init` unless null.
  Value stepLoop(int64_t ub, int64_t lanes, Value init, function_ref<Value(Value, Value)> body) {
    SmallVector<Value> carried;
    if (init)
      carried.push_back(init);
    auto loop = scf::ForOp::create(b, loc, index(0), index(ub), index(lanes), carried);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    if (!init) { // the builder made the yield
      body(loop.getInductionVar(), Value());
      return Value();
    }
    scf::YieldOp::create(b, loc, body(loop.getInductionVar(), loop.getRegionIterArgs()[0]));
    return loop.getResult(0);
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
  int64_t vl;
  Type element;
  int64_t batch = 0, heads = 0, queries = 0, headSize = 0, kvHeads = 0, keys = 0,
          valueSize = 0, rowBlock = 0, keyBlock = 0;
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
    int64_t bits = vectorBits > 0 ? (int64_t)vectorBits : kiln::cpu::hostVectorBits();
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
      OpBuilder b(op);
      int64_t vl = bits / q.getElementType().getIntOrFloatBitWidth();
      AttentionEmitter(b, op, vl).emit(func.getBody().front());
    }
  }
};

} // namespace
