// kiln_kernel.sort on buffers (see Passes.td): a merge sort a row at a time
// for a CPU core, or a bitonic network whose steps a GPU's threads share.
//
// Both order (value, index), a total order, so the result is the stable
// sort's. The network is the one with all compare-exchanges in one
// direction: stage t (blocks of 2^(t+1)) first compares mirrored positions
// of each block, then positions 2^s apart for s = t-1 down to 0. Every
// compare-exchange puts the earlier pair at the lower position, so a row
// padded to a power of two with values after every real one sorts without
// moving the padding: the pairs that reach past the row are skipped.
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
    // A core sorts a row best alone, by merges; a GPU's threads share each
    // step of a network.
    SmallVector<Value> scratch;
    if (!parallelSteps && !selectsFirsts())
      scratch = allocateRuns(b);
    // A core sorts its rows one after another: a loop over the first dim
    // around it all, where rows sort apart (the workgroups split it as
    // every kernel's leading loop). A network's steps take every row at
    // once, so that short rows still give every thread a pair.
    if (rank >= 2 && dim != 0 && !parallelSteps) {
      Value zero = arith::ConstantIndexOp::create(b, loc, 0);
      Value one = arith::ConstantIndexOp::create(b, loc, 1);
      auto rows = scf::ForOp::create(b, loc, zero, sizes[0], one);
      OpBuilder inner = OpBuilder::atBlockBegin(rows.getBody());
      row = rows.getInductionVar();
      mergeRows(inner, scratch);
    } else {
      parallelSteps ? bitonicRows(b) : mergeRows(b, scratch);
    }
    for (Value buffer : scratch)
      memref::DeallocOp::create(b, loc, buffer);
  }

