// RUN: kiln-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(kiln-form-kernels))' | FileCheck %s

// A pointwise chain is one kernel over the leading dim.
// CHECK-LABEL: func.func @pointwise_chain
// CHECK-SAME: (%[[X:.*]]: tensor<64x32xf32>, %[[Y:.*]]: tensor<32xf32>)
// CHECK: %[[K:.*]] = kiln_kernel.kernel "kernel_0_add" extent(64) ins(%[[X]], %[[Y]] : tensor<64x32xf32>, tensor<32xf32>) -> (tensor<64x32xf32>)
// CHECK-NEXT: ^bb0(%[[A:.*]]: tensor<64x32xf32>, %[[B:.*]]: tensor<32xf32>):
// CHECK-NEXT:   %[[ADD:.*]] = kiln_graph.add %[[A]], %[[B]]
// CHECK-NEXT:   %[[RELU:.*]] = kiln_graph.relu %[[ADD]]
// CHECK-NEXT:   %[[EXP:.*]] = kiln_graph.exp %[[RELU]]
// CHECK-NEXT:   kiln_kernel.yield %[[EXP]] : tensor<64x32xf32>
// CHECK-NEXT: }
// CHECK-NOT: kiln_kernel.kernel
// CHECK: return %[[K]]
func.func @pointwise_chain(%x: tensor<64x32xf32>, %y: tensor<32xf32>) -> tensor<64x32xf32> {
  %0 = kiln_graph.add %x, %y : tensor<64x32xf32>, tensor<32xf32> -> tensor<64x32xf32>
  %1 = kiln_graph.relu %0 : tensor<64x32xf32> -> tensor<64x32xf32>
  %2 = kiln_graph.exp %1 : tensor<64x32xf32> -> tensor<64x32xf32>
  return %2 : tensor<64x32xf32>
}

// -----

// The bias add and the activation are the matmul's epilogue.
// CHECK-LABEL: func.func @linear
// CHECK: %[[K:.*]] = kiln_kernel.kernel "kernel_0_matmul" extent(16)
// CHECK:   %[[MM:.*]] = kiln_graph.matmul %{{.*}}, %{{.*}} {transpose_rhs = true}
// CHECK-NEXT:   %[[ADD:.*]] = kiln_graph.add %[[MM]], %{{.*}}
// CHECK-NEXT:   %[[RELU:.*]] = kiln_graph.relu %[[ADD]]
// CHECK-NEXT:   kiln_kernel.yield %[[RELU]] : tensor<16x64xf32>
// CHECK-NOT: kiln_kernel.kernel
// CHECK: return %[[K]]
func.func @linear(%x: tensor<16x32xf32>, %w: tensor<64x32xf32>, %b: tensor<64xf32>) -> tensor<16x64xf32> {
  %0 = kiln_graph.matmul %x, %w {transpose_rhs = true} : tensor<16x32xf32>, tensor<64x32xf32> -> tensor<16x64xf32>
  %1 = kiln_graph.add %0, %b : tensor<16x64xf32>, tensor<64xf32> -> tensor<16x64xf32>
  %2 = kiln_graph.relu %1 : tensor<16x64xf32> -> tensor<16x64xf32>
  return %2 : tensor<16x64xf32>
}

// -----

// A matmul always starts a new kernel: it reads its left operand whole.
// CHECK-LABEL: func.func @two_matmuls
// CHECK-SAME: (%[[X:.*]]: tensor<16x32xf32>, %[[W:.*]]: tensor<32x32xf32>)
// CHECK: %[[K0:.*]] = kiln_kernel.kernel "kernel_0_matmul" extent(16) ins(%[[X]], %[[W]] :
// CHECK: %[[K1:.*]] = kiln_kernel.kernel "kernel_1_matmul" extent(16) ins(%[[K0]], %[[W]] :
// CHECK: return %[[K1]]
func.func @two_matmuls(%x: tensor<16x32xf32>, %w: tensor<32x32xf32>) -> tensor<16x32xf32> {
  %0 = kiln_graph.matmul %x, %w : tensor<16x32xf32>, tensor<32x32xf32> -> tensor<16x32xf32>
  %1 = kiln_graph.matmul %0, %w : tensor<16x32xf32>, tensor<32x32xf32> -> tensor<16x32xf32>
  return %1 : tensor<16x32xf32>
}

// -----

// CHECK-LABEL: func.func @batch_matmul_softmax
// CHECK: kiln_kernel.kernel "kernel_0_matmul" extent(4)
// CHECK:   kiln_graph.matmul
// CHECK-NEXT:   kiln_graph.softmax
// CHECK-NOT: kiln_kernel.kernel
func.func @batch_matmul_softmax(%q: tensor<4x8x16xf32>, %k: tensor<4x8x16xf32>) -> tensor<4x8x8xf32> {
  %0 = kiln_graph.matmul %q, %k {transpose_rhs = true} : tensor<4x8x16xf32>, tensor<4x8x16xf32> -> tensor<4x8x8xf32>
  %1 = kiln_graph.softmax %0 {dim = 2 : i64} : tensor<4x8x8xf32> -> tensor<4x8x8xf32>
  return %1 : tensor<4x8x8xf32>
}

