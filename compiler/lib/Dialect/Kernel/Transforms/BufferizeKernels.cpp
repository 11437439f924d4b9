// One-Shot Bufferize for kernel functions, writing results in place into the
// kernel's output buffers.
#include "kiln/Dialect/Kernel/Transforms/Passes.h"

#include "mlir/Dialect/Arith/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Bufferization/IR/BufferizableOpInterface.h"
#include "mlir/Dialect/Bufferization/Transforms/OneShotAnalysis.h"
#include "mlir/Dialect/Bufferization/Transforms/Transforms.h"
#include "mlir/Dialect/Linalg/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Tensor/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/IR/PatternMatch.h"

namespace kiln::kernel {
#define GEN_PASS_DEF_BUFFERIZEKERNELSPASS
#include "kiln/Dialect/Kernel/Transforms/Passes.h.inc"
} // namespace kiln::kernel

using namespace mlir;

namespace {

struct BufferizeKernelsPass
    : kiln::kernel::impl::BufferizeKernelsPassBase<BufferizeKernelsPass> {
  void getDependentDialects(DialectRegistry &registry) const override {
    BufferizeKernelsPassBase::getDependentDialects(registry);
    arith::registerBufferizableOpInterfaceExternalModels(registry);
    linalg::registerBufferizableOpInterfaceExternalModels(registry);
    tensor::registerBufferizableOpInterfaceExternalModels(registry);
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
