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

namespace {

MemRefType bufferType(Type tensor) {
  auto type = cast<RankedTensorType>(tensor);
  return MemRefType::get(type.getShape(), type.getElementType());
}

/// A kernel argument for a buffer. Empty buffers are passed as memref<0xT>:
/// nothing reads or writes them, and the bare-pointer calling convention
/// cannot express every shape with a zero in it.
MemRefType kernelArgType(Type tensor) {
  MemRefType type = bufferType(tensor);
  if (type.getNumElements() == 0)
    return MemRefType::get({0}, type.getElementType());
  return type;
}

/// Work of a kernel in elements written, plus the multiply-adds / 16 (vector
/// FMAs) of its matmuls, convolutions and attentions (whose exp per score
/// counts as 16 multiply-adds): the measure workgroups are sized by. Waking another core
/// costs tens of microseconds (measured ~30 us here, about 100K units of
/// work), so a workgroup gets at least twice that.
int64_t estimateWork(kernel::KernelOp kernel) {
  int64_t work = 0;
  kernel.getBody().walk([&](Operation *op) {
    for (Value result : op->getResults())
      if (auto type = dyn_cast<RankedTensorType>(result.getType()))
        work += type.getNumElements();
    if (auto matmul = dyn_cast<graph::MatmulOp>(op)) {
      auto lhs = cast<RankedTensorType>(matmul.getLhs().getType());
      work += cast<RankedTensorType>(matmul.getResult().getType()).getNumElements() *
              lhs.getShape().back() / 16;
    }
    if (auto attention = dyn_cast<graph::AttentionOp>(op)) {
      auto q = cast<RankedTensorType>(attention.getQ().getType());
      auto v = cast<RankedTensorType>(attention.getV().getType());
      int64_t scores = q.getNumElements() / q.getDimSize(3) * v.getDimSize(2);
      work += scores * (q.getDimSize(3) + v.getDimSize(3) + 16) / 16;
    }
    if (auto conv = dyn_cast<graph::Conv2dOp>(op)) {
      auto weight = cast<RankedTensorType>(conv.getWeight().getType());
      work += cast<RankedTensorType>(conv.getResult().getType()).getNumElements() *
              (weight.getNumElements() / weight.getDimSize(0)) / 16;
    }
  });
  return work;
}

struct OutlineKernelsPass
    : kiln::impl::OutlineKernelsPassBase<OutlineKernelsPass> {
  using Base::Base;

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
                                               bufferType(result.getType()));
          buffers.map(result, buffer);
          bindings.push_back(buffer);
        }
        func::FuncOp kernelFunc = outline(builder, kernelOp);
        symbols.insert(kernelFunc); // may rename it to keep symbols unique
        kernelFunc->setAttr(kernel::kKernelAttr, kernelFunc.getSymNameAttr());
        int64_t extent = kernelOp.getWorkgroupExtent();
        int64_t workgroups =
            extent > 1 ? std::clamp<int64_t>(estimateWork(kernelOp) / minWorkPerWorkgroup,
                                             1, std::min(extent, (int64_t)maxWorkgroups))
                       : 1;
        plan::LaunchOp::create(planBuilder, kernelOp.getLoc(), kernelFunc.getSymName(),
                               workgroups, kernelOp.getInputs().size(), bindings);
      } else if (auto reshape = dyn_cast<graph::ReshapeOp>(op)) {
        Value view = plan::ViewOp::create(planBuilder, reshape.getLoc(),
                                          bufferType(reshape.getType()),
                                          buffers.lookup(reshape.getInput()), 0);
        buffers.map(reshape.getResult(), view);
      } else if (auto check = dyn_cast<graph::AssertOp>(op)) {
        plan::CheckOp::create(planBuilder, check.getLoc(),
                              buffers.lookup(check.getCondition()),
                              check.getMessageAttr(), check.getKindAttr());
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
    OpBuilder::InsertionGuard guard(builder);
    auto func = func::FuncOp::create(builder, loc, kernelOp.getKernelName(),
                                     builder.getFunctionType(argTypes, {}));
    func.setPrivate();
    func->setAttr(kernel::kKernelAttr, kernelOp.getKernelNameAttr());
    func->setAttr(kernel::kExtentAttr, kernelOp.getWorkgroupExtentAttr());
    Block *entry = func.addEntryBlock();
    builder.setInsertionPointToStart(entry);
    IRMapping mapping;
    Block &body = kernelOp.getBody().front();
    unsigned numInputs = kernelOp.getInputs().size();
    for (auto [i, arg] : llvm::enumerate(body.getArguments())) {
      auto type = cast<RankedTensorType>(arg.getType());
      Value buffer = entry->getArgument(2 + i);
      Value tensor;
      if (type.getNumElements() == 0)
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
      if (cast<RankedTensorType>(value.getType()).getNumElements() == 0)
        continue; // nothing to write
      bufferization::MaterializeInDestinationOp::create(
          builder, loc, TypeRange{}, mapping.lookup(value),
          entry->getArgument(2 + numInputs + i), /*restrict=*/true,
          /*writable=*/true);
    }
    func::ReturnOp::create(builder, loc);
    return func;
  }
};

} // namespace
