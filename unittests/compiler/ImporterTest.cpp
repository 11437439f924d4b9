#include "kiln/Compiler/Compiler.h"
#include "kiln/Importer/FxImporter.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

namespace {

struct Imported {
  mlir::OwningOpRef<mlir::ModuleOp> module;
  std::string diagnostics;
};

Imported import(mlir::MLIRContext &context, llvm::StringRef json) {
  Imported result;
  mlir::ScopedDiagnosticHandler handler(&context, [&](mlir::Diagnostic &diag) {
    llvm::raw_string_ostream os(result.diagnostics);
    os << diag.getLocation() << ": " << diag << "\n";
    return mlir::success();
  });
  result.module = kiln::importFxGraph(json, context);
  return result;
}

TEST(ImporterTest, SupportedOpsIncludeTheCoreSet) {
  std::vector<std::string> ops = kiln::supportedFxTargets();
  for (const char *op : {"aten.addmm.default", "aten._softmax.default",
                         "aten.native_layer_norm.default", "aten.embedding.default"})
    EXPECT_TRUE(std::find(ops.begin(), ops.end(), op) != ops.end()) << op;
  EXPECT_TRUE(std::is_sorted(ops.begin(), ops.end()));
}

TEST(ImporterTest, UnsupportedOpNamesOpAndSourceLine) {
  mlir::MLIRContext context;
  kiln::loadCompilerDialects(context);
  Imported imported = import(context, R"json({"version": 1, "name": "g",
    "inputs": [{"name": "x", "shape": [4], "dtype": "float32"}],
    "nodes": [{"name": "c", "target": "aten.special_bessel_j0.default",
               "args": [{"ref": "x"}], "kwargs": {},
               "outputs": [{"shape": [4], "dtype": "float32"}],
               "loc": {"file": "model.py", "line": 7, "code": "y = torch.special.bessel_j0(x)"}}],
    "outputs": [{"ref": "c"}]})json");
  EXPECT_FALSE(imported.module);
  EXPECT_NE(imported.diagnostics.find("aten.special_bessel_j0.default"), std::string::npos)
      << imported.diagnostics;
  EXPECT_NE(imported.diagnostics.find("model.py\":7"), std::string::npos)
      << imported.diagnostics;
}

TEST(ImporterTest, MalformedJsonIsAnErrorNotACrash) {
  mlir::MLIRContext context;
  kiln::loadCompilerDialects(context);
  for (const char *text : {"", "{", "[]", R"({"version": 2})",
                           R"({"version": 1, "nodes": [1]})",
                           R"({"version": 1, "inputs": [{"name": "x"}]})",
                           R"({"version": 1, "outputs": [{"ref": "nope"}]})"}) {
    Imported imported = import(context, text);
    EXPECT_FALSE(imported.module) << text;
    EXPECT_FALSE(imported.diagnostics.empty()) << text;
  }
}

} // namespace
