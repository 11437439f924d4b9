// libFuzzer target: the compiler's input paths (FX graph JSON and kiln_graph
// MLIR text, as kiln-compile reads them) must turn any input into a module or
// diagnostics, never a crash. Only parsing, import and verification run:
// code generation on random graphs would make each input slow.
#include "kiln/Compiler/Compiler.h"
#include "kiln/Importer/FxImporter.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"

#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static mlir::MLIRContext *context = [] {
    auto *ctx = new mlir::MLIRContext(mlir::MLIRContext::Threading::DISABLED);
    kiln::loadCompilerDialects(*ctx);
    ctx->getDiagEngine().registerHandler([](mlir::Diagnostic &) { return mlir::success(); });
    return ctx;
  }();
  llvm::StringRef text(reinterpret_cast<const char *>(data), size);
  if (text.ltrim().starts_with("{")) {
    (void)kiln::importFxGraph(text, *context);
  } else {
    // As kiln-compile reads files: the MLIR lexer relies on the buffer's
    // terminating NUL, which MemoryBuffer guarantees and fuzzer data lacks.
    llvm::SourceMgr sourceMgr;
    sourceMgr.AddNewSourceBuffer(llvm::MemoryBuffer::getMemBufferCopy(text, "input"),
                                 llvm::SMLoc());
    auto module = mlir::parseSourceFile<mlir::ModuleOp>(sourceMgr, context);
    if (module)
      (void)mlir::verify(*module);
  }
  return 0;
}
