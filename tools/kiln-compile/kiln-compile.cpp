// Compiles a kiln_graph module (.mlir) or an FX graph (.json, as written by
// kiln.fx_serialize or a dump's graph.json) into a Kiln artifact.
#include "kiln/Compiler/Compiler.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>

namespace cl = llvm::cl;

static cl::opt<std::string> input(cl::Positional, cl::desc("<graph.mlir | graph.json>"),
                                  cl::Required);
static cl::opt<std::string> output("o", cl::desc("Output artifact"), cl::value_desc("file.kiln"),
                                   cl::Required);
static cl::opt<std::string>
    target("target",
           cl::desc("What the kernels are compiled for: cpu (this machine's CPU), "
                    "cpu:x86-64-v2, cpu:x86-64-v3, cpu:x86-64-v4 (x86-64 levels, for "
                    "portable artifacts) or cpu:<name> (an x86-64 CPU, e.g. cpu:znver4)"),
           cl::init("cpu"));
static cl::opt<std::string> dumpDir("dump-dir",
                                    cl::desc("Write the IR after every stage and the kernels' "
                                             "LLVM IR and assembly here"));
static cl::opt<bool> quiet("quiet", cl::desc("Print nothing on success"));

static int fail(const llvm::Twine &message) {
  llvm::errs() << "kiln-compile: error: " << message << "\n";
  return 1;
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::ParseCommandLineOptions(argc, argv, "Kiln compiler: graph -> artifact\n");
  auto file = llvm::MemoryBuffer::getFileOrSTDIN(input);
  if (!file)
    return fail("cannot read '" + input + "': " + file.getError().message());

  kiln::CompileOptions options;
  options.target = target;
  options.keepStages = !dumpDir.empty();
  auto start = std::chrono::steady_clock::now();
  auto compiled = kiln::compileSource((*file)->getBuffer(), input, options);
  if (!compiled) {
    // A dump keeps the stages that finished, the last being what the
    // failing stage was given.
    std::string message;
    llvm::handleAllErrors(
        compiled.takeError(),
        [&](const kiln::CompileFailure &failure) {
          message = failure.message;
          if (dumpDir.empty() || failure.stages.empty())
            return;
          kiln::CompiledGraph partial;
          partial.stages = failure.stages;
          if (llvm::Error err = kiln::writeStages(partial, dumpDir))
            message += "\n(and the dump failed: " + llvm::toString(std::move(err)) + ")";
          else
            message += "\nthe " + std::to_string(failure.stages.size()) +
                       " stages before the failure are in " + dumpDir.getValue();
        },
        [&](const llvm::ErrorInfoBase &other) { message = other.message(); });
    return fail(message);
  }
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                  .count();
  if (!dumpDir.empty())
    if (llvm::Error err = kiln::writeStages(*compiled, dumpDir))
      return fail(llvm::toString(std::move(err)));
  kiln::runtime::Status status = kiln::runtime::writeArtifactFile(output, compiled->artifact);
  if (!status.ok())
    return fail("cannot write '" + output + "': " + status.message());
  if (quiet)
    return 0;
  const kiln::runtime::Artifact &artifact = compiled->artifact;
  const kiln::runtime::ExecutableDesc &executable = artifact.executables.front();
  llvm::outs() << "compiled " << input << " -> " << output << " (" << executable.format << " "
               << executable.cpu << ", "
               << artifact.kernels.size() << " kernels, "
               << kiln::runtime::serializeArtifact(artifact).size() << " bytes) in "
               << llvm::format("%.0f", ms) << " ms\n";
  for (const kiln::KernelSummary &kernel : compiled->kernels) {
    llvm::outs() << "  " << kernel.name << " [";
    if (kernel.workgroups < 0)
      llvm::outs() << "workgroups sized at launch]:";
    else
      llvm::outs() << kernel.workgroups << " workgroups]:";
    for (const std::string &op : kernel.ops)
      llvm::outs() << " " << op;
    if (!kernel.locations.empty())
      llvm::outs() << "  (" << kernel.locations.front()
                   << (kernel.locations.size() > 1 ? ", ..." : "") << ")";
    llvm::outs() << "\n";
  }
  return 0;
}
