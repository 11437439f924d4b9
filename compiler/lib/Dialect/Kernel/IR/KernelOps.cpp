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

static ParseResult parseExtent(OpAsmParser &parser, IntegerAttr &extent,
                               AffineMapAttr &symbolic);
static void printExtent(OpAsmPrinter &printer, Operation *, IntegerAttr extent,
                        AffineMapAttr symbolic);

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
  if (auto symbolic = getSymbolicExtentAttr()) {
    if ((int64_t)getWorkgroupExtent() != -1 || symbolic.getValue().getNumResults() != 1 ||
        symbolic.getValue().getNumDims() != 0)
      return emitOpError("a symbolic extent is one expression over symbols, with "
                         "workgroup_extent -1");
  } else if ((int64_t)getWorkgroupExtent() < 0) {
    return emitOpError("workgroup_extent must be non-negative");
  }
  return success();
}

AffineExpr KernelOp::getExtentExpr() {
  if (auto symbolic = getSymbolicExtentAttr())
    return symbolic.getValue().getResult(0);
  return getAffineConstantExpr(getWorkgroupExtent(), getContext());
}

/// `extent(8)` or `extent(affine_map<()[s0] -> (s0)>)`.
static ParseResult parseExtent(OpAsmParser &parser, IntegerAttr &extent,
                               AffineMapAttr &symbolic) {
  int64_t value;
  OptionalParseResult integer = parser.parseOptionalInteger(value);
  Builder &b = parser.getBuilder();
  if (integer.has_value()) {
    if (failed(*integer))
      return failure();
    extent = b.getI64IntegerAttr(value);
    return success();
  }
  if (parser.parseAttribute(symbolic))
    return failure();
  extent = b.getI64IntegerAttr(-1);
  return success();
}

static void printExtent(OpAsmPrinter &printer, Operation *, IntegerAttr extent,
                        AffineMapAttr symbolic) {
  if (symbolic)
    printer.printAttribute(symbolic);
  else
    printer << extent.getInt();
}

/// The destination-style kernel ops (attention, conv2d) take all tensors and
/// return their inits, or all buffers and return nothing.
static LogicalResult verifyDestinationForm(DestinationStyleOpInterface op) {
  bool onTensors = isa<RankedTensorType>(op.getDpsInits()[0].getType());
  for (Value operand : op->getOperands())
    if (isa<RankedTensorType>(operand.getType()) != onTensors ||
        !cast<ShapedType>(operand.getType()).hasRank())
      return op->emitOpError("operands must be all ranked tensors or all memrefs");
  if (onTensors ? op->getResultTypes() != TypeRange(ValueRange(op.getDpsInits()))
                : op->getNumResults() != 0)
    return op->emitOpError("returns its inits on tensors and nothing on buffers");
  return success();
}

/// On buffers, a destination-style op reads its inputs and writes its inits.
static void destinationEffects(
    DestinationStyleOpInterface op,
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>> &effects) {
  if (!op.hasPureBufferSemantics())
    return;
  for (OpOperand &operand : op->getOpOperands()) {
    if (op.isDpsInit(&operand))
      effects.emplace_back(MemoryEffects::Write::get(), &operand,
                           SideEffects::DefaultResource::get());
    else
      effects.emplace_back(MemoryEffects::Read::get(), &operand,
                           SideEffects::DefaultResource::get());
  }
}

LogicalResult AttentionOp::verify() { return verifyDestinationForm(*this); }
LogicalResult Conv2dOp::verify() {
  if (failed(verifyDestinationForm(*this)))
    return failure();
  size_t inputs = getEpilogueInputs().size();
  size_t maps = getEpilogueMaps() ? getEpilogueMaps()->size() : 0;
  if (maps != inputs)
    return emitOpError("needs one epilogue map per epilogue input (")
           << inputs << " inputs, " << maps << " maps)";
  if (getEpilogue().empty())
    return inputs ? emitOpError("has epilogue inputs but no epilogue") : success();
  Block &block = getEpilogue().front();
  if (block.getNumArguments() != inputs + 1)
    return emitOpError("epilogue must take the convolution's value and one element per "
                       "epilogue input");
  if (!isa<EpilogueYieldOp>(block.getTerminator()))
    return emitOpError("epilogue must end in kiln_kernel.epilogue_yield");
  return success();
}

void AttentionOp::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>> &effects) {
  destinationEffects(*this, effects);
}
void Conv2dOp::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>> &effects) {
  destinationEffects(*this, effects);
}
