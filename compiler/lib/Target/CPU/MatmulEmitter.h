// Register-blocked matmul microkernels on memrefs, shared by the passes that
// emit matmuls: kiln-vectorize-matmul (matmul generics) and
// kiln-lower-attention (the two products of each attention tile).
//
//   ikj (B is [K, N]):  C[i0:i0+MR, j0:j0+NR] stays in MR x NR/VL vector
//                       registers; each k broadcasts A[i, k] and FMAs it
//                       with vector loads of the row B[k, j0:j0+NR].
//   ijk (B is [N, K]):  MR x NR vector accumulators of partial dot products
//                       along k, reduced horizontally at the end.
// Rows below the last full tile are one shorter tile (M known) or stream
// B's rows through C's (M unknown, or fewer rows than a tile); columns right
// of the last full tile take tiles one vector wide, then dot products.
//
// Every nest iterates blocks of rows at its top level, and its loops over
// columns are directly inside or marked kiln_kernel.column_loop: a kernel made of
// a matmul and its pointwise epilogue splits both across workgroups (see
// kiln-distribute-workgroups), so a matmul of few rows still uses every core.
#ifndef KILN_TARGET_CPU_MATMULEMITTER_H
#define KILN_TARGET_CPU_MATMULEMITTER_H

#include "kiln/Dialect/Kernel/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "kiln/Target/CPU/TileSizes.h"

namespace kiln::cpu {

using namespace mlir; // a private header of the CPU target

/// Emits C += A * B on memrefs: A [.., M, K], B [.., K, N] (or [.., N, K]
/// when `transposed`) and C [.., M, N]; `emit` takes the leading (batch)
/// indices, if any. M, N and K may be dynamic: the tile loops then run to
/// bounds computed at run time, and the ragged edges are the same loops.
class MatmulEmitter {
public:
  /// `tiles` are the target's for C's element type (TileSizes.h).
  MatmulEmitter(OpBuilder &b, Location loc, Value a, Value bMat, Value c,
                bool transposed, const MatmulTiles &tiles)
      : b(b), loc(loc), a(a), bMat(bMat), c(c), transposed(transposed),
        tiles(tiles), vl(tiles.vectorLength) {
    auto cType = cast<MemRefType>(c.getType());
    element = cType.getElementType();
    int64_t rank = cType.getRank();
    m = sizeOf(c, rank - 2);
    n = sizeOf(c, rank - 1);
    k = sizeOf(a, rank - 1);
    vector = VectorType::get({vl}, element);
    flags = arith::FastMathFlagsAttr::get(
        b.getContext(), arith::FastMathFlags::reassoc | arith::FastMathFlags::contract);
  }

  /// Packs B into a contiguous panel per column tile and block of kKc rows
  /// of K (see emit): always where B is [K, N] and K is long; where B is
  /// [N, K] (x @ w.t()), when the rows are many enough to repay transposing
  /// it. For matmuls of their own, not for the attention tiles, whose B is
  /// small and already packed.
  void setPackB(bool pack) { packB = pack; }

  /// B's full panels, packed ahead of the call (kiln-pack-weights): a
  /// [N / NR, K, NR] memref with NR = columnsPerTile(), where panel p holds
  /// B[:, p * NR : (p + 1) * NR] row by row. Tiles read those columns from
  /// it; the columns past the last full panel still come from B.
  void setPrepackedB(Value panels) { prepacked = panels; }

  /// Whether B, given as [N, K], is transposed into panels, so that the
  /// broadcast-FMA microkernel runs instead of dot products (whose
  /// horizontal reductions cost most where vectors are short). The copy
  /// costs one pass over B per block of rows: worth it from kPackedRows
  /// rows.
  bool packsTransposedB() const {
    return transposed && packB && !prepacked && k.known && *k.known >= 2 * kKc && m.known &&
           *m.known >= kPackedRows;
  }
  /// Whether tiles broadcast A against rows of B (or of its panel) rather
  /// than take dot products along k.
  bool broadcastsA() const { return !transposed || packsTransposedB() || prepacked; }

