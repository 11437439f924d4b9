// kiln_kernel.sort on buffers as a bitonic sorting network (see Passes.td).
//
// The network is the one with all compare-exchanges in one direction: stage
// t (blocks of 2^(t+1)) first compares mirrored positions of each block, then
// positions 2^s apart for s = t-1 down to 0. Every compare-exchange puts the
// earlier of its two (value, index) pairs at the lower position, so a row
// padded to a power of two with values after every real one sorts without
// moving the padding: the pairs that reach past the row are skipped.
// (value, index) is a total order, so the result is the stable sort's.
#include "kiln/Dialect/Kernel/Transforms/Passes.h"

#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "llvm/Support/MathExtras.h"

namespace kiln::kernel {
#define GEN_PASS_DEF_LOWERSORTPASS
#include "kiln/Dialect/Kernel/Transforms/Passes.h.inc"
} // namespace kiln::kernel

using namespace mlir;

namespace {

using BodyFn = function_ref<void(OpBuilder &, Location, ValueRange ivs)>;

class SortEmitter {
public:
  SortEmitter(kiln::kernel::SortOp op, bool parallelSteps)
      : op(op), parallelSteps(parallelSteps), loc(op.getLoc()),
        rank(cast<MemRefType>(op.getInput().getType()).getRank()), dim(op.getDim()) {
    Type element = cast<MemRefType>(op.getInput().getType()).getElementType();
    isFloat = isa<FloatType>(element);
    isUnsigned = element.isInteger(1) || op->hasAttr(kiln::kernel::kUnsignedAttr);
  }

  void emit(OpBuilder &b) {
    if (rank == 0) {
      Value value = memref::LoadOp::create(b, loc, op.getInput(), ValueRange{});
      memref::StoreOp::create(b, loc, value, op.getValuesInit(), ValueRange{});
      Value zero = arith::ConstantIntOp::create(b, loc, 0, 64);
      memref::StoreOp::create(b, loc, zero, op.getIndicesInit(), ValueRange{});
      return;
    }
    for (int64_t d = 0; d < rank; ++d)
      sizes.push_back(getValueOrCreateConstantIndexOp(
          b, loc, memref::getMixedSize(b, loc, op.getValuesInit(), d)));
    // A loop over the first dim around it all, where rows sort apart: the
    // workgroups split it as every kernel's leading loop.
    if (rank >= 2 && dim != 0) {
      Value zero = arith::ConstantIndexOp::create(b, loc, 0);
      Value one = arith::ConstantIndexOp::create(b, loc, 1);
      auto rows = scf::ForOp::create(b, loc, zero, sizes[0], one);
      OpBuilder inner = OpBuilder::atBlockBegin(rows.getBody());
      row = rows.getInductionVar();
      emitRows(inner);
      return;
    }
    emitRows(b);
  }

private:
  /// The sort of the rows at `row` (or of the whole buffer without one).
  void emitRows(OpBuilder &b) {
    // Copy the input and number the positions along `dim`.
    loopNest(b, freeSizes(sizes[dim]), [&](OpBuilder &nb, Location l, ValueRange ivs) {
      SmallVector<Value> at = position(ivs, ivs[freeIndex()]);
      Value value = memref::LoadOp::create(nb, l, op.getInput(), at);
      memref::StoreOp::create(nb, l, value, op.getValuesInit(), at);
      Value index = arith::IndexCastOp::create(nb, l, nb.getI64Type(), ivs[freeIndex()]);
      memref::StoreOp::create(nb, l, index, op.getIndicesInit(), at);
    });
    Value n = sizes[dim];
    Value zero = arith::ConstantIndexOp::create(b, loc, 0);
    Value one = arith::ConstantIndexOp::create(b, loc, 1);
    // stages = ceil(log2 n); each step runs over the padded row's pairs.
    Value stages, pairs;
    if (auto length = getConstantIntValue(n)) {
      int64_t log = *length > 1 ? llvm::Log2_64_Ceil(*length) : 0;
      stages = arith::ConstantIndexOp::create(b, loc, log);
      pairs = arith::ConstantIndexOp::create(b, loc, log ? (int64_t{1} << log) / 2 : 0);
    } else {
      // 32 - ctlz(n - 1) in i32 (a row of 2^31 elements is past any buffer
      // a kernel binds): SPIR-V counts leading zeros in 32 bits only.
      Value last = arith::SubIOp::create(b, loc, arith::MaxUIOp::create(b, loc, n, one), one);
      Value last32 = arith::IndexCastUIOp::create(b, loc, b.getI32Type(), last);
      Value zeros = math::CountLeadingZerosOp::create(b, loc, last32);
      Value log32 = arith::SubIOp::create(
          b, loc, arith::ConstantIntOp::create(b, loc, 32, 32), zeros);
      stages = arith::IndexCastUIOp::create(b, loc, b.getIndexType(), log32);
      Value padded = arith::ShLIOp::create(b, loc, one, stages);
      pairs = arith::ShRUIOp::create(b, loc, padded, one);
    }
    auto stageLoop = scf::ForOp::create(b, loc, zero, stages, one);
    OpBuilder sb = OpBuilder::atBlockBegin(stageLoop.getBody());
    Value t = stageLoop.getInductionVar();
    step(sb, pairs, t, /*flip=*/true);
    auto stepLoop = scf::ForOp::create(sb, loc, zero, t, one);
    OpBuilder ib = OpBuilder::atBlockBegin(stepLoop.getBody());
    // s = t - 1 - u: pairs 2^s apart, from t - 1 down to 0.
    Value s = arith::SubIOp::create(
        ib, loc, arith::SubIOp::create(ib, loc, t, one), stepLoop.getInductionVar());
    step(ib, pairs, s, /*flip=*/false);
  }

