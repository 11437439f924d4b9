#include "kiln/Dialect/Kernel/IR/KernelOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Interfaces/LoopLikeInterface.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace kiln::kernel;

#include "kiln/Dialect/Kernel/IR/KernelOpsDialect.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "kiln/Dialect/Kernel/IR/KernelAttrs.cpp.inc"

void KernelDialect::initialize() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "kiln/Dialect/Kernel/IR/KernelAttrs.cpp.inc"
      >();
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

/// The destination-style kernel ops (attention, conv2d, sort) take all tensors and
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

LogicalResult SortOp::verify() {
  if (failed(verifyDestinationForm(*this)))
    return failure();
  auto input = cast<ShapedType>(getInput().getType());
  auto values = cast<ShapedType>(getValuesInit().getType());
  auto indices = cast<ShapedType>(getIndicesInit().getType());
  if (values.getShape() != input.getShape() || indices.getShape() != input.getShape() ||
      values.getElementType() != input.getElementType() ||
      !indices.getElementType().isInteger(64))
    return emitOpError("values must have the input's shape and element type, and indices its "
                       "shape in i64");
  if ((int64_t)getDim() < 0 || (int64_t)getDim() >= std::max<int64_t>(input.getRank(), 1))
    return emitOpError("dim must be in [0, rank)");
  if (IntegerAttr k = getKAttr();
      k && (k.getInt() < 0 || input.getRank() == 0 ||
            (!input.isDynamicDim(getDim()) && k.getInt() > input.getDimSize(getDim()))))
    return emitOpError("k must be in [0, the sorted dim's size]");
  return success();
}

void SortOp::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>> &effects) {
  destinationEffects(*this, effects);
}
void AttentionOp::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>> &effects) {
  destinationEffects(*this, effects);
}
void Conv2dOp::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>> &effects) {
  destinationEffects(*this, effects);
}

//===----------------------------------------------------------------------===//
// Attributes
//===----------------------------------------------------------------------===//

LogicalResult TargetAttr::verify(function_ref<InFlightDiagnostic()> emitError, StringRef kind,
                                 StringRef name, StringRef format, StringRef triple,
                                 StringRef chip, StringRef features, int64_t vectorBits,
                                 int64_t vectorRegisters, int64_t l1Bytes, int64_t l2Bytes,
                                 int64_t subgroupSize, int64_t maxWorkgroupSize,
                                 int64_t sharedMemoryBytes) {
  if (kind.empty() || name.empty() || format.empty())
    return emitError() << "a target needs a kind, a name and an executable format";
  if (triple.empty())
    return emitError() << "target '" << name << "' needs a target triple";
  if (vectorBits < 0 || vectorBits % 32 != 0)
    return emitError() << "target '" << name << "' has vector_bits " << vectorBits
                       << ": a multiple of 32 (0 for no vectors)";
  // A GPU target's vectors are a thread's memory accesses, not a register
  // file the compiler allocates.
  bool gpu = maxWorkgroupSize > 0;
  if (vectorRegisters < 0 || (vectorBits > 0 && vectorRegisters == 0 && !gpu))
    return emitError() << "target '" << name << "' has " << vectorRegisters
                       << " vector registers; a CPU target with vectors has at least one";
  for (auto [field, value] :
       {std::pair<StringRef, int64_t>{"l1_bytes", l1Bytes}, {"l2_bytes", l2Bytes},
        {"subgroup_size", subgroupSize}, {"max_workgroup_size", maxWorkgroupSize},
        {"shared_memory_bytes", sharedMemoryBytes}})
    if (value < 0)
      return emitError() << "target '" << name << "' has a negative " << field;
  if (!features.empty())
    for (StringRef feature : llvm::split(features, ','))
      if (feature.size() < 2 || (feature[0] != '+' && feature[0] != '-'))
        return emitError() << "target '" << name << "' has feature '" << feature
                           << "': features are written +name or -name, separated by commas";
  return success();
}

bool TargetAttr::hasFeature(StringRef feature) const {
  return llvm::is_contained(llvm::split(getFeatures(), ','), ("+" + feature).str());
}

