// The kernels' gpu.modules to spirv.modules: upstream's GPU-to-SPIR-V
// conversion with the tensor patterns added (see Passes.td).
#include "kiln/Target/Vulkan/Passes.h"

#include "mlir/Conversion/ArithToSPIRV/ArithToSPIRV.h"
#include "mlir/Conversion/FuncToSPIRV/FuncToSPIRV.h"
#include "mlir/Conversion/GPUToSPIRV/GPUToSPIRV.h"
#include "mlir/Conversion/MathToSPIRV/MathToSPIRV.h"
#include "mlir/Conversion/MemRefToSPIRV/MemRefToSPIRV.h"
#include "mlir/Conversion/SCFToSPIRV/SCFToSPIRV.h"
#include "mlir/Conversion/TensorToSPIRV/TensorToSPIRV.h"
#include "mlir/Conversion/VectorToSPIRV/VectorToSPIRV.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SPIRV/IR/SPIRVDialect.h"
#include "mlir/Dialect/SPIRV/IR/TargetAndABI.h"
#include "mlir/Dialect/SPIRV/Transforms/SPIRVConversion.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Transforms/DialectConversion.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace kiln::vulkan {
#define GEN_PASS_DEF_CONVERTTOSPIRVPASS
#include "kiln/Target/Vulkan/Passes.h.inc"
} // namespace kiln::vulkan

using namespace mlir;

namespace {

/// The largest constant array tensor.extract may turn into a local variable;
/// kiln-spirv-form-kernels refuses larger ones with a message first.
constexpr int64_t kLocalArrayBytes = 16384;

/// trunc(x), which SPIR-V's GLSL set lacks: ceil below zero, floor above
/// (both keep -0.0 and NaN).
struct ExpandTrunc : OpRewritePattern<math::TruncOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(math::TruncOp op, PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value x = op.getOperand();
    Value zero = arith::ConstantOp::create(rewriter, loc, rewriter.getZeroAttr(x.getType()));
    Value negative = arith::CmpFOp::create(rewriter, loc, arith::CmpFPredicate::OLT, x, zero);
    rewriter.replaceOpWithNewOp<arith::SelectOp>(op, negative, math::CeilOp::create(rewriter, loc, x),
                                                 math::FloorOp::create(rewriter, loc, x));
    return success();
  }
};

/// x / c for a constant zero c as IEEE division gives it (an infinity of
/// the product's sign, NaN for 0/0 and NaN/0): Vulkan leaves division by
/// zero undefined, and drivers fold a constant one into garbage (lavapipe
/// does). A zero that is only known at run time divides as IEEE does on the
/// devices Kiln runs on.
struct DivideByConstantZero : OpRewritePattern<arith::DivFOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(arith::DivFOp op, PatternRewriter &rewriter) const override {
    auto type = dyn_cast<FloatType>(op.getType());
    FloatAttr divisor;
    if (!type || !matchPattern(op.getRhs(), m_Constant(&divisor)) || !divisor.getValue().isZero())
      return failure();
    Location loc = op.getLoc();
    Value x = op.getLhs();
    auto constant = [&](APFloat value) -> Value {
      return arith::ConstantOp::create(rewriter, loc, FloatAttr::get(type, value));
    };
    const llvm::fltSemantics &semantics = type.getFloatSemantics();
    // copysign(inf, x), negated by a -0 divisor.
    Value infinity = math::CopySignOp::create(rewriter, loc, constant(APFloat::getInf(semantics)), x);
    if (divisor.getValue().isNegative())
      infinity = arith::NegFOp::create(rewriter, loc, infinity);
    Value zeroOrNaN = arith::CmpFOp::create(rewriter, loc, arith::CmpFPredicate::UEQ, x,
                                            constant(APFloat::getZero(semantics)));
    rewriter.replaceOpWithNewOp<arith::SelectOp>(op, zeroOrNaN,
                                                 constant(APFloat::getNaN(semantics)), infinity);
    return success();
  }
};

