#include "kiln/Dialect/Kernel/IR/KernelOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"

using namespace mlir;
using namespace kiln::kernel;

#include "kiln/Dialect/Kernel/IR/KernelOpsDialect.cpp.inc"

void KernelDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "kiln/Dialect/Kernel/IR/KernelOps.cpp.inc"
      >();
}

#define GET_OP_CLASSES
#include "kiln/Dialect/Kernel/IR/KernelOps.cpp.inc"

LogicalResult KernelOp::verify() {
  Block &body = getBody().front();
  if (body.getNumArguments() != getInputs().size())
    return emitOpError("body must take one argument per input");
  for (auto [arg, input] : llvm::zip(body.getArguments(), getInputs()))
    if (arg.getType() != input.getType())
      return emitOpError("body argument types must match the input types");
  auto yield = cast<YieldOp>(body.getTerminator());
  if (yield.getValues().getTypes() != getResults().getTypes())
    return emitOpError("yielded types must match the result types");
  if ((int64_t)getWorkgroupExtent() < 0)
    return emitOpError("workgroup_extent must be non-negative");
  return success();
}

LogicalResult AttentionOp::verify() {
  bool onTensors = isa<RankedTensorType>(getInit().getType());
  for (Value operand : getOperands())
    if (isa<RankedTensorType>(operand.getType()) != onTensors || !cast<ShapedType>(operand.getType()).hasRank())
      return emitOpError("operands must be all ranked tensors or all memrefs");
  if (onTensors ? getResults().getTypes() != TypeRange{getInit().getType(),
                                                      getLogsumexpInit().getType()}
                : !getResults().empty())
    return emitOpError("returns its inits on tensors and nothing on buffers");
  return success();
}

void AttentionOp::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>> &effects) {
  if (!hasPureBufferSemantics())
    return;
  for (OpOperand &operand : getOperation()->getOpOperands()) {
    if (isDpsInit(&operand))
      effects.emplace_back(MemoryEffects::Write::get(), &operand,
                           SideEffects::DefaultResource::get());
    else
      effects.emplace_back(MemoryEffects::Read::get(), &operand,
                           SideEffects::DefaultResource::get());
  }
}
