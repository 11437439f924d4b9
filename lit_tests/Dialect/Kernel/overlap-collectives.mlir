// RUN: kiln-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(kiln-form-kernels),canonicalize,func.func(kiln-overlap-collectives))' | FileCheck %s

// A tensor-parallel input gradient: the weight gradient's matmul does not
// touch the all_reduce, so it runs while the all_reduce is in flight, ahead
// of the exp that reads the all_reduce's result (where the runtime waits).
// CHECK-LABEL: func.func @independent_kernel_runs_in_flight
// CHECK: %[[P:.*]] = kiln_kernel.kernel "kernel_{{[0-9]+}}_matmul" extent(8) ins(%arg0, %arg1
// CHECK: %[[R:.*]] = kiln_graph.collective %[[P]]
// CHECK: kiln_kernel.kernel "kernel_{{[0-9]+}}_matmul" extent(16) ins(%arg2, %arg0
// CHECK: kiln_kernel.kernel "kernel_{{[0-9]+}}_exp" extent(8) ins(%[[R]]
func.func @independent_kernel_runs_in_flight(%g: tensor<8x16xf32>, %w: tensor<16x16xf32>, %xt: tensor<16x8xf32>) -> (tensor<8x16xf32>, tensor<16x16xf32>) {
  %partial = kiln_graph.matmul %g, %w : tensor<8x16xf32>, tensor<16x16xf32> -> tensor<8x16xf32>
  %reduced = kiln_graph.collective %partial {kind = #kiln_graph.collective<all_reduce>, group = "0", group_size = 2} : tensor<8x16xf32> -> tensor<8x16xf32>
  %next = kiln_graph.exp %reduced : tensor<8x16xf32> -> tensor<8x16xf32>
  %gw = kiln_graph.matmul %xt, %g : tensor<16x8xf32>, tensor<8x16xf32> -> tensor<16x16xf32>
  return %next, %gw : tensor<8x16xf32>, tensor<16x16xf32>
}

// -----

// A kernel that reads the collective's input uses its memory too (the
// runtime waits before it), so the independent kernel goes first; the
// collectives keep their order.
// CHECK-LABEL: func.func @readers_of_the_input_wait
// CHECK: %[[C1:.*]] = kiln_graph.collective %arg0
// CHECK: %[[C2:.*]] = kiln_graph.collective %arg1
// CHECK: kiln_kernel.kernel "kernel_{{[0-9]+}}_neg" extent(8) ins(%arg2
// CHECK: kiln_kernel.kernel "kernel_{{[0-9]+}}_exp" extent(4) ins(%arg0
// CHECK: kiln_kernel.kernel "kernel_{{[0-9]+}}_add" extent(4) ins(%[[C1]], %[[C2]]
func.func @readers_of_the_input_wait(%x: tensor<4xf32>, %y: tensor<4xf32>, %z: tensor<8xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<8xf32>) {
  %c1 = kiln_graph.collective %x {kind = #kiln_graph.collective<all_reduce>, group = "0", group_size = 2} : tensor<4xf32> -> tensor<4xf32>
  %e = kiln_graph.exp %x : tensor<4xf32> -> tensor<4xf32>
  %c2 = kiln_graph.collective %y {kind = #kiln_graph.collective<all_reduce>, group = "0", group_size = 2} : tensor<4xf32> -> tensor<4xf32>
  %s = kiln_graph.add %c1, %c2 : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %n = kiln_graph.neg %z : tensor<8xf32> -> tensor<8xf32>
  return %e, %s, %n : tensor<4xf32>, tensor<4xf32>, tensor<8xf32>
}

// -----

// Without collectives the order stays as fusion made it.
// CHECK-LABEL: func.func @no_collectives
// CHECK: kiln_kernel.kernel "kernel_{{[0-9]+}}_exp"
// CHECK: kiln_kernel.kernel "kernel_{{[0-9]+}}_neg"
func.func @no_collectives(%x: tensor<4xf32>, %y: tensor<8xf32>) -> (tensor<4xf32>, tensor<8xf32>) {
  %e = kiln_graph.exp %x : tensor<4xf32> -> tensor<4xf32>
  %n = kiln_graph.neg %y : tensor<8xf32> -> tensor<8xf32>
  return %e, %n : tensor<4xf32>, tensor<8xf32>
}
