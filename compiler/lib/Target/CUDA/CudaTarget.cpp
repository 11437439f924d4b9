// The "cuda" targets: their description, stages and serializer.
#include "kiln/Target/CUDA/CudaTarget.h"

#include "kiln/runtime/CudaCapability.h"

#include "llvm/ADT/StringSwitch.h"

using namespace kiln;

namespace {

/// Threads per workgroup and static shared memory the mapping may use:
/// within every NVIDIA GPU's limits (1024 threads, 48 KiB of static shared
/// memory per block).
constexpr int64_t kMaxWorkgroupSize = 256;
constexpr int64_t kSharedMemoryBytes = 49152;
/// A thread's widest access: 16 bytes (ld.global.v4.f32).
constexpr int64_t kVectorBits = 128;
constexpr int64_t kWarpSize = 32;

class CudaBackend final : public Target {
public:
  CudaBackend(std::string name, std::string chip) : name(std::move(name)), chip(std::move(chip)) {}

  kernel::TargetAttr describe(mlir::MLIRContext &context) const override {
    return kernel::TargetAttr::get(&context, "cuda", name, "cuda-" + chip, "nvptx64-nvidia-cuda",
                                   chip, std::string(kPtxFeatures), kVectorBits,
                                   /*vector_registers=*/0, /*l1_bytes=*/0, /*l2_bytes=*/0,
                                   kWarpSize, kMaxWorkgroupSize, kSharedMemoryBytes);
  }

  // A workgroup per few rows, as on Vulkan.
  std::string outlineOptions() const override {
    return "{max-workgroups=65535 min-work-per-workgroup=1}";
  }

  bool matmulTakesHalfOperands() const override { return true; }

  std::vector<PipelineStage> kernelStages() const override {
    // Reductions combine across warps by shuffles (shfl.sync); matmuls of
    // half operands go on tensor cores (mma.sync, sm_80 and later).
    std::vector<PipelineStage> stages =
        gpuKernelStages(/*subgroupReductions=*/true, /*warpMma=*/"nvvm");
    stages.push_back({"nvvm", "kiln-gpu-form-kernel-modules,nvvm-attach-target{chip=" + chip +
                                  " features=" + std::string(kPtxFeatures) + " O=3},"
                                  "gpu.module(kiln-gpu-subgroups-to-shuffles{subgroup-size=32},"
                                  "fold-memref-alias-ops,expand-strided-metadata,"
                                  "lower-affine,convert-scf-to-cf,"
                                  "convert-gpu-to-nvvm{use-bare-ptr-memref-call-conv=1},"
                                  "convert-math-to-llvm,canonicalize,cse),"
                                  "reconcile-unrealized-casts"});
    return stages;
  }

  llvm::Expected<SerializedKernels> serializeKernels(mlir::ModuleOp kernels,
                                                     bool keepText) const override {
    return cuda::serializeNvvmKernels(kernels, chip, keepText);
  }

private:
  /// PTX ISA 8.0: what CUDA 12.0 and later assemble, sm_90a included.
  static constexpr llvm::StringLiteral kPtxFeatures = "+ptx80";
  std::string name, chip;
};

/// Target "cuda": the chip that suits the GPU the runtime's CUDA driver
/// finds, named "cuda:<chip>" so that records and cache keys say which.
llvm::Expected<std::unique_ptr<Target>> forTheGpuHere() {
  auto gpu = runtime::findCudaGpu();
  if (!gpu.ok())
    return llvm::createStringError(
        "target 'cuda' compiles for the GPU found here, and there is none (" +
        gpu.status().message() +
        "); name the chip to compile for: 'cuda:sm_80', 'cuda:sm_90' or 'cuda:sm_90a'");
  auto [capability, gpuName] = *gpu;
  std::string chip = runtime::cudaChipFor(capability);
  if (chip.empty())
    return llvm::createStringError("target 'cuda': the GPU here (" + gpuName +
                                   ", compute capability " + capability.str() +
                                   ") is older than Kiln's oldest NVIDIA target, sm_80");
  return std::make_unique<CudaBackend>("cuda:" + chip, chip);
}

} // namespace

void kiln::cuda::registerCudaTarget() {
  TargetRegistry::add(
      {"cuda",
       "'cuda:sm_80', 'cuda:sm_90' or 'cuda:sm_90a' (PTX and cubins for NVIDIA GPUs of that "
       "compute capability and later; sm_90a adds Hopper's wgmma and TMA and runs on 9.0 "
       "alone), or 'cuda' for the GPU the CUDA driver finds here",
       [](llvm::StringRef name) -> llvm::Expected<std::unique_ptr<Target>> {
         llvm::StringRef chip = name.starts_with("cuda:") ? name.drop_front(5) : "";
         if (name == "cuda")
           return forTheGpuHere();
         if (!llvm::is_contained({"sm_80", "sm_90", "sm_90a"}, chip))
           return llvm::createStringError("unknown CUDA target '" + name.str() +
                                          "': use 'cuda:sm_80', 'cuda:sm_90' or 'cuda:sm_90a'");
         return std::make_unique<CudaBackend>(name.str(), chip.str());
       }});
}
