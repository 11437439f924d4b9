// Matmuls of float16 or bfloat16 operands on tensor cores: the tiled
// strategy (MatmulTiler.h) with each warp's 32x32 outputs computed by
// mma.sync m16n8k16, float32 accumulators in registers (see Mapping.h).
//
// The fragments follow PTX's layout for mma.m16n8k16 with .f16/.bf16
// multiplicands (lane l, g = l / 4, t = l % 4; two halves per 32-bit
// register, the lower index in the low half):
//   A (16x16, row): a0 = A[g][2t..2t+1], a1 = A[g+8][2t..], a2 = A[g][2t+8..],
//                   a3 = A[g+8][2t+8..];
//   B (16x8, col):  b0 = B[2t..2t+1][g], b1 = B[2t+8..2t+9][g];
//   C, D (16x8 f32): c0, c1 = C[g][2t], C[g][2t+1]; c2, c3 = C[g+8][2t..].
// The emulated form computes the same product through workgroup memory, so
// that everything around the instruction runs (and is tested) on any GPU.
#include "MatmulTiler.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"

using namespace mlir;
using namespace kiln::gpu;

namespace {

constexpr int64_t kWarpSize = 32;
/// A warp's outputs: 32x32, two 16-row by four 8-column mma tiles.
constexpr int64_t kWarpRows = 32, kWarpColumns = 32;
constexpr int64_t kMmaRows = 16, kMmaColumns = 8, kMmaDepth = 16;
/// Warps side by side in a workgroup's tile; the others stack its rows.
constexpr int64_t kWarpsAcross = 2;
/// k per stage: two mma steps between barriers.
constexpr int64_t kStageDepth = 32;

/// The operand element when the nest's body is acc + extf(row) * extf(col)
/// in float32 (either order each), besides address arithmetic; else null.
Type halfProductElement(const TiledMatmul &matmul) {
  if (matmul.rowLoads.size() != 1 || matmul.columnLoads.size() != 1)
    return {};
  const Accumulator &accumulator = matmul.reduction.accumulators.front();
  memref::LoadOp row = matmul.rowLoads.front(), column = matmul.columnLoads.front();
  memref::LoadOp accumulated = accumulator.load;
  scf::ForOp nest = matmul.reduction.nest.front();
  Type half = row.getType();
  if (!(half.isF16() || half.isBF16()) || column.getType() != half ||
      !accumulator.type().isF32())
    return {};
  auto add = dyn_cast<arith::AddFOp>(accumulator.combine);
  if (!add)
    return {};
  Value product = add.getLhs() == accumulated.getResult() ? add.getRhs() : add.getLhs();
  auto multiply = product.getDefiningOp<arith::MulFOp>();
  if (!multiply)
    return {};
  auto widened = [](Value value, memref::LoadOp load) {
    auto extend = value.getDefiningOp<arith::ExtFOp>();
    return extend && extend.getIn() == load.getResult();
  };
  if (!((widened(multiply.getLhs(), row) && widened(multiply.getRhs(), column)) ||
        (widened(multiply.getLhs(), column) && widened(multiply.getRhs(), row))))
    return {};
  // Nothing else computes values: the rest is the accumulator's load and
  // store and index arithmetic for addresses.
  Operation *known[] = {row, column, accumulator.load, accumulator.store, add, multiply,
                        multiply.getLhs().getDefiningOp(), multiply.getRhs().getDefiningOp()};
  for (Operation &op : nest.getBody()->without_terminator())
    if (!llvm::is_contained(known, &op) &&
        !llvm::all_of(op.getResultTypes(), [](Type type) { return type.isIntOrIndex(); }))
      return {};
  return half;
}

int64_t emulationScratchBytes(int64_t threads) {
  return threads / kWarpSize * (kMmaRows * kMmaDepth + kMmaDepth * kMmaColumns) * 4;
}

/// Builds a warp's mma.sync of fragments in 32-bit registers.
class WarpMmaBuilder {
public:
  WarpMmaBuilder(MatmulTiler &tiler, WarpMma kind, Type half, Value lane, Value warp,
                 Value scratchA, Value scratchB)
      : tiler(tiler), b(tiler.b), loc(tiler.loc), kind(kind), half(half), lane(lane), warp(warp),
        scratchA(scratchA), scratchB(scratchB) {
    g = arith::DivUIOp::create(b, loc, lane, tiler.index(4));
    t = arith::RemUIOp::create(b, loc, lane, tiler.index(4));
  }

