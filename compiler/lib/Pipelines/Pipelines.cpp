#include "kiln/Pipelines/Pipelines.h"

#include "mlir/Pass/PassRegistry.h"

#include "kiln/Target/CPU/CpuCodegen.h"

using namespace kiln;

std::vector<PipelineStage> kiln::graphStages() {
  return {
      {"kernels", "canonicalize,cse,func.func(kiln-recognize-attention,kiln-widen-half-precision),"
                  "canonicalize,"
                  "func.func(kiln-form-kernels),canonicalize"},
      {"plan", "kiln-outline-kernels,symbol-dce,kiln-pack-weights"},
  };
}

/// Whether the host converts float32 to bfloat16 in one instruction
/// (AVX512-BF16, AVX-NE-CONVERT), which LLVM then emits for arith.truncf.
/// Elsewhere LLVM would call a runtime library function that a kernel
/// library cannot count on, so arith-expand writes the rounding out (exact,
/// round to nearest even, as c10::BFloat16).
static bool hostConvertsBFloat16() {
  cpu::CpuTarget host = cpu::CpuTarget::host();
  return host.hasFeature("avx512bf16") || host.hasFeature("avxneconvert");
}

std::vector<PipelineStage> kiln::cpuKernelStages() {
  std::string expand = hostConvertsBFloat16() ? "arith-expand" : "arith-expand{include-bf16=true}";
  return {
      {"linalg", "kiln-extract-kernels,convert-kiln-graph-to-linalg,func.func(linalg-generalize-named-ops,"
                 "kiln-fuse-elementwise),canonicalize,cse,func.func(kiln-mark-in-place-operands)"},
      {"bufferized", "kiln-bufferize-kernels,func.func(kiln-stack-temporaries),"
                     "buffer-deallocation-pipeline,canonicalize,cse"},
      {"loops", "func.func(kiln-vectorize-matmul,kiln-lower-attention,kiln-lower-convolution,convert-linalg-to-loops,"
                "kiln-promote-accumulators,kiln-distribute-workgroups)"},
      // Conversions that work function by function are nested, so that
      // they run on the kernels in parallel; the rest need the module
      // (kiln-approximate-math declares libm functions in it).
      {"llvm", "kiln-approximate-math,func.func(expand-strided-metadata,lower-affine,"
               "convert-scf-to-cf," + expand + "),convert-math-to-funcs,"
               "func.func(convert-math-to-llvm,convert-vector-to-llvm),finalize-memref-to-llvm,"
               "func.func(convert-arith-to-llvm,convert-index-to-llvm),"
               "convert-cf-to-llvm,convert-func-to-llvm{use-bare-ptr-memref-call-conv=1},"
               "reconcile-unrealized-casts,kiln-emit-kernel-abi,llvm.func(canonicalize)"},
  };
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
                  "Fuse kiln_graph into kernels and outline them into a host plan",
                  join(graphStages()));
  registerTextual("kiln-cpu-codegen",
                  "Lower kernel functions to LLVM dialect for the CPU",
                  join(cpuKernelStages()));
}
