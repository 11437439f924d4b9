// Kernels cross-compiled for 64-bit Arm: the matmul micro-kernel is NEON
// (128-bit vectors, fused multiply-adds on four floats), the artifact names
// its architecture and CPU, and the runtime of another architecture refuses
// to load it (here on an x86-64 host; on an AArch64 host the runtime would
// load it, so the test does not apply there).
// UNSUPPORTED: host-aarch64
// RUN: kiln-compile %s -o %t.generic.kiln --target cpu:aarch64 --dump-dir %t.generic | FileCheck %s --check-prefix=GENERIC
// RUN: FileCheck %s --check-prefix=NEON < %t.generic/kernels.s
// RUN: kiln-compile %s -o %t.n1.kiln --target cpu:aarch64:neoverse-n1 --dump-dir %t.n1 | FileCheck %s --check-prefix=N1
// RUN: FileCheck %s --check-prefix=NEON < %t.n1/kernels.s
// RUN: not kiln-run %t.generic.kiln --random 2>&1 | FileCheck %s --check-prefix=REFUSED
// RUN: not kiln-compile %s -o %t.bad.kiln --target cpu:aarch64:pentium4 2>&1 | FileCheck %s --check-prefix=UNKNOWN

// GENERIC: compiled {{.*}} (cpu-aarch64 generic, 1 kernels
// N1: compiled {{.*}} (cpu-aarch64 neoverse-n1, 1 kernels
// NEON: fmla v{{[0-9]+}}.4s, v{{[0-9]+}}.4s, v{{[0-9]+}}.{{4s|s\[[0-9]\]}}
// NEON-NOT: {{%xmm|%ymm|%zmm}}
// REFUSED: kiln-run: error: {{.*}}generic.kiln: cannot load graph 'linear_relu': {{.*}}compiled for target 'cpu-aarch64'
// UNKNOWN: error: unknown target 'cpu:aarch64:pentium4': 'pentium4' is no AArch64 CPU that LLVM knows
func.func @linear_relu(%x: tensor<64x32xf32>, %w: tensor<16x32xf32>, %b: tensor<16xf32>) -> tensor<64x16xf32> {
  %wt = kiln_graph.permute %w {dims = array<i64: 1, 0>} : tensor<16x32xf32> -> tensor<32x16xf32>
  %0 = kiln_graph.matmul %x, %wt : tensor<64x32xf32>, tensor<32x16xf32> -> tensor<64x16xf32>
  %1 = kiln_graph.add %0, %b : tensor<64x16xf32>, tensor<16xf32> -> tensor<64x16xf32>
  %2 = kiln_graph.relu %1 : tensor<64x16xf32> -> tensor<64x16xf32>
  return %2 : tensor<64x16xf32>
}
