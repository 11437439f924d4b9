//===- GpuBinaries.h - What serializing gpu.modules needs -----------------===//
//
// Shared by the targets whose kernels MLIR's gpu-module-to-binary turns
// into device code (NVIDIA's PTX, AMD's code objects).
//
//===----------------------------------------------------------------------===//

#ifndef KILN_TARGET_GPU_GPUBINARIES_H
#define KILN_TARGET_GPU_GPUBINARIES_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/Error.h"

#include <initializer_list>
#include <map>
#include <string>

namespace kiln::gpu {

/// `root`/`parts`...
std::string joinedPath(llvm::StringRef root, std::initializer_list<llvm::StringRef> parts);

/// Registers the LLVM IR translations of the builtin, LLVM, GPU, NVVM and
/// ROCDL dialects on `context` (what serializing a gpu.module translates).
void registerGpuTranslations(mlir::MLIRContext &context);

/// Runs the textual `pipeline` on `module`. Any error diagnostic fails it,
/// even where the pass itself succeeds (MLIR reports a missing libdevice
/// only as a diagnostic); `what` starts the message.
llvm::Error runReportingErrors(mlir::ModuleOp module, const std::string &pipeline,
                               const std::string &what);

/// Each gpu.binary's first object (its PTX, or code object), by the name of
/// its kernel.
std::map<std::string, std::string> binaryObjects(mlir::ModuleOp module);

} // namespace kiln::gpu

#endif // KILN_TARGET_GPU_GPUBINARIES_H
