//===- Target.h - What a compilation target provides ----------------------===//
//
// A target turns outlined kernel functions into an executable one runtime
// device runs. Modelled on IREE's TargetBackend and Triton's BaseBackend:
// each target parses its names, describes its hardware as the verified
// `#kiln_kernel.target` attribute that passes read, adds its passes, and
// serializes its kernels into the executable format it names. Adding a
// target is one folder under compiler/lib/Target/<Name>/ and one
// TargetRegistry::add call in registerAllTargets() (InitAll.cpp; see
// docs/architecture.md).
//
//===----------------------------------------------------------------------===//

#ifndef KILN_TARGET_TARGET_H
#define KILN_TARGET_TARGET_H

#include "kiln/Dialect/Kernel/IR/KernelOps.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace kiln {

/// A named stage of the compiler: dumps and timings are per stage.
struct PipelineStage {
  std::string name;
  std::string pipeline; // textual pass pipeline on builtin.module
};

/// One kernel of a serialized executable.
struct KernelCode {
  std::string name;     // as the plan names it, e.g. "kernel_3_softmax"
  std::string symbol;   // the executable's entry point; equal for equal kernels
  std::string ir;       // the target's lowest IR (LLVM IR, PTX, ...), if kept
  std::string assembly; // if kept
  std::string irExtension = "ll", assemblyExtension = "s"; // for dump file names
  /// The kernel's binary (an AMD code object), if kept, for disassemblers:
  /// kiln-compile's dumps write it as kernels/<name>.<binaryExtension>.
  std::vector<uint8_t> binary;
  std::string binaryExtension;
};

/// What serializing a module of kernels produced.
struct SerializedKernels {
  std::vector<uint8_t> executable; // the bytes the runtime device loads
  std::vector<KernelCode> kernels; // in module order
  /// Distinct kernels compiled now, and kernels whose code came from an
  /// identical kernel (of this graph, or compiled earlier in this process).
  int kernelsCompiled = 0, kernelsReused = 0;
  /// Milliseconds per step ("translate", "compile", "link", ...).
  std::vector<std::pair<std::string, double>> stepTimesMs;
};

class Target {
public:
  virtual ~Target();

  /// The description passes read: set on the module as kiln_kernel.target
  /// before any stage runs. Its `format` names the artifact's executable.
  virtual kernel::TargetAttr describe(mlir::MLIRContext &context) const = 0;

  /// Options of kiln-outline-kernels, which sizes launches: how many
  /// workgroups one may have and the least work worth one, as
  /// "{max-workgroups=N min-work-per-workgroup=M}"; empty for its defaults,
  /// which suit CPU cores (a GPU wants a workgroup per few rows).
  virtual std::string outlineOptions() const { return ""; }

  /// Passes to run on the host plan and its kernel functions right after
  /// outlining (e.g. packing weights in the layout the target's
  /// micro-kernels read), as a textual pipeline; empty for none.
  virtual std::string planPasses() const { return ""; }

  /// Whether matmuls read float16 and bfloat16 operands as they are (GPU
  /// tensor cores multiply them) instead of widened to float32 first.
  virtual bool matmulTakesHalfOperands() const { return false; }

  /// The stages that lower a module holding only kernel functions to what
  /// serializeKernels takes.
  virtual std::vector<PipelineStage> kernelStages() const = 0;

  /// Serializes the lowered kernels into one executable. `keepText` fills
  /// each kernel's ir and assembly.
  virtual llvm::Expected<SerializedKernels> serializeKernels(mlir::ModuleOp kernels,
                                                             bool keepText) const = 0;
};

/// The first kernel stage, the same for every target: kernels extracted
/// from the plan, lowered to linalg on tensors and fused.
PipelineStage linalgKernelStage();

/// The stages every GPU target starts with: linalg, bufferized, and "gpu"
/// (kernels mapped onto workgroups of threads by Target/GPU, math as the CPU
/// computes it: inline polynomials within a few ulp, so results agree
/// across devices). `subgroupReductions`: reductions combine across a
/// subgroup where they can (else they meet in workgroup memory).
/// `warpMma`: how matmuls of half operands use tensor cores ("nvvm",
/// "emulated"; empty for none), kiln-gpu-map-workgroups' warp-mma.
std::vector<PipelineStage> gpuKernelStages(bool subgroupReductions,
                                           llvm::StringRef warpMma = "");

/// The registered targets, by kind: a kind handles the name "<kind>" and the
/// names "<kind>:<detail>".
class TargetRegistry {
public:
  using Parser = std::function<llvm::Expected<std::unique_ptr<Target>>(llvm::StringRef name)>;
  struct Kind {
    std::string kind;
    std::string help; // the names it accepts, for error messages and docs
    Parser parse;
  };

  /// Registers `kind`; registering a kind again replaces it.
  static void add(Kind kind);
  /// The target a name (a `target` option) names; an unknown name is an
  /// error listing the accepted ones.
  static llvm::Expected<std::unique_ptr<Target>> parse(llvm::StringRef name);
  /// The registered kinds, in the order they were added.
  static std::vector<Kind> kinds();
};

} // namespace kiln

#endif // KILN_TARGET_TARGET_H