// -----

// Softmax over the last dim reads whole rows: it fuses after pointwise ops,
// and the scalar constant is cloned into the kernel.
// CHECK-LABEL: func.func @softmax_last_dim
// CHECK-SAME: (%[[X:.*]]: tensor<8x16xf32>)
// CHECK: %[[K:.*]] = kiln_kernel.kernel "kernel_0_mul" extent(8) ins(%[[X]] : tensor<8x16xf32>) -> (tensor<8x16xf32>)
// CHECK-NEXT: ^bb0(%[[A:.*]]: tensor<8x16xf32>):
// CHECK-NEXT:   %[[C:.*]] = kiln_graph.constant dense<5.000000e-01> : tensor<f32>
// CHECK-NEXT:   %[[M:.*]] = kiln_graph.mul %[[A]], %[[C]]
// CHECK-NEXT:   %[[S:.*]] = kiln_graph.softmax %[[M]] {dim = -1 : i64}
// CHECK-NEXT:   kiln_kernel.yield %[[S]]
// CHECK-NOT: kiln_kernel.kernel
// CHECK: return %[[K]]
func.func @softmax_last_dim(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %c = kiln_graph.constant dense<0.5> : tensor<f32>
  %0 = kiln_graph.mul %x, %c : tensor<8x16xf32>, tensor<f32> -> tensor<8x16xf32>
  %1 = kiln_graph.softmax %0 {dim = -1 : i64} : tensor<8x16xf32> -> tensor<8x16xf32>
  return %1 : tensor<8x16xf32>
}

// -----

// Softmax over the leading dim cannot be split by rows: one workgroup.
// CHECK-LABEL: func.func @softmax_leading_dim
// CHECK: %[[K0:.*]] = kiln_kernel.kernel "kernel_0_exp" extent(8)
// CHECK: %[[K1:.*]] = kiln_kernel.kernel "kernel_1_softmax" extent(0) ins(%[[K0]] : tensor<8x16xf32>)
// CHECK: return %[[K1]]
func.func @softmax_leading_dim(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %0 = kiln_graph.exp %x : tensor<8x16xf32> -> tensor<8x16xf32>
  %1 = kiln_graph.softmax %0 {dim = -2 : i64} : tensor<8x16xf32> -> tensor<8x16xf32>
  return %1 : tensor<8x16xf32>
}

// -----

// CHECK-LABEL: func.func @reduce_inner_dim
// CHECK: kiln_kernel.kernel "kernel_0_exp" extent(8)
// CHECK:   kiln_graph.exp
// CHECK-NEXT:   kiln_graph.sum
// CHECK-NEXT:   kiln_graph.sqrt
// CHECK-NOT: kiln_kernel.kernel
func.func @reduce_inner_dim(%x: tensor<8x16xf32>) -> tensor<8xf32> {
  %0 = kiln_graph.exp %x : tensor<8x16xf32> -> tensor<8x16xf32>
  %1 = kiln_graph.sum %0 {dims = array<i64: 1>} : tensor<8x16xf32> -> tensor<8xf32>
  %2 = kiln_graph.sqrt %1 : tensor<8xf32> -> tensor<8xf32>
  return %2 : tensor<8xf32>
}

// -----

// CHECK-LABEL: func.func @reduce_leading_dim
// CHECK: %[[K0:.*]] = kiln_kernel.kernel "kernel_0_exp" extent(8)
// CHECK: %[[K1:.*]] = kiln_kernel.kernel "kernel_1_sum" extent(0) ins(%[[K0]] : tensor<8x16xf32>) -> (tensor<16xf32>)
// CHECK:   kiln_graph.sum %{{.*}} {dims = array<i64: 0>}
// CHECK: return %[[K1]]
func.func @reduce_leading_dim(%x: tensor<8x16xf32>) -> tensor<16xf32> {
  %0 = kiln_graph.exp %x : tensor<8x16xf32> -> tensor<8x16xf32>
  %1 = kiln_graph.sum %0 {dims = array<i64: 0>} : tensor<8x16xf32> -> tensor<16xf32>
  return %1 : tensor<16xf32>
}

// -----

// A reduction to a scalar has no leading dim: it runs as one workgroup.
// CHECK-LABEL: func.func @reduce_to_scalar
// CHECK: %[[K0:.*]] = kiln_kernel.kernel "kernel_0_exp" extent(8)
// CHECK: %[[K1:.*]] = kiln_kernel.kernel "kernel_1_sum" extent(0) ins(%[[K0]] : tensor<8x16xf32>) -> (tensor<f32>)
// CHECK: return %[[K1]]
func.func @reduce_to_scalar(%x: tensor<8x16xf32>) -> tensor<f32> {
  %0 = kiln_graph.exp %x : tensor<8x16xf32> -> tensor<8x16xf32>
  %1 = kiln_graph.sum %0 {dims = array<i64>} : tensor<8x16xf32> -> tensor<f32>
  return %1 : tensor<f32>
}

