// Mapped kernel functions become gpu.modules with the bare-pointer kernel
// ABI of CUDA and ROCm: the bindings as device pointers, then the size
// symbols (see Passes.td).
#include "kiln/Target/GPU/Passes.h"

#include "kiln/Dialect/Kernel/IR/KernelOps.h"
#include "kiln/Target/GPU/MappedKernel.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/SymbolTable.h"

namespace kiln::gpu {
#define GEN_PASS_DEF_FORMKERNELMODULESPASS
#include "kiln/Target/GPU/Passes.h.inc"
} // namespace kiln::gpu

using namespace mlir;

namespace {

bool inWorkgroupMemory(MemRefType type) {
  auto space = dyn_cast_or_null<gpu::AddressSpaceAttr>(type.getMemorySpace());
  return space && space.getValue() == gpu::AddressSpace::Workgroup;
}

struct FormKernelModulesPass : kiln::gpu::impl::FormKernelModulesPassBase<FormKernelModulesPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    module->setAttr(gpu::GPUDialect::getContainerModuleAttrName(), UnitAttr::get(&getContext()));
    for (auto func : llvm::to_vector(module.getOps<func::FuncOp>())) {
      if (!func->hasAttr(kiln::kernel::kKernelAttr) || func.isExternal())
        continue;
      if (failed(form(module, func)))
        return signalPassFailure();
    }
    // The constants now live in the kernels' modules.
    for (auto global : llvm::to_vector(module.getOps<memref::GlobalOp>()))
      if (SymbolTable::symbolKnownUseEmpty(global, module))
        global.erase();
  }

  LogicalResult form(ModuleOp module, func::FuncOp func) {
    MLIRContext *context = &getContext();
    FailureOr<kiln::gpu::MappedKernel> mapped = kiln::gpu::mappedKernel(func);
    if (failed(mapped))
      return failure();
    unsigned numBindings = mapped->numBindings, numSymbols = mapped->numSymbols;
    if (!func.getBody().hasOneBlock())
      return func.emitOpError("has ") << func.getBody().getBlocks().size()
                                      << " blocks: a GPU kernel module takes a single-block body";

    OpBuilder b(context);
    b.setInsertionPointToEnd(module.getBody());
    auto gpuModule = gpu::GPUModuleOp::create(b, func.getLoc(), func.getSymName());
    SmallVector<Type> argumentTypes;
    for (unsigned i = 0; i < numBindings; ++i) {
      auto type = dyn_cast<MemRefType>(func.getArgument(2 + i).getType());
      // The bare-pointer convention passes one pointer per memref: its
      // shape and strides must be known.
      if (!type || !type.hasStaticShape() || !type.getLayout().isIdentity())
        return func.emitOpError("binding ") << i << " is not a dense memref of static shape";
      argumentTypes.push_back(type);
    }
    for (unsigned j = 0; j < numSymbols; ++j)
      argumentTypes.push_back(IntegerType::get(context, 64));
    b.setInsertionPointToStart(gpuModule.getBody());
    auto kernel = gpu::GPUFuncOp::create(b, func.getLoc(), func.getSymName(),
                                         FunctionType::get(context, argumentTypes, {}));
    kernel->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), UnitAttr::get(context));
    kernel.setKnownBlockSizeAttr(DenseI32ArrayAttr::get(context, mapped->workgroupSize));

    // The old body goes after the new entry block, which binds the old
    // arguments, then the two merge.
    Block &newEntry = kernel.getBody().front();
    Block &oldEntry = func.getBody().front();
    b.setInsertionPointToStart(&newEntry);
    Location loc = func.getLoc();
    for (unsigned i = 0; i < numBindings; ++i)
      oldEntry.getArgument(2 + i).replaceAllUsesWith(newEntry.getArgument(i));
    for (unsigned j = 0; j < numSymbols; ++j) {
      Value symbol = arith::IndexCastOp::create(b, loc, b.getIndexType(),
                                                newEntry.getArgument(numBindings + j));
      oldEntry.getArgument(2 + numBindings + j).replaceAllUsesWith(symbol);
    }
    Operation *terminator = oldEntry.getTerminator();
    b.setInsertionPoint(terminator);
    gpu::ReturnOp::create(b, terminator->getLoc());
    terminator->erase();
    newEntry.getOperations().splice(newEntry.end(), oldEntry.getOperations());
    func.erase();
    if (failed(attributeWorkgroupMemory(kernel)))
      return failure();
    return copyConstants(kernel, module, gpuModule);
  }

  /// Workgroup buffers become the kernel's workgroup attributions (static
  /// shared memory); any other allocation would be a heap allocation per
  /// thread, which kernels must not make.
  static LogicalResult attributeWorkgroupMemory(gpu::GPUFuncOp kernel) {
    SmallVector<memref::AllocOp> allocations;
    kernel.walk([&](memref::AllocOp alloc) { allocations.push_back(alloc); });
    for (memref::AllocOp alloc : allocations) {
      MemRefType type = alloc.getType();
      if (!inWorkgroupMemory(type) || !type.hasStaticShape())
        return alloc.emitOpError("allocates ")
               << type << " in a GPU kernel: only workgroup memory of static size can be";
      Value attribution = kernel.addWorkgroupAttribution(type, alloc.getLoc());
      for (Operation *user : llvm::to_vector(alloc->getUsers()))
        if (isa<memref::DeallocOp>(user))
          user->erase();
      alloc.replaceAllUsesWith(attribution);
      alloc.erase();
    }
    return success();
  }

  /// The constants the kernel reads (memref.globals bufferization made)
  /// are copied into its module, where the NVVM lowering makes them device
  /// globals.
  static LogicalResult copyConstants(gpu::GPUFuncOp kernel, ModuleOp module,
                                     gpu::GPUModuleOp gpuModule) {
    SymbolTable inKernelModule(gpuModule);
    WalkResult walked = kernel.walk([&](memref::GetGlobalOp use) {
      if (inKernelModule.lookup(use.getNameAttr().getAttr()))
        return WalkResult::advance();
      auto global = SymbolTable::lookupNearestSymbolFrom<memref::GlobalOp>(module, use.getNameAttr());
      if (!global || !global.getConstant() || !global.getInitialValue()) {
        use.emitOpError("reads a global that is not a constant, which a GPU kernel cannot reach");
        return WalkResult::interrupt();
      }
      inKernelModule.insert(global->clone());
      return WalkResult::advance();
    });
    return failure(walked.wasInterrupted());
  }
};

} // namespace
