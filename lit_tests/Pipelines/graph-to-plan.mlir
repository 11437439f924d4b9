// RUN: kiln-opt %s -split-input-file --kiln-attach-target=target=cpu:x86-64-v4 --kiln-graph-to-plan | FileCheck %s

// Linear + ReLU, a reshape that changes the leading dim, then softmax:
// canonicalization reads the weight in place (transpose_rhs) and drops the
// multiplication by one; fusion gives two kernels joined by a view.
// CHECK-LABEL: func.func @mlp
// CHECK-SAME: (%[[X:.*]]: memref<8x16xf32>, %[[W:.*]]: memref<32x16xf32>, %[[B:.*]]: memref<32xf32>) -> memref<4x64xf32> attributes {kiln_plan.entry}
// CHECK-NEXT: %[[H:.*]] = kiln_plan.alloc : memref<8x32xf32>
// CHECK-NEXT: kiln_plan.launch @kernel_0_matmul[1] (%[[X]], %[[W]], %[[B]], %[[H]]) {num_inputs = 3 : i64}
// CHECK-NEXT: %[[V:.*]] = kiln_plan.view %[[H]] : memref<8x32xf32> to memref<4x64xf32>
// CHECK-NEXT: %[[Y:.*]] = kiln_plan.alloc : memref<4x64xf32>
// CHECK-NEXT: kiln_plan.launch @kernel_1_softmax[1] (%[[V]], %[[Y]]) {num_inputs = 1 : i64}
// CHECK-NEXT: return %[[Y]] : memref<4x64xf32>
// CHECK: func.func private @kernel_0_matmul(%{{.*}}: index, %{{.*}}: index, %{{.*}}: memref<8x16xf32>, %{{.*}}: memref<32x16xf32>, %{{.*}}: memref<32xf32>, %{{.*}}: memref<8x32xf32>)
// CHECK-SAME: attributes {kiln_kernel.kernel = "kernel_0_matmul", kiln_kernel.workgroup_extent = 8 : i64}
// CHECK-NOT: kiln_graph.permute
// CHECK-NOT: kiln_graph.mul
// CHECK: kiln_graph.matmul %{{.*}}, %{{.*}} {transpose_rhs = true}
// CHECK-NEXT: kiln_graph.add
// CHECK-NEXT: kiln_graph.relu
// CHECK-NEXT: bufferization.materialize_in_destination
// CHECK: func.func private @kernel_1_softmax(%{{.*}}: index, %{{.*}}: index, %{{.*}}: memref<4x64xf32>, %{{.*}}: memref<4x64xf32>)
// CHECK-SAME: kiln_kernel.workgroup_extent = 4 : i64
// CHECK-NOT: kiln_kernel.kernel
func.func @mlp(%x: tensor<8x16xf32>, %w: tensor<32x16xf32>, %b: tensor<32xf32>) -> tensor<4x64xf32> {
  %t = kiln_graph.permute %w {dims = array<i64: 1, 0>} : tensor<32x16xf32> -> tensor<16x32xf32>
  %0 = kiln_graph.matmul %x, %t : tensor<8x16xf32>, tensor<16x32xf32> -> tensor<8x32xf32>
  %1 = kiln_graph.add %0, %b : tensor<8x32xf32>, tensor<32xf32> -> tensor<8x32xf32>
  %one = kiln_graph.constant dense<1.0> : tensor<f32>
  %2 = kiln_graph.mul %1, %one : tensor<8x32xf32>, tensor<f32> -> tensor<8x32xf32>
  %3 = kiln_graph.relu %2 : tensor<8x32xf32> -> tensor<8x32xf32>
  %4 = kiln_graph.reshape %3 : tensor<8x32xf32> -> tensor<4x64xf32>
  %5 = kiln_graph.softmax %4 {dim = -1 : i64} : tensor<4x64xf32> -> tensor<4x64xf32>
  return %5 : tensor<4x64xf32>
}

// -----

// A graph whose output folds to its input still returns a fresh buffer.
// CHECK-LABEL: func.func @mul_one
// CHECK-SAME: (%[[X:.*]]: memref<4xf32>) -> memref<4xf32>
// CHECK-NEXT: %[[Y:.*]] = kiln_plan.alloc : memref<4xf32>
// CHECK-NEXT: kiln_plan.launch @kernel_0_clone[1] (%[[X]], %[[Y]])
// CHECK-NEXT: return %[[Y]]
// CHECK: func.func private @kernel_0_clone
// CHECK: kiln_graph.clone
func.func @mul_one(%x: tensor<4xf32>) -> tensor<4xf32> {
  %one = kiln_graph.constant dense<1.0> : tensor<f32>
  %0 = kiln_graph.mul %x, %one : tensor<4xf32>, tensor<f32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// Constants fold before fusion; the folded constant becomes its own kernel.
// CHECK-LABEL: func.func @folded_constant
// CHECK-SAME: () -> memref<2xf32>
// CHECK-NEXT: %[[Y:.*]] = kiln_plan.alloc : memref<2xf32>
// CHECK-NEXT: kiln_plan.launch @kernel_0_constant[1] (%[[Y]]) {num_inputs = 0 : i64} : memref<2xf32>
// CHECK-NEXT: return %[[Y]]
// CHECK: func.func private @kernel_0_constant
// CHECK: kiln_graph.constant dense<5.000000e+00> : tensor<2xf32>
func.func @folded_constant() -> tensor<2xf32> {
  %a = kiln_graph.constant dense<2.0> : tensor<2xf32>
  %b = kiln_graph.constant dense<3.0> : tensor<2xf32>
  %0 = kiln_graph.add %a, %b : tensor<2xf32>, tensor<2xf32> -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

// Large enough kernels are split across workgroups.
// CHECK-LABEL: func.func @large
// 3 ops x 1024 x 512 elements / 262144 = 6 workgroups.
// CHECK: kiln_plan.launch @kernel_0_exp[6]
// CHECK: func.func private @kernel_0_exp
// CHECK-SAME: kiln_kernel.workgroup_extent = 1024 : i64
func.func @large(%x: tensor<1024x512xf32>) -> tensor<1024x512xf32> {
  %0 = kiln_graph.exp %x : tensor<1024x512xf32> -> tensor<1024x512xf32>
  %1 = kiln_graph.neg %0 : tensor<1024x512xf32> -> tensor<1024x512xf32>
  %2 = kiln_graph.tanh %1 : tensor<1024x512xf32> -> tensor<1024x512xf32>
  return %2 : tensor<1024x512xf32>
}