// -----

// A reshape that keeps the leading dim stays in the kernel.
// CHECK-LABEL: func.func @reshape_keeps_leading_dim
// CHECK: %[[K:.*]] = kiln_kernel.kernel "kernel_0_exp" extent(8)
// CHECK:   kiln_graph.exp
// CHECK-NEXT:   kiln_graph.reshape %{{.*}} : tensor<8x16xf32> -> tensor<8x4x4xf32>
// CHECK-NEXT:   kiln_graph.neg
// CHECK-NOT: kiln_kernel.kernel
// CHECK: return %[[K]]
func.func @reshape_keeps_leading_dim(%x: tensor<8x16xf32>) -> tensor<8x4x4xf32> {
  %0 = kiln_graph.exp %x : tensor<8x16xf32> -> tensor<8x16xf32>
  %1 = kiln_graph.reshape %0 : tensor<8x16xf32> -> tensor<8x4x4xf32>
  %2 = kiln_graph.neg %1 : tensor<8x4x4xf32> -> tensor<8x4x4xf32>
  return %2 : tensor<8x4x4xf32>
}

// -----

// A reshape that changes the leading dim between kernels stays outside them.
// CHECK-LABEL: func.func @boundary_reshape
// CHECK: %[[K0:.*]] = kiln_kernel.kernel "kernel_0_exp" extent(8) {{.*}} -> (tensor<8x16xf32>)
// CHECK-NOT: kiln_graph.reshape
// CHECK: kiln_kernel.yield
// CHECK-NEXT: }
// CHECK-NEXT: %[[R:.*]] = kiln_graph.reshape %[[K0]] : tensor<8x16xf32> -> tensor<4x32xf32>
// CHECK-NEXT: %[[K1:.*]] = kiln_kernel.kernel "kernel_1_neg" extent(4) ins(%[[R]] : tensor<4x32xf32>)
// CHECK: return %[[K1]]
func.func @boundary_reshape(%x: tensor<8x16xf32>) -> tensor<4x32xf32> {
  %0 = kiln_graph.exp %x : tensor<8x16xf32> -> tensor<8x16xf32>
  %1 = kiln_graph.reshape %0 : tensor<8x16xf32> -> tensor<4x32xf32>
  %2 = kiln_graph.neg %1 : tensor<4x32xf32> -> tensor<4x32xf32>
  return %2 : tensor<4x32xf32>
}

// -----

// CHECK-LABEL: func.func @reshape_of_argument
// CHECK-SAME: (%[[X:.*]]: tensor<8x16xf32>)
// CHECK-NEXT: %[[R:.*]] = kiln_graph.reshape %[[X]] : tensor<8x16xf32> -> tensor<128xf32>
// CHECK-NEXT: %[[K:.*]] = kiln_kernel.kernel "kernel_0_neg" extent(128) ins(%[[R]] : tensor<128xf32>)
func.func @reshape_of_argument(%x: tensor<8x16xf32>) -> tensor<128xf32> {
  %0 = kiln_graph.reshape %x : tensor<8x16xf32> -> tensor<128xf32>
  %1 = kiln_graph.neg %0 : tensor<128xf32> -> tensor<128xf32>
  return %1 : tensor<128xf32>
}

// -----

// A lower-rank operand produced in the kernel is broadcast along the leading
// dim: each row reads all of it, so the consumer starts a new kernel.
// CHECK-LABEL: func.func @broadcast_of_kernel_value
// CHECK-SAME: (%[[X:.*]]: tensor<4x4xf32>)
// CHECK: %[[K0:.*]] = kiln_kernel.kernel "kernel_0_sum" extent(4) ins(%[[X]] : tensor<4x4xf32>) -> (tensor<4xf32>)
// CHECK: %[[K1:.*]] = kiln_kernel.kernel "kernel_1_add" extent(4) ins(%[[X]], %[[K0]] : tensor<4x4xf32>, tensor<4xf32>)
// CHECK: return %[[K1]]
func.func @broadcast_of_kernel_value(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %0 = kiln_graph.sum %x {dims = array<i64: 1>} : tensor<4x4xf32> -> tensor<4xf32>
  %1 = kiln_graph.add %x, %0 : tensor<4x4xf32>, tensor<4xf32> -> tensor<4x4xf32>
  return %1 : tensor<4x4xf32>
}

// -----

// The same broadcast from a function argument is a plain kernel input.
// CHECK-LABEL: func.func @broadcast_of_argument
// CHECK: kiln_kernel.kernel "kernel_0_exp" extent(4)
// CHECK:   kiln_graph.exp
// CHECK-NEXT:   kiln_graph.add
// CHECK-NOT: kiln_kernel.kernel
func.func @broadcast_of_argument(%x: tensor<4x4xf32>, %y: tensor<4xf32>) -> tensor<4x4xf32> {
  %0 = kiln_graph.exp %x : tensor<4x4xf32> -> tensor<4x4xf32>
  %1 = kiln_graph.add %0, %y : tensor<4x4xf32>, tensor<4xf32> -> tensor<4x4xf32>
  return %1 : tensor<4x4xf32>
}

