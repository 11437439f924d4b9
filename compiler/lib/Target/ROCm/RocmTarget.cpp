// The "rocm" targets: their description, stages and registration.
#include "kiln/Target/ROCm/RocmTarget.h"

#include "llvm/ADT/STLExtras.h"

using namespace kiln;

namespace {

constexpr int64_t kMaxWorkgroupSize = 256;
/// LDS per workgroup on CDNA3 and RDNA3.
constexpr int64_t kSharedMemoryBytes = 65536;
constexpr int64_t kVectorBits = 128;

class RocmBackend final : public Target {
public:
  RocmBackend(std::string name, std::string chip) : name(std::move(name)), chip(std::move(chip)) {}

  kernel::TargetAttr describe(mlir::MLIRContext &context) const override {
    // CDNA (gfx9) runs waves of 64 threads; RDNA (gfx10 and later) of 32.
    int64_t wave = llvm::StringRef(chip).starts_with("gfx9") ? 64 : 32;
    return kernel::TargetAttr::get(&context, "rocm", name, "rocm-" + chip, "amdgcn-amd-amdhsa", chip,
                                   "", kVectorBits, /*vector_registers=*/0, /*l1_bytes=*/0,
                                   /*l2_bytes=*/0, wave, kMaxWorkgroupSize, kSharedMemoryBytes);
  }

  std::string outlineOptions() const override {
    return "{max-workgroups=65535 min-work-per-workgroup=1}";
  }

  // Matmul kernels read half operands as they are (no tensor-core
  // strategy for AMD yet: the threads' tiles multiply them in float32).
  bool matmulTakesHalfOperands() const override { return true; }

  std::vector<PipelineStage> kernelStages() const override {
    // Reductions meet in shared memory (LDS), as on NVIDIA.
    std::vector<PipelineStage> stages = gpuKernelStages(/*subgroupReductions=*/false);
    stages.push_back({"rocdl", "kiln-gpu-form-kernel-modules,rocdl-attach-target{chip=" + chip +
                                   " O=3},gpu.module(fold-memref-alias-ops,expand-strided-metadata,"
                                   "lower-affine,convert-scf-to-cf,"
                                   "convert-gpu-to-rocdl{use-bare-ptr-memref-call-conv=1 runtime=HIP "
                                   "chipset=" + chip + "},convert-math-to-llvm,canonicalize,cse),"
                                   "reconcile-unrealized-casts"});
    return stages;
  }

  llvm::Expected<SerializedKernels> serializeKernels(mlir::ModuleOp kernels,
                                                     bool keepText) const override {
    return rocm::serializeRocdlKernels(kernels, keepText);
  }

private:
  std::string name, chip;
};

} // namespace

void kiln::rocm::registerRocmTarget() {
  TargetRegistry::add(
      {"rocm",
       "'rocm:gfx942' or 'rocm:gfx1100' (AMD GPU code objects, compile-only: no runtime driver "
       "runs them yet)",
       [](llvm::StringRef name) -> llvm::Expected<std::unique_ptr<Target>> {
         llvm::StringRef chip = name.starts_with("rocm:") ? name.drop_front(5) : "";
         if (!llvm::is_contained({"gfx942", "gfx1100"}, chip))
           return llvm::createStringError("unknown ROCm target '" + name.str() +
                                          "': use 'rocm:gfx942' or 'rocm:gfx1100'");
         return std::make_unique<RocmBackend>(name.str(), chip.str());
       }});
}
