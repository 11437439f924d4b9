// kiln_kernel.kernel ops -> kernel functions + a kiln_plan host plan.
#include "kiln/Conversion/Passes.h"
#include "kiln/Dialect/Graph/IR/GraphOps.h"
#include "kiln/Dialect/Kernel/IR/KernelOps.h"
#include "kiln/Dialect/Kernel/Transforms/Passes.h"
#include "kiln/Dialect/Plan/IR/PlanOps.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"

namespace kiln {
#define GEN_PASS_DEF_OUTLINEKERNELSPASS
#include "kiln/Conversion/Passes.h.inc"
} // namespace kiln

using namespace mlir;
using namespace kiln;
using namespace kiln::graph;

namespace {

MemRefType bufferType(Type tensor) {
  auto type = cast<RankedTensorType>(tensor);
  return MemRefType::get(type.getShape(), type.getElementType());
}

/// The expressions of a symbolic tensor's `?` dims, as the `dims` attribute of
/// the plan op or argument that makes its buffer; null when static.
AffineMapAttr dimsAttr(Type tensor) {
  auto type = cast<RankedTensorType>(tensor);
  if (!isSymbolic(type))
    return {};
  return AffineMapAttr::get(symbolMap(type.getContext(), dynamicDimExprs(type)));
}

/// A kernel argument for a buffer. Empty buffers are passed as memref<0xT>:
/// nothing reads or writes them, and the bare-pointer calling convention
/// cannot express every shape with a zero in it. Buffers with symbolic dims
/// are passed as memref<1xT>, their base pointer: the kernel rebuilds the
/// shape from its size symbols.
MemRefType kernelArgType(Type tensor) {
  MemRefType type = bufferType(tensor);
  if (!type.hasStaticShape())
    return MemRefType::get({1}, type.getElementType());
  if (type.getNumElements() == 0)
    return MemRefType::get({0}, type.getElementType());
  return type;
}

/// Row-major strides of `dims`.
SmallVector<AffineExpr> rowMajorStrides(ArrayRef<AffineExpr> dims, MLIRContext *context) {
  SmallVector<AffineExpr> strides(dims.size());
  AffineExpr stride = getAffineConstantExpr(1, context);
  for (int64_t i = (int64_t)dims.size() - 1; i >= 0; --i) {
    strides[i] = stride;
    stride = stride * dims[i];
  }
  return strides;
}

/// Work of a kernel in elements written, plus the multiply-adds / 16 (vector
/// FMAs) of its matmuls (and the elements of their B), convolutions and
/// attentions (whose exp per score counts as 16 multiply-adds): the measure
/// workgroups are sized by. Waking another core
/// costs tens of microseconds (measured ~30 us here, about 100K units of
/// work), so a workgroup gets at least twice that.
/// (An expression over the size symbols when the kernel's shapes are symbolic.)
AffineExpr estimateWork(kernel::KernelOp kernel) {
  MLIRContext *context = kernel.getContext();
  AffineExpr work = getAffineConstantExpr(0, context);
  auto numel = [](Value v) { return numElementsExpr(cast<RankedTensorType>(v.getType())); };
  auto dim = [](Value v, unsigned d) { return dimExpr(cast<RankedTensorType>(v.getType()), d); };
  kernel.getBody().walk([&](Operation *op) {
    for (Value result : op->getResults())
      if (isa<RankedTensorType>(result.getType()))
        work = work + numel(result);
    // A gathered element is scalar address arithmetic and a scalar load, not
    // a lane of a vector op: about 16 units (an average pool's gather, 131K
    // elements, ran 0.23 ms on one core). Count 8 more per element.
    if (isa<graph::IndexOp, graph::GatherOp>(op))
      work = work + numel(op->getResult(0)) * 8;
    if (auto matmul = dyn_cast<graph::MatmulOp>(op)) {
      unsigned k = cast<RankedTensorType>(matmul.getLhs().getType()).getRank() - 1;
      work = work + (numel(matmul.getResult()) * dim(matmul.getLhs(), k)).floorDiv(16);
      // With few rows, streaming B from memory is the cost, not the FMAs.
      work = work + numel(matmul.getRhs());
    }
    if (auto attention = dyn_cast<graph::AttentionOp>(op)) {
      Value q = attention.getQ(), v = attention.getV();
      AffineExpr scores = dim(q, 0) * dim(q, 1) * dim(q, 2) * dim(v, 2);
      work = work + (scores * (dim(q, 3) + dim(v, 3) + 16)).floorDiv(16);
    }
    if (auto conv = dyn_cast<graph::Conv2dOp>(op)) {
      Value w = conv.getWeight();
      work = work + (numel(conv.getResult()) * dim(w, 1) * dim(w, 2) * dim(w, 3)).floorDiv(16);
    }
  });
  return work;
}

/// Whether codegen may split the kernel's columns across workgroups as well
/// as its rows: it holds a matmul with a 2-D result of static width (the
/// CPU's matmul columns), or attention (a GPU's query blocks).
bool mayDistributeColumns(kernel::KernelOp kernel) {
  bool found = false;
  kernel.getBody().walk([&](Operation *op) {
    if (auto matmul = dyn_cast<graph::MatmulOp>(op)) {
      auto type = cast<RankedTensorType>(matmul.getResult().getType());
      found |= type.getRank() == 2 && !type.isDynamicDim(1);
    } else if (isa<graph::AttentionOp>(op)) {
      found = true;
    }
  });
  return found;
}

struct OutlineKernelsPass
    : kiln::impl::OutlineKernelsPassBase<OutlineKernelsPass> {
  using Base::Base;

  /// The size symbols of the graph being converted; every kernel takes them.
  unsigned numSymbols = 0;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<func::FuncOp> graphs;
    for (auto func : module.getOps<func::FuncOp>())
      if (!func.isExternal() && !func->hasAttr(kernel::kKernelAttr))
        graphs.push_back(func);
    for (func::FuncOp func : graphs)
      if (failed(convertGraph(module, func)))
        return signalPassFailure();
  }

