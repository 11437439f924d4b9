// A kernel function's interface once mapped onto GPU threads.
#include "kiln/Target/GPU/MappedKernel.h"

#include "kiln/Dialect/Kernel/IR/KernelOps.h"

using namespace mlir;

FailureOr<kiln::gpu::MappedKernel> kiln::gpu::mappedKernel(func::FuncOp func) {
  auto workgroupSize = func->getAttrOfType<DenseI64ArrayAttr>(kernel::kWorkgroupSizeAttr);
  if (!workgroupSize)
    return func.emitOpError("has no ") << kernel::kWorkgroupSizeAttr
                                       << ": map it to workgroups first (kiln-gpu-map-workgroups)";
  MappedKernel mapped;
  for (int64_t size : workgroupSize.asArrayRef())
    mapped.workgroupSize.push_back(static_cast<int32_t>(size));
  auto numSymbols = func->getAttrOfType<IntegerAttr>(kernel::kNumSymbolsAttr);
  mapped.numSymbols = numSymbols ? numSymbols.getInt() : 0;
  if (func.getNumArguments() < 2 + mapped.numSymbols)
    return func.emitOpError("has fewer arguments than its workgroup id and count and its ")
           << mapped.numSymbols << " size symbols";
  mapped.numBindings = func.getNumArguments() - 2 - mapped.numSymbols;
  for (unsigned i : {0u, 1u})
    if (!func.getArgument(i).use_empty())
      return func.emitOpError("still uses its workgroup id or count arguments: map it to "
                              "workgroups first (kiln-gpu-map-workgroups)");
  return mapped;
}
