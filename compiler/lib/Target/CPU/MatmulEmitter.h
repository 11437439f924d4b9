// Register-blocked matmul microkernels on memrefs, shared by the passes that
// emit matmuls: kiln-vectorize-matmul (matmul generics) and
// kiln-lower-attention (the two products of each attention tile).
//
//   ikj (B is [K, N]):  C[i0:i0+MR, j0:j0+NR] stays in MR x NR/VL vector
//                       registers; each k broadcasts A[i, k] and FMAs it
//                       with vector loads of the row B[k, j0:j0+NR].
//   ijk (B is [N, K]):  MR x NR vector accumulators of partial dot products
//                       along k, reduced horizontally at the end.
// Rows and columns that do not fill a tile use scalar loops (with
// reassociation allowed, so LLVM can still vectorize them).
#ifndef KILN_TARGET_CPU_MATMULEMITTER_H
#define KILN_TARGET_CPU_MATMULEMITTER_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "llvm/TargetParser/Host.h"

namespace kiln::cpu {

using namespace mlir; // a private header of the CPU target

/// The widest vector register of the host, in bits.
inline int64_t hostVectorBits() {
  auto features = llvm::sys::getHostCPUFeatures();
  auto has = [&](const char *name) {
    auto it = features.find(name);
    return it != features.end() && it->second;
  };
  if (has("avx512f"))
    return 512;
  if (has("avx"))
    return 256;
  return 128;
}

/// Emits C += A * B on memrefs: A [.., M, K], B [.., K, N] (or [.., N, K]
/// when `transposed`) and C [.., M, N]; `emit` takes the leading (batch)
/// indices, if any. M, N and K may be dynamic: the tile loops then run to
/// bounds computed at run time, and the ragged edges are the same loops.
class MatmulEmitter {
public:
  MatmulEmitter(OpBuilder &b, Location loc, Value a, Value bMat, Value c,
                bool transposed, int64_t vectorLength)
      : b(b), loc(loc), a(a), bMat(bMat), c(c), transposed(transposed),
        vl(vectorLength) {
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

  /// Packs B ([K, N] only) into a contiguous panel per column tile and block
  /// of kKc rows of K (see emit); for matmuls of their own, not for the
  /// attention tiles, whose B is small and already packed.
  void setPackB(bool pack) { packB = pack; }

  /// Emits C += A * B for the batch indices `batch` (empty for mm).
  void emit(ValueRange batch) {
    this->batch.assign(batch.begin(), batch.end());
    int64_t mr = transposed ? (vl >= 16 ? 4 : 3) : 6;
    int64_t nr = transposed ? mr : 2 * vl;
    Size mFull = roundDown(m, mr), nFull = roundDown(n, nr);
    // Blocks of `mc` rows: within one, the B panel of a column tile is reused
    // from cache by every row tile before moving to the next columns.
    int64_t mc = mr * 8;
    // With a long K, the rows of B that a column tile reads lie N * 4 bytes
    // apart (a new page per k once N >= 1024) and the tile's K x NR panel
    // outgrows L1: copy kKc rows of it at a time into a contiguous stack
    // panel, reused by every row tile of the block (BLIS's packed B, per
    // block of K). The copy costs 1 / mc of the FMAs.
    Value panel;
    if (packB && !transposed && k.known && *k.known >= 2 * kKc)
      panel = stackPanel(nr);
    if (!mFull.isZero() && !nFull.isZero())
      forLoop(Size(0), mFull, mc, [&](Value ib) {
        Value blockEnd = arith::MinSIOp::create(b, loc, add(ib, mc), value(mFull));
        forLoop(Size(0), nFull, nr, [&](Value j0) {
          if (panel) {
            forLoop(0, *k.known, kKc, [&](Value k0) {
              // The last block may be shorter: its length, at run time.
              Value length = arith::MinSIOp::create(
                  b, loc, index(kKc), arith::SubIOp::create(b, loc, index(*k.known), k0));
              pack(panel, k0, length, j0, nr);
              forLoop(ib, blockEnd, mr, [&](Value i0) {
                fmaTile(i0, j0, mr, nr, PanelRange{panel, k0, length});
              });
            });
            return;
          }
          forLoop(ib, blockEnd, mr, [&](Value i0) {
            transposed ? dotTile(i0, j0, mr, nr) : fmaTile(i0, j0, mr, nr);
          });
        });
      });
    // Ragged edges: the rows below the tiles, then the columns right of them.
    // (Static shapes emit only the edges they have.)
    if (!mFull.staticallyEquals(m))
      scalar(mFull, m, Size(0), n);
    if (!mFull.isZero() && !nFull.staticallyEquals(n))
      scalar(Size(0), mFull, nFull, n);
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

  /// Rows [k0, k0 + length) of B's column tile, packed: panel[k - k0, :].
  struct PanelRange {
    Value panel, k0, length;
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

  /// panel[kk, :] = B[k0 + kk, j0 : j0 + nr] for kk in [0, length).
  void pack(Value panel, Value k0, Value length, Value j0, int64_t nr) {
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
      for (int64_t v = 0; v < nv; ++v)
        rows.push_back(packed ? vector::LoadOp::create(b, loc, vector, packed->panel,
                                                       ValueRange{kk, index(v * vl)})
                              : vector::LoadOp::create(b, loc, vector, bMat,
                                                       at(kk, add(j0, v * vl))));
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

  /// sum + A[i, kFrom:] . B[j, kFrom:] (B in [N, K]).
  Value dotTail(Value i, Value j, const Size &kFrom, Value sum) {
    if (kFrom.known && k.known && *kFrom.known >= *k.known)
      return sum;
    auto loop = scf::ForOp::create(b, loc, value(kFrom), value(k), index(1), ValueRange{sum});
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    Value kk = loop.getInductionVar();
    Value x = memref::LoadOp::create(b, loc, a, at(i, kk));
    Value y = memref::LoadOp::create(b, loc, bMat, at(j, kk));
    scf::YieldOp::create(b, loc, fma(x, y, loop.getRegionIterArgs()[0]));
    return loop.getResult(0);
  }

  /// C[i, j] += A[i, :] . B[:, j] for i in [i0, i1), j in [j0, j1).
  void scalar(const Size &i0, const Size &i1, const Size &j0, const Size &j1) {
    forLoop(i0, i1, 1, [&](Value i) {
      if (transposed) {
        forLoop(j0, j1, 1, [&](Value j) {
          Value old = memref::LoadOp::create(b, loc, c, at(i, j));
          Value zero = arith::ConstantOp::create(b, loc, b.getFloatAttr(element, 0.0));
          Value sum = dotTail(i, j, Size(0), zero);
          memref::StoreOp::create(b, loc, arith::AddFOp::create(b, loc, old, sum), c, at(i, j));
        });
        return;
      }
      forLoop(Size(0), k, 1, [&](Value kk) {
        Value x = memref::LoadOp::create(b, loc, a, at(i, kk));
        forLoop(j0, j1, 1, [&](Value j) {
          Value y = memref::LoadOp::create(b, loc, bMat, at(kk, j));
          Value old = memref::LoadOp::create(b, loc, c, at(i, j));
          memref::StoreOp::create(b, loc, fma(x, y, old), c, at(i, j));
        });
      });
    });
  }

  OpBuilder &b;
  Location loc;
  Value a, bMat, c;
  bool transposed;
  int64_t vl;
  Size m{0}, n{0}, k{0};
  Type element;
  VectorType vector;
  arith::FastMathFlagsAttr flags;
  SmallVector<Value> batch;
  bool packB = false;
  /// Rows of K per packed panel: with NR = 2 vectors, 16 KB (AVX-512) or
  /// 8 KB (AVX2) of floats, which stay in L1 beside A's rows.
  static constexpr int64_t kKc = 128;
};

} // namespace kiln::cpu

#endif // KILN_TARGET_CPU_MATMULEMITTER_H
