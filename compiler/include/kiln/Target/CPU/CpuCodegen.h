#ifndef KILN_TARGET_CPU_CPUCODEGEN_H
#define KILN_TARGET_CPU_CPUCODEGEN_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/Error.h"

#include <string>
#include <utility>
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
  bool isAArch64() const;
  /// A short name for artifacts, e.g. "cpu-x86_64-znver3".
  std::string name() const;
};

struct CpuCodegenOptions {
  CpuTarget target = CpuTarget::host();
  bool keepText = false; // fill each kernel's llvmIR and assembly
};

/// One kernel of the shared object.
struct KernelCode {
  std::string name;     // as the plan names it, e.g. "kernel_3_softmax"
  std::string symbol;   // exported by the shared object; equal for equal kernels
  std::string llvmIR;   // optimized LLVM IR, if keepText
  std::string assembly; // if keepText
};

struct CpuCodegenResult {
  std::vector<uint8_t> sharedObject; // ELF shared library with the kernels
  std::vector<KernelCode> kernels;   // in module order
  /// Distinct kernels compiled now, and kernels whose code came from an
  /// identical kernel (of this graph, or compiled earlier in this process).
  int kernelsCompiled = 0, kernelsReused = 0;
  /// Milliseconds per step ("translate", "compile", "link"), so the compile
  /// records show where native code generation spends its time.
  std::vector<std::pair<std::string, double>> stepTimesMs;
};

/// Splits an LLVM-dialect module into one module per kernel (SplitKernels.h),
/// translates each to LLVM IR, optimizes it at O3 and emits an object file
/// for the target, in parallel across the cores, and links the objects into
/// one shared object with lld. Identical kernels are compiled once per
/// process.
llvm::Expected<CpuCodegenResult> generateSharedObject(mlir::ModuleOp module,
                                                      const CpuCodegenOptions &options);

} // namespace kiln::cpu

#endif
