#ifndef KILN_TARGET_CPU_CPUCODEGEN_H
#define KILN_TARGET_CPU_CPUCODEGEN_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/Error.h"

#include <string>
#include <vector>

namespace kiln::cpu {

/// The CPU the code is generated for; `host()` detects this machine's.
struct CpuTarget {
  std::string triple;
  std::string cpu;
  std::string features; // e.g. "+avx2,+fma,..."
  static CpuTarget host();
  /// A short name for artifacts, e.g. "cpu-x86_64-znver3".
  std::string name() const;
};

struct CpuCodegenOptions {
  CpuTarget target = CpuTarget::host();
  bool keepText = false; // fill llvmIR and assembly
};

struct CpuCodegenResult {
  std::vector<uint8_t> sharedObject; // ELF shared library with the kernels
  std::string llvmIR;                // optimized LLVM IR, if keepText
  std::string assembly;              // if keepText
};

/// Translates an LLVM-dialect module to LLVM IR, optimizes it at O3 for the
/// target (the loop vectorizer widens the kernels' inner loops), emits an
/// object file and links it into a shared object with lld.
llvm::Expected<CpuCodegenResult> generateSharedObject(mlir::ModuleOp module,
                                                      const CpuCodegenOptions &options);

} // namespace kiln::cpu

#endif