// -----

// Row statistics kept as [N, 1] are aligned with the rows they came from.
// CHECK-LABEL: func.func @keepdim_statistic
// CHECK: kiln_kernel.kernel "kernel_0_amax" extent(8)
// CHECK:   kiln_graph.amax
// CHECK-NEXT:   kiln_graph.sub
// CHECK-NOT: kiln_kernel.kernel
func.func @keepdim_statistic(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %0 = kiln_graph.amax %x {dims = array<i64: 1>, keepdim = true} : tensor<8x16xf32> -> tensor<8x1xf32>
  %1 = kiln_graph.sub %x, %0 : tensor<8x16xf32>, tensor<8x1xf32> -> tensor<8x16xf32>
  return %1 : tensor<8x16xf32>
}

// -----

// A value used inside the kernel and returned is yielded; layer norm keeps
// its rows, so its statistics are yielded from the same kernel.
// CHECK-LABEL: func.func @layer_norm
// CHECK: %[[K:.*]]:3 = kiln_kernel.kernel "kernel_0_add" extent(8) {{.*}} -> (tensor<8x16xf32>, tensor<8x1xf32>, tensor<8x16xf32>)
// CHECK:   %[[ADD:.*]] = kiln_graph.add
// CHECK-NEXT:   %[[LN:.*]], %[[MEAN:.*]], %[[RSTD:.*]] = kiln_graph.layer_norm %[[ADD]]
// CHECK-NEXT:   %[[RELU:.*]] = kiln_graph.relu %[[LN]]
// CHECK-NEXT:   kiln_kernel.yield %[[ADD]], %[[RSTD]], %[[RELU]]
// CHECK-NOT: kiln_kernel.kernel
// CHECK: return %[[K]]#2, %[[K]]#1, %[[K]]#0
func.func @layer_norm(%x: tensor<8x16xf32>, %w: tensor<16xf32>, %b: tensor<16xf32>) -> (tensor<8x16xf32>, tensor<8x1xf32>, tensor<8x16xf32>) {
  %0 = kiln_graph.add %x, %x : tensor<8x16xf32>, tensor<8x16xf32> -> tensor<8x16xf32>
  %1:3 = kiln_graph.layer_norm %0, %w, %b {normalized_rank = 1 : i64, eps = 1.0e-5 : f64}
      : tensor<8x16xf32>, tensor<16xf32>, tensor<16xf32> -> tensor<8x16xf32>, tensor<8x1xf32>, tensor<8x1xf32>
  %2 = kiln_graph.relu %1#0 : tensor<8x16xf32> -> tensor<8x16xf32>
  return %2, %1#2, %0 : tensor<8x16xf32>, tensor<8x1xf32>, tensor<8x16xf32>
}

// -----

// A permute that moves the leading dim reads other rows: new kernel. Later
// ops that only read the first kernel still join it.
// CHECK-LABEL: func.func @permute_moves_leading_dim
// CHECK: %[[K0:.*]]:2 = kiln_kernel.kernel "kernel_0_exp" extent(8)
// CHECK:   %[[E:.*]] = kiln_graph.exp
// CHECK-NEXT:   %[[N:.*]] = kiln_graph.neg %[[E]]
// CHECK-NEXT:   kiln_kernel.yield %[[E]], %[[N]]
// CHECK: %[[K1:.*]] = kiln_kernel.kernel "kernel_1_permute" extent(8) ins(%[[K0]]#0, %[[K0]]#1 :
// CHECK:   kiln_graph.permute %{{.*}} {dims = array<i64: 1, 0>}
// CHECK-NEXT:   kiln_graph.add
// CHECK-NEXT:   kiln_graph.mul
// CHECK: return %[[K1]]
func.func @permute_moves_leading_dim(%x: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %0 = kiln_graph.exp %x : tensor<8x8xf32> -> tensor<8x8xf32>
  %1 = kiln_graph.permute %0 {dims = array<i64: 1, 0>} : tensor<8x8xf32> -> tensor<8x8xf32>
  %2 = kiln_graph.add %0, %1 : tensor<8x8xf32>, tensor<8x8xf32> -> tensor<8x8xf32>
  %3 = kiln_graph.neg %0 : tensor<8x8xf32> -> tensor<8x8xf32>
  %4 = kiln_graph.mul %3, %2 : tensor<8x8xf32>, tensor<8x8xf32> -> tensor<8x8xf32>
  return %4 : tensor<8x8xf32>
}

// -----