/// asinh(x) as asinh(|x|) with x's sign: GLSL's Asinh is
/// log(x + sqrt(x^2 + 1)) in drivers, which cancels for negative x.
struct SymmetricAsinh : OpRewritePattern<math::AsinhOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(math::AsinhOp op, PatternRewriter &rewriter) const override {
    if (op.getOperand().getDefiningOp<math::AbsFOp>())
      return failure(); // already symmetric
    Location loc = op.getLoc();
    Value magnitude = math::AsinhOp::create(rewriter, loc,
                                            math::AbsFOp::create(rewriter, loc, op.getOperand()));
    rewriter.replaceOpWithNewOp<math::CopySignOp>(op, magnitude, op.getOperand());
    return success();
  }
};

/// The math ops SPIR-V's GLSL.std.450 set has for 64-bit floats; the
/// transcendental ones (exp, log, sin, pow, tanh...) take 16- and 32-bit
/// floats only.
bool hasFloat64Instruction(Operation *op) {
  return isa<math::AbsFOp, math::CeilOp, math::FloorOp, math::FmaOp, math::SqrtOp, math::RsqrtOp,
             math::RoundOp, math::RoundEvenOp, math::CopySignOp, math::IsNaNOp, math::IsInfOp,
             math::IsFiniteOp>(op);
}

/// gpu.barrier as a workgroup barrier that also orders storage-buffer
/// memory: Kiln's kernels pass values between their steps through global
/// buffers (a fused matmul's result read by the layer norm after it), and
/// upstream's conversion orders workgroup memory only, which lets a driver
/// keep a buffer's loads from before the barrier (lavapipe does, on large
/// enough loops).
struct BarrierOrdersBuffers : OpConversionPattern<gpu::BarrierOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(gpu::BarrierOp op, OpAdaptor,
                                ConversionPatternRewriter &rewriter) const override {
    auto semantics = spirv::MemorySemantics::AcquireRelease |
                     spirv::MemorySemantics::WorkgroupMemory |
                     spirv::MemorySemantics::UniformMemory;
    rewriter.replaceOpWithNewOp<spirv::ControlBarrierOp>(op, spirv::Scope::Workgroup,
                                                         spirv::Scope::Workgroup, semantics);
    return success();
  }
};

/// memref.atomic_rmw addf on a storage buffer as SPV_EXT_shader_atomic_float_add's
/// OpAtomicFAddEXT (upstream converts the integer kinds only).
struct AtomicFloatAdd : OpConversionPattern<memref::AtomicRMWOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(memref::AtomicRMWOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    if (op.getKind() != arith::AtomicRMWKind::addf)
      return failure();
    auto &converter = *getTypeConverter<SPIRVTypeConverter>();
    Type type = converter.convertType(op.getType());
    if (!type)
      return rewriter.notifyMatchFailure(op, "the element type does not convert");
    Value pointer = spirv::getElementPtr(converter, op.getMemRefType(), adaptor.getMemref(),
                                         adaptor.getIndices(), op.getLoc(), rewriter);
    if (!pointer)
      return rewriter.notifyMatchFailure(op, "no element pointer");
    rewriter.replaceOpWithNewOp<spirv::EXTAtomicFAddOp>(
        op, type, pointer, spirv::Scope::Device, spirv::MemorySemantics::AcquireRelease,
        adaptor.getValue());
    return success();
  }
};

struct ConvertToSpirvPass : kiln::vulkan::impl::ConvertToSpirvPassBase<ConvertToSpirvPass> {
  void runOnOperation() override {
    SmallVector<gpu::GPUModuleOp> originals(getOperation().getOps<gpu::GPUModuleOp>());
    for (gpu::GPUModuleOp original : originals) {
      // convert-gpu-to-spirv's contract: the launch side keeps the gpu.module
      // and the spirv.module is made from a copy placed before it.
      if (failed(checkFloat64Math(original)) || failed(expandMissingInstructions(original)))
        return signalPassFailure();
      OpBuilder b(original);
      Operation *copy = b.clone(*original);
      mapMemorySpaces(copy);
      if (failed(convert(copy)))
        return signalPassFailure();
    }
  }