private:
  //===--------------------------------------------------------------------===//
  // Merge sort, a row at a time
  //===--------------------------------------------------------------------===//

  /// Two runs' buffers for the values and two for the indices, which the
  /// passes of a merge sort go between: a row's length and one padding
  /// element (set to zero), which a merge's cursor past the last run reads.
  SmallVector<Value> allocateRuns(OpBuilder &b) {
    Value n = sizes[dim];
    auto length = getConstantIntValue(n);
    Type element = cast<MemRefType>(op.getInput().getType()).getElementType();
    SmallVector<Value> buffers;
    for (Type type : {element, Type(b.getI64Type()), element, Type(b.getI64Type())}) {
      auto runType = MemRefType::get({length ? *length + 1 : ShapedType::kDynamic}, type);
      Value buffer =
          length ? memref::AllocOp::create(b, loc, runType).getResult()
                 : memref::AllocOp::create(
                       b, loc, runType,
                       ValueRange{arith::AddIOp::create(
                           b, loc, n, arith::ConstantIndexOp::create(b, loc, 1))})
                       .getResult();
      memref::StoreOp::create(b, loc,
                              arith::ConstantOp::create(b, loc, b.getZeroAttr(type)), buffer,
                              n);
      buffers.push_back(buffer);
    }
    return buffers; // values and indices of run buffer A, then of B
  }

  /// Each row (at `row`, and at every position of the dims other than
  /// `dim`): copied into run buffer A with its positions, merged in passes
  /// of runs of 1, 2, 4, ... between A and B, copied from the last into the
  /// outputs.
  void mergeRows(OpBuilder &b, ArrayRef<Value> runs) {
    SmallVector<Value> others;
    for (int64_t d = row ? 1 : 0; d < rank; ++d)
      if (d != dim)
        others.push_back(sizes[d]);
    auto sortRow = [&](OpBuilder &rb, Location l, ValueRange at) {
      SmallVector<Value> ivs(at);
      ivs.insert(ivs.begin() + freeIndex(), Value());
      if (selectsFirsts())
        selectRow(rb, l, ivs);
      else
        mergeRow(rb, l, ivs, runs);
    };
    if (others.empty()) {
      sortRow(b, loc, {});
      return;
    }
    Value zero = arith::ConstantIndexOp::create(b, loc, 0);
    Value one = arith::ConstantIndexOp::create(b, loc, 1);
    scf::buildLoopNest(b, loc, SmallVector<Value>(others.size(), zero), others,
                       SmallVector<Value>(others.size(), one), sortRow);
  }

  /// A top-k of at most kMaxSelected: the first k are selected in one pass
  /// over the row instead (see selectRow).
  static constexpr int64_t kMaxSelected = 64;
  bool selectsFirsts() { return op.getK() && *op.getK() <= kMaxSelected; }

  /// The first k of a row by insertion, in one pass: the outputs' first k
  /// positions hold the best so far in order; an element that sorts
  /// strictly before the last of them (or arrives while fewer than k are
  /// held) goes in at its place, those after it moving down one. Ties keep
  /// the earlier element first, as the stable sort does. O(n) comparisons,
  /// plus O(k) per insertion (rare on most rows).
  void selectRow(OpBuilder &b, Location l, ValueRange ivs) {
    Value zero = arith::ConstantIndexOp::create(b, l, 0);
    Value one = arith::ConstantIndexOp::create(b, l, 1);
    Value k = arith::ConstantIndexOp::create(b, l, *op.getK());
    Value kMinusOne = arith::ConstantIndexOp::create(b, l, *op.getK() - 1);
    Value falseValue = arith::ConstantIntOp::create(b, l, 0, 1);
    Value trueValue = arith::ConstantIntOp::create(b, l, 1, 1);
    auto loadAt = [&](OpBuilder &lb, Value buffer, Value along) {
      return memref::LoadOp::create(lb, l, buffer, position(ivs, along)).getResult();
    };
    auto storeAt = [&](OpBuilder &sb, Value value, Value buffer, Value along) {
      memref::StoreOp::create(sb, l, value, buffer, position(ivs, along));
    };
    scf::ForOp::create(
        b, l, zero, sizes[dim], one, ValueRange{zero},
        [&](OpBuilder &eb, Location el, Value e, ValueRange held) {
          Value count = held[0];
          Value v = loadAt(eb, op.getInput(), e);
          Value full = arith::CmpIOp::create(eb, el, arith::CmpIPredicate::uge, count, k);
          auto admit = scf::IfOp::create(
              eb, el, full,
              [&](OpBuilder &tb, Location tl) {
                Value last = loadAt(tb, op.getValuesInit(), kMinusOne);
                scf::YieldOp::create(tb, tl, precedes(tb, tl, v, last));
              },
              [&](OpBuilder &fb, Location fl) { scf::YieldOp::create(fb, fl, trueValue); });
          Value filled = arith::MinUIOp::create(
              eb, el, arith::AddIOp::create(eb, el, count, one), k);
          scf::IfOp::create(eb, el, admit.getResult(0), [&](OpBuilder &ib, Location il) {
            Value index = arith::IndexCastOp::create(ib, il, ib.getI64Type(), e);
            // Positions filled - 1 down to 0: each takes the one above it
            // while v sorts before that one, then v, then stays.
            scf::ForOp::create(
                ib, il, zero, filled, one, ValueRange{falseValue},
                [&](OpBuilder &qb, Location ql, Value r, ValueRange placed) {
                  Value q = arith::SubIOp::create(
                      qb, ql, arith::SubIOp::create(qb, ql, filled, one), r);
                  Value above = arith::CmpIOp::create(qb, ql, arith::CmpIPredicate::ugt, q, zero);
                  auto shift = scf::IfOp::create(
                      qb, ql, above,
                      [&](OpBuilder &tb, Location tl) {
                        Value up = arith::SubIOp::create(tb, tl, q, one);
                        Value moves = precedes(tb, tl, v, loadAt(tb, op.getValuesInit(), up));
                        scf::IfOp::create(tb, tl, moves, [&](OpBuilder &mb, Location ml) {
                          storeAt(mb, loadAt(mb, op.getValuesInit(), up), op.getValuesInit(), q);
                          storeAt(mb, loadAt(mb, op.getIndicesInit(), up), op.getIndicesInit(),
                                  q);
                          scf::YieldOp::create(mb, ml);
                        });
                        scf::YieldOp::create(tb, tl, moves);
                      },
                      [&](OpBuilder &fb, Location fl) {
                        scf::YieldOp::create(fb, fl, falseValue);
                      });
                  Value moved = shift.getResult(0);
                  Value here = arith::AndIOp::create(
                      qb, ql, arith::XOrIOp::create(qb, ql, moved, trueValue),
                      arith::XOrIOp::create(qb, ql, placed[0], trueValue));
                  scf::IfOp::create(qb, ql, here, [&](OpBuilder &pb, Location pl) {
                    storeAt(pb, v, op.getValuesInit(), q);
                    storeAt(pb, index, op.getIndicesInit(), q);
                    scf::YieldOp::create(pb, pl);
                  });
                  scf::YieldOp::create(qb, ql, ValueRange{arith::OrIOp::create(
                                                   qb, ql, placed[0], here).getResult()});
                });
            scf::YieldOp::create(ib, il);
          });
          Value next = arith::SelectOp::create(eb, el, admit.getResult(0), filled, count);
          scf::YieldOp::create(eb, el, next);
        });
  }

  void mergeRow(OpBuilder &b, Location l, ValueRange ivs, ArrayRef<Value> runs) {
    Value n = sizes[dim];
    Value zero = arith::ConstantIndexOp::create(b, l, 0);
    Value one = arith::ConstantIndexOp::create(b, l, 1);
    Value two = arith::ConstantIndexOp::create(b, l, 2);
    auto forRange = [&](OpBuilder &fb, Value from, Value to, Value step, auto body) {
      auto loop = scf::ForOp::create(fb, l, from, to, step);
      OpBuilder inner = OpBuilder::atBlockBegin(loop.getBody());
      body(inner, loop.getInductionVar());
    };
    forRange(b, zero, n, one, [&](OpBuilder &fb, Value k) {
      Value value = memref::LoadOp::create(fb, l, op.getInput(), position(ivs, k));
      memref::StoreOp::create(fb, l, value, runs[0], k);
      Value index = arith::IndexCastOp::create(fb, l, fb.getI64Type(), k);
      memref::StoreOp::create(fb, l, index, runs[1], k);
    });
    // Passes while the runs are shorter than the row; each reads the
    // buffers the last one wrote.
    Value stages = stageCount(b, n);
    forRange(b, zero, stages, one, [&](OpBuilder &fb, Value t) {
      Value width = arith::ShLIOp::create(fb, l, one, t);
      Value even = arith::CmpIOp::create(
          fb, l, arith::CmpIPredicate::eq, arith::AndIOp::create(fb, l, t, one), zero);
      auto pick = [&](Value ifEven, Value ifOdd) {
        return arith::SelectOp::create(fb, l, even, ifEven, ifOdd).getResult();
      };
      Value from[2] = {pick(runs[0], runs[2]), pick(runs[1], runs[3])};
      Value to[2] = {pick(runs[2], runs[0]), pick(runs[3], runs[1])};
      Value pair = arith::MulIOp::create(fb, l, width, two);
      forRange(fb, zero, n, pair, [&](OpBuilder &mb, Value lo) {
        Value mid = arith::MinUIOp::create(mb, l, arith::AddIOp::create(mb, l, lo, width), n);
        Value hi = arith::MinUIOp::create(mb, l, arith::AddIOp::create(mb, l, lo, pair), n);
        merge(mb, l, from, to, lo, mid, hi);
      });
    });
    // The last pass wrote B where the count of passes is odd.
    Value inB = arith::CmpIOp::create(b, l, arith::CmpIPredicate::eq,
                                      arith::AndIOp::create(b, l, stages, one), one);
    Value sortedValues = arith::SelectOp::create(b, l, inB, runs[2], runs[0]);
    Value sortedIndices = arith::SelectOp::create(b, l, inB, runs[3], runs[1]);
    // (A top-k needs its first k only.)
    Value kept = op.getK() ? arith::ConstantIndexOp::create(b, l, *op.getK()).getResult() : n;
    forRange(b, zero, kept, one, [&](OpBuilder &fb, Value k) {
      SmallVector<Value> at = position(ivs, k);
      Value value = memref::LoadOp::create(fb, l, sortedValues, k);
      memref::StoreOp::create(fb, l, value, op.getValuesInit(), at);
      Value index = memref::LoadOp::create(fb, l, sortedIndices, k);
      memref::StoreOp::create(fb, l, index, op.getIndicesInit(), at);
    });
  }

  /// from[lo, mid) and from[mid, hi), each sorted, merged into to[lo, hi):
  /// the next element is the right run's where its value sorts strictly
  /// before the left run's (or the left run is done). Every left position
  /// is below every right one, so on equal values the left goes first and
  /// the positions need no comparing. No branches: the cursors advance by
  /// the comparison, and a cursor at the end of its run reads the next
  /// run's first element or the buffer's padding element, never used.
  void merge(OpBuilder &b, Location l, Value from[2], Value to[2], Value lo, Value mid,
             Value hi) {
    Value one = arith::ConstantIndexOp::create(b, l, 1);
    scf::ForOp::create(
        b, l, lo, hi, one, ValueRange{lo, mid},
        [&](OpBuilder &nb, Location nl, Value k, ValueRange cursors) {
          Value i = cursors[0], j = cursors[1];
          Value lv = memref::LoadOp::create(nb, nl, from[0], i);
          Value rv = memref::LoadOp::create(nb, nl, from[0], j);
          Value lx = memref::LoadOp::create(nb, nl, from[1], i);
          Value rx = memref::LoadOp::create(nb, nl, from[1], j);
          Value leftDone = arith::CmpIOp::create(nb, nl, arith::CmpIPredicate::uge, i, mid);
          Value rightLeft = arith::CmpIOp::create(nb, nl, arith::CmpIPredicate::ult, j, hi);
          Value right = arith::SelectOp::create(
              nb, nl, rightLeft,
              arith::OrIOp::create(nb, nl, leftDone, precedes(nb, nl, rv, lv)),
              arith::ConstantIntOp::create(nb, nl, 0, 1));
          memref::StoreOp::create(nb, nl, arith::SelectOp::create(nb, nl, right, rv, lv),
                                  to[0], k);
          memref::StoreOp::create(nb, nl, arith::SelectOp::create(nb, nl, right, rx, lx),
                                  to[1], k);
          Value step = arith::IndexCastUIOp::create(nb, nl, nb.getIndexType(), right);
          Value nextJ = arith::AddIOp::create(nb, nl, j, step);
          Value nextI = arith::SubIOp::create(
              nb, nl, arith::AddIOp::create(nb, nl, i, one), step);
          scf::YieldOp::create(nb, nl, ValueRange{nextI, nextJ});
        });
  }

  //===--------------------------------------------------------------------===//
  // Bitonic network, each step over every row at once
  //===--------------------------------------------------------------------===//

  /// ceil(log2 n): the stages of the network, the passes of the merge sort.
  Value stageCount(OpBuilder &b, Value n) {
    if (auto length = getConstantIntValue(n))
      return arith::ConstantIndexOp::create(b, loc, *length > 1 ? llvm::Log2_64_Ceil(*length)
                                                                : 0);
    // 32 - ctlz(n - 1) in i32 (a row of 2^31 elements is past any buffer a
    // kernel binds): SPIR-V counts leading zeros in 32 bits only.
    Value one = arith::ConstantIndexOp::create(b, loc, 1);
    Value last = arith::SubIOp::create(b, loc, arith::MaxUIOp::create(b, loc, n, one), one);
    Value last32 = arith::IndexCastUIOp::create(b, loc, b.getI32Type(), last);
    Value zeros = math::CountLeadingZerosOp::create(b, loc, last32);
    Value log32 =
        arith::SubIOp::create(b, loc, arith::ConstantIntOp::create(b, loc, 32, 32), zeros);
    return arith::IndexCastUIOp::create(b, loc, b.getIndexType(), log32);
  }

  /// The network over every row at once (there is no row loop here).
  void bitonicRows(OpBuilder &b) {
    // Copy the input and number the positions along `dim`.
    parallelStep(b, freeSizes(sizes[dim]), [&](OpBuilder &nb, Location l, ValueRange ivs) {
      SmallVector<Value> at = position(ivs, ivs[freeIndex()]);
      Value value = memref::LoadOp::create(nb, l, op.getInput(), at);
      memref::StoreOp::create(nb, l, value, op.getValuesInit(), at);
      Value index = arith::IndexCastOp::create(nb, l, nb.getI64Type(), ivs[freeIndex()]);
      memref::StoreOp::create(nb, l, index, op.getIndicesInit(), at);
    });
    Value n = sizes[dim];
    Value zero = arith::ConstantIndexOp::create(b, loc, 0);
    Value one = arith::ConstantIndexOp::create(b, loc, 1);
    // ceil(log2 n) stages; each step runs over the padded row's pairs.
    Value stages = stageCount(b, n);
    Value pairs;
    if (auto count = getConstantIntValue(stages))
      pairs = arith::ConstantIndexOp::create(b, loc, *count ? (int64_t{1} << *count) / 2 : 0);
    else
      pairs = arith::ShRUIOp::create(b, loc, arith::ShLIOp::create(b, loc, one, stages), one);
    auto stageLoop = scf::ForOp::create(b, loc, zero, stages, one);
    // The steps' first dimension is the kernel's rows where they sort
    // apart: a GPU clamps the steps, not the stages, to a workgroup's rows.
    if (rank >= 2 && dim != 0)
      stageLoop->setAttr(kiln::kernel::kStepsOverRowsAttr, b.getUnitAttr());
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
    parallelStep(b, freeSizes(pairs), [&](OpBuilder &nb, Location l, ValueRange ivs) {
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

  /// Whether (x, i) comes before (y, j): x sorts before y, or neither
  /// sorts before the other (equal values, or two NaNs) and i < j.
  Value before(OpBuilder &b, Location l, Value x, Value i, Value y, Value j) {
    Value tie = arith::XOrIOp::create(
        b, l, arith::OrIOp::create(b, l, precedes(b, l, y, x), precedes(b, l, x, y)),
        arith::ConstantIntOp::create(b, l, 1, 1));
    Value earlierIndex = arith::CmpIOp::create(b, l, arith::CmpIPredicate::slt, i, j);
    return arith::OrIOp::create(b, l, precedes(b, l, x, y),
                                arith::AndIOp::create(b, l, tie, earlierIndex));
  }

  /// Whether the value x sorts strictly before y: smaller (larger with
  /// `descending`), NaN as the largest value, two NaNs equal.
  Value precedes(OpBuilder &b, Location l, Value x, Value y) {
    bool descending = op.getDescending();
    if (isFloat) {
      using P = arith::CmpFPredicate;
      // Ascending: x < y or y is NaN, and x is a number. Descending: x > y
      // or x is NaN, and y is a number.
      Value order = arith::CmpFOp::create(b, l, descending ? P::UGT : P::ULT, x, y);
      Value number = descending ? arith::CmpFOp::create(b, l, P::ORD, y, y)
                                : arith::CmpFOp::create(b, l, P::ORD, x, x);
      return arith::AndIOp::create(b, l, order, number);
    }
    using P = arith::CmpIPredicate;
    P order = descending ? (isUnsigned ? P::ugt : P::sgt) : (isUnsigned ? P::ult : P::slt);
    return arith::CmpIOp::create(b, l, order, x, y);
  }

  /// The dims a loop nest runs over: every dim but the row loop's (where
  /// there is one), with `dim`'s extent replaced by `extent`.
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

  /// One scf.parallel over [0, extents), marked writes_apart: a step of the
  /// network (or its copy), whose iterations touch distinct elements.
  void parallelStep(OpBuilder &b, ArrayRef<Value> extents, BodyFn body) {
    Value zero = arith::ConstantIndexOp::create(b, loc, 0);
    Value one = arith::ConstantIndexOp::create(b, loc, 1);
    SmallVector<Value> lower(extents.size(), zero), steps(extents.size(), one);
    auto loop = scf::ParallelOp::create(
        b, loc, lower, extents, steps,
        [&](OpBuilder &nb, Location l, ValueRange ivs) { body(nb, l, ivs); });
    loop->setAttr(kiln::kernel::kWritesApartAttr, b.getUnitAttr());
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
