//===- CpuTarget.h - The CPU target ---------------------------------------===//
//
// CPUs: x86-64 (this machine's, an x86-64 level or a named CPU) and AArch64
// (cross-compiled). The kernels become one ELF shared object the runtime's
// CPU driver loads; micro-kernel tiles come from TileSizes.h.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_TARGET_CPU_CPUTARGET_H
#define KILN_TARGET_CPU_CPUTARGET_H

#include "kiln/Target/Target.h"

#include "llvm/Support/Error.h"

#include <string>
#include <vector>

namespace kiln::cpu {

/// The CPU the code is generated for; `host()` detects this machine's.
struct CpuTarget {
  std::string triple;
  std::string cpu;
  std::string features; // e.g. "+avx2,+fma,..."
  /// This machine's CPU, detected once per process.
  static CpuTarget host();
  /// The CPU a `target` option names:
  ///   "cpu"                   this machine's CPU (the default);
  ///   "cpu:x86-64-v2|v3|v4"   an x86-64 micro-architecture level, for
  ///                           artifacts that run on every CPU of that level;
  ///   "cpu:<name>"            an x86-64 CPU as LLVM names it ("skylake-avx512",
  ///                           "znver4", "native" for this machine's);
  ///   "cpu:aarch64[:<name>]"  64-bit Arm with NEON, generic or a named CPU
  ///                           ("neoverse-n1"): cross-compiled artifacts.
  /// An unknown name is an error listing the accepted ones.
  static llvm::Expected<CpuTarget> fromTargetName(llvm::StringRef target);
  /// Whether `features` enables `name` (LLVM's spelling, e.g. "avx512f").
  bool hasFeature(llvm::StringRef name) const;
  /// The widest vector register the code may use, in bits.
  int64_t vectorBits() const;
  /// How many vector registers of that width there are.
  int64_t vectorRegisters() const;
  bool isAArch64() const;
  /// The architecture ("x86_64", "aarch64").
  std::string arch() const;
  /// The executable format of its kernels: "cpu-<arch>". A runtime runs
  /// only its own architecture's.
  std::string format() const;
  /// Its description for the passes, as the target option `name` names it.
  kernel::TargetAttr describe(mlir::MLIRContext &context, llvm::StringRef name) const;
};

/// The CPU kernel stages, the same text for every CPU (the passes read the
/// module's kiln_kernel.target).
std::vector<PipelineStage> kernelStages();

/// The passes the CPU runs on the plan after outlining (weight packing).
std::string planPasses();

/// Registers the "cpu" kind in the TargetRegistry.
void registerCpuTarget();

} // namespace kiln::cpu

#endif // KILN_TARGET_CPU_CPUTARGET_H
