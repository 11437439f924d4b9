// RUN: kiln-opt %s -split-input-file -canonicalize | FileCheck %s

// CHECK-LABEL: func.func @reshape_same_type
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xf32>)
// CHECK-NEXT: return %[[X]]
func.func @reshape_same_type(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = kiln_graph.reshape %x : tensor<2x3xf32> -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// CHECK-LABEL: func.func @reshape_of_reshape
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x4xf32>)
// CHECK-NEXT: %[[R:.*]] = kiln_graph.reshape %[[X]] : tensor<2x3x4xf32> -> tensor<4x6xf32>
// CHECK-NEXT: return %[[R]]
func.func @reshape_of_reshape(%x: tensor<2x3x4xf32>) -> tensor<4x6xf32> {
  %0 = kiln_graph.reshape %x : tensor<2x3x4xf32> -> tensor<24xf32>
  %1 = kiln_graph.reshape %0 : tensor<24xf32> -> tensor<4x6xf32>
  return %1 : tensor<4x6xf32>
}

// -----

// A round trip through another shape folds away entirely.
// CHECK-LABEL: func.func @reshape_round_trip
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xf32>)
// CHECK-NEXT: return %[[X]]
func.func @reshape_round_trip(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = kiln_graph.reshape %x : tensor<2x3xf32> -> tensor<6xf32>
  %1 = kiln_graph.reshape %0 : tensor<6xf32> -> tensor<2x3xf32>
  return %1 : tensor<2x3xf32>
}

// -----

// CHECK-LABEL: func.func @reshape_of_splat
// CHECK-NEXT: %[[C:.*]] = kiln_graph.constant dense<2.000000e+00> : tensor<3x2xf32>
// CHECK-NEXT: return %[[C]]
func.func @reshape_of_splat() -> tensor<3x2xf32> {
  %c = kiln_graph.constant dense<2.0> : tensor<6xf32>
  %0 = kiln_graph.reshape %c : tensor<6xf32> -> tensor<3x2xf32>
  return %0 : tensor<3x2xf32>
}

// -----

// CHECK-LABEL: func.func @identity_permute
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x4xf32>)
// CHECK-NEXT: return %[[X]]
func.func @identity_permute(%x: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  %0 = kiln_graph.permute %x {dims = array<i64: 0, 1, 2>} : tensor<2x3x4xf32> -> tensor<2x3x4xf32>
  return %0 : tensor<2x3x4xf32>
}

// -----

// A permute that undoes another folds away (outputs put in storage order).
// CHECK-LABEL: func.func @permute_of_inverse_permute
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x4xf32>)
// CHECK-NEXT: return %[[X]]
func.func @permute_of_inverse_permute(%x: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  %0 = kiln_graph.permute %x {dims = array<i64: 1, 2, 0>} : tensor<2x3x4xf32> -> tensor<3x4x2xf32>
  %1 = kiln_graph.permute %0 {dims = array<i64: 2, 0, 1>} : tensor<3x4x2xf32> -> tensor<2x3x4xf32>
  return %1 : tensor<2x3x4xf32>
}

// -----

// Two permutes compose into one.
// CHECK-LABEL: func.func @permute_of_permute
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x4xf32>)
// CHECK-NEXT: %[[P:.*]] = kiln_graph.permute %[[X]] {dims = array<i64: 2, 1, 0>} : tensor<2x3x4xf32> -> tensor<4x3x2xf32>
// CHECK-NEXT: return %[[P]]
func.func @permute_of_permute(%x: tensor<2x3x4xf32>) -> tensor<4x3x2xf32> {
  %0 = kiln_graph.permute %x {dims = array<i64: 1, 0, 2>} : tensor<2x3x4xf32> -> tensor<3x2x4xf32>
  %1 = kiln_graph.permute %0 {dims = array<i64: 2, 0, 1>} : tensor<3x2x4xf32> -> tensor<4x3x2xf32>
  return %1 : tensor<4x3x2xf32>
}

// -----

// A permute that swaps two equal-sized dims keeps the type but moves data.
// CHECK-LABEL: func.func @square_transpose_kept
// CHECK: kiln_graph.permute %{{.*}} {dims = array<i64: 1, 0>}
func.func @square_transpose_kept(%x: tensor<3x3xf32>) -> tensor<3x3xf32> {
  %0 = kiln_graph.permute %x {dims = array<i64: 1, 0>} : tensor<3x3xf32> -> tensor<3x3xf32>
  return %0 : tensor<3x3xf32>
}