// CHECK-LABEL: func.func @permute_keeps_leading_dim
// CHECK: kiln_kernel.kernel "kernel_0_exp" extent(2)
// CHECK:   kiln_graph.exp
// CHECK-NEXT:   kiln_graph.permute
// CHECK-NOT: kiln_kernel.kernel
func.func @permute_keeps_leading_dim(%x: tensor<2x3x4xf32>) -> tensor<2x4x3xf32> {
  %0 = kiln_graph.exp %x : tensor<2x3x4xf32> -> tensor<2x3x4xf32>
  %1 = kiln_graph.permute %0 {dims = array<i64: 0, 2, 1>} : tensor<2x3x4xf32> -> tensor<2x4x3xf32>
  return %1 : tensor<2x4x3xf32>
}

// -----

// Concat and slice along an inner dim fuse; along the leading dim they do not.
// CHECK-LABEL: func.func @concat_and_slice
// CHECK: %[[K0:.*]]:3 = kiln_kernel.kernel "kernel_0_exp" extent(8) {{.*}} -> (tensor<8x8xf32>, tensor<8x16xf32>, tensor<8x4xf32>)
// CHECK:   kiln_graph.exp
// CHECK-NEXT:   kiln_graph.concat %{{.*}}, %{{.*}} {dim = 1 : i64}
// CHECK-NEXT:   kiln_graph.slice %{{.*}} {dim = 1 : i64
// CHECK: %[[K1:.*]] = kiln_kernel.kernel "kernel_1_concat" extent(16) ins(%[[K0]]#0 : tensor<8x8xf32>)
// CHECK: %[[K2:.*]] = kiln_kernel.kernel "kernel_2_slice" extent(4) ins(%[[K0]]#0 : tensor<8x8xf32>)
// CHECK: return %[[K0]]#1, %[[K1]], %[[K0]]#2, %[[K2]]
func.func @concat_and_slice(%x: tensor<8x8xf32>) -> (tensor<8x16xf32>, tensor<16x8xf32>, tensor<8x4xf32>, tensor<4x8xf32>) {
  %0 = kiln_graph.exp %x : tensor<8x8xf32> -> tensor<8x8xf32>
  %1 = kiln_graph.concat %0, %0 {dim = 1 : i64} : tensor<8x8xf32>, tensor<8x8xf32> -> tensor<8x16xf32>
  %2 = kiln_graph.concat %0, %0 {dim = 0 : i64} : tensor<8x8xf32>, tensor<8x8xf32> -> tensor<16x8xf32>
  %3 = kiln_graph.slice %0 {dim = 1 : i64, start = 0 : i64, step = 2 : i64} : tensor<8x8xf32> -> tensor<8x4xf32>
  %4 = kiln_graph.slice %0 {dim = 0 : i64, start = 1 : i64, step = 2 : i64} : tensor<8x8xf32> -> tensor<4x8xf32>
  return %1, %2, %3, %4 : tensor<8x16xf32>, tensor<16x8xf32>, tensor<8x4xf32>, tensor<4x8xf32>
}

// -----

// A constant is cloned into every kernel that reads it.
// CHECK-LABEL: func.func @constant_cloned
// CHECK-NOT: kiln_graph.constant
// CHECK: kiln_kernel.kernel "kernel_0_mul" extent(8)
// CHECK:   kiln_graph.constant dense<2.000000e+00> : tensor<8xf32>
// CHECK: kiln_kernel.kernel "kernel_1_sum" extent(0)
// CHECK-NOT: kiln_graph.constant
// CHECK: kiln_kernel.kernel "kernel_2_add" extent(8)
// CHECK:   kiln_graph.constant dense<2.000000e+00> : tensor<8xf32>
func.func @constant_cloned(%x: tensor<8x8xf32>) -> (tensor<8x8xf32>, tensor<8xf32>) {
  %c = kiln_graph.constant dense<2.0> : tensor<8xf32>
  %0 = kiln_graph.mul %x, %c : tensor<8x8xf32>, tensor<8xf32> -> tensor<8x8xf32>
  %1 = kiln_graph.sum %0 {dims = array<i64: 0>} : tensor<8x8xf32> -> tensor<8xf32>
  %2 = kiln_graph.add %1, %c : tensor<8xf32>, tensor<8xf32> -> tensor<8xf32>
  return %0, %2 : tensor<8x8xf32>, tensor<8xf32>
}

// -----

// A returned constant becomes a kernel of its own.
// CHECK-LABEL: func.func @constant_returned
// CHECK: %[[K:.*]] = kiln_kernel.kernel "kernel_0_constant" extent(0) -> (tensor<8xf32>)
// CHECK-NEXT: %[[C:.*]] = kiln_graph.constant
// CHECK-NEXT: kiln_kernel.yield %[[C]]
// CHECK: return %[[K]]
func.func @constant_returned() -> tensor<8xf32> {
  %c = kiln_graph.constant dense<2.0> : tensor<8xf32>
  return %c : tensor<8xf32>
}

// -----

