// RUN: kiln-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(kiln-widen-half-precision))' | FileCheck %s
// RUN: kiln-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(kiln-widen-half-precision{half-matmul-operands=true}))' | FileCheck %s --check-prefix=HALF-OPERANDS

// Arithmetic on half tensors runs in float32: operands widened, the result
// rounded once back to its dtype (as ATen's CPU kernels do). A chain rounds
// after every op, as eager does.
// CHECK-LABEL: func.func @pointwise_chain
// CHECK: %[[A:.*]] = kiln_graph.convert %arg0 : tensor<4x8xbf16> -> tensor<4x8xf32>
// CHECK: %[[B:.*]] = kiln_graph.convert %arg1 : tensor<4x8xbf16> -> tensor<4x8xf32>
// CHECK: %[[SUM:.*]] = kiln_graph.add %[[A]], %[[B]] : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
// CHECK: %[[ROUNDED:.*]] = kiln_graph.convert %[[SUM]] : tensor<4x8xf32> -> tensor<4x8xbf16>
// CHECK: %[[WIDE:.*]] = kiln_graph.convert %[[ROUNDED]] : tensor<4x8xbf16> -> tensor<4x8xf32>
// CHECK: %[[EXP:.*]] = kiln_graph.exp %[[WIDE]] : tensor<4x8xf32> -> tensor<4x8xf32>
// CHECK: %[[OUT:.*]] = kiln_graph.convert %[[EXP]] : tensor<4x8xf32> -> tensor<4x8xbf16>
// CHECK: return %[[OUT]]
func.func @pointwise_chain(%a: tensor<4x8xbf16>, %b: tensor<4x8xbf16>) -> tensor<4x8xbf16> {
  %0 = kiln_graph.add %a, %b : tensor<4x8xbf16>, tensor<4x8xbf16> -> tensor<4x8xbf16>
  %1 = kiln_graph.exp %0 : tensor<4x8xbf16> -> tensor<4x8xbf16>
  return %1 : tensor<4x8xbf16>
}

// -----

// A matmul accumulates in float32 and rounds its result once; so do
// reductions, softmax and layer norm.
// CHECK-LABEL: func.func @accumulating_ops
// CHECK: kiln_graph.matmul %{{.*}}, %{{.*}} : tensor<4x8xf32>, tensor<8x16xf32> -> tensor<4x16xf32>
// CHECK: kiln_graph.convert %{{.*}} : tensor<4x16xf32> -> tensor<4x16xf16>
// CHECK: kiln_graph.softmax %{{.*}} {dim = 1 : i64} : tensor<4x16xf32> -> tensor<4x16xf32>
// CHECK: kiln_graph.sum %{{.*}} {dims = array<i64: 1>} : tensor<4x16xf32> -> tensor<4xf32>
// CHECK: kiln_graph.convert %{{.*}} : tensor<4xf32> -> tensor<4xf16>
func.func @accumulating_ops(%x: tensor<4x8xf16>, %w: tensor<8x16xf16>) -> tensor<4xf16> {
  %0 = kiln_graph.matmul %x, %w : tensor<4x8xf16>, tensor<8x16xf16> -> tensor<4x16xf16>
  %1 = kiln_graph.softmax %0 {dim = 1 : i64} : tensor<4x16xf16> -> tensor<4x16xf16>
  %2 = kiln_graph.sum %1 {dims = array<i64: 1>} : tensor<4x16xf16> -> tensor<4xf16>
  return %2 : tensor<4xf16>
}

// -----

