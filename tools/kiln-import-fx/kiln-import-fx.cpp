// Reads the JSON form of an FX graph (as written by kiln.fx_serialize) and
// prints the imported kiln_graph module.
#include "kiln/Compiler/Compiler.h"
#include "kiln/Importer/FxImporter.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/ToolOutputFile.h"

static llvm::cl::opt<std::string> input(llvm::cl::Positional,
                                        llvm::cl::desc("<graph.json>"),
                                        llvm::cl::init("-"));
static llvm::cl::opt<std::string> output("o", llvm::cl::desc("Output file"),
                                         llvm::cl::init("-"));

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  llvm::cl::ParseCommandLineOptions(argc, argv, "Kiln FX graph importer\n");
  std::string error;
  auto file = mlir::openInputFile(input, &error);
  if (!file) {
    llvm::errs() << "kiln-import-fx: " << error << "\n";
    return 1;
  }
  mlir::MLIRContext context;
  kiln::loadCompilerDialects(context);
  auto module = kiln::importFxGraph(file->getBuffer(), context);
  if (!module)
    return 1;
  auto out = mlir::openOutputFile(output, &error);
  if (!out) {
    llvm::errs() << "kiln-import-fx: " << error << "\n";
    return 1;
  }
  module->print(out->os(), mlir::OpPrintingFlags().enableDebugInfo(true, /*prettyForm=*/false));
  out->keep();
  return 0;
}
