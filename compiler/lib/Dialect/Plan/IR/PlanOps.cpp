#include "kiln/Dialect/Plan/IR/PlanOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"

using namespace mlir;
using namespace kiln::plan;

#include "kiln/Dialect/Plan/IR/PlanOpsDialect.cpp.inc"

void PlanDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "kiln/Dialect/Plan/IR/PlanOps.cpp.inc"
      >();
}

#define GET_OP_CLASSES
#include "kiln/Dialect/Plan/IR/PlanOps.cpp.inc"

static LogicalResult verifyContiguous(Operation *op, MemRefType type) {
  if (!type.getLayout().isIdentity())
    return op->emitOpError("buffers must have the identity (contiguous) layout");
  return success();
}

static int64_t byteSize(MemRefType type) {
  return type.getNumElements() *
         std::max<int64_t>(1, type.getElementTypeBitWidth() / 8);
}

/// A `?` dim needs its expression in `dims`, and only a `?` dim has one.
static LogicalResult verifyDims(Operation *op, MemRefType type, AffineMapAttr dims) {
  unsigned dynamic = type.getNumDynamicDims();
  if (!dims && dynamic == 0)
    return success();
  if (!dims || dims.getValue().getNumDims() != 0 ||
      dims.getValue().getNumResults() != dynamic)
    return op->emitOpError("needs one `dims` expression over the size symbols per `?` dim of ")
           << type;
  return success();
}

LogicalResult AllocOp::verify() {
  if (failed(verifyDims(*this, getBuffer().getType(), getDimsAttr())))
    return failure();
  if (getPersistent() && !getBuffer().getType().hasStaticShape())
    return emitOpError("a persistent buffer must have a static shape, got ")
           << getBuffer().getType();
  return verifyContiguous(*this, getBuffer().getType());
}

LogicalResult ViewOp::verify() {
  if (failed(verifyContiguous(*this, getSource().getType())) ||
      failed(verifyContiguous(*this, getResult().getType())) ||
      failed(verifyDims(*this, getResult().getType(), getDimsAttr())))
    return failure();
  int64_t offset = (int64_t)getByteOffset();
  if (!getSource().getType().hasStaticShape() || !getResult().getType().hasStaticShape()) {
    if (offset != 0)
      return emitOpError("a view of a symbolic buffer must start at offset 0");
    return success();
  }
  if (offset < 0 ||
      offset + byteSize(getResult().getType()) >
          byteSize(getSource().getType()))
    return emitOpError("view of ")
           << byteSize(getResult().getType()) << " bytes at offset "
           << offset << " does not fit in a "
           << byteSize(getSource().getType()) << "-byte buffer";
  return success();
}

LogicalResult CheckOp::verify() {
  MemRefType type = getCondition().getType();
  if (!type.hasStaticShape() || type.getNumElements() != 1 || !type.getElementType().isInteger(1))
    return emitOpError("condition must hold one i1, got ") << type;
  if (getKind() != "index" && getKind() != "runtime")
    return emitOpError("kind must be \"index\" or \"runtime\", got \"") << getKind() << "\"";
  return success();
}

LogicalResult CollectiveOp::verify() {
  if (!llvm::is_contained({"all_reduce", "all_gather", "reduce_scatter", "all_to_all"}, getKind()))
    return emitOpError("kind must be \"all_reduce\", \"all_gather\", \"reduce_scatter\" or "
                       "\"all_to_all\", got \"")
           << getKind() << "\"";
  if (!llvm::is_contained({"sum", "avg", "product", "min", "max"}, getReduceOp()))
    return emitOpError("reduce_op must be \"sum\", \"avg\", \"product\", \"min\" or \"max\", "
                       "got \"")
           << getReduceOp() << "\"";
  if (getGroup().empty())
    return emitOpError("names no process group");
  bool sameShape = getKind() == "all_reduce" || getKind() == "all_to_all";
  if (getGroupSize() < (sameShape ? 0 : 1))
    return emitOpError("needs at least one rank, got group_size = ") << getGroupSize();
  MemRefType input = getInput().getType(), output = getOutput().getType();
  if (input.getElementType() != output.getElementType() || input.getRank() != output.getRank())
    return emitOpError("input and output differ in element type or rank: ")
           << input << " and " << output;
  return success();
}

LogicalResult LaunchOp::verify() {
  if ((int64_t)getWorkgroups() < 0)
    return emitOpError("workgroups must be non-negative");
  if ((int64_t)getNumInputs() < 0 || (int64_t)getNumInputs() > (int64_t)getBindings().size())
    return emitOpError("num_inputs exceeds the number of bindings");
  if ((bool)getSymbolicExtentAttr() != (bool)getSymbolicWorkAttr())
    return emitOpError("symbolic_extent and symbolic_work come together");
  for (AffineMapAttr map : {getSymbolicExtentAttr(), getSymbolicWorkAttr()})
    if (map && (map.getValue().getNumDims() != 0 || map.getValue().getNumResults() != 1))
      return emitOpError("a symbolic workgroup size is one expression over the size symbols");
  if (getAlignment() && *getAlignment() < 1)
    return emitOpError("alignment must be positive");
  if (!getCached())
    return success();
  // A cached launch may be skipped: it reads graph inputs and writes
  // persistent buffers, nothing a call makes anew.
  if (getSymbolicExtentAttr())
    return emitOpError("a cached launch needs a static workgroup count");
  for (auto [i, binding] : llvm::enumerate(getBindings())) {
    bool input = i < (size_t)getNumInputs();
    auto alloc = binding.getDefiningOp<AllocOp>();
    if (input ? !isa<BlockArgument>(binding) : !(alloc && alloc.getPersistent()))
      return emitOpError("a cached launch reads graph inputs and writes persistent buffers; "
                         "binding ")
             << i << " is neither";
  }
  return success();
}

LogicalResult LaunchOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  auto kernel =
      symbolTable.lookupNearestSymbolFrom<func::FuncOp>(*this, getKernelAttr());
  if (!kernel)
    return emitOpError("kernel '") << getKernel() << "' is not a func.func in scope";
  FunctionType type = kernel.getFunctionType();
  auto symbols = kernel->getAttrOfType<IntegerAttr>("kiln_kernel.num_symbols");
  unsigned numSymbols = symbols ? symbols.getInt() : 0;
  if (type.getNumInputs() != getBindings().size() + 2 + numSymbols || type.getNumResults())
    return emitOpError("kernel takes ")
           << type.getNumInputs() << " arguments; expected 2 workgroup indices + "
           << getBindings().size() << " bindings + " << numSymbols
           << " size symbols and no results";
  for (auto [i, binding] : llvm::enumerate(getBindings())) {
    auto expected = cast<MemRefType>(type.getInput(i + 2));
    auto actual = cast<MemRefType>(binding.getType());
    // Symbolic buffers are passed as their base pointer, memref<1xT>.
    if (!actual.hasStaticShape() && expected.getShape() == ArrayRef<int64_t>{1} &&
        actual.getElementType() == expected.getElementType())
      continue;
    // Empty buffers are passed as memref<0xT> (see kiln-outline-kernels).
    if (actual.hasStaticShape() && actual.getNumElements() == 0 && expected.getNumElements() == 0 &&
        actual.getElementType() == expected.getElementType())
      continue;
    if (expected != actual)
      return emitOpError("binding ") << i << " has type " << binding.getType()
                                     << " but the kernel expects "
                                     << type.getInput(i + 2);
  }
  return success();
}