StringRef TargetAttr::getArch() const { return getTriple().split('-').first; }

int64_t TargetAttr::vectorLength(Type element) const {
  unsigned bits = element.getIntOrFloatBitWidth();
  return bits ? getVectorBits() / bits : 0;
}

LogicalResult PackedRhsAttr::verify(function_ref<InFlightDiagnostic()> emitError, int64_t of,
                                    bool transposed, int64_t panelColumns) {
  if (of < 0)
    return emitError() << "packed_rhs names argument " << of;
  if (panelColumns < 1)
    return emitError() << "packed_rhs has panels of " << panelColumns << " columns";
  return success();
}

/// An integer attribute of at least `min`, or an error naming `name`.
static LogicalResult verifyCount(Operation *op, StringRef name, Attribute value, int64_t min) {
  auto integer = dyn_cast<IntegerAttr>(value);
  if (!integer || !integer.getType().isInteger(64) || integer.getInt() < min)
    return op->emitError() << "'" << name << "' must be an i64 of at least " << min << ", not "
                           << value;
  return success();
}

LogicalResult KernelDialect::verifyOperationAttribute(Operation *op, NamedAttribute attribute) {
  StringRef name = attribute.getName().getValue();
  Attribute value = attribute.getValue();
  if (name == kTargetAttrName) {
    if (!isa<ModuleOp>(op))
      return op->emitError() << "'" << kTargetAttrName << "' belongs on a module";
    if (!isa<TargetAttr>(value))
      return op->emitError() << "'" << kTargetAttrName << "' must be a #kiln_kernel.target";
    return success();
  }
  if (name == kUnsignedAttr) {
    if (!isa<UnitAttr>(value))
      return op->emitError() << "'" << name << "' is a unit attribute";
    return success();
  }
  if (name == kStepsOverRowsAttr) {
    if (!isa<UnitAttr>(value) || !isa<LoopLikeOpInterface>(op))
      return op->emitError() << "'" << name << "' is a unit attribute of a loop";
    return success();
  }
  if (name == kColumnLoopAttr) {
    if (!isa<UnitAttr>(value) || !isa<LoopLikeOpInterface>(op))
      return op->emitError() << "'" << name << "' is a unit attribute of a loop";
    return success();
  }
  if (name == kContractionAttr) {
    auto order = dyn_cast<StringAttr>(value);
    if (!order || (order.getValue() != "ikj" && order.getValue() != "ijk"))
      return op->emitError() << "'" << name << "' is \"ikj\" (B is [K, N]) or \"ijk\" (B is "
                             << "[N, K]), not " << value;
    return success();
  }
  if (name == kWritesApartAttr) {
    if (op->getName().getStringRef() != "scf.parallel" || !isa<UnitAttr>(value))
      return op->emitError() << "'" << name << "' is a unit attribute of an scf.parallel";
    return success();
  }
  // The rest describe kernel functions (func.func, or llvm.func once lowered).
  if (!isa<FunctionOpInterface>(op))
    return op->emitError() << "'" << name << "' belongs on a kernel function";
  if (name == kKernelAttr || name == kSymbolAttr) {
    auto text = dyn_cast<StringAttr>(value);
    if (!text || text.getValue().empty())
      return op->emitError() << "'" << name << "' must be a non-empty string";
    return success();
  }
  if (name == kSameCodeAsAttr) {
    if (!isa<FlatSymbolRefAttr>(value))
      return op->emitError() << "'" << name << "' must name a kernel (@kernel)";
    return success();
  }
  if (name == kExtentAttr) {
    if (auto map = dyn_cast<AffineMapAttr>(value)) {
      if (map.getValue().getNumDims() != 0 || map.getValue().getNumResults() != 1)
        return op->emitError() << "a symbolic '" << name
                               << "' is one expression over the size symbols, not " << value;
      return success();
    }
    return verifyCount(op, name, value, 0);
  }
  if (name == kNumSymbolsAttr || name == kScratchBytesAttr)
    return verifyCount(op, name, value, 0);
  if (name == kScratchBuffersAttr) {
    auto sizes = dyn_cast<ArrayAttr>(value);
    if (!sizes)
      return op->emitError() << "'" << name << "' must be an array of byte sizes, not " << value;
    for (Attribute size : sizes) {
      auto map = dyn_cast<AffineMapAttr>(size);
      if (map && map.getValue().getNumDims() == 0 && map.getValue().getNumResults() == 1)
        continue;
      if (failed(verifyCount(op, name, size, 0)))
        return failure();
    }
    return success();
  }
  if (name == kGpuStrategiesAttr) {
    auto phrases = dyn_cast<ArrayAttr>(value);
    if (!phrases || !llvm::all_of(phrases, [](Attribute a) { return isa<StringAttr>(a); }))
      return op->emitError() << "'" << name << "' must be an array of strings, not " << value;
    return success();
  }
  if (name == kWorkgroupSizeAttr) {
    auto sizes = dyn_cast<DenseI64ArrayAttr>(value);
    if (!sizes || sizes.size() != 3 ||
        llvm::any_of(sizes.asArrayRef(), [](int64_t size) { return size < 1; }))
      return op->emitError() << "'" << name
                             << "' must be three positive thread counts (array<i64: x, y, z>), "
                                "not "
                             << value;
    return success();
  }
  if (name == kAlignmentAttr || name == kColumnExtentAttr || name == kColumnAlignmentAttr)
    return verifyCount(op, name, value, 1);
  if (name == kInPlaceOperandsAttr) {
    auto pairs = dyn_cast<DenseI64ArrayAttr>(value);
    if (!pairs || pairs.size() % 2 != 0 ||
        llvm::any_of(pairs.asArrayRef(), [](int64_t index) { return index < 0; }))
      return op->emitError() << "'" << name
                             << "' must be pairs of binding indices (array<i64: input, "
                             << "output, ...>), not " << value;
    return success();
  }
  return op->emitError() << "unknown kiln_kernel attribute '" << name << "'";
}

