#ifndef KILN_TARGET_CPU_SPLITKERNELS_H
#define KILN_TARGET_CPU_SPLITKERNELS_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

#include <string>
#include <vector>

namespace kiln::cpu {

/// One kernel of an LLVM-dialect module, alone in a module of its own: its
/// exported entry, the internal functions and globals it reaches, and the
/// declarations it calls.
struct KernelModule {
  std::string name;   // the kernel's name in the plan, e.g. "kernel_3_softmax"
  /// The entry's exported name: "kiln_" + a hash of the module's text with
  /// the kernel's own name left out, so identical kernels (a layer repeated
  /// N times, in one graph or in several) get the same symbol and are
  /// compiled once.
  std::string symbol;
  mlir::OwningOpRef<mlir::ModuleOp> module; // the entry renamed to `symbol`
};

/// Splits `module` (after the "llvm" stage: kernel entries are the public,
/// defined llvm.func ops) into one module per kernel, in module order.
std::vector<KernelModule> splitKernels(mlir::ModuleOp module);

} // namespace kiln::cpu

#endif