  /// Rows of C per microkernel tile, from the target's tiles.
  int64_t rowsPerTile() const {
    return broadcastsA() ? tiles.broadcast.rows : tiles.dot.rows;
  }
  /// Columns of C per microkernel tile: the step of every column loop the
  /// emitter makes, so a split of the columns at multiples of it is clean;
  /// prepacked panels must be this wide.
  int64_t columnsPerTile() const {
    return broadcastsA() ? tiles.broadcast.columns : tiles.dot.columns;
  }
  /// Rows per cache block: the step of the top-level row loop. A transposed
  /// panel serves four times as many rows (A's block of rows by kKc stays in
  /// L2: 256 x 128 floats, 128 KB).
  int64_t rowsPerBlock() const {
    return rowsPerTile() * (packsTransposedB() || prepacked ? 32 : 8);
  }

  /// Emits C += A * B for the batch indices `batch` (empty for mm).
  ///
  /// Every top-level loop nest iterates rows of C, and either the loop
  /// directly inside it or the loops marked kiln::kernel::kColumnLoopAttr
  /// iterate columns of C, in steps that divide columnsPerTile(): workgroups
  /// may split both (kiln-distribute-workgroups).
  void emit(ValueRange batch) {
    this->batch.assign(batch.begin(), batch.end());
    int64_t mr = rowsPerTile();
    int64_t nr = columnsPerTile();
    Size mFull = roundDown(m, mr), nFull = roundDown(n, nr);
    // Blocks of `mc` rows: within one, the B panel of a column tile is reused
    // from cache by every row tile before moving to the next columns.
    int64_t mc = rowsPerBlock();
    if (!transposed && !prepacked && m.known && *m.known < mr) {
      // Too few rows for a register tile: stream B's rows through them.
      forLoop(Size(0), m, mc, [&](Value ib) { streamRows(ib, *m.known); });
      return;
    }
    // With a long K, the rows of B that a column tile reads lie N * 4 bytes
    // apart (a new page per k once N >= 1024) and the tile's K x NR panel
    // outgrows L1: copy kKc rows of it at a time into a contiguous stack
    // panel, reused by every row tile of the block (BLIS's packed B, per
    // block of K). The copy costs 1 / mc of the FMAs.
    // Panels packed ahead of the call serve every block of K as they are.
    Value panel = prepacked;
    if (!panel && packB && broadcastsA() && k.known && *k.known >= 2 * kKc)
      panel = stackPanel(nr);
    // With M known, the rows below the last full tile (fewer than mr) are
    // one shorter tile, run by the last block of rows.
    int64_t tail = m.known ? *m.known % mr : 0;
    Size rowsEnd = m.known ? m : mFull;
    if (!rowsEnd.isZero() && !nFull.isZero())
      forLoop(Size(0), rowsEnd, mc, [&](Value ib) {
        Value blockEnd = arith::MinSIOp::create(b, loc, add(ib, mc), value(mFull));
        Value lastBlock = tail ? isLastBlock(ib) : Value();
        columnLoop(Size(0), nFull, nr, [&](Value j0) {
          auto tiles = [&](std::optional<PanelRange> packed) {
            forLoop(ib, blockEnd, mr, [&](Value i0) { tile(i0, j0, mr, nr, packed); });
            if (tail)
              ifThen(lastBlock, [&] { tile(value(mFull), j0, tail, nr, packed); });
          };
          if (!panel)
            return tiles(std::nullopt);
          forLoop(0, *k.known, kKc, [&](Value k0) {
            // The last block may be shorter: its length, at run time.
            Value length = arith::MinSIOp::create(
                b, loc, index(kKc), arith::SubIOp::create(b, loc, index(*k.known), k0));
            if (prepacked)
              return tiles(PanelRange{panel, k0, length,
                                      arith::DivUIOp::create(b, loc, j0, index(nr))});
            pack(panel, k0, length, j0, nr);
            tiles(PanelRange{panel, k0, length});
          });
        });
      });
    // Ragged edges: with M unknown, the rows below the tiles; then the
    // columns right of them. (Static shapes emit only the edges they have.)
    if (!m.known) {
      if (!transposed)
        forLoop(mFull, m, 1, [&](Value i) { streamRows(i, 1); });
      else if (!nFull.isZero())
        forLoop(mFull, m, 1, [&](Value i) {
          columnLoop(Size(0), nFull, nr, [&](Value j0) { dotTile(i, j0, 1, nr); });
        });
    }
    if (!nFull.staticallyEquals(n))
      columnEdge(nFull);
  }

private:
  /// A size known at compile time, or a value computed at run time.
  struct Size {
    explicit Size(int64_t v) : known(v) {}
    explicit Size(Value v) : dynamic(v) {}
    std::optional<int64_t> known;
    Value dynamic;
    bool isZero() const { return known && *known == 0; }
    bool staticallyEquals(const Size &o) const {
      return (known && o.known && *known == *o.known) || (dynamic && dynamic == o.dynamic);
    }
  };
  Value index(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }
  /// A fresh constant for a static size (as the static emitter always made).
  Value value(const Size &s) { return s.known ? index(*s.known) : s.dynamic; }
  Size sizeOf(Value memref, int64_t d) {
    int64_t size = cast<MemRefType>(memref.getType()).getDimSize(d);
    if (!ShapedType::isDynamic(size))
      return Size(size);
    return Size(memref::DimOp::create(b, loc, memref, d).getResult());
  }
  /// x rounded down to a multiple of `step`.
  Size roundDown(const Size &x, int64_t step) {
    if (x.known)
      return Size(*x.known - *x.known % step);
    Value s = index(step);
    return Size(arith::MulIOp::create(b, loc, arith::DivUIOp::create(b, loc, x.dynamic, s), s)
                    .getResult());
  }
  Value add(Value x, int64_t v) {
    return v ? arith::AddIOp::create(b, loc, x, index(v)).getResult() : x;
  }
  SmallVector<Value> at(Value row, Value col) {
    SmallVector<Value> indices(batch);
    indices.push_back(row);
    indices.push_back(col);
    return indices;
  }
  void forLoop(int64_t lb, int64_t ub, int64_t step, function_ref<void(Value)> body) {
    forLoop(index(lb), index(ub), step, body);
  }
  void forLoop(const Size &lb, const Size &ub, int64_t step, function_ref<void(Value)> body) {
    if (lb.known && ub.known)
      return forLoop(*lb.known, *ub.known, step, body);
    forLoop(value(lb), value(ub), step, body);
  }
  void forLoop(Value lb, Value ub, int64_t step, function_ref<void(Value)> body) {
    auto loop = scf::ForOp::create(b, loc, lb, ub, index(step));
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    body(loop.getInductionVar());
  }
  Value fma(Value x, Value y, Value acc) {
    if (isa<VectorType>(x.getType()))
      return vector::FMAOp::create(b, loc, x, y, acc);
    return arith::AddFOp::create(b, loc, acc, arith::MulFOp::create(b, loc, x, y, flags),
                                 flags);
  }