  LogicalResult convertGraph(ModuleOp module, func::FuncOp func) {
    if (!func.getBody().hasOneBlock())
      return func.emitOpError("expects a single-block graph function");
    Block &block = func.getBody().front();
    OpBuilder builder(func);
    SymbolTable symbols(module);

    auto symbolsAttr = func->getAttrOfType<ArrayAttr>(graph::kSymbolsAttr);
    numSymbols = symbolsAttr ? symbolsAttr.size() : 0;
    // The new plan function with buffer arguments and results.
    SmallVector<Type> argTypes, resultTypes;
    for (Type t : func.getArgumentTypes())
      argTypes.push_back(bufferType(t));
    for (Type t : func.getResultTypes())
      resultTypes.push_back(bufferType(t));
    auto plan = func::FuncOp::create(builder, func.getLoc(), func.getName(),
                                     builder.getFunctionType(argTypes, resultTypes));
    plan->setAttr(plan::kEntryAttr, builder.getUnitAttr());
    Block *planBlock = plan.addEntryBlock();
    for (auto [i, type] : llvm::enumerate(func.getArgumentTypes())) {
      if (AffineMapAttr dims = dimsAttr(type))
        plan.setArgAttr(i, plan::kDimsAttr, dims);
      if (Attribute symbol = func.getArgAttr(i, graph::kSymbolArgAttr))
        plan.setArgAttr(i, graph::kSymbolArgAttr, symbol);
      if (Attribute parameter = func.getArgAttr(i, graph::kParameterArgAttr))
        plan.setArgAttr(i, graph::kParameterArgAttr, parameter);
    }
    IRMapping buffers; // graph tensor value -> plan buffer
    for (auto [tensor, buffer] : llvm::zip(block.getArguments(), planBlock->getArguments()))
      buffers.map(tensor, buffer);
    OpBuilder planBuilder = OpBuilder::atBlockEnd(planBlock);

    for (Operation &op : block) {
      if (auto kernelOp = dyn_cast<kernel::KernelOp>(op)) {
        SmallVector<Value> bindings;
        for (Value input : kernelOp.getInputs())
          bindings.push_back(buffers.lookup(input));
        for (Value result : kernelOp.getResults()) {
          Value buffer = plan::AllocOp::create(planBuilder, result.getLoc(),
                                               bufferType(result.getType()),
                                               dimsAttr(result.getType()));
          buffers.map(result, buffer);
          bindings.push_back(buffer);
        }
        func::FuncOp kernelFunc = outline(builder, kernelOp);
        symbols.insert(kernelFunc); // may rename it to keep symbols unique
        kernelFunc->setAttr(kernel::kKernelAttr, kernelFunc.getSymNameAttr());
        AffineExpr extent = kernelOp.getExtentExpr();
        AffineExpr work = estimateWork(kernelOp).floorDiv(minWorkPerWorkgroup);
        auto constExtent = dyn_cast<AffineConstantExpr>(extent);
        auto constWork = dyn_cast<AffineConstantExpr>(work);
        int64_t workgroups = 1;
        AffineMapAttr symbolicExtent, symbolicWork;
        if (constExtent && constWork) {
          int64_t n = constExtent.getValue();
          // Matmul kernels may split their columns too (decided in codegen,
          // which lowers the count to what it uses): not capped by the rows.
          bool columns = mayDistributeColumns(kernelOp);
          int64_t cap = columns ? (int64_t)maxWorkgroups : std::min(n, (int64_t)maxWorkgroups);
          if (n > 1 || columns)
            workgroups = std::clamp<int64_t>(constWork.getValue(), 1, cap);
        } else if (!constExtent || constExtent.getValue() > 1) {
          // Sized at launch: clamp(work, 1, min(extent, workgroups)).
          workgroups = maxWorkgroups;
          symbolicExtent = AffineMapAttr::get(symbolMap(&getContext(), extent));
          symbolicWork = AffineMapAttr::get(symbolMap(&getContext(), work));
        }
        plan::LaunchOp::create(planBuilder, kernelOp.getLoc(), kernelFunc.getSymName(),
                               workgroups, kernelOp.getInputs().size(), bindings,
                               symbolicExtent, symbolicWork, /*cached=*/false,
                               /*alignment=*/IntegerAttr(), /*grid=*/false);
      } else if (auto reshape = dyn_cast<graph::ReshapeOp>(op)) {
        Value view = plan::ViewOp::create(planBuilder, reshape.getLoc(),
                                          bufferType(reshape.getType()),
                                          buffers.lookup(reshape.getInput()), 0,
                                          dimsAttr(reshape.getType()));
        buffers.map(reshape.getResult(), view);
      } else if (auto check = dyn_cast<graph::AssertOp>(op)) {
        plan::CheckOp::create(planBuilder, check.getLoc(),
                              buffers.lookup(check.getCondition()),
                              check.getMessageAttr(),
                              planBuilder.getStringAttr(graph::stringifyCheckKind(check.getKind())));
      } else if (auto collective = dyn_cast<graph::CollectiveOp>(op)) {
        Value output = plan::AllocOp::create(planBuilder, collective.getLoc(),
                                             bufferType(collective.getType()),
                                             dimsAttr(collective.getType()));
        plan::CollectiveOp::create(
            planBuilder, collective.getLoc(), buffers.lookup(collective.getInput()), output,
            planBuilder.getStringAttr(graph::stringifyCollectiveKind(collective.getKind())),
            planBuilder.getStringAttr(graph::stringifyReduceOp(collective.getReduceOp())),
            collective.getGroupAttr(), collective.getGroupSizeAttr());
        buffers.map(collective.getResult(), output);
      } else if (auto ret = dyn_cast<func::ReturnOp>(op)) {
        SmallVector<Value> results;
        for (Value v : ret.getOperands())
          results.push_back(buffers.lookup(v));
        func::ReturnOp::create(planBuilder, ret.getLoc(), results);
      } else {
        return op.emitOpError("cannot be placed in a host plan: fuse it into a kernel first");
      }
    }
    plan->setAttrs(func->getDiscardableAttrDictionary().getValue());
    plan->setAttr(plan::kEntryAttr, builder.getUnitAttr());
    if (auto visibility = func.getSymVisibilityAttr())
      plan.setSymVisibilityAttr(visibility);
    func.erase();
    return success();
  }