  /// One step's compare-exchanges over every pair q of each row: blocks of
  /// 2^(shift+1) positions, q's block q >> shift and offset o within it; the
  /// pair is (block start + o, block end - 1 - o) for a flip, else
  /// (block start + o, block start + o + 2^shift).
  void step(OpBuilder &b, Value pairs, Value shift, bool flip) {
    loopNest(b, freeSizes(pairs), [&](OpBuilder &nb, Location l, ValueRange ivs) {
      Value q = ivs[freeIndex()];
      Value one = arith::ConstantIndexOp::create(nb, l, 1);
      Value half = arith::ShLIOp::create(nb, l, one, shift);
      Value offset = arith::AndIOp::create(nb, l, q, arith::SubIOp::create(nb, l, half, one));
      Value start = arith::ShLIOp::create(
          nb, l, arith::ShRUIOp::create(nb, l, q, shift),
          arith::AddIOp::create(nb, l, shift, one));
      Value first = arith::AddIOp::create(nb, l, start, offset);
      Value second =
          flip ? arith::SubIOp::create(
                     nb, l, arith::AddIOp::create(nb, l, start, arith::AddIOp::create(
                                                                    nb, l, half, half)),
                     arith::AddIOp::create(nb, l, offset, one))
                     .getResult()
               : arith::AddIOp::create(nb, l, first, half).getResult();
      Value inRow =
          arith::CmpIOp::create(nb, l, arith::CmpIPredicate::ult, second, sizes[dim]);
      auto guard = scf::IfOp::create(nb, l, inRow, /*withElse=*/false);
      OpBuilder gb = OpBuilder::atBlockBegin(guard.thenBlock());
      compareExchange(gb, l, position(ivs, first), position(ivs, second));
    });
  }

  /// Puts the earlier of the pairs at `first` and `second` at `first`.
  void compareExchange(OpBuilder &b, Location l, ValueRange first, ValueRange second) {
    Value v1 = memref::LoadOp::create(b, l, op.getValuesInit(), first);
    Value v2 = memref::LoadOp::create(b, l, op.getValuesInit(), second);
    Value i1 = memref::LoadOp::create(b, l, op.getIndicesInit(), first);
    Value i2 = memref::LoadOp::create(b, l, op.getIndicesInit(), second);
    Value swap = before(b, l, v2, i2, v1, i1);
    auto pick = [&](Value ifSwapped, Value otherwise) {
      return arith::SelectOp::create(b, l, swap, ifSwapped, otherwise).getResult();
    };
    memref::StoreOp::create(b, l, pick(v2, v1), op.getValuesInit(), first);
    memref::StoreOp::create(b, l, pick(v1, v2), op.getValuesInit(), second);
    memref::StoreOp::create(b, l, pick(i2, i1), op.getIndicesInit(), first);
    memref::StoreOp::create(b, l, pick(i1, i2), op.getIndicesInit(), second);
  }