  Value add(Value x, int64_t y) { return arith::AddIOp::create(b, loc, x, tiler.index(y)); }
  Value mul(Value x, int64_t y) { return arith::MulIOp::create(b, loc, x, tiler.index(y)); }

  Value i32Constant(int64_t value) {
    return arith::ConstantIntOp::create(b, loc, b.getI32Type(), value);
  }

  /// Two halves in a 32-bit register, `low` in the low half.
  Value pack(Value low, Value high) {
    auto bits = [&](Value value) {
      return arith::ExtUIOp::create(b, loc, b.getI32Type(),
                                    arith::BitcastOp::create(b, loc, b.getI16Type(), value));
    };
    Value shifted = arith::ShLIOp::create(b, loc, bits(high), i32Constant(16));
    return arith::OrIOp::create(b, loc, bits(low), shifted);
  }

  /// Half `which` of a register, as float32 (the emulation's).
  Value unpack(Value reg, int which) {
    if (which)
      reg = arith::ShRUIOp::create(b, loc, reg, i32Constant(16));
    Value bits = arith::TruncIOp::create(b, loc, b.getI16Type(), reg);
    Value value = arith::BitcastOp::create(b, loc, half, bits);
    return arith::ExtFOp::create(b, loc, b.getF32Type(), value);
  }

  /// A register of two consecutive elements of a row-major tile.
  Value pair(Value tile, Value first, int64_t stride) {
    Value x = memref::LoadOp::create(b, loc, tile, ValueRange{first});
    Value y = memref::LoadOp::create(b, loc, tile, ValueRange{add(first, stride)});
    return pack(x, y);
  }

  /// A's fragment for the 16 rows from tile row `row` and k from `k`.
  SmallVector<Value, 4> fragmentA(Value tile, Value row, Value k) {
    int64_t depth = tiler.matmul.shape.depth;
    Value r = arith::AddIOp::create(b, loc, row, g);
    Value kk = arith::AddIOp::create(b, loc, mul(t, 2), k);
    auto at = [&](int64_t dr, int64_t dk) {
      return arith::AddIOp::create(b, loc, mul(add(r, dr), depth), add(kk, dk)).getResult();
    };
    return {pair(tile, at(0, 0), 1), pair(tile, at(8, 0), 1), pair(tile, at(0, 8), 1),
            pair(tile, at(8, 8), 1)};
  }

  /// B's fragment for the 8 columns from tile column `column` and k from `k`.
  SmallVector<Value, 2> fragmentB(Value tile, Value column, Value k) {
    int64_t columns = tiler.matmul.shape.columns;
    Value n = arith::AddIOp::create(b, loc, column, g);
    Value kk = arith::AddIOp::create(b, loc, mul(t, 2), k);
    auto at = [&](int64_t dk) {
      return arith::AddIOp::create(b, loc, mul(add(kk, dk), columns), n).getResult();
    };
    return {pair(tile, at(0), columns), pair(tile, at(8), columns)};
  }