// CHECK-LABEL: func.func @embedding
// CHECK: kiln_kernel.kernel "kernel_0_embedding" extent(8)
// CHECK:   kiln_graph.embedding
// CHECK-NEXT:   kiln_graph.relu
// CHECK-NOT: kiln_kernel.kernel
func.func @embedding(%w: tensor<100x16xf32>, %i: tensor<8xi64>) -> tensor<8x16xf32> {
  %0 = kiln_graph.embedding %w, %i : tensor<100x16xf32>, tensor<8xi64> -> tensor<8x16xf32>
  %1 = kiln_graph.relu %0 : tensor<8x16xf32> -> tensor<8x16xf32>
  return %1 : tensor<8x16xf32>
}

// -----

// Declarations are left alone.
// CHECK-LABEL: func.func private @declaration(tensor<4xf32>) -> tensor<4xf32>
// CHECK-NOT: kiln_kernel.kernel
func.func private @declaration(tensor<4xf32>) -> tensor<4xf32>

// -----

// Every output must be a fresh buffer: one that is an input (or a reshape of
// one) is copied by a clone. The first clone reads only a graph input, so it
// joins the exp kernel as a sibling; the reshaped one has another extent.
// CHECK-LABEL: func.func @output_is_input
// CHECK-SAME: (%[[X:.*]]: tensor<4x2xf32>)
// CHECK: %[[K0:.*]]:2 = kiln_kernel.kernel "kernel_0_exp" extent(4) ins(%[[X]] : tensor<4x2xf32>)
// CHECK-NEXT: ^bb0(%[[A:.*]]: tensor<4x2xf32>):
// CHECK-NEXT:   %[[E:.*]] = kiln_graph.exp %[[A]]
// CHECK-NEXT:   %[[C:.*]] = kiln_graph.clone %[[A]]
// CHECK-NEXT:   kiln_kernel.yield %[[E]], %[[C]]
// CHECK: %[[R:.*]] = kiln_graph.reshape %[[X]] : tensor<4x2xf32> -> tensor<8xf32>
// CHECK-NEXT: %[[K1:.*]] = kiln_kernel.kernel "kernel_1_clone" extent(8) ins(%[[R]] : tensor<8xf32>)
// CHECK: return %[[K0]]#0, %[[K0]]#1, %[[K1]]
func.func @output_is_input(%x: tensor<4x2xf32>) -> (tensor<4x2xf32>, tensor<4x2xf32>, tensor<8xf32>) {
  %0 = kiln_graph.exp %x : tensor<4x2xf32> -> tensor<4x2xf32>
  %1 = kiln_graph.reshape %x : tensor<4x2xf32> -> tensor<8xf32>
  return %0, %x, %1 : tensor<4x2xf32>, tensor<4x2xf32>, tensor<8xf32>
}

// -----

// A leading dim of 1 is run by one workgroup (extent 0), and a kernel run by
// one workgroup executes its ops in order: the epilogue joins the matmul.
// CHECK-LABEL: func.func @single_row_linear
// CHECK-SAME: (%[[X:.*]]: tensor<1x32xf32>, %[[W:.*]]: tensor<64x32xf32>, %[[B:.*]]: tensor<64xf32>)
// CHECK: %[[K:.*]] = kiln_kernel.kernel "kernel_0_matmul" extent(0) ins(%[[X]], %[[W]], %[[B]] : tensor<1x32xf32>, tensor<64x32xf32>, tensor<64xf32>) -> (tensor<1x64xf32>)
// CHECK-NEXT: ^bb0(%[[A0:.*]]: tensor<1x32xf32>, %[[A1:.*]]: tensor<64x32xf32>, %[[A2:.*]]: tensor<64xf32>):
// CHECK-NEXT:   %[[MM:.*]] = kiln_graph.matmul %[[A0]], %[[A1]] {transpose_rhs = true}
// CHECK-NEXT:   %[[ADD:.*]] = kiln_graph.add %[[MM]], %[[A2]]
// CHECK-NEXT:   %[[RELU:.*]] = kiln_graph.relu %[[ADD]]
// CHECK-NEXT:   kiln_kernel.yield %[[RELU]] : tensor<1x64xf32>
// CHECK-NEXT: }
// CHECK-NOT: kiln_kernel.kernel
// CHECK: return %[[K]]
func.func @single_row_linear(%x: tensor<1x32xf32>, %w: tensor<64x32xf32>, %b: tensor<64xf32>) -> tensor<1x64xf32> {
  %0 = kiln_graph.matmul %x, %w {transpose_rhs = true} : tensor<1x32xf32>, tensor<64x32xf32> -> tensor<1x64xf32>
  %1 = kiln_graph.add %0, %b : tensor<1x64xf32>, tensor<64xf32> -> tensor<1x64xf32>
  %2 = kiln_graph.relu %1 : tensor<1x64xf32> -> tensor<1x64xf32>
  return %2 : tensor<1x64xf32>
}

// -----