  /// Rows [k0, k0 + length) of B's column tile, packed: panel[k - k0, :],
  /// or, in panels packed ahead (with `index`, the tile's panel),
  /// panel[index, k, :].
  struct PanelRange {
    Value panel, k0, length, index;
  };

  /// A kKc x nr buffer at the start of the function (not in a loop, where
  /// every iteration would take stack).
  Value stackPanel(int64_t nr) {
    OpBuilder::InsertionGuard guard(b);
    Block *entry = &b.getInsertionBlock()->getParent()->getParentOfType<FunctionOpInterface>()
                        ->getRegion(0).front();
    b.setInsertionPointToStart(entry);
    return memref::AllocaOp::create(b, loc, MemRefType::get({kKc, nr}, element),
                                    ValueRange{}, b.getI64IntegerAttr(64));
  }

  /// panel[kk, :] = B[k0 + kk, j0 : j0 + nr] for kk in [0, length) (B[j0 :
  /// j0 + nr, k0 + kk] when transposed: each of B's rows is read along k).
  void pack(Value panel, Value k0, Value length, Value j0, int64_t nr) {
    if (transposed) {
      // vl x vl blocks: vl rows of B (vectors along k) transposed in
      // registers into vl rows of the panel; the last k below a block, one
      // element at a time.
      Value vlValue = index(vl);
      Value blocked = arith::MulIOp::create(
          b, loc, arith::DivUIOp::create(b, loc, length, vlValue), vlValue);
      forLoop(index(0), blocked, vl, [&](Value kk) {
        Value k = arith::AddIOp::create(b, loc, k0, kk);
        for (int64_t group = 0; group < nr / vl; ++group) {
          SmallVector<Value> rows;
          for (int64_t col = 0; col < vl; ++col)
            rows.push_back(vector::LoadOp::create(b, loc, vector, bMat,
                                                  at(add(j0, group * vl + col), k)));
          transposeInRegisters(rows);
          for (int64_t t = 0; t < vl; ++t)
            vector::StoreOp::create(b, loc, rows[t], panel, ValueRange{add(kk, t), index(group * vl)});
        }
      });
      for (int64_t col = 0; col < nr; ++col)
        forLoop(blocked, length, 1, [&](Value kk) {
          Value x = memref::LoadOp::create(b, loc, bMat,
                                           at(add(j0, col), arith::AddIOp::create(b, loc, k0, kk)));
          memref::StoreOp::create(b, loc, x, panel, ValueRange{kk, index(col)});
        });
      return;
    }
    auto loop = scf::ForOp::create(b, loc, index(0), length, index(1));
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    Value kk = loop.getInductionVar();
    Value row = arith::AddIOp::create(b, loc, k0, kk);
    for (int64_t v = 0; v < nr / vl; ++v) {
      Value x = vector::LoadOp::create(b, loc, vector, bMat, at(row, add(j0, v * vl)));
      vector::StoreOp::create(b, loc, x, panel, ValueRange{kk, index(v * vl)});
    }
  }