  /// D = A * B + C for the warp: this lane's four accumulators.
  SmallVector<Value, 4> mma(ArrayRef<Value> a, ArrayRef<Value> bRegs, ArrayRef<Value> c) {
    return kind == WarpMma::Nvvm ? nvvm(a, bRegs, c) : emulated(a, bRegs, c);
  }

private:
  SmallVector<Value, 4> nvvm(ArrayRef<Value> a, ArrayRef<Value> bRegs, ArrayRef<Value> c) {
    MLIRContext *context = b.getContext();
    // bf16 multiplicands are i32 registers; f16 ones, vector<2xf16>.
    auto operands = [&](ArrayRef<Value> regs) {
      SmallVector<Value> values(regs);
      if (half.isF16())
        for (Value &value : values)
          value = LLVM::BitcastOp::create(b, loc, VectorType::get({2}, half), value);
      return values;
    };
    NVVM::MMATypes type = half.isBF16() ? NVVM::MMATypes::bf16 : NVVM::MMATypes::f16;
    Type f32 = b.getF32Type();
    auto result = LLVM::LLVMStructType::getLiteral(context, {f32, f32, f32, f32});
    auto op = NVVM::MmaOp::create(
        b, loc, result, operands(a), operands(bRegs), c,
        ArrayRef<int64_t>{kMmaRows, kMmaColumns, kMmaDepth}, std::nullopt, std::nullopt,
        std::array<NVVM::MMATypes, 2>{type, type},
        std::array<NVVM::MMALayout, 2>{NVVM::MMALayout::row, NVVM::MMALayout::col});
    SmallVector<Value, 4> d;
    for (int64_t i = 0; i < 4; ++i)
      d.push_back(LLVM::ExtractValueOp::create(b, loc, op.getResult(), ArrayRef<int64_t>{i}));
    return d;
  }

  /// Every lane scatters its fragments into the warp's scratch matrices
  /// (float32), then computes its four outputs from them.
  SmallVector<Value, 4> emulated(ArrayRef<Value> a, ArrayRef<Value> bRegs, ArrayRef<Value> c) {
    Value aBase = mul(warp, kMmaRows * kMmaDepth), bBase = mul(warp, kMmaDepth * kMmaColumns);
    auto storeA = [&](Value value, Value row, Value k) {
      Value at = arith::AddIOp::create(
          b, loc, aBase, arith::AddIOp::create(b, loc, mul(row, kMmaDepth), k));
      memref::StoreOp::create(b, loc, value, scratchA, ValueRange{at});
    };
    auto storeB = [&](Value value, Value k, Value n) {
      Value at = arith::AddIOp::create(
          b, loc, bBase, arith::AddIOp::create(b, loc, mul(k, kMmaColumns), n));
      memref::StoreOp::create(b, loc, value, scratchB, ValueRange{at});
    };
    Value k0 = mul(t, 2);
    for (int64_t reg = 0; reg < 4; ++reg)
      for (int which = 0; which < 2; ++which)
        storeA(unpack(a[reg], which), add(g, reg % 2 ? 8 : 0), add(k0, (reg / 2) * 8 + which));
    for (int64_t reg = 0; reg < 2; ++reg)
      for (int which = 0; which < 2; ++which)
        storeB(unpack(bRegs[reg], which), add(k0, reg * 8 + which), g);
    ::mlir::gpu::BarrierOp::create(b, loc);
    SmallVector<Value, 4> d;
    for (int64_t i = 0; i < 4; ++i) {
      Value row = add(g, i / 2 ? 8 : 0), column = add(k0, i % 2);
      auto sum = scf::ForOp::create(b, loc, tiler.index(0), tiler.index(kMmaDepth),
                                    tiler.index(1), ValueRange{c[i]});
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(sum.getBody());
      Value k = sum.getInductionVar();
      Value x = memref::LoadOp::create(
          b, loc, scratchA,
          ValueRange{arith::AddIOp::create(b, loc, aBase,
                                           arith::AddIOp::create(b, loc, mul(row, kMmaDepth), k))});
      Value y = memref::LoadOp::create(
          b, loc, scratchB,
          ValueRange{arith::AddIOp::create(
              b, loc, bBase, arith::AddIOp::create(b, loc, mul(k, kMmaColumns), column))});
      Value next = arith::AddFOp::create(b, loc, sum.getRegionIterArgs()[0],
                                         arith::MulFOp::create(b, loc, x, y));
      scf::YieldOp::create(b, loc, next);
      b.setInsertionPointAfter(sum);
      d.push_back(sum.getResult(0));
    }
    // Every lane has read the scratch before the next product fills it.
    ::mlir::gpu::BarrierOp::create(b, loc);
    return d;
  }

