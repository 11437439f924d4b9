// The kernels' gpu.modules to spirv.modules: upstream's GPU-to-SPIR-V
// conversion with the tensor patterns added (see Passes.td).
#include "kiln/Target/Vulkan/Passes.h"

#include "mlir/Conversion/ArithToSPIRV/ArithToSPIRV.h"
#include "mlir/Conversion/FuncToSPIRV/FuncToSPIRV.h"
#include "mlir/Conversion/GPUToSPIRV/GPUToSPIRV.h"
#include "mlir/Conversion/MemRefToSPIRV/MemRefToSPIRV.h"
#include "mlir/Conversion/SCFToSPIRV/SCFToSPIRV.h"
#include "mlir/Conversion/TensorToSPIRV/TensorToSPIRV.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/SPIRV/IR/SPIRVDialect.h"
#include "mlir/Dialect/SPIRV/IR/TargetAndABI.h"
#include "mlir/Dialect/SPIRV/Transforms/SPIRVConversion.h"
#include "mlir/Transforms/DialectConversion.h"

namespace kiln::vulkan {
#define GEN_PASS_DEF_CONVERTTOSPIRVPASS
#include "kiln/Target/Vulkan/Passes.h.inc"
} // namespace kiln::vulkan

using namespace mlir;

namespace {

/// The largest constant array tensor.extract may turn into a local variable;
/// kiln-spirv-form-kernels refuses larger ones with a message first.
constexpr int64_t kLocalArrayBytes = 16384;

struct ConvertToSpirvPass : kiln::vulkan::impl::ConvertToSpirvPassBase<ConvertToSpirvPass> {
  void runOnOperation() override {
    SmallVector<gpu::GPUModuleOp> originals(getOperation().getOps<gpu::GPUModuleOp>());
    for (gpu::GPUModuleOp original : originals) {
      // convert-gpu-to-spirv's contract: the launch side keeps the gpu.module
      // and the spirv.module is made from a copy placed before it.
      OpBuilder b(original);
      Operation *copy = b.clone(*original);
      mapMemorySpaces(copy);
      if (failed(convert(copy)))
        return signalPassFailure();
    }
  }

  void mapMemorySpaces(Operation *gpuModule) {
    spirv::MemorySpaceToStorageClassConverter converter(spirv::mapMemorySpaceToVulkanStorageClass);
    spirv::convertMemRefTypesAndAttrs(gpuModule, converter);
  }

  LogicalResult convert(Operation *gpuModule) {
    MLIRContext *context = &getContext();
    spirv::TargetEnvAttr environment = spirv::lookupTargetEnvOrDefault(gpuModule);
    std::unique_ptr<ConversionTarget> target = SPIRVConversionTarget::get(environment);
    SPIRVTypeConverter typeConverter(environment);
    RewritePatternSet patterns(context);
    populateGPUToSPIRVPatterns(typeConverter, patterns);
    ScfToSPIRVContext scfContext;
    populateSCFToSPIRVPatterns(typeConverter, scfContext, patterns);
    arith::populateArithToSPIRVPatterns(typeConverter, patterns);
    populateMemRefToSPIRVPatterns(typeConverter, patterns);
    populateFuncToSPIRVPatterns(typeConverter, patterns);
    populateTensorToSPIRVPatterns(typeConverter, kLocalArrayBytes, patterns);
    return applyFullConversion(gpuModule, *target, std::move(patterns));
  }
};

} // namespace
