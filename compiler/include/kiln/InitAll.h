#ifndef KILN_INITALL_H
#define KILN_INITALL_H

#include "mlir/IR/DialectRegistry.h"

namespace kiln {

/// Kiln's dialects, the upstream dialects its pipelines produce, and the
/// external interface models (bufferization, ...) those need.
void registerAllKilnDialects(mlir::DialectRegistry &registry);

/// Kiln's passes and pipelines, and the upstream passes (all of them, so
/// kiln-opt can run any upstream pass on Kiln's IR).
void registerAllKilnPasses();

/// Kiln's targets, in the TargetRegistry (idempotent; registerAllKilnPasses
/// calls it).
void registerAllTargets();

} // namespace kiln

#endif
