// A kernel's small temporaries on the stack (see Passes.td).
#include "kiln/Dialect/Kernel/Transforms/Passes.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"

namespace kiln::kernel {
#define GEN_PASS_DEF_STACKTEMPORARIESPASS
#include "kiln/Dialect/Kernel/Transforms/Passes.h.inc"
} // namespace kiln::kernel

using namespace mlir;

namespace {

struct StackTemporariesPass
    : kiln::kernel::impl::StackTemporariesPassBase<StackTemporariesPass> {
  using Base::Base;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (!func->hasAttr(kiln::kernel::kKernelAttr) || func.isExternal())
      return;
    int64_t budget = maxBytes;
    for (auto alloc : llvm::to_vector(func.getBody().front().getOps<memref::AllocOp>())) {
      MemRefType type = alloc.getType();
      if (!type.hasStaticShape() || !type.getLayout().isIdentity() ||
          !type.getElementType().isIntOrFloat())
        continue;
      int64_t bytes = type.getNumElements() *
                      llvm::divideCeil(type.getElementType().getIntOrFloatBitWidth(), 8);
      if (bytes > budget)
        continue;
      // Deallocations would free stack memory: there must be none yet.
      if (llvm::any_of(alloc->getUsers(), [](Operation *user) { return isa<memref::DeallocOp>(user); }))
        continue;
      budget -= bytes;
      OpBuilder b(alloc);
      auto alloca = memref::AllocaOp::create(b, alloc.getLoc(), type, ValueRange{},
                                             alloc.getAlignmentAttr());
      alloc.replaceAllUsesWith(alloca.getResult());
      alloc.erase();
    }
  }
};

} // namespace
