#include "kiln/Pipelines/Pipelines.h"

#include "mlir/Pass/PassRegistry.h"

#include "kiln/Target/CPU/CpuCodegen.h"

using namespace kiln;

/// `{vector-bits=N}` for the passes that emit micro-kernels.
static std::string vectorBitsOption(const cpu::CpuTarget &target) {
  return "{vector-bits=" + std::to_string(target.vectorBits()) + "}";
}

std::vector<PipelineStage> kiln::graphStages(const cpu::CpuTarget &target) {
  return {
      {"kernels", "canonicalize,cse,func.func(kiln-recognize-attention,kiln-widen-half-precision),"
                  "canonicalize,"
                  "func.func(kiln-form-kernels),canonicalize"},
      {"plan", "kiln-outline-kernels,symbol-dce,kiln-pack-weights" + vectorBitsOption(target)},
  };
}

std::vector<PipelineStage> kiln::cpuKernelStages(const cpu::CpuTarget &target) {
  // float32 -> bfloat16 is written out as integer operations (exact, round
  // to nearest even, as c10::BFloat16) even where the CPU has an instruction
  // for it: AVX512-BF16's vcvtneps2bf16 flushes subnormal inputs to zero,
  // and eager keeps them. (Elsewhere LLVM would call a library function.)
  std::string expand = "arith-expand{include-bf16=true}";
  std::string bits = vectorBitsOption(target);
  return {
      {"linalg", "kiln-extract-kernels,convert-kiln-graph-to-linalg,func.func(linalg-generalize-named-ops,"
                 "kiln-fuse-elementwise),canonicalize,cse,func.func(kiln-mark-in-place-operands)"},
      {"bufferized", "kiln-bufferize-kernels,func.func(kiln-stack-temporaries),"
                     "buffer-deallocation-pipeline,canonicalize,cse"},
      {"loops", "func.func(kiln-vectorize-matmul" + bits + ",kiln-lower-attention" + bits +
                    ",kiln-lower-convolution" + bits + ",convert-linalg-to-loops,"
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