// Scalars (no leading dim) join a single-workgroup kernel too.
// CHECK-LABEL: func.func @scalar_after_reduction
// CHECK: %[[K0:.*]] = kiln_kernel.kernel "kernel_0_exp" extent(8)
// CHECK: %[[K1:.*]] = kiln_kernel.kernel "kernel_1_sum" extent(0) ins(%[[K0]] : tensor<8x16xf32>) -> (tensor<f32>)
// CHECK:   kiln_graph.sum
// CHECK-NEXT:   kiln_graph.sqrt
// CHECK-NEXT:   kiln_kernel.yield
// CHECK-NOT: kiln_kernel.kernel
// CHECK: return %[[K1]]
func.func @scalar_after_reduction(%x: tensor<8x16xf32>) -> tensor<f32> {
  %0 = kiln_graph.exp %x : tensor<8x16xf32> -> tensor<8x16xf32>
  %1 = kiln_graph.sum %0 {dims = array<i64>} : tensor<8x16xf32> -> tensor<f32>
  %2 = kiln_graph.sqrt %1 : tensor<f32> -> tensor<f32>
  return %2 : tensor<f32>
}

// -----

// An op over many rows does not join a single-workgroup kernel.
// CHECK-LABEL: func.func @rows_after_single_workgroup
// CHECK: %[[K0:.*]] = kiln_kernel.kernel "kernel_0_sum" extent(0)
// CHECK: %[[K1:.*]] = kiln_kernel.kernel "kernel_1_add" extent(8) ins(%{{.*}}, %[[K0]] : tensor<8x16xf32>, tensor<16xf32>)
// CHECK: return %[[K1]]
func.func @rows_after_single_workgroup(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %0 = kiln_graph.sum %x {dims = array<i64: 0>} : tensor<8x16xf32> -> tensor<16xf32>
  %1 = kiln_graph.add %x, %0 : tensor<8x16xf32>, tensor<16xf32> -> tensor<8x16xf32>
  return %1 : tensor<8x16xf32>
}

// -----

// Returning an argument returns a fresh copy.
// CHECK-LABEL: func.func @return_argument
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>)
// CHECK-NEXT: %[[K:.*]] = kiln_kernel.kernel "kernel_0_clone" extent(4) ins(%[[X]] : tensor<4x8xf32>) -> (tensor<4x8xf32>)
// CHECK-NEXT: ^bb0(%[[A:.*]]: tensor<4x8xf32>):
// CHECK-NEXT:   %[[C:.*]] = kiln_graph.clone %[[A]] : tensor<4x8xf32> -> tensor<4x8xf32>
// CHECK-NEXT:   kiln_kernel.yield %[[C]] : tensor<4x8xf32>
// CHECK-NEXT: }
// CHECK-NEXT: return %[[K]]
func.func @return_argument(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  return %x : tensor<4x8xf32>
}

// -----

