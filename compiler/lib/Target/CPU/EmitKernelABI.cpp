#include "kiln/Dialect/Kernel/Transforms/Passes.h"
#include "kiln/Target/CPU/Passes.h"

namespace kiln::cpu {
#define GEN_PASS_DEF_EMITKERNELABIPASS
#include "kiln/Target/CPU/Passes.h.inc"
} // namespace kiln::cpu

using namespace mlir;

namespace {
struct EmitKernelABIPass
    : kiln::cpu::impl::EmitKernelABIPassBase<EmitKernelABIPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto i64 = IntegerType::get(&getContext(), 64);
    auto ptr = LLVM::LLVMPointerType::get(&getContext());
    for (auto body : llvm::to_vector(module.getOps<LLVM::LLVMFuncOp>())) {
      if (!body->hasAttr(kiln::kernel::kKernelAttr) || body.isExternal())
        continue;
      LLVM::LLVMFunctionType type = body.getFunctionType();
      auto symbols = body->getAttrOfType<IntegerAttr>(kiln::kernel::kNumSymbolsAttr);
      unsigned numSymbols = symbols ? symbols.getInt() : 0;
      if (type.getNumParams() < 2 + numSymbols || type.getParamType(0) != i64 ||
          type.getParamType(1) != i64 ||
          llvm::any_of(type.getParams().drop_front(2).drop_back(numSymbols),
                       [&](Type t) { return t != ptr; }) ||
          llvm::any_of(type.getParams().take_back(numSymbols),
                       [&](Type t) { return t != i64; })) {
        body.emitOpError("kernel must take (i64, i64, ptr..., i64 symbols...) after "
                         "lowering with the bare-pointer memref convention");
        return signalPassFailure();
      }
      unsigned numBindings = type.getNumParams() - 2 - numSymbols;
      std::string name = body.getName().str();
      body.setName(name + "_body");
      body.setLinkage(LLVM::Linkage::Internal);
      body->removeAttr(kiln::kernel::kKernelAttr);

      OpBuilder b(body);
      Location loc = body.getLoc();
      auto wrapper = LLVM::LLVMFuncOp::create(
          b, loc, name,
          LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(&getContext()),
                                      {i64, i64, ptr}));
      Block *entry = wrapper.addEntryBlock(b);
      b.setInsertionPointToStart(entry);
      SmallVector<Value> args{entry->getArgument(0), entry->getArgument(1)};
      // The bindings array holds the buffer pointers, then the size symbols'
      // values as int64s in pointer-sized slots.
      for (unsigned i = 0; i < numBindings + numSymbols; ++i) {
        Value slot = LLVM::GEPOp::create(b, loc, ptr, ptr, entry->getArgument(2),
                                         ArrayRef<LLVM::GEPArg>{(int32_t)i});
        args.push_back(LLVM::LoadOp::create(b, loc, i < numBindings ? (Type)ptr : (Type)i64, slot));
      }
      LLVM::CallOp::create(b, loc, body, args);
      LLVM::ReturnOp::create(b, loc, ValueRange{});
    }
  }
};
} // namespace
