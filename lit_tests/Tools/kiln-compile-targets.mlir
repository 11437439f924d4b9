// Artifacts for a named CPU, whatever this machine is: an x86-64 level uses
// that level's vector registers and records its features.
// RUN: kiln-compile %s -o %t.v2.kiln --target cpu:x86-64-v2 --dump-dir %t.v2 | FileCheck %s --check-prefix=V2
// RUN: FileCheck %s --check-prefix=SSE --implicit-check-not=ymm --implicit-check-not=zmm < %t.v2/kernels.s
// RUN: kiln-compile %s -o %t.v3.kiln --target cpu:x86-64-v3 --dump-dir %t.v3 | FileCheck %s --check-prefix=V3
// RUN: FileCheck %s --check-prefix=AVX2 --implicit-check-not=zmm < %t.v3/kernels.s
// RUN: kiln-compile %s -o %t.v4.kiln --target cpu:x86-64-v4 --dump-dir %t.v4 | FileCheck %s --check-prefix=V4
// RUN: FileCheck %s --check-prefix=AVX512 < %t.v4/kernels.s
// RUN: kiln-compile %s -o %t.zen.kiln --target cpu:znver4 --quiet
// RUN: not kiln-compile %s -o %t.bad.kiln --target cpu:pentium9 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// RUN: not kiln-compile %s -o %t.bad.kiln --target gpu 2>&1 | FileCheck %s --check-prefix=UNKNOWN

// V2: compiled {{.*}} (cpu-x86_64 x86-64-v2, 1 kernels
// SSE: {{mulps|addps}} {{.*}}%xmm
// V3: compiled {{.*}} (cpu-x86_64 x86-64-v3, 1 kernels
// AVX2: vfmadd{{.*}}ymm
// V4: compiled {{.*}} (cpu-x86_64 x86-64-v4, 1 kernels
// AVX512: vfmadd{{.*}}zmm
// UNKNOWN: kiln-compile: error: unknown target '{{.*}}': expected 'cpu' (this machine's CPU), 'cpu:x86-64-v2', 'cpu:x86-64-v3', 'cpu:x86-64-v4'
func.func @linear_relu(%x: tensor<64x32xf32>, %w: tensor<16x32xf32>, %b: tensor<16xf32>) -> tensor<64x16xf32> {
  %wt = kiln_graph.permute %w {dims = array<i64: 1, 0>} : tensor<16x32xf32> -> tensor<32x16xf32>
  %0 = kiln_graph.matmul %x, %wt : tensor<64x32xf32>, tensor<32x16xf32> -> tensor<64x16xf32>
  %1 = kiln_graph.add %0, %b : tensor<64x16xf32>, tensor<16xf32> -> tensor<64x16xf32>
  %2 = kiln_graph.relu %1 : tensor<64x16xf32> -> tensor<64x16xf32>
  return %2 : tensor<64x16xf32>
}
