// One-Shot Bufferize for kernel functions, writing results in place into the
// kernel's output buffers.
#include "kiln/Dialect/Kernel/Transforms/Passes.h"

#include "mlir/Dialect/Arith/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Bufferization/IR/BufferizableOpInterface.h"
#include "mlir/Dialect/Bufferization/IR/DstBufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Bufferization/Transforms/OneShotAnalysis.h"
#include "mlir/Dialect/Bufferization/Transforms/Transforms.h"
#include "mlir/Dialect/Linalg/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/SCF/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Tensor/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"

namespace kiln::kernel {
#define GEN_PASS_DEF_BUFFERIZEKERNELSPASS
#include "kiln/Dialect/Kernel/Transforms/Passes.h.inc"
} // namespace kiln::kernel

using namespace mlir;

namespace {

/// Kiln's destination-style kernel ops (attention, conv2d, sort) write their
/// results into the buffers of their inits: the op is recreated on buffers,
/// with the same attributes and no results.
template <typename KernelOp>
struct DestinationBufferization
    : bufferization::DstBufferizableOpInterfaceExternalModel<DestinationBufferization<KernelOp>,
                                                             KernelOp> {
  bool bufferizesToMemoryRead(Operation *op, OpOperand &operand,
                              const bufferization::AnalysisState &) const {
    return !cast<DestinationStyleOpInterface>(op).isDpsInit(&operand); // inits: write only
  }

  LogicalResult bufferize(Operation *op, RewriterBase &rewriter,
                          const bufferization::BufferizationOptions &options,
                          bufferization::BufferizationState &state) const {
    SmallVector<Value> buffers;
    for (Value operand : op->getOperands()) {
      FailureOr<Value> buffer = bufferization::getBuffer(rewriter, operand, options, state);
      if (failed(buffer))
        return failure();
      buffers.push_back(*buffer);
    }
    rewriter.setInsertionPoint(op);
    OperationState onBuffers(op->getLoc(), op->getName());
    onBuffers.addOperands(buffers);
    onBuffers.addAttributes(op->getAttrs());
    for (unsigned i = 0; i < op->getNumRegions(); ++i)
      onBuffers.addRegion();
    Operation *created = rewriter.create(onBuffers);
    for (auto [from, to] : llvm::zip(op->getRegions(), created->getRegions()))
      to.takeBody(from); // scalar epilogues need no bufferization
    SmallVector<Value> inits;
    for (OpOperand &init : cast<DestinationStyleOpInterface>(op).getDpsInitsMutable())
      inits.push_back(buffers[init.getOperandNumber()]);
    bufferization::replaceOpWithBufferizedValues(rewriter, op, inits);
    return success();
  }
};

/// Gives every linalg op its own destination when its init is a
/// tensor.empty, or a fill of one (a generic that writes an empty tensor
/// without reading anything), that other ops use too: CSE merges the
/// identical fills of two reductions. Empty-tensor elimination would
/// otherwise place both ops into the same output buffer, and one-shot
/// bufferization then lets one overwrite the other's result.
void unshareDestinations(func::FuncOp func) {
  func.walk([](linalg::LinalgOp op) {
    OpBuilder b(op);
    for (OpOperand &init : op.getDpsInitsMutable()) {
      Value value = init.get();
      if (value.hasOneUse())
        continue;
      if (auto empty = value.getDefiningOp<tensor::EmptyOp>()) {
        init.set(b.clone(*empty)->getResult(0));
        continue;
      }
      auto fill = value.getDefiningOp<linalg::LinalgOp>();
      if (!fill || fill->getNumResults() != 1 || fill.getNumDpsInits() != 1 ||
          llvm::any_of(fill.getDpsInputs(),
                       [](Value v) { return isa<RankedTensorType>(v.getType()); }))
        continue;
      auto empty = fill.getDpsInits()[0].getDefiningOp<tensor::EmptyOp>();
      if (!empty)
        continue;
      IRMapping mapping;
      mapping.map(empty.getResult(), b.clone(*empty)->getResult(0));
      init.set(b.clone(*fill, mapping)->getResult(0));
    }
  });
}

struct BufferizeKernelsPass
    : kiln::kernel::impl::BufferizeKernelsPassBase<BufferizeKernelsPass> {
  void getDependentDialects(DialectRegistry &registry) const override {
    BufferizeKernelsPassBase::getDependentDialects(registry);
    arith::registerBufferizableOpInterfaceExternalModels(registry);
    linalg::registerBufferizableOpInterfaceExternalModels(registry);
    scf::registerBufferizableOpInterfaceExternalModels(registry); // cumsum's scan loop
    tensor::registerBufferizableOpInterfaceExternalModels(registry);
    registry.addExtension(+[](MLIRContext *ctx, kiln::kernel::KernelDialect *) {
      kiln::kernel::AttentionOp::attachInterface<
          DestinationBufferization<kiln::kernel::AttentionOp>>(*ctx);
      kiln::kernel::Conv2dOp::attachInterface<DestinationBufferization<kiln::kernel::Conv2dOp>>(
          *ctx);
      kiln::kernel::SortOp::attachInterface<DestinationBufferization<kiln::kernel::SortOp>>(*ctx);
    });
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    bufferization::OneShotBufferizationOptions options;
    options.setFunctionBoundaryTypeConversion(
        bufferization::LayoutMapOption::IdentityLayoutMap);
    options.unknownTypeConverterFn =
        [](TensorType type, Attribute memorySpace,
           const bufferization::BufferizationOptions &) {
          return bufferization::getMemRefTypeWithStaticIdentityLayout(type, memorySpace);
        };
    // Copies become linalg.copy so they turn into (distributed) loops like
    // every other op, instead of calls into a runtime library.
    options.memCpyFn = [](OpBuilder &b, Location loc, Value from, Value to) {
      linalg::CopyOp::create(b, loc, from, to);
      return success();
    };
    IRRewriter rewriter(&getContext());
    for (auto func : module.getOps<func::FuncOp>()) {
      if (!func->hasAttr(kiln::kernel::kKernelAttr) || func.isExternal())
        continue;
      unshareDestinations(func);
      if (failed(bufferization::eliminateEmptyTensors(rewriter, func))) {
        func.emitOpError("could not place results in their output buffers");
        return signalPassFailure();
      }
      bufferization::BufferizationState state;
      if (failed(bufferization::runOneShotBufferize(func, options, state))) {
        func.emitOpError("could not be bufferized");
        return signalPassFailure();
      }
    }
  }
};

} // namespace
