// The "vulkan" target: its description, stages and serializer.
#include "kiln/Target/Vulkan/VulkanTarget.h"

#include "llvm/ADT/StringExtras.h"

using namespace kiln;

namespace {

/// The SPIR-V capabilities and extensions the kernels may use: what every
/// Vulkan 1.2 device Kiln runs on must have (64-bit integers and floats, 8-
/// and 16-bit storage for bool, half and bfloat16 tensors), and the atomics
/// of scatters (64-bit integer ones, float32 adds), which the runtime's
/// driver enables where the device has them and checks for when it loads a
/// kernel that declares them.
constexpr llvm::StringLiteral kCapabilities =
    "Shader,Int64,Int16,Int8,Float64,Float16,StorageBuffer16BitAccess,"
    "StorageBuffer8BitAccess,GroupNonUniform,GroupNonUniformArithmetic,Int64Atomics,"
    "AtomicFloat32AddEXT";
constexpr llvm::StringLiteral kExtensions =
    "SPV_KHR_storage_buffer_storage_class,SPV_KHR_16bit_storage,SPV_KHR_8bit_storage,"
    "SPV_EXT_shader_atomic_float_add";
/// Vulkan's guaranteed minimums, so that the kernels run on every device:
/// maxComputeWorkGroupInvocations and maxComputeSharedMemorySize.
constexpr int64_t kMaxWorkgroupSize = 128;
constexpr int64_t kSharedMemoryBytes = 16384;
/// A thread's widest access: a vec4 of 32-bit elements, a 16-byte load or
/// store on every device.
constexpr int64_t kVectorBits = 128;

class VulkanBackend final : public Target {
public:
  /// `emulatedMma`: matmuls of half operands go by the NVIDIA target's
  /// tensor-core tiles and fragments, the mma emulated in workgroup memory
  /// (target "vulkan:emulated-mma": that strategy, run on any device).
  VulkanBackend(std::string name, bool emulatedMma)
      : name(std::move(name)), emulatedMma(emulatedMma) {}

  bool matmulTakesHalfOperands() const override { return emulatedMma; }

  kernel::TargetAttr describe(mlir::MLIRContext &context) const override {
    return kernel::TargetAttr::get(&context, "vulkan", name, "vulkan-spirv",
                                   "spirv64-unknown-vulkan1.2", "vulkan1.2",
                                   features(),
                                   kVectorBits, /*vector_registers=*/0, /*l1_bytes=*/0,
                                   /*l2_bytes=*/0, /*subgroup_size=*/0, kMaxWorkgroupSize,
                                   kSharedMemoryBytes);
  }

  /// The capabilities and extensions as every target writes its features,
  /// "+name" each, comma-separated: so a dumped stage parses again.
  static std::string features() {
    std::string all;
    for (llvm::StringRef list : {llvm::StringRef(kCapabilities), llvm::StringRef(kExtensions)})
      for (llvm::StringRef name : llvm::split(list, ','))
        all += (all.empty() ? "+" : ",+") + name.str();
    return all;
  }

  // A workgroup per few rows: as many as the rows allow, up to the grid
  // size every device supports (maxComputeWorkGroupCount).
  std::string outlineOptions() const override {
    return "{max-workgroups=65535 min-work-per-workgroup=1}";
  }

  std::vector<PipelineStage> kernelStages() const override {
    // SPIR-V's GLSL set has no erf, and its precision for the rest is the
    // device's: the shared stages' math is Kiln's own.
    std::vector<PipelineStage> stages =
        gpuKernelStages(/*subgroupReductions=*/true, emulatedMma ? "emulated" : "");
    stages.push_back({"spirv", "kiln-spirv-form-kernels,gpu.module(lower-affine,math-expand-ops,"
                               "arith-expand{include-bf16=true},canonicalize,cse),"
                               "kiln-spirv-convert,spirv.module(spirv-lower-abi-attrs,"
                               "kiln-spirv-push-constants,spirv-update-vce)"});
    return stages;
  }

  llvm::Expected<SerializedKernels> serializeKernels(mlir::ModuleOp kernels,
                                                     bool keepText) const override {
    return vulkan::serializeSpirvKernels(kernels, keepText);
  }

private:
  std::string name;
  bool emulatedMma;
};

} // namespace

void kiln::vulkan::registerVulkanTarget() {
  TargetRegistry::add({"vulkan",
                       "'vulkan' (SPIR-V for any Vulkan 1.2 device, run by the runtime's "
                       "Vulkan driver), or 'vulkan:emulated-mma' (the same, with matmuls of "
                       "half operands by the NVIDIA tensor-core strategy, emulated: for tests)",
                       [](llvm::StringRef name) -> llvm::Expected<std::unique_ptr<Target>> {
                         if (name != "vulkan" && name != "vulkan:emulated-mma")
                           return llvm::createStringError(
                               "unknown Vulkan target '" + name.str() +
                               "': use 'vulkan' or 'vulkan:emulated-mma'");
                         return std::make_unique<VulkanBackend>(name.str(),
                                                                name == "vulkan:emulated-mma");
                       }});
}
