#ifndef KILN_IMPORTER_FXIMPORTER_H
#define KILN_IMPORTER_FXIMPORTER_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

#include <string>
#include <vector>

namespace kiln {

/// Builds a `kiln_graph` module (one public func.func) from the JSON form of
/// an ATen-level FX graph written by `kiln.fx_serialize` (schema in that
/// module's docstring). Errors are emitted as MLIR diagnostics located at the
/// offending node's user source line; returns null on failure.
mlir::OwningOpRef<mlir::ModuleOp> importFxGraph(llvm::StringRef json,
                                                mlir::MLIRContext &context);

/// The ATen overloads the importer understands, e.g. "aten.addmm.default".
std::vector<std::string> supportedFxTargets();

/// Those of them that compile with symbolic (dynamic) sizes; the others need
/// static shapes.
std::vector<std::string> symbolicFxTargets();

/// Those that take a SymInt as a scalar operand (`x * s0`), computed from the
/// size symbols; others take scalars only as constants.
std::vector<std::string> symintScalarFxTargets();

} // namespace kiln

#endif