// Ops that only move elements keep the half type; a comparison widens its
// operands and keeps its i1 result; float32 ops are untouched.
// CHECK-LABEL: func.func @movement_and_comparison
// CHECK: %[[T:.*]] = kiln_graph.permute %arg0 {dims = array<i64: 1, 0>} : tensor<4x8xbf16> -> tensor<8x4xbf16>
// CHECK: %[[R:.*]] = kiln_graph.reshape %[[T]] : tensor<8x4xbf16> -> tensor<32xbf16>
// CHECK: %[[W:.*]] = kiln_graph.convert %[[R]] : tensor<32xbf16> -> tensor<32xf32>
// CHECK: kiln_graph.gt %[[W]], %arg1 : tensor<32xf32>, tensor<32xf32> -> tensor<32xi1>
// CHECK: kiln_graph.where %{{.*}}, %[[R]], %[[R]] : tensor<32xi1>, tensor<32xbf16>, tensor<32xbf16> -> tensor<32xbf16>
// CHECK-NOT: kiln_graph.convert
func.func @movement_and_comparison(%x: tensor<4x8xbf16>, %y: tensor<32xf32>) -> tensor<32xbf16> {
  %0 = kiln_graph.permute %x {dims = array<i64: 1, 0>} : tensor<4x8xbf16> -> tensor<8x4xbf16>
  %1 = kiln_graph.reshape %0 : tensor<8x4xbf16> -> tensor<32xbf16>
  %2 = kiln_graph.convert %1 : tensor<32xbf16> -> tensor<32xf32>
  %3 = kiln_graph.gt %2, %y : tensor<32xf32>, tensor<32xf32> -> tensor<32xi1>
  %4 = kiln_graph.where %3, %1, %1 : tensor<32xi1>, tensor<32xbf16>, tensor<32xbf16> -> tensor<32xbf16>
  return %4 : tensor<32xbf16>
}

// -----

// float16 to bfloat16 converts through float32.
// CHECK-LABEL: func.func @half_to_bfloat16
// CHECK: %[[W:.*]] = kiln_graph.convert %arg0 : tensor<3xf16> -> tensor<3xf32>
// CHECK: kiln_graph.convert %[[W]] : tensor<3xf32> -> tensor<3xbf16>
func.func @half_to_bfloat16(%x: tensor<3xf16>) -> tensor<3xbf16> {
  %0 = kiln_graph.convert %x : tensor<3xf16> -> tensor<3xbf16>
  return %0 : tensor<3xbf16>
}

// -----

// One ATen op spelled as several (addmm: a matmul, its bias expanded and
// added) rounds once: ops of the same FX node pass each other float32 (the
// expand of an input moves half elements: they are exact). The next node's
// op reads the rounded value.
// CHECK-LABEL: func.func @one_node_rounds_once
// With half-matmul-operands (GPU targets), the matmul reads the halves and
// its float32 result goes on as before.
// HALF-OPERANDS-LABEL: func.func @one_node_rounds_once
// HALF-OPERANDS: %[[MM:.*]] = kiln_graph.matmul %arg0, %arg1 : tensor<4x8xbf16>, tensor<8x16xbf16> -> tensor<4x16xf32>
// HALF-OPERANDS: kiln_graph.add %[[MM]], %{{.*}} : tensor<4x16xf32>, tensor<4x16xf32> -> tensor<4x16xf32>
// CHECK: %[[MM:.*]] = kiln_graph.matmul %{{.*}}, %{{.*}} : tensor<4x8xf32>, tensor<8x16xf32> -> tensor<4x16xf32>
// CHECK-NOT: kiln_graph.convert %[[MM]]
// CHECK: %[[BIAS:.*]] = kiln_graph.expand %arg2 : tensor<16xbf16> -> tensor<4x16xbf16>
// CHECK: %[[B:.*]] = kiln_graph.convert %[[BIAS]] : tensor<4x16xbf16> -> tensor<4x16xf32>
// CHECK: %[[SUM:.*]] = kiln_graph.add %[[MM]], %[[B]] : tensor<4x16xf32>, tensor<4x16xf32> -> tensor<4x16xf32>
// CHECK: %[[ROUNDED:.*]] = kiln_graph.convert %[[SUM]] : tensor<4x16xf32> -> tensor<4x16xbf16>
// CHECK: %[[WIDE:.*]] = kiln_graph.convert %[[ROUNDED]] : tensor<4x16xbf16> -> tensor<4x16xf32>
// CHECK: kiln_graph.relu %[[WIDE]]
func.func @one_node_rounds_once(%x: tensor<4x8xbf16>, %w: tensor<8x16xbf16>, %b: tensor<16xbf16>) -> tensor<4x16xbf16> {
  %0 = kiln_graph.matmul %x, %w : tensor<4x8xbf16>, tensor<8x16xbf16> -> tensor<4x16xbf16> loc("addmm")
  %1 = kiln_graph.expand %b : tensor<16xbf16> -> tensor<4x16xbf16> loc("addmm")
  %2 = kiln_graph.add %0, %1 : tensor<4x16xbf16>, tensor<4x16xbf16> -> tensor<4x16xbf16> loc("addmm")
  %3 = kiln_graph.relu %2 : tensor<4x16xbf16> -> tensor<4x16xbf16> loc("relu")
  return %3 : tensor<4x16xbf16>
}