  MatmulTiler &tiler;
  OpBuilder &b;
  Location loc;
  WarpMma kind;
  Type half;
  Value lane, warp, scratchA, scratchB, g, t;
};

} // namespace

std::optional<WarpMma> kiln::gpu::parseWarpMma(StringRef name) {
  if (name.empty() || name == "none")
    return WarpMma::None;
  if (name == "nvvm")
    return WarpMma::Nvvm;
  if (name == "emulated")
    return WarpMma::Emulated;
  return std::nullopt;
}

bool kiln::gpu::useWarpMma(TiledMatmul &matmul, int64_t threads, WarpMma kind,
                           int64_t sharedBytes) {
  if (kind == WarpMma::None || (threads != 128 && threads != 256) || !halfProductElement(matmul))
    return false;
  TiledMatmul candidate = matmul;
  candidate.warpMma = kind;
  int64_t warps = threads / kWarpSize;
  candidate.shape = {kWarpRows * (warps / kWarpsAcross), kWarpColumns * kWarpsAcross, kStageDepth,
                     /*threadRows=*/0, /*threadColumns=*/0};
  if (kind == WarpMma::Emulated)
    candidate.scratchBytes = emulationScratchBytes(threads);
  if (tileBytes(candidate) > sharedBytes)
    return false;
  matmul = std::move(candidate);
  return true;
}

