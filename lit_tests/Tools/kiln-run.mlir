// Compile with kiln-compile, run with kiln-run (runtime only, no Python).
// RUN: kiln-compile %s -o %t.kiln --quiet
// RUN: kiln-run %t.kiln --random --seed 3 --repeat 2 | FileCheck %s
// RUN: kiln-run %t.kiln --inputs %S/Inputs/ones-4x8.npy --quiet | FileCheck %s --check-prefix=ONES
// RUN: kiln-run %t.kiln --random --repeat 3 --profile --quiet | FileCheck %s --check-prefix=PROFILE
// RUN: not kiln-run %t.kiln --inputs %S/Inputs/does-not-exist.npz 2>&1 | FileCheck %s --check-prefix=MISSING
// RUN: not kiln-run %S/Inputs/invalid-graph.mlir 2>&1 | FileCheck %s --check-prefix=NOTART

// CHECK: graph: scale_shift
// CHECK: kernels: 1
// CHECK: input 0: float32[4x8]
// CHECK: output 0: float32[4x8] checksum={{.*}} min={{.*}} max={{.*}}
// CHECK: output 1: float32[4] checksum=
// CHECK: time: median {{.*}} ms, min {{.*}} ms over 2 runs

// 2 * ones(4, 8): 32 twos, and four row sums of 16.
// ONES: output 0: float32[4x8] checksum=64 min=2 max=2
// ONES: output 1: float32[4] checksum=64 min=16 max=16

// PROFILE: time: median
// PROFILE-NEXT: profile: 1 launches, {{.*}} ms in kernels (medians)
// PROFILE-NEXT: launch 0 kernel_0_mul {{.*}} workgroups {{.*}} ms {{.*}}%

// MISSING: kiln-run: error:
// MISSING-SAME: does-not-exist.npz

// NOTART: kiln-run: error: {{.*}}invalid-graph.mlir: {{.*}}not a Kiln artifact
func.func @scale_shift(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4xf32>) {
  %c = kiln_graph.constant dense<2.0> : tensor<f32>
  %0 = kiln_graph.mul %x, %c : tensor<4x8xf32>, tensor<f32> -> tensor<4x8xf32>
  %1 = kiln_graph.sum %0 {dims = array<i64: 1>} : tensor<4x8xf32> -> tensor<4xf32>
  return %0, %1 : tensor<4x8xf32>, tensor<4xf32>
}
