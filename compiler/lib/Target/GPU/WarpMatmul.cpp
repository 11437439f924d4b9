// Matmuls on tensor cores: the tiled strategy (MatmulTiler.h) with each
// warp's 32x32 outputs computed by mma.sync, float32 accumulators in
// registers (see Mapping.h): m16n8k16 for float16 or bfloat16 operands,
// m16n8k8 for float32 ones rounded to TF32 where the user allows it.
//
// The fragments follow PTX's layouts (lane l, g = l / 4, t = l % 4):
// m16n8k16 .f16/.bf16, two halves per 32-bit register, the lower index in
// the low half:
//   A (16x16, row): a0 = A[g][2t..2t+1], a1 = A[g+8][2t..], a2 = A[g][2t+8..],
//                   a3 = A[g+8][2t+8..];
//   B (16x8, col):  b0 = B[2t..2t+1][g], b1 = B[2t+8..2t+9][g];
// m16n8k8 .tf32, one element per register:
//   A (16x8, row):  a0 = A[g][t], a1 = A[g+8][t], a2 = A[g][t+4], a3 = A[g+8][t+4];
//   B (8x8, col):   b0 = B[t][g], b1 = B[t+4][g];
// and for both, C, D (16x8 f32): c0, c1 = C[g][2t], C[g][2t+1]; c2, c3 =
// C[g+8][2t], C[g+8][2t+1].
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
constexpr int64_t kMmaRows = 16, kMmaColumns = 8;
/// Warps side by side in a workgroup's tile; the others stack its rows.
constexpr int64_t kWarpsAcross = 2;

/// The mma's k and the tiles' depth (two mma steps between barriers; float32
/// tiles half as deep, so that they fit Vulkan's 16 KiB with the emulation's
/// scratch).
int64_t mmaDepth(Type element) { return element.isF32() ? 8 : 16; }
int64_t stageDepth(Type element) { return 2 * mmaDepth(element); }

/// The operand element when the nest's body is acc + extf(row) * extf(col)
/// in float32 for float16 or bfloat16 loads, or acc + row * col for float32
/// loads where `allowTf32` (either order each), besides address
/// arithmetic; else null.
Type productElement(const TiledMatmul &matmul, bool allowTf32) {
  if (matmul.rowLoads.size() != 1 || matmul.columnLoads.size() != 1)
    return {};
  const Accumulator &accumulator = matmul.reduction.accumulators.front();
  memref::LoadOp row = matmul.rowLoads.front(), column = matmul.columnLoads.front();
  memref::LoadOp accumulated = accumulator.load;
  scf::ForOp nest = matmul.reduction.nest.front();
  Type element = row.getType();
  bool half = element.isF16() || element.isBF16();
  if (!(half || (element.isF32() && allowTf32)) || column.getType() != element ||
      !accumulator.type().isF32())
    return {};
  auto add = dyn_cast<arith::AddFOp>(accumulator.combine);
  if (!add)
    return {};
  Value product = add.getLhs() == accumulated.getResult() ? add.getRhs() : add.getLhs();
  auto multiply = product.getDefiningOp<arith::MulFOp>();
  if (!multiply)
    return {};
  // A load's value, widened from a half.
  auto from = [&](Value value, memref::LoadOp load) {
    if (!half)
      return value == load.getResult();
    auto extend = value.getDefiningOp<arith::ExtFOp>();
    return extend && extend.getIn() == load.getResult();
  };
  if (!((from(multiply.getLhs(), row) && from(multiply.getRhs(), column)) ||
        (from(multiply.getLhs(), column) && from(multiply.getRhs(), row))))
    return {};
  // Nothing else computes values: the rest is the accumulator's load and
  // store and index arithmetic for addresses.
  Operation *known[] = {row, column, accumulated, accumulator.store, add, multiply,
                        multiply.getLhs().getDefiningOp(), multiply.getRhs().getDefiningOp()};
  for (Operation &op : nest.getBody()->without_terminator())
    if (!llvm::is_contained(known, &op) &&
        !llvm::all_of(op.getResultTypes(), [](Type type) { return type.isIntOrIndex(); }))
      return {};
  return element;
}

int64_t emulationScratchBytes(int64_t threads, Type element) {
  int64_t depth = mmaDepth(element);
  return threads / kWarpSize * (kMmaRows * depth + depth * kMmaColumns) * 4;
}