  /// Transposes the vl x vl matrix whose rows are `rows` (vl a power of two),
  /// in place: at each scale h = vl / 2, ..., 1, every 2h x 2h block swaps its
  /// off-diagonal h x h blocks, one two-source shuffle per row (vl log2 vl
  /// shuffles in all, which LLVM selects as permutes).
  void transposeInRegisters(SmallVector<Value> &rows) {
    for (int64_t h = vl / 2; h >= 1; h /= 2) {
      SmallVector<int64_t> upper(vl), lower(vl);
      for (int64_t col = 0; col < vl; ++col) {
        upper[col] = (col & h) ? vl + col - h : col;
        lower[col] = (col & h) ? vl + col : col + h;
      }
      for (int64_t i = 0; i < vl; ++i) {
        if (i & h)
          continue;
        Value top = rows[i], bottom = rows[i + h];
        rows[i] = vector::ShuffleOp::create(b, loc, top, bottom, b.getDenseI64ArrayAttr(upper));
        rows[i + h] =
            vector::ShuffleOp::create(b, loc, top, bottom, b.getDenseI64ArrayAttr(lower));
      }
    }
  }

  /// B in [K, N]: broadcast A[i, k] against vector rows of B (or of its
  /// packed panel, for the rows of K it holds).
  void fmaTile(Value i0, Value j0, int64_t mr, int64_t nr,
               std::optional<PanelRange> packed = std::nullopt) {
    int64_t nv = nr / vl;
    SmallVector<Value> init;
    for (int64_t r = 0; r < mr; ++r)
      for (int64_t v = 0; v < nv; ++v)
        init.push_back(vector::LoadOp::create(b, loc, vector, c, at(add(i0, r), add(j0, v * vl))));
    auto loop = scf::ForOp::create(b, loc, index(0), packed ? packed->length : value(k),
                                   index(1), init);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(loop.getBody());
      Value kk = loop.getInductionVar();
      Value kA = packed ? arith::AddIOp::create(b, loc, packed->k0, kk).getResult() : kk;
      SmallVector<Value> rows;
      for (int64_t v = 0; v < nv; ++v) {
        if (!packed)
          rows.push_back(vector::LoadOp::create(b, loc, vector, bMat, at(kk, add(j0, v * vl))));
        else if (packed->index)
          rows.push_back(vector::LoadOp::create(b, loc, vector, packed->panel,
                                                ValueRange{packed->index, kA, index(v * vl)}));
        else
          rows.push_back(vector::LoadOp::create(b, loc, vector, packed->panel,
                                                ValueRange{kk, index(v * vl)}));
      }
      SmallVector<Value> next;
      for (int64_t r = 0; r < mr; ++r) {
        Value scalarA = memref::LoadOp::create(b, loc, a, at(add(i0, r), kA));
        Value broadcast = vector::BroadcastOp::create(b, loc, vector, scalarA);
        for (int64_t v = 0; v < nv; ++v)
          next.push_back(fma(broadcast, rows[v], loop.getRegionIterArgs()[r * nv + v]));
      }
      scf::YieldOp::create(b, loc, next);
    }
    for (int64_t r = 0; r < mr; ++r)
      for (int64_t v = 0; v < nv; ++v)
        vector::StoreOp::create(b, loc, loop.getResult(r * nv + v), c,
                                at(add(i0, r), add(j0, v * vl)));
  }

