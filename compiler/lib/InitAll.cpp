#include "kiln/InitAll.h"

#include "kiln/Conversion/Passes.h"
#include "kiln/Dialect/Graph/IR/GraphOps.h"
#include "kiln/Dialect/Kernel/IR/KernelOps.h"
#include "kiln/Dialect/Kernel/Transforms/Passes.h"
#include "kiln/Dialect/Plan/IR/PlanOps.h"
#include "kiln/Pipelines/Pipelines.h"
#include "kiln/Target/CPU/CpuTarget.h"
#include "kiln/Target/CPU/Passes.h"
#include "kiln/Target/CUDA/CudaTarget.h"
#include "kiln/Target/ROCm/RocmTarget.h"
#include "kiln/Target/GPU/Passes.h"
#include "kiln/Target/Passes.h"
#include "kiln/Target/Vulkan/Passes.h"
#include "kiln/Target/Vulkan/VulkanTarget.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/LLVMIR/ROCDLDialect.h"
#include "mlir/Dialect/SPIRV/IR/SPIRVDialect.h"
#include "mlir/Dialect/Index/IR/IndexDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Target/LLVM/NVVM/Target.h"
#include "mlir/Target/LLVM/ROCDL/Target.h"

void kiln::registerAllKilnDialects(mlir::DialectRegistry &registry) {
  registry.insert<graph::GraphDialect, kernel::KernelDialect, plan::PlanDialect,
                  mlir::func::FuncDialect, mlir::arith::ArithDialect,
                  mlir::math::MathDialect, mlir::linalg::LinalgDialect,
                  mlir::tensor::TensorDialect, mlir::bufferization::BufferizationDialect,
                  mlir::memref::MemRefDialect, mlir::scf::SCFDialect,
                  mlir::cf::ControlFlowDialect, mlir::affine::AffineDialect,
                  mlir::vector::VectorDialect, mlir::index::IndexDialect,
                  mlir::LLVM::LLVMDialect, mlir::gpu::GPUDialect,
                  mlir::spirv::SPIRVDialect, mlir::NVVM::NVVMDialect,
                  mlir::ROCDL::ROCDLDialect>();
  mlir::registerAllExtensions(registry);
  // #nvvm.target's and #rocdl.target's serialization (PTX, code objects),
  // which registerAllExtensions leaves out.
  mlir::NVVM::registerNVVMTargetInterfaceExternalModels(registry);
  mlir::ROCDL::registerROCDLTargetInterfaceExternalModels(registry);
}

void kiln::registerAllKilnPasses() {
  static bool registered = [] {
    mlir::registerAllPasses();
    kernel::registerKernelPasses();
    registerConversionPasses();
    cpu::registerCPUPasses();
    gpu::registerGPUPasses();
    vulkan::registerVulkanPasses();
    registerTargetPasses();
    registerPipelines();
    registerAllTargets();
    return true;
  }();
  (void)registered;
}

void kiln::registerAllTargets() {
  static bool registered = [] {
    cpu::registerCpuTarget();
    vulkan::registerVulkanTarget();
    cuda::registerCudaTarget();
    rocm::registerRocmTarget();
    return true;
  }();
  (void)registered;
}
