// Matmul microkernels for the CPU.
//
// The graph lowering marks each matmul generic with its loop order. Here, on
// memrefs, it becomes explicit register-blocked loops (the scheme of BLIS and
// of hand-written GEMM kernels, without packing; see MatmulEmitter.h).
#include "kiln/Dialect/Kernel/Transforms/Passes.h"
#include "kiln/Target/CPU/Passes.h"
#include "MatmulEmitter.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"

namespace kiln::cpu {
#define GEN_PASS_DEF_VECTORIZEMATMULPASS
#include "kiln/Target/CPU/Passes.h.inc"
} // namespace kiln::cpu

using namespace mlir;
using kiln::cpu::MatmulEmitter;

namespace {

struct VectorizeMatmulPass
    : kiln::cpu::impl::VectorizeMatmulPassBase<VectorizeMatmulPass> {
  using Base::Base;

  void runOnOperation() override {
    int64_t bits = vectorBits > 0 ? (int64_t)vectorBits : kiln::cpu::hostVectorBits();
    SmallVector<linalg::GenericOp> matmuls;
    getOperation().walk([&](linalg::GenericOp op) {
      if (auto order = op->getAttrOfType<StringAttr>(kiln::kernel::kContractionAttr))
        if (op.hasPureBufferSemantics() && op.getNumDpsInputs() == 2 &&
            op.getNumDpsInits() == 1)
          matmuls.push_back(op);
    });
    for (linalg::GenericOp op : matmuls) {
      auto cType = cast<MemRefType>(op.getDpsInitOperand(0)->get().getType());
      Type element = cType.getElementType();
      if (!element.isF32() && !element.isF64())
        continue; // integer matmuls keep the generic loops
      int64_t vl = bits / element.getIntOrFloatBitWidth();
      if (vl < 2)
        continue; // no vectors this narrow: keep the generic's loops
      bool transposed =
          op->getAttrOfType<StringAttr>(kiln::kernel::kContractionAttr).getValue() == "ijk";
      OpBuilder b(op);
      Location loc = op.getLoc();
      MatmulEmitter emitter(b, loc, op.getDpsInputOperand(0)->get(),
                            op.getDpsInputOperand(1)->get(),
                            op.getDpsInitOperand(0)->get(), transposed, vl);
      emitter.setPackB(true);
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