  /// B in [N, K]: vector partial dot products along k, reduced at the end.
  void dotTile(Value i0, Value j0, int64_t mr, int64_t nr) {
    Size kFull = roundDown(k, vl);
    Value zero = arith::ConstantOp::create(b, loc, DenseElementsAttr::get(
                                                       vector, b.getFloatAttr(element, 0.0)));
    SmallVector<Value> init(mr * nr, zero);
    auto loop = scf::ForOp::create(b, loc, index(0), value(kFull), index(vl), init);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(loop.getBody());
      Value kk = loop.getInductionVar();
      SmallVector<Value> rowsA, rowsB, next;
      for (int64_t r = 0; r < mr; ++r)
        rowsA.push_back(vector::LoadOp::create(b, loc, vector, a, at(add(i0, r), kk)));
      for (int64_t col = 0; col < nr; ++col)
        rowsB.push_back(vector::LoadOp::create(b, loc, vector, bMat, at(add(j0, col), kk)));
      for (int64_t r = 0; r < mr; ++r)
        for (int64_t col = 0; col < nr; ++col)
          next.push_back(fma(rowsA[r], rowsB[col], loop.getRegionIterArgs()[r * nr + col]));
      scf::YieldOp::create(b, loc, next);
    }
    SmallVector<Value> accumulators(loop.getResults());
    if (kFull.staticallyEquals(k) && (int64_t)accumulators.size() == vl &&
        llvm::isPowerOf2_64(vl)) {
      addReducedTile(accumulators, i0, j0, mr, nr);
      return;
    }
    for (int64_t r = 0; r < mr; ++r) {
      for (int64_t col = 0; col < nr; ++col) {
        Value i = add(i0, r), j = add(j0, col);
        Value sum = vector::ReductionOp::create(b, loc, vector::CombiningKind::ADD,
                                                accumulators[r * nr + col],
                                                arith::FastMathFlags::reassoc);
        sum = dotTail(i, j, kFull, sum);
        Value old = memref::LoadOp::create(b, loc, c, at(i, j));
        memref::StoreOp::create(b, loc, arith::AddFOp::create(b, loc, old, sum), c, at(i, j));
      }
    }
  }

  /// Reduces vl accumulators of vl lanes each into one vector of their sums
  /// with a shuffle-and-add tree (vl - 1 adds instead of vl horizontal
  /// reductions), then adds row r's nr sums to C[i0 + r, j0 : j0 + nr].
  void addReducedTile(SmallVector<Value> level, Value i0, Value j0, int64_t mr, int64_t nr) {
    // groups[v][g]: the accumulator whose partial sums fill group g of vector v.
    SmallVector<SmallVector<int64_t>> groups;
    for (int64_t a = 0; a < vl; ++a)
      groups.push_back({a});
    for (int64_t size = vl; size > 1; size /= 2) {
      SmallVector<Value> next;
      SmallVector<SmallVector<int64_t>> nextGroups;
      int64_t count = vl / size, half = size / 2;
      for (size_t v = 0; v + 1 < level.size(); v += 2) {
        SmallVector<int64_t> low, high;
        for (int64_t side = 0; side < 2; ++side)
          for (int64_t g = 0; g < count; ++g)
            for (int64_t lane = 0; lane < half; ++lane) {
              low.push_back(side * vl + g * size + lane);
              high.push_back(side * vl + g * size + half + lane);
            }
        Value lo = vector::ShuffleOp::create(b, loc, level[v], level[v + 1],
                                             b.getDenseI64ArrayAttr(low));
        Value hi = vector::ShuffleOp::create(b, loc, level[v], level[v + 1],
                                             b.getDenseI64ArrayAttr(high));
        next.push_back(arith::AddFOp::create(b, loc, lo, hi, flags));
        SmallVector<int64_t> merged(groups[v]);
        merged.append(groups[v + 1]);
        nextGroups.push_back(merged);
      }
      level = next;
      groups = nextGroups;
    }
    // Put accumulator a (= r * nr + col) in lane a.
    SmallVector<int64_t> order(vl);
    for (int64_t lane = 0; lane < vl; ++lane)
      order[groups[0][lane]] = lane;
    Value sums = vector::ShuffleOp::create(b, loc, level[0], level[0],
                                           b.getDenseI64ArrayAttr(order));
    auto rowType = VectorType::get({nr}, element);
    for (int64_t r = 0; r < mr; ++r) {
      Value rowSums = vector::ExtractStridedSliceOp::create(b, loc, sums, {r * nr}, {nr}, {1});
      Value old = vector::LoadOp::create(b, loc, rowType, c, at(add(i0, r), j0));
      vector::StoreOp::create(b, loc, arith::AddFOp::create(b, loc, old, rowSums), c,
                              at(add(i0, r), j0));
    }
  }

  /// sum + A[i, kFrom:] . B[kFrom:, j] (B[j, kFrom:] when transposed).
  Value dotTail(Value i, Value j, const Size &kFrom, Value sum) {
    if (kFrom.known && k.known && *kFrom.known >= *k.known)
      return sum;
    auto loop = scf::ForOp::create(b, loc, value(kFrom), value(k), index(1), ValueRange{sum});
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    Value kk = loop.getInductionVar();
    Value x = memref::LoadOp::create(b, loc, a, at(i, kk));
    Value y = memref::LoadOp::create(b, loc, bMat, transposed ? at(j, kk) : at(kk, j));
    scf::YieldOp::create(b, loc, fma(x, y, loop.getRegionIterArgs()[0]));
    return loop.getResult(0);
  }

  /// C[i, :] += A[i, :] * B for the `rows` rows from i0 (B in [K, N]), when
  /// they are too few for a register tile: for each k, row k of B streams
  /// through in vectors, each added into every row of C, which stay in L1.
  /// (One-row register tiles would read B a column tile at a time, N * 4
  /// bytes apart per k: a page per access, which the prefetchers do not
  /// follow.) The column loops are marked for workgroups that split columns.
  void streamRows(Value i0, int64_t rows) {
    Size nVector = roundDown(n, vl);
    forLoop(Size(0), k, 1, [&](Value kk) {
      // Row k + kPrefetchRows of B, requested now (clamped to the last row):
      // the rows lie N * 4 bytes apart, a page apart once N >= 1024, where
      // the hardware prefetchers stop.
      Value ahead = arith::MinSIOp::create(
          b, loc, add(kk, kPrefetchRows),
          arith::SubIOp::create(b, loc, value(k), index(1)));
      SmallVector<Value> xs, broadcasts;
      for (int64_t r = 0; r < rows; ++r) {
        xs.push_back(memref::LoadOp::create(b, loc, a, at(add(i0, r), kk)));
        if (!nVector.isZero())
          broadcasts.push_back(vector::BroadcastOp::create(b, loc, vector, xs.back()));
      }
      if (!nVector.isZero())
        columnLoop(Size(0), nVector, vl, [&](Value j) {
          memref::PrefetchOp::create(b, loc, bMat, at(ahead, j), /*isWrite=*/false,
                                     /*localityHint=*/3, /*isDataCache=*/true);
          Value y = vector::LoadOp::create(b, loc, vector, bMat, at(kk, j));
          for (int64_t r = 0; r < rows; ++r) {
            Value old = vector::LoadOp::create(b, loc, vector, c, at(add(i0, r), j));
            vector::StoreOp::create(b, loc, fma(broadcasts[r], y, old), c, at(add(i0, r), j));
          }
        });
      if (!nVector.staticallyEquals(n))
        columnLoop(nVector, n, 1, [&](Value j) {
          Value y = memref::LoadOp::create(b, loc, bMat, at(kk, j));
          for (int64_t r = 0; r < rows; ++r) {
            Value old = memref::LoadOp::create(b, loc, c, at(add(i0, r), j));
            memref::StoreOp::create(b, loc, fma(xs[r], y, old), c, at(add(i0, r), j));
          }
        });
    });
  }

  /// The mr x nr tile of C at (i0, j0), with the microkernel B's layout asks.
  void tile(Value i0, Value j0, int64_t mr, int64_t nr, std::optional<PanelRange> packed) {
    if (!broadcastsA())
      return dotTile(i0, j0, mr, nr);
    fmaTile(i0, j0, mr, nr, packed);
  }

  /// Whether the block of rows at `ib` is the last (M known).
  Value isLastBlock(Value ib) {
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge, add(ib, rowsPerBlock()),
                                 index(*m.known));
  }

  void ifThen(Value condition, function_ref<void()> body) {
    auto op = scf::IfOp::create(b, loc, condition, /*withElseRegion=*/false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(op.thenBlock());
    body();
  }

  /// A loop over columns of C, marked so that workgroups splitting the
  /// columns narrow it (kiln::kernel::kColumnLoopAttr).
  void columnLoop(const Size &lb, const Size &ub, int64_t step, function_ref<void(Value)> body) {
    auto loop = scf::ForOp::create(b, loc, value(lb), value(ub), index(step));
    loop->setAttr(kiln::kernel::kColumnLoopAttr, b.getUnitAttr());
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    body(loop.getInductionVar());
  }

  /// The columns [nFrom, n) right of the full tiles, for every row: tiles
  /// one vector wide where B is [K, N] (the shorter tail tile too, with M
  /// known), then one column at a time (a dot product along k). With M
  /// unknown, rows past the full tiles already have every column where B is
  /// [K, N] (streamRows).
  void columnEdge(const Size &nFrom) {
    int64_t mr = rowsPerTile(), mc = rowsPerBlock();
    Size mFull = roundDown(m, mr);
    Size nVector = transposed ? nFrom : roundDown(n, vl);
    bool vectors = !nVector.staticallyEquals(nFrom), scalars = !nVector.staticallyEquals(n);
    if (m.known) {
      int64_t tail = *m.known % mr;
      forLoop(Size(0), m, mc, [&](Value ib) {
        Value blockEnd = arith::MinSIOp::create(b, loc, add(ib, mc), value(mFull));
        if (vectors) {
          forLoop(ib, blockEnd, mr, [&](Value i0) {
            columnLoop(nFrom, nVector, vl, [&](Value j0) { fmaTile(i0, j0, mr, vl); });
          });
          if (tail)
            ifThen(isLastBlock(ib), [&] {
              columnLoop(nFrom, nVector, vl, [&](Value j0) { fmaTile(value(mFull), j0, tail, vl); });
            });
        }
        if (scalars) {
          Value rowsEnd = arith::MinSIOp::create(b, loc, add(ib, mc), value(m));
          forLoop(ib, rowsEnd, 1, [&](Value i) { dotColumns(i, nVector); });
        }
      });
      return;
    }
    if (vectors)
      forLoop(Size(0), mFull, mr, [&](Value i0) {
        columnLoop(nFrom, nVector, vl, [&](Value j0) { fmaTile(i0, j0, mr, vl); });
      });
    if (scalars)
      forLoop(Size(0), transposed ? m : mFull, 1, [&](Value i) { dotColumns(i, nVector); });
  }

  /// C[i, j] += A[i, :] . B[:, j] for the columns [from, n), one at a time.
  void dotColumns(Value i, const Size &from) {
    columnLoop(from, n, 1, [&](Value j) {
      Value old = memref::LoadOp::create(b, loc, c, at(i, j));
      Value zero = arith::ConstantOp::create(b, loc, b.getFloatAttr(element, 0.0));
      Value sum = dotTail(i, j, Size(0), zero);
      memref::StoreOp::create(b, loc, arith::AddFOp::create(b, loc, old, sum), c, at(i, j));
    });
  }

  OpBuilder &b;
  Location loc;
  Value a, bMat, c;
  bool transposed;
  MatmulTiles tiles;
  int64_t vl;
  Size m{0}, n{0}, k{0};
  Type element;
  VectorType vector;
  arith::FastMathFlagsAttr flags;
  SmallVector<Value> batch;
  bool packB = false;
  Value prepacked;
  /// Rows of K per packed panel: with NR = 2 vectors, 16 KB (AVX-512) or
  /// 8 KB (AVX2) of floats, which stay in L1 beside A's rows.
  static constexpr int64_t kKc = 128;
  /// How many rows of B ahead streamRows prefetches.
  static constexpr int64_t kPrefetchRows = 8;
  /// Rows from which B given as [N, K] is transposed into panels.
  static constexpr int64_t kPackedRows = 64;
};

} // namespace kiln::cpu

#endif // KILN_TARGET_CPU_MATMULEMITTER_H