Operation *kiln::gpu::tileMatmulByWarps(TiledMatmul &matmul, const ThreadValues &values,
                                        Value begin, Value end) {
  Type half = halfProductElement(matmul);
  assert(half && "useWarpMma accepted it");
  int64_t warps = values.threads / kWarpSize;
  Value scratchA, scratchB;
  if (matmul.warpMma == WarpMma::Emulated) {
    OpBuilder before(matmul.loop);
    Type f32 = before.getF32Type();
    scratchA = workgroupBuffer(before, matmul.loop.getLoc(), f32, warps * kMmaRows * kMmaDepth);
    scratchB = workgroupBuffer(before, matmul.loop.getLoc(), f32, warps * kMmaDepth * kMmaColumns);
  }
  MatmulTiler tiler(matmul, values, begin, end);
  OpBuilder &b = tiler.b;
  Location loc = tiler.loc;
  Value warp = arith::DivUIOp::create(b, loc, values.thread, tiler.index(kWarpSize));
  Value lane = arith::RemUIOp::create(b, loc, values.thread, tiler.index(kWarpSize));
  WarpMmaBuilder mma(tiler, matmul.warpMma, half, lane, warp, scratchA, scratchB);
  // The warp's outputs start at tile row warpRow and column warpColumn.
  Value warpRow = mma.mul(arith::DivUIOp::create(b, loc, warp, tiler.index(kWarpsAcross)), kWarpRows);
  Value warpColumn =
      mma.mul(arith::RemUIOp::create(b, loc, warp, tiler.index(kWarpsAcross)), kWarpColumns);
  Value g = arith::DivUIOp::create(b, loc, lane, tiler.index(4));
  Value t = arith::RemUIOp::create(b, loc, lane, tiler.index(4));

  // This lane's outputs: accumulator (m, n, i) of mma tile (m, n) is at
  // tile row warpRow + 16m + g + 8(i / 2), column warpColumn + 8n + 2t + i % 2.
  constexpr int64_t kTilesDown = kWarpRows / kMmaRows, kTilesAcross = kWarpColumns / kMmaColumns;
  SmallVector<IRMapping> rowAt;
  SmallVector<Value> rowInside, columns, columnInside;
  for (int64_t m = 0; m < kTilesDown; ++m)
    for (int64_t h = 0; h < 2; ++h) {
      Value tileRow = mma.add(arith::AddIOp::create(b, loc, warpRow, g), m * kMmaRows + 8 * h);
      Value flat = arith::AddIOp::create(b, loc, tiler.row0, tileRow);
      rowInside.push_back(tiler.below(flat, tiler.flatRows));
      rowAt.push_back(tiler.outer);
      tiler.mapRows(flat, rowAt.back());
    }
  for (int64_t n = 0; n < kTilesAcross; ++n)
    for (int64_t i = 0; i < 2; ++i) {
      Value offset = mma.add(arith::AddIOp::create(b, loc, warpColumn, mma.mul(t, 2)),
                             n * kMmaColumns + i);
      columns.push_back(tiler.column(offset));
      columnInside.push_back(tiler.below(columns.back(), tiler.columnEnd));
    }
  Value columnIv = matmul.loop.getInductionVars().back();
  struct Output {
    int64_t row, column; // indices into rowAt and columns
  };
  SmallVector<Output> outputs;
  for (int64_t m = 0; m < kTilesDown; ++m)
    for (int64_t n = 0; n < kTilesAcross; ++n)
      for (int64_t i = 0; i < 4; ++i)
        outputs.push_back({m * 2 + i / 2, n * 2 + i % 2});
  auto outputAt = [&](const Output &output) {
    IRMapping at = rowAt[output.row];
    at.map(columnIv, columns[output.column]);
    return at;
  };
  auto inside = [&](const Output &output) {
    return arith::AndIOp::create(b, loc, rowInside[output.row], columnInside[output.column])
        .getResult();
  };
  SmallVector<Value> initial;
  for (const Output &output : outputs)
    initial.push_back(tiler.loadOutput(outputAt(output), inside(output)));

  scf::ForOp stages = tiler.openStages(initial);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(stages.getBody());
    // Zeros past the ends: every k of a step is multiplied.
    tiler.loadStage(stages.getInductionVar(), /*zeroOutside=*/true);
    Value rowTile = tiler.rowTiles.front(), columnTile = tiler.columnTiles.front();
    // The stage's mma steps (a loop, which LLVM unrolls for NVVM: the
    // emulation's code stays half the size).
    auto steps = scf::ForOp::create(b, loc, tiler.index(0), tiler.index(kStageDepth),
                                    tiler.index(kMmaDepth), stages.getRegionIterArgs());
    {
      OpBuilder::InsertionGuard inner(b);
      b.setInsertionPointToStart(steps.getBody());
      Value k = steps.getInductionVar();
      SmallVector<Value> accumulators(steps.getRegionIterArgs());
      SmallVector<SmallVector<Value, 4>> a;
      SmallVector<SmallVector<Value, 2>> bFragments;
      for (int64_t m = 0; m < kTilesDown; ++m)
        a.push_back(mma.fragmentA(rowTile, mma.add(warpRow, m * kMmaRows), k));
      for (int64_t n = 0; n < kTilesAcross; ++n)
        bFragments.push_back(mma.fragmentB(columnTile, mma.add(warpColumn, n * kMmaColumns), k));
      for (int64_t m = 0; m < kTilesDown; ++m)
        for (int64_t n = 0; n < kTilesAcross; ++n) {
          MutableArrayRef<Value> c(accumulators.data() + (m * kTilesAcross + n) * 4, 4);
          SmallVector<Value, 4> d = mma.mma(a[m], bFragments[n], c);
          llvm::copy(d, c.begin());
        }
      scf::YieldOp::create(b, loc, accumulators);
    }
    SmallVector<Value> accumulators(steps.getResults());
    // Every warp is done with the tiles before the next stage's load.
    ::mlir::gpu::BarrierOp::create(b, loc);
    scf::YieldOp::create(b, loc, accumulators);
  }
  for (auto [output, value] : llvm::zip(outputs, stages.getResults()))
    tiler.storeOutput(value, outputAt(output), inside(output));
  return tiler.finish();
}