LogicalResult KernelDialect::verifyRegionArgAttribute(Operation *op, unsigned region,
                                                      unsigned argIndex,
                                                      NamedAttribute attribute) {
  if (attribute.getName() != kPackedRhsAttrName)
    return op->emitError() << "unknown kiln_kernel argument attribute '"
                           << attribute.getName().getValue() << "'";
  auto packed = dyn_cast<PackedRhsAttr>(attribute.getValue());
  if (!packed)
    return op->emitError() << "'" << kPackedRhsAttrName << "' must be a #kiln_kernel.packed_rhs";
  auto func = dyn_cast<FunctionOpInterface>(op);
  if (!func)
    return op->emitError() << "'" << kPackedRhsAttrName << "' belongs on a function argument";
  if (packed.getOf() >= (int64_t)func.getNumArguments() || packed.getOf() == argIndex)
    return op->emitError() << "argument " << argIndex << " is packed from argument "
                           << packed.getOf() << ", which is not another argument";
  // Once lowered to pointers (llvm.func), the shape is no longer there to check.
  Type type = func.getArgumentTypes()[argIndex];
  if (!isa<ShapedType>(type))
    return success();
  auto shaped = cast<ShapedType>(type);
  if (!shaped.hasRank() || shaped.getRank() != 3 ||
      shaped.getDimSize(2) != packed.getPanelColumns())
    return op->emitError() << "argument " << argIndex << " holds panels of "
                           << packed.getPanelColumns() << " columns, so its type must be "
                           << "[panels, K, " << packed.getPanelColumns() << "], not " << type;
  return success();
}

TargetAttr kiln::kernel::getTarget(Operation *op) {
  for (Operation *at = op; at; at = at->getParentOp())
    if (auto module = dyn_cast<ModuleOp>(at))
      if (auto target = module->getAttrOfType<TargetAttr>(KernelDialect::kTargetAttrName))
        return target;
  return {};
}

FailureOr<TargetAttr> kiln::kernel::requireTarget(Operation *op, StringRef pass) {
  if (TargetAttr target = getTarget(op))
    return target;
  return op->emitError() << pass << " needs the target its code is for: the module's '"
                         << KernelDialect::kTargetAttrName
                         << "' (the compiler sets it; in tests, run kiln-attach-target first)";
}
