#ifndef KILN_COMPILER_COMPILER_H
#define KILN_COMPILER_COMPILER_H

#include "kiln/runtime/Artifact.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/Error.h"

#include <string>
#include <utility>
#include <vector>

namespace kiln {

struct CompileOptions {
  std::string target = "cpu";
  /// Keep the IR text after every stage, and the kernels' LLVM IR and
  /// assembly (for dumps and tests).
  bool keepStages = false;
  /// Stop once the kernels are formed (the graph stages): no native code and
  /// no artifact, only `CompiledGraph::kernels` and the stage times. For
  /// kiln.explain, which reports what fusion would do without compiling.
  bool formKernelsOnly = false;
};

/// One kernel as the user sees it: which graph ops it fused, from which
/// source lines.
struct KernelSummary {
  std::string name;
  int64_t workgroups = 0; // -1: computed at each launch from the symbolic sizes
  std::vector<std::string> ops;       // e.g. "matmul", "add", "relu"
  std::vector<std::string> locations; // "file:line" of the fused ops, unique
  std::vector<std::string> nodes;     // FX node names of the fused ops, unique
};

struct CompiledGraph {
  runtime::Artifact artifact;
  std::vector<KernelSummary> kernels;
  std::vector<std::pair<std::string, std::string>> stages; // name, IR text
  std::vector<std::pair<std::string, double>> stageTimesMs;
  std::string llvmIR, assembly; // all kernels, if keepStages
  /// "<kernel>.ll" and "<kernel>.s" per kernel, if keepStages.
  std::vector<std::pair<std::string, std::string>> kernelFiles;
  /// (file name, bytes) of kernels' binaries, with keepStages (KernelCode::binary).
  std::vector<std::pair<std::string, std::vector<uint8_t>>> kernelBinaries;
  /// Distinct kernels natively compiled for this graph, and kernels that
  /// reused the code of an identical one (in this graph or an earlier one).
  int kernelsCompiled = 0, kernelsReused = 0;
};

/// A failed compile: the diagnostics, and the FX nodes their locations name
/// (the importer's NameLocs), so a caller can run just those ops elsewhere.
class CompileFailure : public llvm::ErrorInfo<CompileFailure> {
public:
  static char ID;
  CompileFailure(std::string message, std::vector<std::string> nodes,
                 std::vector<std::pair<std::string, std::string>> stages = {})
      : message(std::move(message)), nodes(std::move(nodes)), stages(std::move(stages)) {}
  void log(llvm::raw_ostream &os) const override { os << message; }
  std::error_code convertToErrorCode() const override {
    return llvm::inconvertibleErrorCode();
  }
  std::string message;
  std::vector<std::string> nodes; // unique, in diagnostic order
  /// With keepStages: the IR after each stage that finished before the
  /// failure (the last is the failing stage's input), for a dump.
  std::vector<std::pair<std::string, std::string>> stages;
};

/// Compiles a kiln_graph module (one public graph function) to an artifact.
/// Errors carry the MLIR diagnostics, with source locations.
llvm::Expected<CompiledGraph> compileGraphModule(mlir::ModuleOp module,
                                                 const CompileOptions &options);

/// Imports the JSON form of an FX graph and compiles it.
llvm::Expected<CompiledGraph> compileFxGraphJson(llvm::StringRef json,
                                                 const CompileOptions &options);

/// Imports the JSON form of an FX graph and prints the kiln_graph module,
/// with locations; errors carry the importer's diagnostics.
llvm::Expected<std::string> importFxGraphAsMLIR(llvm::StringRef json);

/// Compiles a file's contents: the JSON form of an FX graph (it starts with
/// `{`) or a kiln_graph module in MLIR text. Diagnostics name `filename`.
llvm::Expected<CompiledGraph> compileSource(llvm::StringRef text, llvm::StringRef filename,
                                            const CompileOptions &options);

/// Writes `compiled`'s IR stages (`NN-<stage>.mlir`) and kernel LLVM IR and
/// assembly into `directory`, creating it.
llvm::Error writeStages(const CompiledGraph &compiled, llvm::StringRef directory);

/// Lets a context made with threading disabled run nested passes (one per
/// kernel function) in parallel on the process's shared compiler thread pool.
void useCompilerThreadPool(mlir::MLIRContext &context);

/// Registers every dialect Kiln's pipelines use in `context`.
void loadCompilerDialects(mlir::MLIRContext &context);

} // namespace kiln

#endif
