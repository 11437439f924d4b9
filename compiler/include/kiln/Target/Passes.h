#ifndef KILN_TARGET_PASSES_H
#define KILN_TARGET_PASSES_H

#include "kiln/Dialect/Kernel/IR/KernelOps.h"
#include "mlir/Pass/Pass.h"

namespace kiln {

#define GEN_PASS_DECL
#include "kiln/Target/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "kiln/Target/Passes.h.inc"

} // namespace kiln

#endif
