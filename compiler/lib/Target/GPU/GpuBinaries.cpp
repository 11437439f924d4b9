// What serializing gpu.modules needs, for the NVIDIA and AMD targets.
#include "kiln/Target/GPU/GpuBinaries.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/GPU/GPUToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/NVVM/NVVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/ROCDL/ROCDLToLLVMIRTranslation.h"
#include "llvm/Support/Path.h"

using namespace mlir;

std::string kiln::gpu::joinedPath(llvm::StringRef root, std::initializer_list<llvm::StringRef> parts) {
  llvm::SmallString<256> path(root);
  for (llvm::StringRef part : parts)
    llvm::sys::path::append(path, part);
  return std::string(path);
}

void kiln::gpu::registerGpuTranslations(MLIRContext &context) {
  DialectRegistry registry;
  registerBuiltinDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
  registerGPUDialectTranslation(registry);
  registerNVVMDialectTranslation(registry);
  registerROCDLDialectTranslation(registry);
  context.appendDialectRegistry(registry);
}

llvm::Error kiln::gpu::runReportingErrors(ModuleOp module, const std::string &pipeline,
                                          const std::string &what) {
  std::string diagnostics;
  ScopedDiagnosticHandler handler(module.getContext(), [&](Diagnostic &diagnostic) {
    if (diagnostic.getSeverity() == DiagnosticSeverity::Error)
      diagnostics += (diagnostics.empty() ? "" : "\n") + diagnostic.str();
    return success();
  });
  PassManager pm(module.getContext());
  if (failed(parsePassPipeline(pipeline, pm)) || failed(pm.run(module)) || !diagnostics.empty())
    return llvm::createStringError(what + (diagnostics.empty() ? "" : ": " + diagnostics));
  return llvm::Error::success();
}

std::map<std::string, std::string> kiln::gpu::binaryObjects(ModuleOp module) {
  std::map<std::string, std::string> objects;
  for (auto binary : module.getOps<mlir::gpu::BinaryOp>())
    if (auto object = dyn_cast<mlir::gpu::ObjectAttr>(binary.getObjectsAttr()[0]))
      objects[binary.getSymName().str()] = object.getObject().getValue().str();
  return objects;
}
