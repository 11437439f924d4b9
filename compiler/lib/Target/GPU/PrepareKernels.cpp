// Shapes bufferized kernels for the GPU mapping: parallel loops outermost,
// and temporaries turned into buffers of the launch (see Passes.td).
#include "kiln/Target/GPU/Passes.h"

#include "kiln/Dialect/Kernel/IR/KernelOps.h"
#include "kiln/Dialect/Kernel/Transforms/Passes.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/IR/PatternMatch.h"

namespace kiln::gpu {
#define GEN_PASS_DEF_GPUPREPAREKERNELSPASS
#include "kiln/Target/GPU/Passes.h.inc"
} // namespace kiln::gpu

using namespace mlir;

namespace {

/// The expression over the size symbols (`symbols`, the kernel's trailing
/// arguments) that computes `value`, for the sizes a kernel computes from its
/// symbols (kiln::kernel::sizeValue); nullopt for anything else.
std::optional<AffineExpr> symbolicSize(Value value, ArrayRef<Value> symbols) {
  MLIRContext *context = value.getContext();
  if (auto it = llvm::find(symbols, value); it != symbols.end())
    return getAffineSymbolExpr(it - symbols.begin(), context);
  if (auto constant = getConstantIntValue(value))
    return getAffineConstantExpr(*constant, context);
  Operation *op = value.getDefiningOp();
  if (!op)
    return std::nullopt;
  if (auto cast = dyn_cast<arith::IndexCastOp>(op))
    return symbolicSize(cast.getIn(), symbols);
  if (auto apply = dyn_cast<affine::AffineApplyOp>(op)) {
    SmallVector<AffineExpr> operands;
    for (Value operand : apply.getMapOperands()) {
      auto expr = symbolicSize(operand, symbols);
      if (!expr)
        return std::nullopt;
      operands.push_back(*expr);
    }
    AffineMap map = apply.getAffineMap();
    return map.getResult(0).replaceDimsAndSymbols(
        ArrayRef(operands).take_front(map.getNumDims()),
        ArrayRef(operands).drop_front(map.getNumDims()));
  }
  if (op->getNumOperands() != 2)
    return std::nullopt;
  auto lhs = symbolicSize(op->getOperand(0), symbols);
  auto rhs = symbolicSize(op->getOperand(1), symbols);
  if (!lhs || !rhs)
    return std::nullopt;
  auto constantRhs = dyn_cast<AffineConstantExpr>(*rhs);
  if (isa<arith::AddIOp>(op))
    return *lhs + *rhs;
  if (isa<arith::SubIOp>(op))
    return *lhs - *rhs;
  if (isa<arith::MulIOp>(op))
    return *lhs * *rhs;
  // Sizes are never negative, so signed and unsigned division agree.
  if (isa<arith::DivUIOp, arith::DivSIOp, arith::FloorDivSIOp>(op) && constantRhs &&
      constantRhs.getValue() > 0)
    return lhs->floorDiv(*rhs);
  if (isa<arith::CeilDivUIOp, arith::CeilDivSIOp>(op) && constantRhs &&
      constantRhs.getValue() > 0)
    return lhs->ceilDiv(*rhs);
  return std::nullopt;
}

struct GpuPrepareKernelsPass
    : kiln::gpu::impl::GpuPrepareKernelsPassBase<GpuPrepareKernelsPass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (!func->hasAttr(kiln::kernel::kKernelAttr) || func.isExternal())
      return;
    if (failed(putParallelLoopsOutside(func)) || failed(temporariesToBuffers(func)))
      signalPassFailure();
  }

  static LogicalResult putParallelLoopsOutside(func::FuncOp func) {
    IRRewriter rewriter(func.getContext());
    for (auto generic : llvm::to_vector(func.getOps<linalg::GenericOp>())) {
      SmallVector<unsigned> order;
      for (auto [dim, type] : llvm::enumerate(generic.getIteratorTypesArray()))
        if (type == utils::IteratorType::parallel)
          order.push_back(dim);
      for (auto [dim, type] : llvm::enumerate(generic.getIteratorTypesArray()))
        if (type != utils::IteratorType::parallel)
          order.push_back(dim);
      if (llvm::equal(order, llvm::seq<unsigned>(0, order.size())))
        continue;
      rewriter.setInsertionPoint(generic);
      if (failed(linalg::interchangeGenericOp(rewriter, generic, order)))
        return generic.emitOpError("could not put its parallel loops outside its reductions");
    }
    return success();
  }

  /// Each memref.alloc becomes a memref<1 x T> argument (like the kernel's
  /// bindings) reinterpreted at the alloc's shape.
  static LogicalResult temporariesToBuffers(func::FuncOp func) {
    SmallVector<memref::AllocOp> allocs;
    WalkResult walk = func.walk([&](Operation *op) {
      if (auto alloc = dyn_cast<memref::AllocOp>(op)) {
        if (alloc->getBlock() != &func.getBody().front()) {
          alloc.emitOpError("a GPU kernel cannot allocate memory inside a loop or branch");
          return WalkResult::interrupt();
        }
        allocs.push_back(alloc);
      } else if (isa<memref::AllocaOp>(op)) {
        op->emitOpError("a GPU kernel has no stack for temporaries");
        return WalkResult::interrupt();
      }
      return WalkResult::advance();
    });
    if (walk.wasInterrupted())
      return failure();
    if (allocs.empty())
      return success();

    MLIRContext *context = func.getContext();
    SmallVector<Value> symbols = kiln::kernel::symbolArguments(func);
    auto numSymbols = func->getAttrOfType<IntegerAttr>(kiln::kernel::kNumSymbolsAttr);
    unsigned position = func.getNumArguments() - (numSymbols ? numSymbols.getInt() : 0);
    SmallVector<Attribute> sizes;
    for (memref::AllocOp alloc : allocs) {
      MemRefType type = alloc.getType();
      Type element = type.getElementType();
      if (!type.getLayout().isIdentity() || !element.isIntOrFloat())
        return alloc.emitOpError("a GPU kernel's temporaries must be dense arrays of numbers, "
                                 "not ")
               << type;
      // The byte size: a constant, or an expression over the symbols.
      AffineExpr bytes = getAffineConstantExpr(llvm::divideCeil(element.getIntOrFloatBitWidth(), 8),
                                               context);
      auto dynamicSize = alloc.getDynamicSizes().begin();
      for (int64_t dim : type.getShape()) {
        if (!ShapedType::isDynamic(dim)) {
          bytes = bytes * dim;
          continue;
        }
        auto size = symbolicSize(*dynamicSize++, symbols);
        if (!size)
          return alloc.emitOpError("has a size the GPU target cannot express over the size "
                                   "symbols, for a buffer of the launch");
        bytes = bytes * *size;
      }
      if (auto constant = dyn_cast<AffineConstantExpr>(bytes))
        sizes.push_back(IntegerAttr::get(IntegerType::get(context, 64), constant.getValue()));
      else
        sizes.push_back(AffineMapAttr::get(AffineMap::get(0, symbols.size(), bytes)));

      auto argumentType = MemRefType::get({1}, element);
      if (failed(func.insertArgument(position, argumentType, {}, alloc.getLoc())))
        return failure();
      Value argument = func.getArgument(position++);
      OpBuilder b(alloc);
      // Row-major strides: a product of the inner sizes, symbolic ones
      // included (an identity layout with a dynamic inner dim has dynamic
      // strides).
      SmallVector<OpFoldResult> shape = alloc.getMixedSizes();
      SmallVector<OpFoldResult> strides(type.getRank());
      OpFoldResult stride = b.getIndexAttr(1);
      for (int64_t i = type.getRank() - 1; i >= 0; --i) {
        strides[i] = stride;
        if (i == 0)
          break;
        auto constantStride = getConstantIntValue(stride);
        auto constantSize = getConstantIntValue(shape[i]);
        if (constantStride && constantSize)
          stride = b.getIndexAttr(*constantStride * *constantSize);
        else if (constantStride == 1)
          stride = shape[i];
        else
          stride = arith::MulIOp::create(b, alloc.getLoc(),
                                         getValueOrCreateConstantIndexOp(b, alloc.getLoc(), stride),
                                         getValueOrCreateConstantIndexOp(b, alloc.getLoc(), shape[i]))
                       .getResult();
      }
      Value view = memref::ReinterpretCastOp::create(b, alloc.getLoc(), type, argument,
                                                     b.getIndexAttr(0), shape, strides);
      for (Operation *user : llvm::to_vector(alloc->getUsers()))
        if (isa<memref::DeallocOp>(user))
          user->erase();
      alloc.getResult().replaceAllUsesWith(view);
      alloc.erase();
    }
    func->setAttr(kiln::kernel::kScratchBuffersAttr, ArrayAttr::get(context, sizes));
    return success();
  }
};

} // namespace
