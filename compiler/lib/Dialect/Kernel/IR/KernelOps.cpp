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
