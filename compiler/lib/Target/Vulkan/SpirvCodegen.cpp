// SPIR-V modules, one per kernel, serialized into the runtime's container.
#include "kiln/Target/Vulkan/VulkanTarget.h"

#include "kiln/runtime/SpirvContainer.h"

#include "mlir/Dialect/SPIRV/IR/SPIRVOps.h"
#include "mlir/Target/SPIRV/Serialization.h"

#include <chrono>

using namespace mlir;

llvm::Expected<kiln::SerializedKernels> kiln::vulkan::serializeSpirvKernels(ModuleOp kernels,
                                                                            bool keepText) {
  auto start = std::chrono::steady_clock::now();
  SerializedKernels result;
  std::vector<runtime::SpirvKernelBinary> binaries;
  for (auto module : kernels.getOps<spirv::ModuleOp>()) {
    auto entryPoints = llvm::to_vector(module.getOps<spirv::EntryPointOp>());
    if (entryPoints.size() != 1)
      return llvm::createStringError("SPIR-V module '" + module.getName().value_or("").str() +
                                     "' has " + std::to_string(entryPoints.size()) +
                                     " entry points, not one kernel");
    std::string entry = entryPoints.front().getFn().str();
    SmallVector<uint32_t> words;
    if (failed(spirv::serialize(module, words)))
      return llvm::createStringError("could not serialize the SPIR-V of kernel '" + entry + "'");
    KernelCode code;
    code.name = entry;
    code.symbol = entry;
    if (keepText) {
      llvm::raw_string_ostream os(code.ir);
      module.print(os);
      code.irExtension = "spirv.mlir";
    }
    result.kernels.push_back(std::move(code));
    binaries.push_back({entry, std::vector<uint32_t>(words.begin(), words.end())});
  }
  result.executable = runtime::encodeSpirvContainer(binaries);
  result.kernelsCompiled = binaries.size();
  result.stepTimesMs.push_back(
      {"serialize",
       std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count()});
  return result;
}
