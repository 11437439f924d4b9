#include "kiln/Dialect/Kernel/Transforms/Passes.h"

namespace kiln::kernel {
#define GEN_PASS_DEF_EXTRACTKERNELSPASS
#include "kiln/Dialect/Kernel/Transforms/Passes.h.inc"
} // namespace kiln::kernel

using namespace mlir;

namespace {
struct ExtractKernelsPass
    : kiln::kernel::impl::ExtractKernelsPassBase<ExtractKernelsPass> {
  void runOnOperation() override {
    for (auto func : llvm::to_vector(getOperation().getOps<func::FuncOp>()))
      if (!func->hasAttr(kiln::kernel::kKernelAttr))
        func.erase();
  }
};
} // namespace