// Ops that read no kernel's result join the newest kernel as siblings when
// their extents agree; a matmul kernel takes no siblings. The assert stays
// outside kernels (it becomes a plan check).
// CHECK-LABEL: func.func @siblings_and_assert
// CHECK: %[[K0:.*]] = kiln_kernel.kernel "kernel_0_ge" extent(0)
// CHECK:        kiln_graph.ge
// CHECK-NEXT:   kiln_graph.lt
// CHECK-NEXT:   kiln_graph.where
// CHECK-NEXT:   kiln_graph.all
// CHECK-NEXT:   kiln_kernel.yield
// CHECK: kiln_graph.assert %[[K0]] {kind = #kiln_graph.check_kind<index>, message = "out of range"} : tensor<i1>
// CHECK: kiln_kernel.kernel "kernel_1_matmul"
// CHECK: kiln_kernel.kernel "kernel_2_exp"
func.func @siblings_and_assert(%i: tensor<1x3xi64>, %a: tensor<8x8xf32>, %x: tensor<8x8xf32>)
    -> (tensor<8x8xf32>, tensor<8x8xf32>) {
  %zero = kiln_graph.constant dense<0> : tensor<i64>
  %ten = kiln_graph.constant dense<10> : tensor<i64>
  %false = kiln_graph.constant dense<false> : tensor<i1>
  %0 = kiln_graph.ge %i, %zero : tensor<1x3xi64>, tensor<i64> -> tensor<1x3xi1>
  %1 = kiln_graph.lt %i, %ten : tensor<1x3xi64>, tensor<i64> -> tensor<1x3xi1>
  %2 = kiln_graph.where %0, %1, %false : tensor<1x3xi1>, tensor<1x3xi1>, tensor<i1> -> tensor<1x3xi1>
  %3 = kiln_graph.all %2 {dims = array<i64>} : tensor<1x3xi1> -> tensor<i1>
  kiln_graph.assert %3 {kind = #kiln_graph.check_kind<index>, message = "out of range"} : tensor<i1>
  %4 = kiln_graph.matmul %a, %a : tensor<8x8xf32>, tensor<8x8xf32> -> tensor<8x8xf32>
  %5 = kiln_graph.exp %x : tensor<8x8xf32> -> tensor<8x8xf32>
  return %4, %5 : tensor<8x8xf32>, tensor<8x8xf32>
}

// -----

// Attention runs alone in its kernel, whose workgroups split B * H = 4: the
// add after it has the same leading size (4) and reads it aligned, but must
// not join, because the two split different dims.
// CHECK-LABEL: func.func @attention_alone
// CHECK: kiln_kernel.kernel "kernel_{{[0-9]+}}_attention" extent(4)
// CHECK-NEXT: ^bb0
// CHECK-NEXT: kiln_graph.attention
// CHECK-NEXT: kiln_kernel.yield
// CHECK: kiln_kernel.kernel "kernel_{{[0-9]+}}_add" extent(4)
func.func @attention_alone(%q: tensor<4x1x8x16xf32>) -> tensor<4x1x8x16xf32> {
  %0:2 = kiln_graph.attention %q, %q, %q {scale = 0.25 : f64} : tensor<4x1x8x16xf32>, tensor<4x1x8x16xf32>, tensor<4x1x8x16xf32> -> tensor<4x1x8x16xf32>, tensor<4x1x8xf32>
  %1 = kiln_graph.add %0#0, %q : tensor<4x1x8x16xf32>, tensor<4x1x8x16xf32> -> tensor<4x1x8x16xf32>
  return %1 : tensor<4x1x8x16xf32>
}

// -----

// The elementwise ops after a convolution join its kernel as its epilogue
// (batch norm's scale, a residual add, ReLU), even when they read a value a
// newer kernel made (the scale), as long as that kernel does not depend on
// the convolution's; x * sigmoid(x) reads the chain twice.
// CHECK-LABEL: func.func @conv_epilogue
// CHECK: kiln_kernel.kernel "kernel_{{[0-9]+}}_rsqrt"
// CHECK: kiln_kernel.kernel "kernel_{{[0-9]+}}_conv2d" extent(12)
// CHECK-NEXT: ^bb0
// CHECK-NEXT: kiln_graph.conv2d
// CHECK-NEXT: kiln_graph.mul
// CHECK-NEXT: kiln_graph.add
// CHECK-NEXT: kiln_graph.relu
// CHECK-NEXT: kiln_graph.sigmoid
// CHECK-NEXT: kiln_graph.mul
// CHECK-NEXT: kiln_kernel.yield
func.func @conv_epilogue(%x: tensor<2x4x8x10xf32>, %w: tensor<4x4x3x3xf32>, %var: tensor<4x1x1xf32>,
                         %res: tensor<2x4x6x8xf32>) -> tensor<2x4x6x8xf32> {
  %0 = kiln_graph.conv2d %x, %w {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>} : tensor<2x4x8x10xf32>, tensor<4x4x3x3xf32> -> tensor<2x4x6x8xf32>
  %1 = kiln_graph.rsqrt %var : tensor<4x1x1xf32> -> tensor<4x1x1xf32>
  %2 = kiln_graph.mul %0, %1 : tensor<2x4x6x8xf32>, tensor<4x1x1xf32> -> tensor<2x4x6x8xf32>
  %3 = kiln_graph.add %2, %res : tensor<2x4x6x8xf32>, tensor<2x4x6x8xf32> -> tensor<2x4x6x8xf32>
  %4 = kiln_graph.relu %3 : tensor<2x4x6x8xf32> -> tensor<2x4x6x8xf32>
  %5 = kiln_graph.sigmoid %4 : tensor<2x4x6x8xf32> -> tensor<2x4x6x8xf32>
  %6 = kiln_graph.mul %4, %5 : tensor<2x4x6x8xf32>, tensor<2x4x6x8xf32> -> tensor<2x4x6x8xf32>
  return %6 : tensor<2x4x6x8xf32>
}

// -----

// A link whose value is also used after the chain ends the epilogue early:
// the links move to a kernel of their own, and the convolution's kernel
// yields only its result.
// CHECK-LABEL: func.func @conv_open_epilogue
// CHECK: kiln_kernel.kernel "kernel_{{[0-9]+}}_conv2d" extent(12)
// CHECK-NEXT: ^bb0
// CHECK-NEXT: kiln_graph.conv2d
// CHECK-NEXT: kiln_kernel.yield
// CHECK: kiln_kernel.kernel "kernel_{{[0-9]+}}_relu" extent(2)
func.func @conv_open_epilogue(%x: tensor<2x4x8x10xf32>, %w: tensor<4x4x3x3xf32>) -> (tensor<2x4x6x8xf32>, tensor<2x4x6x8xf32>) {
  %0 = kiln_graph.conv2d %x, %w {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>} : tensor<2x4x8x10xf32>, tensor<4x4x3x3xf32> -> tensor<2x4x6x8xf32>
  %1 = kiln_graph.relu %0 : tensor<2x4x6x8xf32> -> tensor<2x4x6x8xf32>
  %2 = kiln_graph.neg %1 : tensor<2x4x6x8xf32> -> tensor<2x4x6x8xf32>
  return %1, %2 : tensor<2x4x6x8xf32>, tensor<2x4x6x8xf32>
}
