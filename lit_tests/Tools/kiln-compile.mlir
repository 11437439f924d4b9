// RUN: kiln-compile %s -o %t.kiln --dump-dir %t.dump | FileCheck %s
// RUN: ls %t.dump | FileCheck %s --check-prefix=DUMP
// RUN: not kiln-compile %S/Inputs/invalid-graph.mlir -o %t.bad 2>&1 | FileCheck %s --check-prefix=BAD

// CHECK: compiled {{.*}}kiln-compile.mlir -> {{.*}}.kiln (cpu-{{.*}}, 1 kernels, {{[0-9]+}} bytes)
// CHECK-NEXT: kernel_0_matmul [{{[0-9]+}} workgroups]: matmul add relu
func.func @linear_relu(%x: tensor<64x32xf32>, %w: tensor<16x32xf32>, %b: tensor<16xf32>) -> tensor<64x16xf32> {
  %wt = kiln_graph.permute %w {dims = array<i64: 1, 0>} : tensor<16x32xf32> -> tensor<32x16xf32>
  %0 = kiln_graph.matmul %x, %wt : tensor<64x32xf32>, tensor<32x16xf32> -> tensor<64x16xf32>
  %1 = kiln_graph.add %0, %b : tensor<64x16xf32>, tensor<16xf32> -> tensor<64x16xf32>
  %2 = kiln_graph.relu %1 : tensor<64x16xf32> -> tensor<64x16xf32>
  return %2 : tensor<64x16xf32>
}

// DUMP: 00-graph.mlir
// DUMP: 02-plan.mlir
// DUMP: 06-llvm.mlir
// DUMP: kernels.ll
// DUMP: kernels.s

// BAD: kiln-compile: error: cannot parse {{.*}}invalid-graph.mlir
// BAD: invalid-graph.mlir":2:{{[0-9]+}}): 'kiln_graph.add' op result shape must be the broadcast operand shape

// A stage that fails still leaves a dump of the stages before it, the last
// being the failing stage's input.
// RUN: rm -rf %t.failed && not kiln-compile %S/Inputs/float64-exp.mlir --target vulkan -o %t.bad --dump-dir %t.failed 2>&1 | FileCheck %s --check-prefix=FAILED
// RUN: ls %t.failed | FileCheck %s --check-prefix=FAILEDDUMP
// FAILED: kiln-compile: error: stage 'spirv' failed
// FAILED: 'math.exp' op on float64 is not supported by the target
// FAILED: the 6 stages before the failure are in {{.*}}.failed
// FAILEDDUMP: 00-graph.mlir
// FAILEDDUMP: 05-gpu.mlir
// FAILEDDUMP-NOT: 06-