  /// Float64 math the target has no instruction for is refused at the op,
  /// with the words the Python side reads as "not supported by the target"
  /// (so fallback="error" names the op, and the default runs it in eager).
  static LogicalResult checkFloat64Math(gpu::GPUModuleOp module) {
    WalkResult walk = module.walk([](Operation *op) {
      if (op->getDialect()->getNamespace() != math::MathDialect::getDialectNamespace() ||
          hasFloat64Instruction(op))
        return WalkResult::advance();
      auto isFloat64 = [](Type type) { return getElementTypeOrSelf(type).isF64(); };
      if (llvm::any_of(op->getOperandTypes(), isFloat64) ||
          llvm::any_of(op->getResultTypes(), isFloat64)) {
        op->emitOpError("on float64 is not supported by the target: Vulkan's GLSL.std.450 "
                        "math takes 16- and 32-bit floats");
        return WalkResult::interrupt();
      }
      return WalkResult::advance();
    });
    return failure(walk.wasInterrupted());
  }

  /// MLIR's scf.for to SPIR-V carries the loop's values in variables that
  /// only its body stores: a loop that runs no iteration returns garbage
  /// (seen as zeros on lavapipe) instead of its initial values. Each result
  /// is taken from the initial value when the loop runs no iteration.
  static void guardEmptyLoops(gpu::GPUModuleOp module) {
    module.walk([](scf::ForOp loop) {
      if (loop.getNumResults() == 0)
        return;
      OpBuilder b = OpBuilder::atBlockEnd(loop->getBlock());
      b.setInsertionPointAfter(loop);
      Location loc = loop.getLoc();
      Value runs = arith::CmpIOp::create(
          b, loc, loop.getUnsignedCmp() ? arith::CmpIPredicate::ult : arith::CmpIPredicate::slt,
          loop.getLowerBound(), loop.getUpperBound());
      for (auto [result, init] : llvm::zip(loop.getResults(), loop.getInitArgs())) {
        Value guarded = arith::SelectOp::create(b, loc, runs, result, init);
        result.replaceAllUsesExcept(guarded, guarded.getDefiningOp());
      }
    });
  }

  static LogicalResult expandMissingInstructions(gpu::GPUModuleOp module) {
    guardEmptyLoops(module);
    RewritePatternSet patterns(module.getContext());
    patterns.add<ExpandTrunc, SymmetricAsinh, DivideByConstantZero>(module.getContext());
    return applyPatternsGreedily(module, std::move(patterns));
  }

  void mapMemorySpaces(Operation *gpuModule) {
    // The GPU layer's gpu.address_space values, then Vulkan's numeric ones.
    auto storageClass = [](Attribute space) -> std::optional<spirv::StorageClass> {
      if (auto gpuSpace = dyn_cast_or_null<gpu::AddressSpaceAttr>(space)) {
        switch (gpuSpace.getValue()) {
        case gpu::AddressSpace::Workgroup:
          return spirv::StorageClass::Workgroup;
        case gpu::AddressSpace::Private:
          return spirv::StorageClass::Function;
        case gpu::AddressSpace::Global:
          return spirv::StorageClass::StorageBuffer;
        }
      }
      return spirv::mapMemorySpaceToVulkanStorageClass(space);
    };
    spirv::MemorySpaceToStorageClassConverter converter(storageClass);
    spirv::convertMemRefTypesAndAttrs(gpuModule, converter);
  }

  LogicalResult convert(Operation *gpuModule) {
    MLIRContext *context = &getContext();
    spirv::TargetEnvAttr environment = spirv::lookupTargetEnvOrDefault(gpuModule);
    std::unique_ptr<ConversionTarget> target = SPIRVConversionTarget::get(environment);
    SPIRVTypeConverter typeConverter(environment);
    RewritePatternSet patterns(context);
    patterns.add<BarrierOrdersBuffers, AtomicFloatAdd>(typeConverter, context, /*benefit=*/2);
    populateGPUToSPIRVPatterns(typeConverter, patterns);
    ScfToSPIRVContext scfContext;
    populateSCFToSPIRVPatterns(typeConverter, scfContext, patterns);
    arith::populateArithToSPIRVPatterns(typeConverter, patterns);
    populateMemRefToSPIRVPatterns(typeConverter, patterns);
    populateMathToSPIRVPatterns(typeConverter, patterns);
    populateFuncToSPIRVPatterns(typeConverter, patterns);
    populateTensorToSPIRVPatterns(typeConverter, kLocalArrayBytes, patterns);
    populateVectorToSPIRVPatterns(typeConverter, patterns);
    return applyFullConversion(gpuModule, *target, std::move(patterns));
  }
};

} // namespace
