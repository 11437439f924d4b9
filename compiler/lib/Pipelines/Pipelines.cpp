#include "kiln/Pipelines/Pipelines.h"

#include "kiln/Target/CPU/CpuTarget.h"

#include "mlir/Pass/PassRegistry.h"

using namespace kiln;

/// The graph stages, outlining with `outlineOptions`, and with `planPasses`
/// after it.
static std::vector<PipelineStage> graphStagesWith(const std::string &outlineOptions,
                                                  const std::string &planPasses,
                                                  bool halfMatmulOperands = false) {
  std::string widen = halfMatmulOperands ? "kiln-widen-half-precision{half-matmul-operands=true}"
                                         : "kiln-widen-half-precision";
  return {
      {"kernels", "canonicalize,cse,func.func(kiln-recognize-attention," + widen + "),"
                  "canonicalize,"
                  "func.func(kiln-form-kernels),canonicalize,func.func(kiln-overlap-collectives)"},
      {"plan", "kiln-outline-kernels" + outlineOptions + ",symbol-dce" +
                   (planPasses.empty() ? "" : "," + planPasses)},
  };
}

std::vector<PipelineStage> kiln::graphStages(const Target &target) {
  return graphStagesWith(target.outlineOptions(), target.planPasses(),
                         target.matmulTakesHalfOperands());
}

static std::string join(const std::vector<PipelineStage> &stages) {
  std::string text;
  for (const PipelineStage &stage : stages)
    text += (text.empty() ? "" : ",") + stage.pipeline;
  return text;
}

static void registerTextual(llvm::StringRef name, llvm::StringRef description,
                            std::string pipeline) {
  mlir::PassPipelineRegistration<>(
      name, description, [pipeline](mlir::OpPassManager &pm) {
        if (failed(mlir::parsePassPipeline(pipeline, pm)))
          llvm::report_fatal_error("invalid built-in pipeline");
      });
}

void kiln::registerPipelines() {
  registerTextual("kiln-graph-to-plan",
                  "Fuse kiln_graph into kernels and outline them into a host plan (CPU plan "
                  "passes; needs kiln_kernel.target)",
                  join(graphStagesWith("", cpu::planPasses())));
  registerTextual("kiln-cpu-codegen",
                  "Lower kernel functions to LLVM dialect for the CPU (needs kiln_kernel.target)",
                  join(cpu::kernelStages()));
}
