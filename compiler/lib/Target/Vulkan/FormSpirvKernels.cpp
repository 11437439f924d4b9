// Mapped kernel functions become gpu.funcs with the Vulkan kernel ABI:
// flat storage buffers and one push-constant block (see Passes.td).
#include "kiln/Target/Vulkan/Passes.h"

#include "kiln/Dialect/Kernel/IR/KernelOps.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/Transforms/Transforms.h"
#include "mlir/Dialect/SPIRV/IR/TargetAndABI.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace kiln::vulkan {
#define GEN_PASS_DEF_FORMSPIRVKERNELSPASS
#include "kiln/Target/Vulkan/Passes.h.inc"
} // namespace kiln::vulkan

using namespace mlir;

namespace {

struct FormSpirvKernelsPass
    : kiln::vulkan::impl::FormSpirvKernelsPassBase<FormSpirvKernelsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto target = kiln::kernel::requireTarget(module, getArgument());
    if (failed(target))
      return signalPassFailure();
    auto environment = targetEnvironment(*target);
    if (failed(environment)) {
      module.emitError("kiln_kernel.target features must be '<SPIR-V capabilities>;<SPIR-V "
                       "extensions>', comma-separated, not '")
          << (*target).getFeatures() << "'";
      return signalPassFailure();
    }
    targetEnv = *environment;
    module->setAttr(gpu::GPUDialect::getContainerModuleAttrName(), UnitAttr::get(&getContext()));
    for (auto func : llvm::to_vector(module.getOps<func::FuncOp>())) {
      if (!func->hasAttr(kiln::kernel::kKernelAttr) || func.isExternal())
        continue;
      if (failed(form(module, func)))
        return signalPassFailure();
    }
  }

  /// The SPIR-V environment the target describes: its features are
  /// "<capabilities>;<extensions>".
  FailureOr<spirv::TargetEnvAttr> targetEnvironment(kiln::kernel::TargetAttr target) {
    auto [capabilityList, extensionList] = target.getFeatures().split(';');
    SmallVector<spirv::Capability> capabilities;
    SmallVector<spirv::Extension> extensions;
    for (StringRef name : llvm::split(capabilityList, ',')) {
      auto capability = spirv::symbolizeCapability(name);
      if (!capability)
        return failure();
      capabilities.push_back(*capability);
    }
    for (StringRef name : llvm::split(extensionList, ',')) {
      if (name.empty())
        continue;
      auto extension = spirv::symbolizeExtension(name);
      if (!extension)
        return failure();
      extensions.push_back(*extension);
    }
    MLIRContext *context = &getContext();
    auto triple = spirv::VerCapExtAttr::get(spirv::Version::V_1_3, capabilities, extensions, context);
    return spirv::TargetEnvAttr::get(triple, spirv::getDefaultResourceLimits(context),
                                     spirv::ClientAPI::Vulkan);
  }

  spirv::TargetEnvAttr targetEnv;

  /// The flat buffer of each binding, and its element size in bytes: its
  /// offset in elements is its push-constant word (the binding's index)
  /// divided by that.
  using Bindings = DenseMap<Value, std::pair<unsigned, int64_t>>;

  LogicalResult form(ModuleOp module, func::FuncOp func) {
    MLIRContext *context = &getContext();
    auto workgroupSize = func->getAttrOfType<DenseI64ArrayAttr>(kiln::kernel::kWorkgroupSizeAttr);
    if (!workgroupSize)
      return func.emitOpError("has no ") << kiln::kernel::kWorkgroupSizeAttr
                                         << ": map it to workgroups first (kiln-gpu-map-workgroups)";
    auto numSymbolsAttr = func->getAttrOfType<IntegerAttr>(kiln::kernel::kNumSymbolsAttr);
    unsigned numSymbols = numSymbolsAttr ? numSymbolsAttr.getInt() : 0;
    unsigned numBindings = func.getNumArguments() - 2 - numSymbols;
    for (unsigned i : {0u, 1u})
      if (!func.getArgument(i).use_empty())
        return func.emitOpError("still uses its workgroup id or count arguments: map it to "
                                "workgroups first (kiln-gpu-map-workgroups)");

    OpBuilder b(context);
    b.setInsertionPointToEnd(module.getBody());
    auto gpuModule = gpu::GPUModuleOp::create(b, func.getLoc(), func.getSymName());
    gpuModule->setAttr(spirv::getTargetEnvAttrName(), targetEnv);
    SmallVector<Type> argumentTypes;
    for (unsigned i = 0; i < numBindings; ++i) {
      auto type = dyn_cast<MemRefType>(func.getArgument(2 + i).getType());
      if (!type || !type.hasStaticShape() || !type.getLayout().isIdentity())
        return func.emitOpError("binding ") << i << " is not a dense memref of static shape";
      argumentTypes.push_back(MemRefType::get({ShapedType::kDynamic}, type.getElementType()));
    }
    auto pushConstantSpace = spirv::StorageClassAttr::get(context, spirv::StorageClass::PushConstant);
    auto pushConstantType =
        MemRefType::get({std::max<int64_t>(1, numBindings + numSymbols)},
                        IntegerType::get(context, 32), MemRefLayoutAttrInterface(),
                        pushConstantSpace);
    argumentTypes.push_back(pushConstantType);
    b.setInsertionPointToStart(gpuModule.getBody());
    auto kernel = gpu::GPUFuncOp::create(b, func.getLoc(), func.getSymName(),
                                         FunctionType::get(context, argumentTypes, {}));
    kernel->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), UnitAttr::get(context));
    SmallVector<int32_t> size(workgroupSize.asArrayRef().begin(), workgroupSize.asArrayRef().end());
    kernel->setAttr(spirv::getEntryPointABIAttrName(),
                    spirv::getEntryPointABIAttr(context, size));
    kernel.setKnownBlockSizeAttr(DenseI32ArrayAttr::get(context, size));

    // The old body goes after the new entry block, which binds the old
    // arguments, then the two merge.
    Block &newEntry = kernel.getBody().front();
    Block &oldEntry = func.getBody().front();
    b.setInsertionPointToStart(&newEntry);
    Location loc = func.getLoc();
    Value pushConstants = newEntry.getArgument(numBindings);
    auto word = [&](unsigned index) -> Value {
      Value at = arith::ConstantIndexOp::create(b, loc, index);
      Value value = memref::LoadOp::create(b, loc, pushConstants, at);
      return arith::IndexCastUIOp::create(b, loc, b.getIndexType(), value);
    };
    Bindings bindings;
    SmallVector<Value> replacements(oldEntry.getNumArguments());
    for (unsigned i = 0; i < numBindings; ++i) {
      Value flat = newEntry.getArgument(i);
      auto type = cast<MemRefType>(func.getArgument(2 + i).getType());
      int64_t elementBytes = llvm::divideCeil(type.getElementTypeBitWidth(), 8);
      bindings[flat] = {i, elementBytes};
      SmallVector<OpFoldResult> sizes, strides;
      int64_t stride = 1;
      for (int64_t dim : llvm::reverse(type.getShape())) {
        strides.insert(strides.begin(), b.getIndexAttr(stride));
        sizes.insert(sizes.begin(), b.getIndexAttr(dim));
        stride *= dim;
      }
      replacements[2 + i] = memref::ReinterpretCastOp::create(b, loc, type, flat, b.getIndexAttr(0),
                                                              sizes, strides);
    }
    for (unsigned j = 0; j < numSymbols; ++j)
      replacements[2 + numBindings + j] = word(numBindings + j);
    Operation *terminator = oldEntry.getTerminator();
    b.setInsertionPoint(terminator);
    gpu::ReturnOp::create(b, terminator->getLoc());
    terminator->erase();
    // Unused (checked above): the workgroup id and count.
    replacements[0] = replacements[1] = Value();
    for (unsigned i = 2; i < oldEntry.getNumArguments(); ++i)
      oldEntry.getArgument(i).replaceAllUsesWith(replacements[i]);
    newEntry.getOperations().splice(newEntry.end(), oldEntry.getOperations());
    func.erase();
    return flattenAccesses(kernel, bindings);
  }

  /// Rewrites every load and store onto the flat buffers.
  LogicalResult flattenAccesses(gpu::GPUFuncOp kernel, const Bindings &bindings) {
    RewritePatternSet patterns(&getContext());
    memref::populateFoldMemRefAliasOpPatterns(patterns);
    // Sizes of views come from the sizes they were made with.
    memref::populateResolveRankedShapedTypeResultDimsPatterns(patterns);
    memref::DimOp::getCanonicalizationPatterns(patterns, &getContext());
    if (failed(applyPatternsGreedily(kernel, std::move(patterns))))
      return kernel.emitOpError("could not fold its memref views into their accesses");
    // Each binding's offset in elements, read at entry (after the folding,
    // which would erase these while they have no uses yet).
    DenseMap<Value, Value> offsets;
    {
      Block &entry = kernel.getBody().front();
      OpBuilder b = OpBuilder::atBlockBegin(&entry);
      Location loc = kernel.getLoc();
      Value pushConstants = entry.getArguments().back();
      for (Value flat : entry.getArguments().drop_back()) {
        auto binding = bindings.lookup(flat);
        Value at = arith::ConstantIndexOp::create(b, loc, binding.first);
        Value word = memref::LoadOp::create(b, loc, pushConstants, at);
        Value bytes = arith::IndexCastUIOp::create(b, loc, b.getIndexType(), word);
        offsets[flat] = arith::DivUIOp::create(
            b, loc, bytes, arith::ConstantIndexOp::create(b, loc, binding.second));
      }
    }
    SmallVector<Operation *> accesses;
    kernel.walk([&](Operation *op) {
      if (isa<memref::LoadOp, memref::StoreOp, memref::DimOp>(op))
        accesses.push_back(op);
    });
    for (Operation *op : accesses) {
      OpBuilder b(op);
      Location loc = op->getLoc();
      if (auto dim = dyn_cast<memref::DimOp>(op)) {
        auto view = dim.getSource().getDefiningOp<memref::ReinterpretCastOp>();
        auto index = getConstantIntValue(dim.getIndex());
        if (!view || !index)
          return dim.emitOpError("asks a size the GPU kernel does not know");
        dim.replaceAllUsesWith(
            getValueOrCreateConstantIndexOp(b, loc, view.getMixedSizes()[*index]));
        dim.erase();
        continue;
      }
      auto load = dyn_cast<memref::LoadOp>(op);
      auto store = dyn_cast<memref::StoreOp>(op);
      Value memref = load ? load.getMemRef() : store.getMemRef();
      ValueRange indices = load ? load.getIndices() : store.getIndices();
      if (memref.getParentRegion() == &kernel.getBody() && offsets.count(memref))
        continue; // already flat
      auto view = memref.getDefiningOp<memref::ReinterpretCastOp>();
      if (!view)
        continue; // the push constants, or workgroup memory
      // A reinterpretation addresses from its source's base: the chain's
      // root is a flat binding.
      Value root = view.getSource();
      while (auto inner = root.getDefiningOp<memref::ReinterpretCastOp>())
        root = inner.getSource();
      auto offset = offsets.find(root);
      if (offset == offsets.end())
        return op->emitOpError("accesses memory that is not one of the kernel's bindings");
      Value linear = arith::AddIOp::create(
          b, loc, offset->second,
          getValueOrCreateConstantIndexOp(b, loc, view.getMixedOffsets().front()));
      for (auto [index, stride] : llvm::zip(indices, view.getMixedStrides()))
        linear = arith::AddIOp::create(
            b, loc, linear,
            arith::MulIOp::create(b, loc, index, getValueOrCreateConstantIndexOp(b, loc, stride)));
      if (load)
        load.replaceAllUsesWith(
            memref::LoadOp::create(b, loc, root, ValueRange{linear}).getResult());
      else
        memref::StoreOp::create(b, loc, store.getValueToStore(), root, ValueRange{linear});
      op->erase();
    }
    // The views are dead now.
    SmallVector<memref::ReinterpretCastOp> views;
    kernel.walk([&](memref::ReinterpretCastOp view) { views.push_back(view); });
    for (memref::ReinterpretCastOp view : llvm::reverse(views))
      if (view->use_empty())
        view.erase();
    WalkResult left = kernel.walk([](Operation *op) {
      for (Value operand : op->getOperands())
        if (operand.getDefiningOp<memref::ReinterpretCastOp>()) {
          op->emitOpError("uses a memref view the Vulkan target cannot lower");
          return WalkResult::interrupt();
        }
      return WalkResult::advance();
    });
    return failure(left.wasInterrupted());
  }
};

} // namespace
