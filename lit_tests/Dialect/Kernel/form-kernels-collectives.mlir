// RUN: kiln-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(kiln-form-kernels))' | FileCheck %s

// A collective stays outside kernels; a constant it reduces gets a kernel of
// its own (constants are otherwise cloned into the kernels that read them).
// CHECK-LABEL: func.func @collective_of_constant
// CHECK: %[[C:.*]] = kiln_kernel.kernel "kernel_0_constant"
// CHECK: kiln_graph.collective %[[C]]
func.func @collective_of_constant() -> tensor<4xf32> {
  %c = kiln_graph.constant dense<1.0> : tensor<4xf32>
  %0 = kiln_graph.collective %c {kind = #kiln_graph.collective<all_reduce>, group = "0", group_size = 0} : tensor<4xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// The matmul's epilogue takes both adds, so the kernel needs the second
// collective's result; the first collective still runs before it, as every
// rank must issue them in the program's order.
// CHECK-LABEL: func.func @collectives_keep_their_order
// CHECK: %[[C1:.*]] = kiln_graph.collective %arg2
// CHECK: %[[E:.*]] = kiln_kernel.kernel "kernel_{{[0-9]+}}_exp"
// CHECK: %[[C2:.*]] = kiln_graph.collective %[[E]]
// CHECK: kiln_kernel.kernel "kernel_{{[0-9]+}}_matmul" extent(8) ins(%arg0, %arg1, %[[C2]], %[[C1]]
func.func @collectives_keep_their_order(%a: tensor<8x16xf32>, %b: tensor<16x16xf32>, %x: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %c1 = kiln_graph.collective %x {kind = #kiln_graph.collective<all_reduce>, group = "0", group_size = 0} : tensor<8x16xf32> -> tensor<8x16xf32>
  %e = kiln_graph.exp %x : tensor<8x16xf32> -> tensor<8x16xf32>
  %c2 = kiln_graph.collective %e {kind = #kiln_graph.collective<all_reduce>, group = "0", group_size = 0} : tensor<8x16xf32> -> tensor<8x16xf32>
  %m = kiln_graph.matmul %a, %b : tensor<8x16xf32>, tensor<16x16xf32> -> tensor<8x16xf32>
  %s = kiln_graph.add %m, %c2 : tensor<8x16xf32>, tensor<8x16xf32> -> tensor<8x16xf32>
  %t = kiln_graph.add %s, %c1 : tensor<8x16xf32>, tensor<8x16xf32> -> tensor<8x16xf32>
  return %t : tensor<8x16xf32>
}