  /// Whether (x, i) comes before (y, j): x sorts before y (NaN as the
  /// largest value), or they tie and i < j.
  Value before(OpBuilder &b, Location l, Value x, Value i, Value y, Value j) {
    Value earlierIndex = arith::CmpIOp::create(b, l, arith::CmpIPredicate::slt, i, j);
    Value precedes, tie;
    bool descending = op.getDescending();
    if (isFloat) {
      using P = arith::CmpFPredicate;
      Value xNan = arith::CmpFOp::create(b, l, P::UNO, x, x);
      Value yNan = arith::CmpFOp::create(b, l, P::UNO, y, y);
      Value ordered = arith::CmpFOp::create(b, l, descending ? P::OGT : P::OLT, x, y);
      // Ascending, a number precedes NaN; descending, NaN precedes a number.
      Value nanOrder = descending
                           ? arith::AndIOp::create(b, l, xNan, notOf(b, l, yNan)).getResult()
                           : arith::AndIOp::create(b, l, yNan, notOf(b, l, xNan)).getResult();
      precedes = arith::OrIOp::create(b, l, ordered, nanOrder);
      tie = arith::OrIOp::create(b, l, arith::CmpFOp::create(b, l, P::OEQ, x, y),
                                 arith::AndIOp::create(b, l, xNan, yNan));
    } else {
      using P = arith::CmpIPredicate;
      P order = descending ? (isUnsigned ? P::ugt : P::sgt) : (isUnsigned ? P::ult : P::slt);
      precedes = arith::CmpIOp::create(b, l, order, x, y);
      tie = arith::CmpIOp::create(b, l, P::eq, x, y);
    }
    return arith::OrIOp::create(b, l, precedes, arith::AndIOp::create(b, l, tie, earlierIndex));
  }

  static Value notOf(OpBuilder &b, Location l, Value flag) {
    Value trueValue = arith::ConstantIntOp::create(b, l, 1, 1);
    return arith::XOrIOp::create(b, l, flag, trueValue);
  }

  /// The dims a step's loop nest runs over: every dim but the row loop's,
  /// with `dim`'s extent replaced by `extent`.
  SmallVector<Value> freeSizes(Value extent) {
    SmallVector<Value> result;
    for (int64_t d = row ? 1 : 0; d < rank; ++d)
      result.push_back(d == dim ? extent : sizes[d]);
    return result;
  }

  /// Where `dim` is among a loop nest's induction variables.
  unsigned freeIndex() const { return row ? dim - 1 : dim; }

  /// The buffer position of a loop nest's iteration, at `along` in `dim`.
  SmallVector<Value> position(ValueRange ivs, Value along) {
    SmallVector<Value> at;
    if (row)
      at.push_back(row);
    at.append(ivs.begin(), ivs.end());
    at[dim] = along;
    return at;
  }

  /// A loop nest over [0, extents): one scf.parallel marked writes_apart
  /// with parallel steps, else scf.for loops.
  void loopNest(OpBuilder &b, ArrayRef<Value> extents, BodyFn body) {
    Value zero = arith::ConstantIndexOp::create(b, loc, 0);
    Value one = arith::ConstantIndexOp::create(b, loc, 1);
    SmallVector<Value> lower(extents.size(), zero), steps(extents.size(), one);
    if (parallelSteps) {
      auto loop = scf::ParallelOp::create(
          b, loc, lower, extents, steps,
          [&](OpBuilder &nb, Location l, ValueRange ivs) { body(nb, l, ivs); });
      loop->setAttr(kiln::kernel::kWritesApartAttr, b.getUnitAttr());
      return;
    }
    scf::buildLoopNest(b, loc, lower, extents, steps,
                       [&](OpBuilder &nb, Location l, ValueRange ivs) { body(nb, l, ivs); });
  }

  kiln::kernel::SortOp op;
  bool parallelSteps;
  Location loc;
  int64_t rank;
  int64_t dim;
  bool isFloat = false, isUnsigned = false;
  SmallVector<Value> sizes;
  Value row; // the row loop's induction variable, where there is one
};

struct LowerSortPass : kiln::kernel::impl::LowerSortPassBase<LowerSortPass> {
  using LowerSortPassBase::LowerSortPassBase;

  void runOnOperation() override {
    SmallVector<kiln::kernel::SortOp> sorts;
    getOperation().walk([&](kiln::kernel::SortOp op) { sorts.push_back(op); });
    for (kiln::kernel::SortOp op : sorts) {
      if (!op.hasPureBufferSemantics()) {
        op.emitOpError("must be bufferized before kiln-lower-sort");
        return signalPassFailure();
      }
      OpBuilder b(op);
      SortEmitter(op, parallelSteps).emit(b);
      op.erase();
    }
  }
};

} // namespace
