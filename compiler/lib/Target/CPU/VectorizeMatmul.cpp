// Matmul microkernels for the CPU.
//
// The graph lowering marks each matmul generic with its loop order. Here, on
// memrefs, it becomes explicit register-blocked loops (the scheme of BLIS and
// of hand-written GEMM kernels; see MatmulEmitter.h), and a kernel that is a
// matmul with a pointwise epilogue is marked so workgroups split its columns.
#include "kiln/Dialect/Kernel/Transforms/Passes.h"
#include "kiln/Target/CPU/Passes.h"
#include "MatmulEmitter.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"

namespace kiln::cpu {
#define GEN_PASS_DEF_VECTORIZEMATMULPASS
#include "kiln/Target/CPU/Passes.h.inc"
} // namespace kiln::cpu

using namespace mlir;
using kiln::cpu::MatmulEmitter;

namespace {

/// Whether workgroups may split the columns of `func` as well as its rows:
/// its one matmul has a 2-D result of static width, and every other op is
/// pointwise over that same [rows, N] space (a 2-D all-parallel generic whose
/// outputs it indexes as (i, j)) and reads what the kernel writes only at
/// (i, j), or is an allocation, a constant, index arithmetic or a view of an
/// argument at the run's sizes (symbolic rows). Each such generic becomes an
/// i loop around a j loop, as the matmul emitter's nests.
bool columnsSplit(func::FuncOp func, linalg::GenericOp matmul) {
  auto cType = cast<MemRefType>(matmul.getDpsInitOperand(0)->get().getType());
  if (cType.getRank() != 2 || cType.isDynamicDim(1))
    return false;
  DenseSet<Value> written;
  func.walk([&](linalg::LinalgOp op) {
    for (OpOperand &init : op.getDpsInitsMutable())
      written.insert(init.get());
  });
  auto sameSpace = [&](Value v) {
    auto type = dyn_cast<MemRefType>(v.getType());
    return type && type.getRank() == 2 && type.getDimSize(1) == cType.getDimSize(1) &&
           type.getDimSize(0) == cType.getDimSize(0);
  };
  for (Operation &op : func.getBody().front()) {
    if (&op == matmul.getOperation() || isa<func::ReturnOp>(op) ||
        isa<memref::AllocOp, memref::AllocaOp, memref::DeallocOp, memref::DimOp,
            memref::ReinterpretCastOp>(op) ||
        (isa<arith::ArithDialect>(op.getDialect()) && op.getNumRegions() == 0))
      continue;
    auto generic = dyn_cast<linalg::GenericOp>(op);
    if (!generic || !generic.hasPureBufferSemantics() || generic.getNumLoops() != 2 ||
        generic.getNumParallelLoops() != 2 || generic->hasAttr(kiln::kernel::kContractionAttr))
      return false;
    for (OpOperand &operand : generic->getOpOperands()) {
      bool isInit = generic.isDpsInit(&operand);
      if (!isInit && !written.contains(operand.get()))
        continue; // computed before the launch: read anywhere
      if (!generic.getMatchingIndexingMap(&operand).isIdentity() || !sameSpace(operand.get()))
        return false;
    }
  }
  return true;
}

/// The argument of `func` holding `rhs` packed into panels as a matmul
/// reading it `transposed` or not takes it (kiln-pack-weights), with its
/// packing, if any.
std::pair<Value, kiln::kernel::PackedRhsAttr> prepackedPanels(func::FuncOp func, Value rhs,
                                                              bool transposed) {
  auto argument = dyn_cast<BlockArgument>(rhs);
  if (!argument || argument.getOwner() != &func.getBody().front())
    return {};
  for (unsigned i = 0; i < func.getNumArguments(); ++i) {
    auto packed = func.getArgAttrOfType<kiln::kernel::PackedRhsAttr>(
        i, kiln::kernel::KernelDialect::kPackedRhsAttrName);
    if (packed && packed.getOf() == argument.getArgNumber() &&
        packed.getTransposed() == transposed)
      return {func.getArgument(i), packed};
  }
  return {};
}

struct VectorizeMatmulPass
    : kiln::cpu::impl::VectorizeMatmulPassBase<VectorizeMatmulPass> {
  using Base::Base;

  void runOnOperation() override {
    SmallVector<linalg::GenericOp> matmuls;
    getOperation().walk([&](linalg::GenericOp op) {
      if (auto order = op->getAttrOfType<StringAttr>(kiln::kernel::kContractionAttr))
        if (op.hasPureBufferSemantics() && op.getNumDpsInputs() == 2 &&
            op.getNumDpsInits() == 1)
          matmuls.push_back(op);
    });
    if (matmuls.empty())
      return;
    auto target = kiln::kernel::requireTarget(getOperation(), getArgument());
    if (failed(target))
      return signalPassFailure();
    for (linalg::GenericOp op : matmuls) {
      auto cType = cast<MemRefType>(op.getDpsInitOperand(0)->get().getType());
      Type element = cType.getElementType();
      if (!element.isF32() && !element.isF64())
        continue; // integer matmuls keep the generic loops
      kiln::cpu::MatmulTiles tiles = kiln::cpu::matmulTiles(*target, element);
      if (tiles.vectorLength < 2)
        continue; // no vectors this narrow: keep the generic's loops
      bool transposed =
          op->getAttrOfType<StringAttr>(kiln::kernel::kContractionAttr).getValue() == "ijk";
      OpBuilder b(op);
      Location loc = op.getLoc();
      MatmulEmitter emitter(b, loc, op.getDpsInputOperand(0)->get(),
                            op.getDpsInputOperand(1)->get(),
                            op.getDpsInitOperand(0)->get(), transposed, tiles);
      emitter.setPackB(true);
      auto [panels, packing] =
          prepackedPanels(getOperation(), op.getDpsInputOperand(1)->get(), transposed);
      if (panels) {
        emitter.setPrepackedB(panels);
        // The packing pass chose the width from the same tiles; a mismatch
        // would read the panels with the wrong stride.
        if (packing.getPanelColumns() != emitter.columnsPerTile()) {
          op.emitOpError() << "reads weights packed in panels of " << packing.getPanelColumns()
                           << " columns, but the micro-kernel tile for "
                           << target->getName() << " is " << emitter.columnsPerTile()
                           << " columns wide: kiln-pack-weights and kiln-vectorize-matmul "
                              "disagree";
          return signalPassFailure();
        }
      }
      if (matmuls.size() == 1 && columnsSplit(getOperation(), op)) {
        func::FuncOp func = getOperation();
        func->setAttr(kiln::kernel::kColumnExtentAttr, b.getI64IntegerAttr(cType.getDimSize(1)));
        func->setAttr(kiln::kernel::kColumnAlignmentAttr,
                      b.getI64IntegerAttr(emitter.columnsPerTile()));
      }
      if (cType.getRank() == 3) {
        auto loop = scf::ForOp::create(
            b, loc, arith::ConstantIndexOp::create(b, loc, 0),
            cType.isDynamicDim(0)
                ? (Value)memref::DimOp::create(b, loc, op.getDpsInitOperand(0)->get(), 0)
                : (Value)arith::ConstantIndexOp::create(b, loc, cType.getDimSize(0)),
            arith::ConstantIndexOp::create(b, loc, 1));
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPointToStart(loop.getBody());
        emitter.emit(loop.getInductionVar());
      } else {
        emitter.emit({});
      }
      op.erase();
    }
  }
};

} // namespace