/// Builds a warp's mma.sync of fragments in 32-bit registers.
class WarpMmaBuilder {
public:
  WarpMmaBuilder(MatmulTiler &tiler, WarpMma kind, Type element, Value lane, Value warp,
                 Value scratchA, Value scratchB)
      : tiler(tiler), b(tiler.b), loc(tiler.loc), kind(kind), element(element),
        depth(mmaDepth(element)), lane(lane), warp(warp), scratchA(scratchA),
        scratchB(scratchB) {
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

  /// A float32 rounded to TF32 (10 mantissa bits, to nearest, ties away
  /// from zero: cvt.rna.tf32.f32), in a 32-bit register.
  Value tf32(Value value) {
    Value bits = arith::BitcastOp::create(b, loc, b.getI32Type(), value);
    Value rounded = arith::AddIOp::create(b, loc, bits, i32Constant(0x1000));
    return arith::AndIOp::create(b, loc, rounded, i32Constant(int32_t(0xFFFFE000)));
  }

  /// Part `which` of a register, as float32 (the emulation's).
  Value unpack(Value reg, int which) {
    if (element.isF32())
      return arith::BitcastOp::create(b, loc, b.getF32Type(), reg);
    if (which)
      reg = arith::ShRUIOp::create(b, loc, reg, i32Constant(16));
    Value bits = arith::TruncIOp::create(b, loc, b.getI16Type(), reg);
    Value value = arith::BitcastOp::create(b, loc, element, bits);
    return arith::ExtFOp::create(b, loc, b.getF32Type(), value);
  }

  /// A register of the tile's element at `first` and, for halves, the one
  /// `stride` after it.
  Value reg(Value tile, Value first, int64_t stride) {
    Value x = memref::LoadOp::create(b, loc, tile, ValueRange{first});
    if (element.isF32())
      return tf32(x);
    Value y = memref::LoadOp::create(b, loc, tile, ValueRange{add(first, stride)});
    return pack(x, y);
  }

  /// A's fragment for the 16 rows from tile row `row` and k from `k`.
  SmallVector<Value, 4> fragmentA(Value tile, Value row, Value k) {
    int64_t tileDepth = tiler.matmul.shape.depth;
    Value r = arith::AddIOp::create(b, loc, row, g);
    // Halves: a pair per register, 2t, 2t + 1 (and + 8); TF32: t (and + 4).
    Value kk = arith::AddIOp::create(b, loc, mul(t, element.isF32() ? 1 : 2), k);
    auto at = [&](int64_t dr, int64_t dk) {
      return arith::AddIOp::create(b, loc, mul(add(r, dr), tileDepth), add(kk, dk)).getResult();
    };
    int64_t half = depth / 2;
    return {reg(tile, at(0, 0), 1), reg(tile, at(8, 0), 1), reg(tile, at(0, half), 1),
            reg(tile, at(8, half), 1)};
  }

  /// B's fragment for the 8 columns from tile column `column` and k from `k`.
  SmallVector<Value, 2> fragmentB(Value tile, Value column, Value k) {
    int64_t columns = tiler.matmul.shape.columns;
    Value n = arith::AddIOp::create(b, loc, column, g);
    Value kk = arith::AddIOp::create(b, loc, mul(t, element.isF32() ? 1 : 2), k);
    auto at = [&](int64_t dk) {
      return arith::AddIOp::create(b, loc, mul(add(kk, dk), columns), n).getResult();
    };
    return {reg(tile, at(0), columns), reg(tile, at(depth / 2), columns)};
  }

  /// D = A * B + C for the warp: this lane's four accumulators.
  SmallVector<Value, 4> mma(ArrayRef<Value> a, ArrayRef<Value> bRegs, ArrayRef<Value> c) {
    return kind == WarpMma::Nvvm ? nvvm(a, bRegs, c) : emulated(a, bRegs, c);
  }

private:
  SmallVector<Value, 4> nvvm(ArrayRef<Value> a, ArrayRef<Value> bRegs, ArrayRef<Value> c) {
    MLIRContext *context = b.getContext();
    // bf16 and tf32 multiplicands are i32 registers; f16 ones, vector<2xf16>.
    auto operands = [&](ArrayRef<Value> regs) {
      SmallVector<Value> values(regs);
      if (element.isF16())
        for (Value &value : values)
          value = LLVM::BitcastOp::create(b, loc, VectorType::get({2}, element), value);
      return values;
    };
    NVVM::MMATypes type = element.isBF16()  ? NVVM::MMATypes::bf16
                          : element.isF16() ? NVVM::MMATypes::f16
                                            : NVVM::MMATypes::tf32;
    Type f32 = b.getF32Type();
    auto result = LLVM::LLVMStructType::getLiteral(context, {f32, f32, f32, f32});
    auto op = NVVM::MmaOp::create(
        b, loc, result, operands(a), operands(bRegs), c,
        ArrayRef<int64_t>{kMmaRows, kMmaColumns, depth}, std::nullopt, std::nullopt,
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
    Value aBase = mul(warp, kMmaRows * depth), bBase = mul(warp, depth * kMmaColumns);
    auto aAt = [&](Value row, Value k) {
      return arith::AddIOp::create(b, loc, aBase, arith::AddIOp::create(b, loc, mul(row, depth), k))
          .getResult();
    };
    auto bAt = [&](Value k, Value n) {
      return arith::AddIOp::create(b, loc, bBase,
                                   arith::AddIOp::create(b, loc, mul(k, kMmaColumns), n))
          .getResult();
    };
    // Register j's elements (the k of each, from the fragment's layout).
    bool single = element.isF32();
    int64_t perRegister = single ? 1 : 2;
    Value k0 = mul(t, perRegister);
    for (int64_t reg = 0; reg < 4; ++reg)
      for (int which = 0; which < perRegister; ++which)
        memref::StoreOp::create(
            b, loc, unpack(a[reg], which), scratchA,
            ValueRange{aAt(add(g, reg % 2 ? 8 : 0), add(k0, (reg / 2) * (depth / 2) + which))});
    for (int64_t reg = 0; reg < 2; ++reg)
      for (int which = 0; which < perRegister; ++which)
        memref::StoreOp::create(b, loc, unpack(bRegs[reg], which), scratchB,
                                ValueRange{bAt(add(k0, reg * (depth / 2) + which), g)});
    ::mlir::gpu::BarrierOp::create(b, loc);
    SmallVector<Value, 4> d;
    for (int64_t i = 0; i < 4; ++i) {
      Value row = add(g, i / 2 ? 8 : 0), column = add(mul(t, 2), i % 2);
      auto sum = scf::ForOp::create(b, loc, tiler.index(0), tiler.index(depth), tiler.index(1),
                                    ValueRange{c[i]});
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(sum.getBody());
      Value k = sum.getInductionVar();
      Value x = memref::LoadOp::create(b, loc, scratchA, ValueRange{aAt(row, k)});
      Value y = memref::LoadOp::create(b, loc, scratchB, ValueRange{bAt(k, column)});
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
  Type element;
  int64_t depth;
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

bool kiln::gpu::useWarpMma(TiledMatmul &matmul, int64_t threads, WarpMma kind, bool allowTf32,
                           int64_t sharedBytes) {
  if (kind == WarpMma::None || (threads != 128 && threads != 256))
    return false;
  Type element = productElement(matmul, allowTf32);
  if (!element)
    return false;
  TiledMatmul candidate = matmul;
  candidate.warpMma = kind;
  candidate.tf32 = element.isF32();
  int64_t warps = threads / kWarpSize;
  candidate.shape = {kWarpRows * (warps / kWarpsAcross), kWarpColumns * kWarpsAcross,
                     stageDepth(element), /*threadRows=*/0, /*threadColumns=*/0};
  if (kind == WarpMma::Emulated)
    candidate.scratchBytes = emulationScratchBytes(threads, element);
  if (tileBytes(candidate) > sharedBytes)
    return false;
  matmul = std::move(candidate);
  return true;
}

Operation *kiln::gpu::tileMatmulByWarps(TiledMatmul &matmul, const ThreadValues &values,
                                        Value begin, Value end) {
  Type element = productElement(matmul, matmul.tf32);
  assert(element && "useWarpMma accepted it");
  int64_t depth = mmaDepth(element);
  int64_t warps = values.threads / kWarpSize;
  Value scratchA, scratchB;
  if (matmul.warpMma == WarpMma::Emulated) {
    OpBuilder before(matmul.loop);
    Type f32 = before.getF32Type();
    scratchA = workgroupBuffer(before, matmul.loop.getLoc(), f32, warps * kMmaRows * depth);
    scratchB = workgroupBuffer(before, matmul.loop.getLoc(), f32, warps * depth * kMmaColumns);
  }
  MatmulTiler tiler(matmul, values, begin, end);
  OpBuilder &b = tiler.b;
  Location loc = tiler.loc;
  Value warp = arith::DivUIOp::create(b, loc, values.thread, tiler.index(kWarpSize));
  Value lane = arith::RemUIOp::create(b, loc, values.thread, tiler.index(kWarpSize));
  WarpMmaBuilder mma(tiler, matmul.warpMma, element, lane, warp, scratchA, scratchB);
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
    auto steps = scf::ForOp::create(b, loc, tiler.index(0), tiler.index(matmul.shape.depth),
                                    tiler.index(depth), stages.getRegionIterArgs());
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
