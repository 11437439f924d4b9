#ifndef KILN_PIPELINES_PIPELINES_H
#define KILN_PIPELINES_PIPELINES_H

#include "kiln/Target/CPU/CpuCodegen.h"
#include "mlir/Pass/PassManager.h"

#include <string>
#include <vector>

namespace kiln {

/// A named stage of the compiler: dumps and timings are per stage.
struct PipelineStage {
  std::string name;
  std::string pipeline; // textual pass pipeline on builtin.module
};

/// Graph stages: kiln_graph -> fused kiln_kernel.kernel ops -> kernel
/// functions and the kiln_plan host plan; weights are packed for `target`.
std::vector<PipelineStage> graphStages(const cpu::CpuTarget &target = cpu::CpuTarget::host());

/// CPU codegen stages for a module holding only kernel functions, ending in
/// the LLVM dialect with each kernel wrapped in the runtime's C ABI. The
/// micro-kernels use `target`'s vector registers.
std::vector<PipelineStage> cpuKernelStages(const cpu::CpuTarget &target = cpu::CpuTarget::host());

/// Registers `kiln-graph-to-plan`, `kiln-cpu-codegen` and `kiln-cpu-pipeline`
/// (both in sequence) as pass pipelines for kiln-opt.
void registerPipelines();

} // namespace kiln

#endif