// -----

// CHECK-LABEL: func.func @expand_same_type
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xf32>)
// CHECK-NEXT: return %[[X]]
func.func @expand_same_type(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = kiln_graph.expand %x : tensor<2x3xf32> -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// CHECK-LABEL: func.func @expand_of_splat
// CHECK-NEXT: %[[C:.*]] = kiln_graph.constant dense<-1> : tensor<4x3xi64>
// CHECK-NEXT: return %[[C]]
func.func @expand_of_splat() -> tensor<4x3xi64> {
  %c = kiln_graph.constant dense<-1> : tensor<1x3xi64>
  %0 = kiln_graph.expand %c : tensor<1x3xi64> -> tensor<4x3xi64>
  return %0 : tensor<4x3xi64>
}

// -----

// CHECK-LABEL: func.func @expand_not_folded
// CHECK: kiln_graph.expand %{{.*}} : tensor<1x3xf32> -> tensor<4x3xf32>
func.func @expand_not_folded(%x: tensor<1x3xf32>) -> tensor<4x3xf32> {
  %0 = kiln_graph.expand %x : tensor<1x3xf32> -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

// CHECK-LABEL: func.func @convert_same_type
// CHECK-SAME: (%[[X:.*]]: tensor<4xf32>)
// CHECK-NEXT: return %[[X]]
func.func @convert_same_type(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = kiln_graph.convert %x : tensor<4xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// CHECK-LABEL: func.func @convert_kept
// CHECK: kiln_graph.convert %{{.*}} : tensor<4xf32> -> tensor<4xi64>
func.func @convert_kept(%x: tensor<4xf32>) -> tensor<4xi64> {
  %0 = kiln_graph.convert %x : tensor<4xf32> -> tensor<4xi64>
  return %0 : tensor<4xi64>
}

// -----

// CHECK-LABEL: func.func @clone_kept
// CHECK: kiln_graph.clone
func.func @clone_kept(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = kiln_graph.clone %x : tensor<4xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// CHECK-LABEL: func.func @full_slice
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>)
// CHECK-NEXT: return %[[X]]
func.func @full_slice(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = kiln_graph.slice %x {dim = 1 : i64, start = 0 : i64, step = 1 : i64} : tensor<4x8xf32> -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

// CHECK-LABEL: func.func @partial_slice_kept
// CHECK: kiln_graph.slice %{{.*}} {dim = 1 : i64, start = 2 : i64, step = 1 : i64}
func.func @partial_slice_kept(%x: tensor<4x8xf32>) -> tensor<4x6xf32> {
  %0 = kiln_graph.slice %x {dim = 1 : i64, start = 2 : i64, step = 1 : i64} : tensor<4x8xf32> -> tensor<4x6xf32>
  return %0 : tensor<4x6xf32>
}

// -----

// CHECK-LABEL: func.func @fold_float_splats
// CHECK-DAG: %[[ADD:.*]] = kiln_graph.constant dense<5.000000e+00> : tensor<2x2xf32>
// CHECK-DAG: %[[SUB:.*]] = kiln_graph.constant dense<-1.000000e+00> : tensor<2x2xf32>
// CHECK-DAG: %[[MUL:.*]] = kiln_graph.constant dense<6.000000e+00> : tensor<2x2xf32>
// CHECK-NOT: kiln_graph.add
// CHECK-NOT: kiln_graph.sub
// CHECK-NOT: kiln_graph.mul
// CHECK: return %[[ADD]], %[[SUB]], %[[MUL]]
func.func @fold_float_splats() -> (tensor<2x2xf32>, tensor<2x2xf32>, tensor<2x2xf32>) {
  %a = kiln_graph.constant dense<2.0> : tensor<2x2xf32>
  %b = kiln_graph.constant dense<3.0> : tensor<2x2xf32>
  %0 = kiln_graph.add %a, %b : tensor<2x2xf32>, tensor<2x2xf32> -> tensor<2x2xf32>
  %1 = kiln_graph.sub %a, %b : tensor<2x2xf32>, tensor<2x2xf32> -> tensor<2x2xf32>
  %2 = kiln_graph.mul %a, %b : tensor<2x2xf32>, tensor<2x2xf32> -> tensor<2x2xf32>
  return %0, %1, %2 : tensor<2x2xf32>, tensor<2x2xf32>, tensor<2x2xf32>
}

// -----

// CHECK-LABEL: func.func @fold_integer_splats
// CHECK-DAG: %[[ADD:.*]] = kiln_graph.constant dense<10> : tensor<3xi64>
// CHECK-DAG: %[[SUB:.*]] = kiln_graph.constant dense<4> : tensor<3xi64>
// CHECK-DAG: %[[MUL:.*]] = kiln_graph.constant dense<21> : tensor<3xi64>
// CHECK: return %[[ADD]], %[[SUB]], %[[MUL]]
func.func @fold_integer_splats() -> (tensor<3xi64>, tensor<3xi64>, tensor<3xi64>) {
  %a = kiln_graph.constant dense<7> : tensor<3xi64>
  %b = kiln_graph.constant dense<3> : tensor<3xi64>
  %0 = kiln_graph.add %a, %b : tensor<3xi64>, tensor<3xi64> -> tensor<3xi64>
  %1 = kiln_graph.sub %a, %b : tensor<3xi64>, tensor<3xi64> -> tensor<3xi64>
  %2 = kiln_graph.mul %a, %b : tensor<3xi64>, tensor<3xi64> -> tensor<3xi64>
  return %0, %1, %2 : tensor<3xi64>, tensor<3xi64>, tensor<3xi64>
}

// -----

// Splats of another shape than the result (a broadcast) are not folded.
// CHECK-LABEL: func.func @no_fold_broadcast_splats
// CHECK: kiln_graph.add
func.func @no_fold_broadcast_splats() -> tensor<2x2xf32> {
  %a = kiln_graph.constant dense<2.0> : tensor<2x2xf32>
  %b = kiln_graph.constant dense<3.0> : tensor<f32>
  %0 = kiln_graph.add %a, %b : tensor<2x2xf32>, tensor<f32> -> tensor<2x2xf32>
  return %0 : tensor<2x2xf32>
}

// -----

// x + (+0.0) is not x for x = -0.0, so only -0.0 is an identity of add.
// CHECK-LABEL: func.func @add_positive_zero_stays
// CHECK: kiln_graph.add
func.func @add_positive_zero_stays(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %z = kiln_graph.constant dense<0.0> : tensor<8xf32>
  %0 = kiln_graph.add %x, %z : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

// CHECK-LABEL: func.func @add_zero
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>)
// CHECK-NEXT: return %[[X]]
func.func @add_zero(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %z = kiln_graph.constant dense<-0.0> : tensor<8xf32>
  %0 = kiln_graph.add %x, %z : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

// Commutative: the constant is moved to the right first.
// CHECK-LABEL: func.func @zero_add
// CHECK-SAME: (%[[X:.*]]: tensor<4xi64>)
// CHECK-NEXT: return %[[X]]
func.func @zero_add(%x: tensor<4xi64>) -> tensor<4xi64> {
  %z = kiln_graph.constant dense<0> : tensor<i64>
  %0 = kiln_graph.add %z, %x : tensor<i64>, tensor<4xi64> -> tensor<4xi64>
  return %0 : tensor<4xi64>
}

// -----

// CHECK-LABEL: func.func @sub_zero
// CHECK-SAME: (%[[X:.*]]: tensor<4xf32>)
// CHECK-NEXT: return %[[X]]
func.func @sub_zero(%x: tensor<4xf32>) -> tensor<4xf32> {
  %z = kiln_graph.constant dense<0.0> : tensor<f32>
  %0 = kiln_graph.sub %x, %z : tensor<4xf32>, tensor<f32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// 0 - x is a negation, not x.
// CHECK-LABEL: func.func @zero_sub_kept
// CHECK: kiln_graph.sub
func.func @zero_sub_kept(%x: tensor<4xf32>) -> tensor<4xf32> {
  %z = kiln_graph.constant dense<0.0> : tensor<f32>
  %0 = kiln_graph.sub %z, %x : tensor<f32>, tensor<4xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// CHECK-LABEL: func.func @mul_one
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>)
// CHECK-NEXT: return %[[X]]
func.func @mul_one(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %one = kiln_graph.constant dense<1.0> : tensor<f32>
  %0 = kiln_graph.mul %one, %x : tensor<f32>, tensor<4x8xf32> -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

// The identity must not fold when it broadcasts the other operand.
// CHECK-LABEL: func.func @add_zero_broadcasting_kept
// CHECK: kiln_graph.add
func.func @add_zero_broadcasting_kept(%x: tensor<8xf32>) -> tensor<4x8xf32> {
  %z = kiln_graph.constant dense<0.0> : tensor<4x8xf32>
  %0 = kiln_graph.add %x, %z : tensor<8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

// CHECK-LABEL: func.func @mul_two_kept
// CHECK: kiln_graph.mul
func.func @mul_two_kept(%x: tensor<4xf32>) -> tensor<4xf32> {
  %two = kiln_graph.constant dense<2.0> : tensor<f32>
  %0 = kiln_graph.mul %x, %two : tensor<4xf32>, tensor<f32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// CHECK-LABEL: func.func @matmul_of_transpose
// CHECK-SAME: (%[[A:.*]]: tensor<4x8xf32>, %[[W:.*]]: tensor<16x8xf32>)
// CHECK-NOT: kiln_graph.permute
// CHECK: %[[M:.*]] = kiln_graph.matmul %[[A]], %[[W]] {transpose_rhs = true} : tensor<4x8xf32>, tensor<16x8xf32> -> tensor<4x16xf32>
// CHECK-NEXT: return %[[M]]
func.func @matmul_of_transpose(%a: tensor<4x8xf32>, %w: tensor<16x8xf32>) -> tensor<4x16xf32> {
  %t = kiln_graph.permute %w {dims = array<i64: 1, 0>} : tensor<16x8xf32> -> tensor<8x16xf32>
  %0 = kiln_graph.matmul %a, %t : tensor<4x8xf32>, tensor<8x16xf32> -> tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}

// -----

// CHECK-LABEL: func.func @batch_matmul_of_transpose
// CHECK-SAME: (%[[A:.*]]: tensor<2x4x8xf32>, %[[B:.*]]: tensor<2x16x8xf32>)
// CHECK-NOT: kiln_graph.permute
// CHECK: kiln_graph.matmul %[[A]], %[[B]] {transpose_rhs = true} : tensor<2x4x8xf32>, tensor<2x16x8xf32> -> tensor<2x4x16xf32>
func.func @batch_matmul_of_transpose(%a: tensor<2x4x8xf32>, %b: tensor<2x16x8xf32>) -> tensor<2x4x16xf32> {
  %t = kiln_graph.permute %b {dims = array<i64: 0, 2, 1>} : tensor<2x16x8xf32> -> tensor<2x8x16xf32>
  %0 = kiln_graph.matmul %a, %t : tensor<2x4x8xf32>, tensor<2x8x16xf32> -> tensor<2x4x16xf32>
  return %0 : tensor<2x4x16xf32>
}

// -----

// Transposing an already transposed operand cancels out.
// CHECK-LABEL: func.func @transpose_rhs_of_transpose
// CHECK-SAME: (%[[A:.*]]: tensor<4x8xf32>, %[[B:.*]]: tensor<8x16xf32>)
// CHECK-NOT: kiln_graph.permute
// CHECK: kiln_graph.matmul %[[A]], %[[B]] : tensor<4x8xf32>, tensor<8x16xf32> -> tensor<4x16xf32>
func.func @transpose_rhs_of_transpose(%a: tensor<4x8xf32>, %b: tensor<8x16xf32>) -> tensor<4x16xf32> {
  %t = kiln_graph.permute %b {dims = array<i64: 1, 0>} : tensor<8x16xf32> -> tensor<16x8xf32>
  %0 = kiln_graph.matmul %a, %t {transpose_rhs = true} : tensor<4x8xf32>, tensor<16x8xf32> -> tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}

// -----

// The permute stays for its other user; the matmul still reads the original.
// CHECK-LABEL: func.func @matmul_of_shared_transpose
// CHECK-SAME: (%[[A:.*]]: tensor<4x8xf32>, %[[W:.*]]: tensor<16x8xf32>)
// CHECK: %[[T:.*]] = kiln_graph.permute %[[W]]
// CHECK: %[[M:.*]] = kiln_graph.matmul %[[A]], %[[W]] {transpose_rhs = true}
// CHECK: return %[[M]], %[[T]]
func.func @matmul_of_shared_transpose(%a: tensor<4x8xf32>, %w: tensor<16x8xf32>) -> (tensor<4x16xf32>, tensor<8x16xf32>) {
  %t = kiln_graph.permute %w {dims = array<i64: 1, 0>} : tensor<16x8xf32> -> tensor<8x16xf32>
  %0 = kiln_graph.matmul %a, %t : tensor<4x8xf32>, tensor<8x16xf32> -> tensor<4x16xf32>
  return %0, %t : tensor<4x16xf32>, tensor<8x16xf32>
}

// -----

// A permute that moves the batch dim is not a transpose of the matrices.
// CHECK-LABEL: func.func @matmul_of_batch_permute
// CHECK: %[[T:.*]] = kiln_graph.permute %{{.*}} {dims = array<i64: 2, 1, 0>}
// CHECK: kiln_graph.matmul %{{.*}}, %[[T]] :
// CHECK-NOT: transpose_rhs
func.func @matmul_of_batch_permute(%a: tensor<2x4x8xf32>, %b: tensor<2x8x2xf32>) -> tensor<2x4x2xf32> {
  %t = kiln_graph.permute %b {dims = array<i64: 2, 1, 0>} : tensor<2x8x2xf32> -> tensor<2x8x2xf32>
  %0 = kiln_graph.matmul %a, %t : tensor<2x4x8xf32>, tensor<2x8x2xf32> -> tensor<2x4x2xf32>
  return %0 : tensor<2x4x2xf32>
}

// -----

// Only the right operand is read transposed.
// CHECK-LABEL: func.func @matmul_of_transposed_lhs
// CHECK: %[[T:.*]] = kiln_graph.permute
// CHECK: kiln_graph.matmul %[[T]], %{{.*}} :
// CHECK-NOT: transpose_rhs
func.func @matmul_of_transposed_lhs(%a: tensor<8x4xf32>, %b: tensor<8x16xf32>) -> tensor<4x16xf32> {
  %t = kiln_graph.permute %a {dims = array<i64: 1, 0>} : tensor<8x4xf32> -> tensor<4x8xf32>
  %0 = kiln_graph.matmul %t, %b : tensor<4x8xf32>, tensor<8x16xf32> -> tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}

// -----

// Pointwise ops commute with reshapes: the reshape moves below them, so the
// op can join the kernel of the value it reads.
// CHECK-LABEL: func.func @sink_reshape_below_unary
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x4xf32>)
// CHECK-NEXT: %[[R:.*]] = kiln_graph.relu %[[X]] : tensor<2x3x4xf32> -> tensor<2x3x4xf32>
// CHECK-NEXT: %[[V:.*]] = kiln_graph.reshape %[[R]] : tensor<2x3x4xf32> -> tensor<6x4xf32>
// CHECK-NEXT: return %[[V]]
func.func @sink_reshape_below_unary(%x: tensor<2x3x4xf32>) -> tensor<6x4xf32> {
  %0 = kiln_graph.reshape %x : tensor<2x3x4xf32> -> tensor<6x4xf32>
  %1 = kiln_graph.relu %0 : tensor<6x4xf32> -> tensor<6x4xf32>
  return %1 : tensor<6x4xf32>
}

// -----

// A chain sinks one op at a time; attributes (gelu's approximation) are kept.
// CHECK-LABEL: func.func @sink_reshape_below_chain
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x4xf32>)
// CHECK-NEXT: %[[N:.*]] = kiln_graph.neg %[[X]] : tensor<2x3x4xf32> -> tensor<2x3x4xf32>
// CHECK-NEXT: %[[G:.*]] = kiln_graph.gelu %[[N]] {approximate = #kiln_graph.gelu_approximation<tanh>} : tensor<2x3x4xf32> -> tensor<2x3x4xf32>
// CHECK-NEXT: %[[V:.*]] = kiln_graph.reshape %[[G]] : tensor<2x3x4xf32> -> tensor<6x4xf32>
// CHECK-NEXT: return %[[V]]
func.func @sink_reshape_below_chain(%x: tensor<2x3x4xf32>) -> tensor<6x4xf32> {
  %0 = kiln_graph.reshape %x : tensor<2x3x4xf32> -> tensor<6x4xf32>
  %1 = kiln_graph.neg %0 : tensor<6x4xf32> -> tensor<6x4xf32>
  %2 = kiln_graph.gelu %1 {approximate = #kiln_graph.gelu_approximation<tanh>} : tensor<6x4xf32> -> tensor<6x4xf32>
  return %2 : tensor<6x4xf32>
}

// -----

// Both operands are reshapes from the same shape: the op runs on the
// originals, in operand order.
// CHECK-LABEL: func.func @sink_reshapes_below_binary
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x4xf32>, %[[Y:.*]]: tensor<2x3x4xf32>)
// CHECK-NEXT: %[[S:.*]] = kiln_graph.sub %[[X]], %[[Y]] : tensor<2x3x4xf32>, tensor<2x3x4xf32> -> tensor<2x3x4xf32>
// CHECK-NEXT: %[[V:.*]] = kiln_graph.reshape %[[S]] : tensor<2x3x4xf32> -> tensor<6x4xf32>
// CHECK-NEXT: return %[[V]]
func.func @sink_reshapes_below_binary(%x: tensor<2x3x4xf32>, %y: tensor<2x3x4xf32>) -> tensor<6x4xf32> {
  %0 = kiln_graph.reshape %x : tensor<2x3x4xf32> -> tensor<6x4xf32>
  %1 = kiln_graph.reshape %y : tensor<2x3x4xf32> -> tensor<6x4xf32>
  %2 = kiln_graph.sub %0, %1 : tensor<6x4xf32>, tensor<6x4xf32> -> tensor<6x4xf32>
  return %2 : tensor<6x4xf32>
}

// -----

// A comparison keeps its i1 result type on the original shape.
// CHECK-LABEL: func.func @sink_reshapes_below_compare
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x4xf32>, %[[Y:.*]]: tensor<2x3x4xf32>)
// CHECK-NEXT: %[[C:.*]] = kiln_graph.lt %[[X]], %[[Y]] : tensor<2x3x4xf32>, tensor<2x3x4xf32> -> tensor<2x3x4xi1>
// CHECK-NEXT: %[[V:.*]] = kiln_graph.reshape %[[C]] : tensor<2x3x4xi1> -> tensor<6x4xi1>
// CHECK-NEXT: return %[[V]]
func.func @sink_reshapes_below_compare(%x: tensor<2x3x4xf32>, %y: tensor<2x3x4xf32>) -> tensor<6x4xi1> {
  %0 = kiln_graph.reshape %x : tensor<2x3x4xf32> -> tensor<6x4xf32>
  %1 = kiln_graph.reshape %y : tensor<2x3x4xf32> -> tensor<6x4xf32>
  %2 = kiln_graph.lt %0, %1 : tensor<6x4xf32>, tensor<6x4xf32> -> tensor<6x4xi1>
  return %2 : tensor<6x4xi1>
}

// -----

// Rank-0 operands broadcast the same way before and after the reshape.
// CHECK-LABEL: func.func @sink_reshape_with_scalar
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x4xf32>, %[[S:.*]]: tensor<f32>)
// CHECK-NEXT: %[[M:.*]] = kiln_graph.mul %[[S]], %[[X]] : tensor<f32>, tensor<2x3x4xf32> -> tensor<2x3x4xf32>
// CHECK-NEXT: %[[V:.*]] = kiln_graph.reshape %[[M]] : tensor<2x3x4xf32> -> tensor<6x4xf32>
// CHECK-NEXT: return %[[V]]
func.func @sink_reshape_with_scalar(%x: tensor<2x3x4xf32>, %s: tensor<f32>) -> tensor<6x4xf32> {
  %0 = kiln_graph.reshape %x : tensor<2x3x4xf32> -> tensor<6x4xf32>
  %1 = kiln_graph.mul %s, %0 : tensor<f32>, tensor<6x4xf32> -> tensor<6x4xf32>
  return %1 : tensor<6x4xf32>
}

// -----

// The other operand is not a reshape: sinking would need a reshape of it.
// CHECK-LABEL: func.func @no_sink_with_full_operand
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x4xf32>, %[[Y:.*]]: tensor<6x4xf32>)
// CHECK-NEXT: %[[R:.*]] = kiln_graph.reshape %[[X]] : tensor<2x3x4xf32> -> tensor<6x4xf32>
// CHECK-NEXT: %[[A:.*]] = kiln_graph.add %[[R]], %[[Y]] : tensor<6x4xf32>, tensor<6x4xf32> -> tensor<6x4xf32>
// CHECK-NEXT: return %[[A]]
func.func @no_sink_with_full_operand(%x: tensor<2x3x4xf32>, %y: tensor<6x4xf32>) -> tensor<6x4xf32> {
  %0 = kiln_graph.reshape %x : tensor<2x3x4xf32> -> tensor<6x4xf32>
  %1 = kiln_graph.add %0, %y : tensor<6x4xf32>, tensor<6x4xf32> -> tensor<6x4xf32>
  return %1 : tensor<6x4xf32>
}

// -----

// A broadcast operand of lower rank is not a reshape either.
// CHECK-LABEL: func.func @no_sink_with_broadcast_operand
// CHECK: kiln_graph.reshape
// CHECK-NEXT: kiln_graph.add %{{.*}}, %{{.*}} : tensor<6x4xf32>, tensor<4xf32> -> tensor<6x4xf32>
func.func @no_sink_with_broadcast_operand(%x: tensor<2x3x4xf32>, %b: tensor<4xf32>) -> tensor<6x4xf32> {
  %0 = kiln_graph.reshape %x : tensor<2x3x4xf32> -> tensor<6x4xf32>
  %1 = kiln_graph.add %0, %b : tensor<6x4xf32>, tensor<4xf32> -> tensor<6x4xf32>
  return %1 : tensor<6x4xf32>
}

// -----

// Reshapes from different shapes: no common shape to compute in.
// CHECK-LABEL: func.func @no_sink_reshapes_from_different_shapes
// CHECK: %[[R0:.*]] = kiln_graph.reshape %{{.*}} : tensor<2x3x4xf32> -> tensor<6x4xf32>
// CHECK: %[[R1:.*]] = kiln_graph.reshape %{{.*}} : tensor<6x2x2xf32> -> tensor<6x4xf32>
// CHECK: kiln_graph.add %[[R0]], %[[R1]] : tensor<6x4xf32>, tensor<6x4xf32> -> tensor<6x4xf32>
func.func @no_sink_reshapes_from_different_shapes(%x: tensor<2x3x4xf32>, %y: tensor<6x2x2xf32>) -> tensor<6x4xf32> {
  %0 = kiln_graph.reshape %x : tensor<2x3x4xf32> -> tensor<6x4xf32>
  %1 = kiln_graph.reshape %y : tensor<6x2x2xf32> -> tensor<6x4xf32>
  %2 = kiln_graph.add %0, %1 : tensor<6x4xf32>, tensor<6x4xf32> -> tensor<6x4xf32>
  return %2 : tensor<6x4xf32>
}

// -----

// Softmax along the last dim of a reshape that keeps the last dim: the rows
// are the same, so it runs on the original (along its own last dim).
// CHECK-LABEL: func.func @sink_reshape_below_softmax
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x4xf32>)
// CHECK-NEXT: %[[S:.*]] = kiln_graph.softmax %[[X]] {dim = 2 : i64} : tensor<2x3x4xf32> -> tensor<2x3x4xf32>
// CHECK-NEXT: %[[V:.*]] = kiln_graph.reshape %[[S]] : tensor<2x3x4xf32> -> tensor<6x4xf32>
// CHECK-NEXT: return %[[V]]
func.func @sink_reshape_below_softmax(%x: tensor<2x3x4xf32>) -> tensor<6x4xf32> {
  %0 = kiln_graph.reshape %x : tensor<2x3x4xf32> -> tensor<6x4xf32>
  %1 = kiln_graph.softmax %0 {dim = 1 : i64} : tensor<6x4xf32> -> tensor<6x4xf32>
  return %1 : tensor<6x4xf32>
}

// -----

// CHECK-LABEL: func.func @sink_reshape_below_log_softmax
// CHECK-SAME: (%[[X:.*]]: tensor<24x4xf32>)
// CHECK-NEXT: %[[S:.*]] = kiln_graph.log_softmax %[[X]] {dim = 1 : i64} : tensor<24x4xf32> -> tensor<24x4xf32>
// CHECK-NEXT: %[[V:.*]] = kiln_graph.reshape %[[S]] : tensor<24x4xf32> -> tensor<2x12x4xf32>
// CHECK-NEXT: return %[[V]]
func.func @sink_reshape_below_log_softmax(%x: tensor<24x4xf32>) -> tensor<2x12x4xf32> {
  %0 = kiln_graph.reshape %x : tensor<24x4xf32> -> tensor<2x12x4xf32>
  %1 = kiln_graph.log_softmax %0 {dim = -1 : i64} : tensor<2x12x4xf32> -> tensor<2x12x4xf32>
  return %1 : tensor<2x12x4xf32>
}

// -----

// Softmax along another dim mixes rows of the reshaped view.
// CHECK-LABEL: func.func @no_sink_below_softmax_other_dim
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x4xf32>)
// CHECK-NEXT: %[[R:.*]] = kiln_graph.reshape %[[X]] : tensor<2x3x4xf32> -> tensor<6x4xf32>
// CHECK-NEXT: %[[S:.*]] = kiln_graph.softmax %[[R]] {dim = 0 : i64} : tensor<6x4xf32> -> tensor<6x4xf32>
// CHECK-NEXT: return %[[S]]
func.func @no_sink_below_softmax_other_dim(%x: tensor<2x3x4xf32>) -> tensor<6x4xf32> {
  %0 = kiln_graph.reshape %x : tensor<2x3x4xf32> -> tensor<6x4xf32>
  %1 = kiln_graph.softmax %0 {dim = 0 : i64} : tensor<6x4xf32> -> tensor<6x4xf32>
  return %1 : tensor<6x4xf32>
}

// -----

// The reshape splits the last dim: the rows differ.
// CHECK-LABEL: func.func @no_sink_below_softmax_last_dim_changes
// CHECK-SAME: (%[[X:.*]]: tensor<2x12xf32>)
// CHECK-NEXT: %[[R:.*]] = kiln_graph.reshape %[[X]] : tensor<2x12xf32> -> tensor<6x4xf32>
// CHECK-NEXT: %[[S:.*]] = kiln_graph.softmax %[[R]] {dim = -1 : i64} : tensor<6x4xf32> -> tensor<6x4xf32>
// CHECK-NEXT: return %[[S]]
func.func @no_sink_below_softmax_last_dim_changes(%x: tensor<2x12xf32>) -> tensor<6x4xf32> {
  %0 = kiln_graph.reshape %x : tensor<2x12xf32> -> tensor<6x4xf32>
  %1 = kiln_graph.softmax %0 {dim = -1 : i64} : tensor<6x4xf32> -> tensor<6x4xf32>
  return %1 : tensor<6x4xf32>
}

// -----

// Rank-0 results and broadcasting operands do not sink (and must terminate).
// CHECK-LABEL: func.func @no_sink_to_scalar
// CHECK: kiln_graph.reshape
// CHECK-NEXT: kiln_graph.relu
func.func @no_sink_to_scalar(%x: tensor<1xf32>) -> tensor<f32> {
  %0 = kiln_graph.reshape %x : tensor<1xf32> -> tensor<f32>
  %1 = kiln_graph.relu %0 : tensor<f32> -> tensor<f32>
  return %1 : tensor<f32>
}

// -----

// CHECK-LABEL: func.func @no_sink_broadcast_outer
// CHECK: kiln_graph.add %{{.*}}, %{{.*}} : tensor<4x1xf32>, tensor<1x4xf32> -> tensor<4x4xf32>
func.func @no_sink_broadcast_outer(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4x4xf32> {
  %0 = kiln_graph.reshape %a : tensor<4xf32> -> tensor<4x1xf32>
  %1 = kiln_graph.reshape %b : tensor<4xf32> -> tensor<1x4xf32>
  %2 = kiln_graph.add %0, %1 : tensor<4x1xf32>, tensor<1x4xf32> -> tensor<4x4xf32>
  return %2 : tensor<4x4xf32>
}

// -----

// CHECK-LABEL: func.func @no_sink_scalar_softmax
// CHECK: kiln_graph.softmax
func.func @no_sink_scalar_softmax(%x: tensor<1xf32>) -> tensor<f32> {
  %0 = kiln_graph.reshape %x : tensor<1xf32> -> tensor<f32>
  %1 = kiln_graph.softmax %0 {dim = -1 : i64} : tensor<f32> -> tensor<f32>
  return %1 : tensor<f32>
}
