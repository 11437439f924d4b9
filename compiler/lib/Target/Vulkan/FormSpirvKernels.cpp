// Mapped kernel functions become gpu.funcs with the Vulkan kernel ABI:
// flat storage buffers and one push-constant block (see Passes.td).
#include "kiln/Target/Vulkan/Passes.h"

#include "kiln/Dialect/Kernel/IR/KernelOps.h"
#include "kiln/Target/GPU/MappedKernel.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/Transforms/Transforms.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SPIRV/IR/TargetAndABI.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Iterators.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
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
      module.emitError("kiln_kernel.target features must be SPIR-V capabilities and "
                       "extensions, '+name' each, comma-separated, not '")
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

  /// The SPIR-V environment the target describes: its features ("+name")
  /// name capabilities and extensions; those it turns off ("-name") are
  /// left out.
  FailureOr<spirv::TargetEnvAttr> targetEnvironment(kiln::kernel::TargetAttr target) {
    SmallVector<spirv::Capability> capabilities;
    SmallVector<spirv::Extension> extensions;
    for (StringRef feature : llvm::split(target.getFeatures(), ',')) {
      if (feature.consume_front("-"))
        continue;
      if (!feature.consume_front("+"))
        return failure();
      if (auto capability = spirv::symbolizeCapability(feature))
        capabilities.push_back(*capability);
      else if (auto extension = spirv::symbolizeExtension(feature))
        extensions.push_back(*extension);
      else
        return failure();
    }
    MLIRContext *context = &getContext();
    auto triple = spirv::VerCapExtAttr::get(spirv::Version::V_1_3, capabilities, extensions, context);
    return spirv::TargetEnvAttr::get(triple, spirv::getDefaultResourceLimits(context),
                                     spirv::ClientAPI::Vulkan);
  }

  spirv::TargetEnvAttr targetEnv;

  /// Vulkan's guaranteed maxPushConstantsSize (128 bytes), in words: every
  /// device takes a kernel within it.
  static constexpr unsigned kMaxPushConstantWords = 32;

  /// The largest non-splat constant a kernel keeps as a local array.
  static constexpr int64_t kMaxKernelConstantBytes = 16384;

  /// The flat buffer of each binding, and its element size in bytes: its
  /// offset in elements is its push-constant word (the binding's index)
  /// divided by that.
  using Bindings = DenseMap<Value, std::pair<unsigned, int64_t>>;

  LogicalResult form(ModuleOp module, func::FuncOp func) {
    MLIRContext *context = &getContext();
    FailureOr<kiln::gpu::MappedKernel> mapped = kiln::gpu::mappedKernel(func);
    if (failed(mapped))
      return failure();
    unsigned numBindings = mapped->numBindings, numSymbols = mapped->numSymbols;
    // The words: each binding's offset, the size symbols, the status slot.
    unsigned numWords = numBindings + numSymbols + 1;
    if (numWords > kMaxPushConstantWords)
      return func.emitOpError("needs ")
             << numWords << " push-constant words (" << numBindings << " bindings, "
             << numSymbols
             << " size symbols and the status slot), which is not supported by the target: "
                "Vulkan guarantees "
             << kMaxPushConstantWords * 4 << " bytes";

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
    // The runtime's status buffer, after the bindings.
    argumentTypes.push_back(MemRefType::get({ShapedType::kDynamic}, IntegerType::get(context, 32)));
    auto pushConstantSpace = spirv::StorageClassAttr::get(context, spirv::StorageClass::PushConstant);
    auto pushConstantType =
        MemRefType::get({numWords},
                        IntegerType::get(context, 32), MemRefLayoutAttrInterface(),
                        pushConstantSpace);
    argumentTypes.push_back(pushConstantType);
    b.setInsertionPointToStart(gpuModule.getBody());
    auto kernel = gpu::GPUFuncOp::create(b, func.getLoc(), func.getSymName(),
                                         FunctionType::get(context, argumentTypes, {}));
    kernel->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), UnitAttr::get(context));
    kernel->setAttr(spirv::getEntryPointABIAttrName(),
                    spirv::getEntryPointABIAttr(context, mapped->workgroupSize));
    kernel.setKnownBlockSizeAttr(DenseI32ArrayAttr::get(context, mapped->workgroupSize));

    // The old body goes after the new entry block, which binds the old
    // arguments, then the two merge.
    Block &newEntry = kernel.getBody().front();
    Block &oldEntry = func.getBody().front();
    b.setInsertionPointToStart(&newEntry);
    Location loc = func.getLoc();
    Value status = newEntry.getArgument(numBindings);
    Value pushConstants = newEntry.getArgument(numBindings + 1);
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
    if (failed(flattenAccesses(kernel, bindings)))
      return failure();
    reportLoopsCutShort(kernel, status, pushConstants, numBindings + numSymbols);
    return inlineConstants(kernel, module);
  }

  /// Status code a kernel writes to its slot of the runtime's status buffer
  /// when a loop ended before its upper bound: the device cut it short
  /// (lavapipe ends an invocation's loops after 65535 iterations in all),
  /// so the kernel's results are wrong. Matches the runtime's.
  static constexpr int32_t kLoopCutShort = 1;

  /// Each scf.for also carries its next induction value; after the loop,
  /// one that ran but stopped below its upper bound writes kLoopCutShort to
  /// the status word at the slot the push constants give. A device that
  /// runs every loop to its end never writes it; the check costs a
  /// comparison per loop exit, not per iteration.
  static void reportLoopsCutShort(gpu::GPUFuncOp kernel, Value status, Value pushConstants,
                                  unsigned slotWord) {
    SmallVector<scf::ForOp> loops;
    kernel.walk([&](scf::ForOp loop) { loops.push_back(loop); });
    if (loops.empty())
      return;
    OpBuilder entry = OpBuilder::atBlockBegin(&kernel.getBody().front());
    Location loc = kernel.getLoc();
    Value slot = arith::IndexCastUIOp::create(
        entry, loc, entry.getIndexType(),
        memref::LoadOp::create(entry, loc, pushConstants,
                               ValueRange{arith::ConstantIndexOp::create(entry, loc, slotWord)}));
    Value code = arith::ConstantIntOp::create(entry, loc, kLoopCutShort, 32);
    IRRewriter rewriter(kernel.getContext());
    for (scf::ForOp loop : loops) {
      rewriter.setInsertionPoint(loop);
      Value lb = loop.getLowerBound(), ub = loop.getUpperBound();
      auto newYields = [&](OpBuilder &b, Location yieldLoc, ArrayRef<BlockArgument>) {
        scf::ForOp current = cast<scf::ForOp>(b.getInsertionBlock()->getParentOp());
        return SmallVector<Value>{arith::AddIOp::create(b, yieldLoc, current.getInductionVar(),
                                                        current.getStep())};
      };
      FailureOr<LoopLikeOpInterface> extended = cast<LoopLikeOpInterface>(*loop).replaceWithAdditionalYields(
          rewriter, ValueRange{lb}, /*replaceInitOperandUsesInLoop=*/false, newYields);
      if (failed(extended))
        continue;
      auto widened = cast<scf::ForOp>(extended->getOperation());
      Value next = widened.getResults().back();
      rewriter.setInsertionPointAfter(widened);
      Location at = widened.getLoc();
      auto below = widened.getUnsignedCmp() ? arith::CmpIPredicate::ult : arith::CmpIPredicate::slt;
      Value ran = arith::CmpIOp::create(rewriter, at, below, lb, ub);
      Value stopped = arith::CmpIOp::create(rewriter, at, below, next, ub);
      auto cutShort = scf::IfOp::create(rewriter, at, arith::AndIOp::create(rewriter, at, ran, stopped),
                                        /*withElse=*/false);
      rewriter.setInsertionPoint(cutShort.thenBlock()->getTerminator());
      memref::StoreOp::create(rewriter, at, code, status, ValueRange{slot});
    }
  }

  /// Constant tensors that bufferization turned into memref.globals live
  /// outside the gpu.module, where SPIR-V cannot reach them. A splat's loads
  /// become its value; any other constant becomes a constant array in the
  /// kernel (kiln-spirv-convert makes it a function-local variable, so it is
  /// kept small: registers or scratch on a GPU).
  LogicalResult inlineConstants(gpu::GPUFuncOp kernel, ModuleOp module) {
    SmallVector<memref::GetGlobalOp> uses;
    kernel.walk([&](memref::GetGlobalOp use) { uses.push_back(use); });
    DenseMap<Attribute, Value> arrays;
    for (memref::GetGlobalOp use : uses) {
      auto global = SymbolTable::lookupNearestSymbolFrom<memref::GlobalOp>(
          module, use.getNameAttr());
      auto value = global ? dyn_cast_or_null<DenseElementsAttr>(global.getConstantInitValue())
                          : DenseElementsAttr();
      if (!value)
        return use.emitOpError("reads a global that is not a dense constant, which a GPU "
                               "kernel cannot reach");
      int64_t bytes = value.getNumElements() *
                      llvm::divideCeil(value.getElementType().getIntOrFloatBitWidth(), 8);
      if (!value.isSplat() && bytes > kMaxKernelConstantBytes)
        return use.emitOpError("reads a constant of ")
               << bytes << " bytes; constants in GPU kernels are limited to "
               << kMaxKernelConstantBytes << " bytes";
      for (Operation *user : llvm::to_vector(use->getUsers())) {
        auto load = dyn_cast<memref::LoadOp>(user);
        if (!load)
          return user->emitOpError("uses the constant ")
                 << use.getNameAttr() << " other than by loading from it";
        OpBuilder b(load);
        Value element;
        if (value.isSplat()) {
          element = arith::ConstantOp::create(b, load.getLoc(),
                                              cast<TypedAttr>(value.getSplatValue<Attribute>()));
        } else {
          Value &array = arrays[value];
          if (!array) {
            OpBuilder entry = OpBuilder::atBlockBegin(&kernel.getBody().front());
            array = arith::ConstantOp::create(entry, use.getLoc(), value);
          }
          element = tensor::ExtractOp::create(b, load.getLoc(), array, load.getIndices());
        }
        load.replaceAllUsesWith(element);
        load.erase();
      }
      use.erase();
    }
    return success();
  }

  /// Size `index` of `memref`, from the view operations that made it.
  static FailureOr<OpFoldResult> sizeOf(OpBuilder &b, Location loc, Value memref, int64_t index) {
    auto type = cast<MemRefType>(memref.getType());
    if (!type.isDynamicDim(index))
      return OpFoldResult(b.getIndexAttr(type.getDimSize(index)));
    Operation *op = memref.getDefiningOp();
    if (auto view = dyn_cast_or_null<memref::ReinterpretCastOp>(op))
      return view.getMixedSizes()[index];
    if (auto cast = dyn_cast_or_null<memref::CastOp>(op))
      return sizeOf(b, loc, cast.getSource(), index);
    if (auto expand = dyn_cast_or_null<memref::ExpandShapeOp>(op))
      return expand.getMixedOutputShape()[index];
    if (auto subview = dyn_cast_or_null<memref::SubViewOp>(op)) {
      llvm::SmallBitVector dropped = subview.getDroppedDims();
      for (auto [dim, size] : llvm::enumerate(subview.getMixedSizes()))
        if (!dropped.test(dim) && index-- == 0)
          return size;
      return failure();
    }
    if (auto collapse = dyn_cast_or_null<memref::CollapseShapeOp>(op)) {
      Value product = arith::ConstantIndexOp::create(b, loc, 1);
      for (int64_t dim : collapse.getReassociationIndices()[index]) {
        FailureOr<OpFoldResult> size = sizeOf(b, loc, collapse.getSrc(), dim);
        if (failed(size))
          return failure();
        product = arith::MulIOp::create(b, loc, product,
                                        getValueOrCreateConstantIndexOp(b, loc, *size));
      }
      return OpFoldResult(product);
    }
    return failure();
  }

  /// Rewrites every load, store and atomic onto the flat buffers.
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
        if (!bindings.count(flat))
          continue; // the status buffer, indexed by its slot
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
      if (isa<memref::LoadOp, memref::StoreOp, memref::AtomicRMWOp, memref::DimOp,
              memref::ExtractStridedMetadataOp, memref::ExtractAlignedPointerAsIndexOp,
              vector::LoadOp, vector::StoreOp>(op))
        accesses.push_back(op);
    });
    // The binding a view reaches and the view's element at `indices`,
    // counted from the start of the binding's buffer.
    auto flatten = [&](OpBuilder &b, Location loc, Value view,
                       ValueRange indices) -> std::optional<std::pair<Value, Value>> {
      auto cast = view.getDefiningOp<memref::ReinterpretCastOp>();
      if (!cast)
        return std::nullopt;
      // A reinterpretation addresses from its source's base: the chain's
      // root is a flat binding.
      Value root = cast.getSource();
      while (auto inner = root.getDefiningOp<memref::ReinterpretCastOp>())
        root = inner.getSource();
      auto offset = offsets.find(root);
      if (offset == offsets.end())
        return std::nullopt;
      Value linear = arith::AddIOp::create(
          b, loc, offset->second,
          getValueOrCreateConstantIndexOp(b, loc, cast.getMixedOffsets().front()));
      for (auto [index, stride] : llvm::zip(indices, cast.getMixedStrides()))
        linear = arith::AddIOp::create(
            b, loc, linear,
            arith::MulIOp::create(b, loc, index, getValueOrCreateConstantIndexOp(b, loc, stride)));
      return std::pair(root, linear);
    };
    // A binding's buffer seen as vectors: another argument bound to the same
    // descriptor (SPIR-V's logical addressing reinterprets no pointer, but
    // two variables may alias one binding), for vector loads and stores.
    DenseMap<std::pair<Value, Type>, Value> vectorViews;
    auto vectorView = [&](Value root, VectorType type) {
      Value &view = vectorViews[{root, Type(type)}];
      if (!view) {
        MLIRContext *context = kernel.getContext();
        unsigned index = kernel.getNumArguments();
        // The SPIR-V lowering takes every argument's ABI or none: the others
        // keep the binding (and the push constants the slot) they had.
        for (unsigned i = 0; i < index; ++i)
          if (!kernel.getArgAttr(i, spirv::getInterfaceVarABIAttrName()))
            kernel.setArgAttr(i, spirv::getInterfaceVarABIAttrName(),
                              spirv::getInterfaceVarABIAttr(0, i, std::nullopt, context));
        auto abi = spirv::getInterfaceVarABIAttr(/*descriptorSet=*/0, bindings.lookup(root).first,
                                                 std::nullopt, context);
        NamedAttribute attr(StringAttr::get(context, spirv::getInterfaceVarABIAttrName()), abi);
        kernel.insertArgument(index, MemRefType::get({ShapedType::kDynamic}, type),
                              DictionaryAttr::get(context, attr), kernel.getLoc());
        view = kernel.getArgument(index);
      }
      return view;
    };
    for (Operation *op : accesses) {
      OpBuilder b(op);
      Location loc = op->getLoc();
      if (auto dim = dyn_cast<memref::DimOp>(op)) {
        auto index = getConstantIntValue(dim.getIndex());
        FailureOr<OpFoldResult> size =
            index ? sizeOf(b, loc, dim.getSource(), *index) : FailureOr<OpFoldResult>(failure());
        if (failed(size))
          return dim.emitOpError("asks a size the GPU kernel does not know");
        dim.replaceAllUsesWith(getValueOrCreateConstantIndexOp(b, loc, *size));
        dim.erase();
        continue;
      }
      if (auto metadata = dyn_cast<memref::ExtractStridedMetadataOp>(op)) {
        // What the alias folding asks of a view: its sizes, strides and
        // offset, all known where the kernel made it.
        auto view = metadata.getSource().getDefiningOp<memref::ReinterpretCastOp>();
        if (!view || !metadata.getBaseBuffer().use_empty())
          return metadata.emitOpError("asks the layout of a view the GPU kernel does not know");
        auto replace = [&](ValueRange results, ArrayRef<OpFoldResult> values) {
          for (auto [result, value] : llvm::zip(results, values))
            result.replaceAllUsesWith(getValueOrCreateConstantIndexOp(b, loc, value));
        };
        replace(metadata.getSizes(), view.getMixedSizes());
        replace(metadata.getStrides(), view.getMixedStrides());
        replace(metadata.getOffset(), view.getMixedOffsets());
        metadata.erase();
        continue;
      }
      if (auto pointer = dyn_cast<memref::ExtractAlignedPointerAsIndexOp>(op)) {
        // A view's address, for an alignment test: its byte offset in the
        // binding's buffer, whose own start every device aligns.
        auto flat = flatten(b, loc, pointer.getSource(), {});
        if (!flat)
          return op->emitOpError("asks the address of memory that is not one of the kernel's "
                                 "bindings");
        Value elementBytes =
            arith::ConstantIndexOp::create(b, loc, bindings.lookup(flat->first).second);
        pointer.replaceAllUsesWith(
            arith::MulIOp::create(b, loc, flat->second, elementBytes).getResult());
        pointer.erase();
        continue;
      }
      if (isa<vector::LoadOp, vector::StoreOp>(op)) {
        auto load = dyn_cast<vector::LoadOp>(op);
        auto store = dyn_cast<vector::StoreOp>(op);
        VectorType type = load ? load.getVectorType() : store.getVectorType();
        auto flat = flatten(b, loc, load ? load.getBase() : store.getBase(),
                            load ? load.getIndices() : store.getIndices());
        if (!flat || type.getRank() != 1)
          return op->emitOpError("is a vector access the Vulkan target cannot lower: one "
                                 "dimension, from a view of one of the kernel's bindings");
        // The mapping guards these by the alignment of the group's first
        // element: the vector index is exact.
        Value at = arith::DivUIOp::create(
            b, loc, flat->second, arith::ConstantIndexOp::create(b, loc, type.getNumElements()));
        Value view = vectorView(flat->first, type);
        if (load)
          load.replaceAllUsesWith(memref::LoadOp::create(b, loc, view, ValueRange{at}).getResult());
        else
          memref::StoreOp::create(b, loc, store.getValueToStore(), view, ValueRange{at});
        op->erase();
        continue;
      }
      auto load = dyn_cast<memref::LoadOp>(op);
      auto store = dyn_cast<memref::StoreOp>(op);
      auto atomic = dyn_cast<memref::AtomicRMWOp>(op);
      Value memref = load ? load.getMemRef() : store ? store.getMemRef() : atomic.getMemref();
      ValueRange indices =
          load ? load.getIndices() : store ? store.getIndices() : atomic.getIndices();
      if (memref.getParentRegion() == &kernel.getBody() && offsets.count(memref))
        continue; // already flat
      if (!memref.getDefiningOp<memref::ReinterpretCastOp>())
        continue; // the push constants, or workgroup memory
      auto flat = flatten(b, loc, memref, indices);
      if (!flat)
        return op->emitOpError("accesses memory that is not one of the kernel's bindings");
      auto [root, linear] = *flat;
      if (load)
        load.replaceAllUsesWith(
            memref::LoadOp::create(b, loc, root, ValueRange{linear}).getResult());
      else if (store)
        memref::StoreOp::create(b, loc, store.getValueToStore(), root, ValueRange{linear});
      else
        atomic.replaceAllUsesWith(memref::AtomicRMWOp::create(b, loc, atomic.getKind(),
                                                              atomic.getValue(), root,
                                                              ValueRange{linear})
                                      .getResult());
      op->erase();
    }
    // The views are dead now, and what computed their shapes.
    bool erased = true;
    while (erased) {
      erased = false;
      kernel.walk<WalkOrder::PostOrder, ReverseIterator>([&](Operation *op) {
        if (isOpTriviallyDead(op)) {
          op->erase();
          erased = true;
        }
      });
    }
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