  /// The kernel as `func.func private @name(%wg, %wgc, inputs..., outputs...)`.
  func::FuncOp outline(OpBuilder &builder, kernel::KernelOp kernelOp) {
    Location loc = kernelOp.getLoc();
    SmallVector<Type> argTypes{builder.getIndexType(), builder.getIndexType()};
    for (Value v : kernelOp.getInputs())
      argTypes.push_back(kernelArgType(v.getType()));
    for (Value v : kernelOp.getResults())
      argTypes.push_back(kernelArgType(v.getType()));
    argTypes.append(numSymbols, builder.getIndexType());
    OpBuilder::InsertionGuard guard(builder);
    auto func = func::FuncOp::create(builder, loc, kernelOp.getKernelName(),
                                     builder.getFunctionType(argTypes, {}));
    func.setPrivate();
    func->setAttr(kernel::kKernelAttr, kernelOp.getKernelNameAttr());
    if (auto symbolic = kernelOp.getSymbolicExtentAttr())
      func->setAttr(kernel::kExtentAttr, symbolic);
    else
      func->setAttr(kernel::kExtentAttr, kernelOp.getWorkgroupExtentAttr());
    if (numSymbols)
      func->setAttr(kernel::kNumSymbolsAttr, builder.getI64IntegerAttr(numSymbols));
    Block *entry = func.addEntryBlock();
    builder.setInsertionPointToStart(entry);
    IRMapping mapping;
    Block &body = kernelOp.getBody().front();
    unsigned numInputs = kernelOp.getInputs().size();
    // A symbolic buffer is its base pointer reinterpreted with the sizes
    // computed from the symbols; graph ops see it with its symbolic type.
    auto symbolicBuffer = [&](unsigned arg, RankedTensorType type) -> Value {
      SmallVector<AffineExpr> dims = dimExprs(type);
      return memref::ReinterpretCastOp::create(
          builder, loc, bufferType(type), entry->getArgument(arg),
          builder.getIndexAttr(0), kernel::dimSizes(builder, loc, dims),
          kernel::dimSizes(builder, loc, rowMajorStrides(dims, builder.getContext())));
    };
    for (auto [i, arg] : llvm::enumerate(body.getArguments())) {
      auto type = cast<RankedTensorType>(arg.getType());
      Value buffer = entry->getArgument(2 + i);
      Value tensor;
      if (isSymbolic(type)) {
        Value plain = bufferization::ToTensorOp::create(
            builder, arg.getLoc(), withoutEncoding(type), symbolicBuffer(2 + i, type),
            /*restrict=*/true);
        tensor = tensor::CastOp::create(builder, arg.getLoc(), type, plain);
      } else if (type.getNumElements() == 0)
        tensor = tensor::EmptyOp::create(builder, arg.getLoc(), type.getShape(),
                                         type.getElementType());
      else
        tensor = bufferization::ToTensorOp::create(builder, arg.getLoc(), type,
                                                   buffer, /*restrict=*/true);
      mapping.map(arg, tensor);
    }
    for (Operation &op : body.without_terminator())
      builder.clone(op, mapping);
    auto yield = cast<kernel::YieldOp>(body.getTerminator());
    for (auto [i, value] : llvm::enumerate(yield.getValues())) {
      auto type = cast<RankedTensorType>(value.getType());
      Value result = mapping.lookup(value);
      Value destination = entry->getArgument(2 + numInputs + i);
      if (isSymbolic(type)) {
        destination = symbolicBuffer(2 + numInputs + i, type);
        result = tensor::CastOp::create(builder, loc, withoutEncoding(type), result);
      } else if (type.getNumElements() == 0) {
        continue; // nothing to write
      }
      bufferization::MaterializeInDestinationOp::create(
          builder, loc, TypeRange{}, result, destination, /*restrict=*/true,
          /*writable=*/true);
    }
    func::ReturnOp::create(builder, loc);
    return func;
  }
};

} // namespace
