// RUN: kiln-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(kiln-recognize-attention),canonicalize)' | FileCheck %s

// Multi-head attention written out: heads folded into the batch of two
// matmuls, k permuted, the scores divided by sqrt(8) and masked by a [16, 16]
// additive mask. One kiln_graph.attention (scale 1 / sqrt(8), the mask
// reshaped to 4-D) replaces the chain.
// CHECK-LABEL: func.func @multi_head
// CHECK-SAME: (%[[Q:.*]]: tensor<2x4x16x8xf32>, %[[K:.*]]: tensor<2x4x16x8xf32>, %[[V:.*]]: tensor<2x4x16x8xf32>, %[[M:.*]]: tensor<16x16xf32>)
// CHECK: %[[M4:.*]] = kiln_graph.reshape %[[M]] : tensor<16x16xf32> -> tensor<1x1x16x16xf32>
// CHECK: %[[A:.*]], %{{.*}} = kiln_graph.attention %[[Q]], %[[K]], %[[V]] mask %[[M4]] {masked_rows_nan = true, scale = 0.35355339{{[0-9]*}} : f64}
// CHECK-NOT: kiln_graph.softmax
// CHECK-NOT: kiln_graph.matmul
// CHECK: return %[[A]]
func.func @multi_head(%q: tensor<2x4x16x8xf32>, %k: tensor<2x4x16x8xf32>, %v: tensor<2x4x16x8xf32>, %mask: tensor<16x16xf32>) -> tensor<2x4x16x8xf32> {
  %kt = kiln_graph.permute %k {dims = array<i64: 0, 1, 3, 2>} : tensor<2x4x16x8xf32> -> tensor<2x4x8x16xf32>
  %q3 = kiln_graph.reshape %q : tensor<2x4x16x8xf32> -> tensor<8x16x8xf32>
  %kt3 = kiln_graph.reshape %kt : tensor<2x4x8x16xf32> -> tensor<8x8x16xf32>
  %s3 = kiln_graph.matmul %q3, %kt3 : tensor<8x16x8xf32>, tensor<8x8x16xf32> -> tensor<8x16x16xf32>
  %s = kiln_graph.reshape %s3 : tensor<8x16x16xf32> -> tensor<2x4x16x16xf32>
  %c = kiln_graph.constant dense<2.82842708> : tensor<f32>
  %scaled = kiln_graph.div %s, %c : tensor<2x4x16x16xf32>, tensor<f32> -> tensor<2x4x16x16xf32>
  %masked = kiln_graph.add %scaled, %mask : tensor<2x4x16x16xf32>, tensor<16x16xf32> -> tensor<2x4x16x16xf32>
  %p = kiln_graph.softmax %masked {dim = -1 : i64} : tensor<2x4x16x16xf32> -> tensor<2x4x16x16xf32>
  %p3 = kiln_graph.reshape %p : tensor<2x4x16x16xf32> -> tensor<8x16x16xf32>
  %v3 = kiln_graph.reshape %v : tensor<2x4x16x8xf32> -> tensor<8x16x8xf32>
  %o3 = kiln_graph.matmul %p3, %v3 : tensor<8x16x16xf32>, tensor<8x16x8xf32> -> tensor<8x16x8xf32>
  %o = kiln_graph.reshape %o3 : tensor<8x16x8xf32> -> tensor<2x4x16x8xf32>
  return %o : tensor<2x4x16x8xf32>
}

// -----

// One head, 3-D: k read transposed by the matmul, the scores multiplied by
// a constant, no mask; the 3-D operands become one-head 4-D ones.
// CHECK-LABEL: func.func @one_head
// CHECK: kiln_graph.reshape %{{.*}} : tensor<3x10x4xf32> -> tensor<3x1x10x4xf32>
// CHECK: kiln_graph.attention %{{.*}}, %{{.*}}, %{{.*}} {masked_rows_nan = true, scale = 5.000000e-01 : f64} : tensor<3x1x10x4xf32>, tensor<3x1x12x4xf32>, tensor<3x1x12x6xf32> -> tensor<3x1x10x6xf32>, tensor<3x1x10xf32>
// CHECK: kiln_graph.reshape %{{.*}} : tensor<3x1x10x6xf32> -> tensor<3x10x6xf32>
// CHECK-NOT: kiln_graph.softmax
func.func @one_head(%q: tensor<3x10x4xf32>, %k: tensor<3x12x4xf32>, %v: tensor<3x12x6xf32>) -> tensor<3x10x6xf32> {
  %s = kiln_graph.matmul %q, %k {transpose_rhs = true} : tensor<3x10x4xf32>, tensor<3x12x4xf32> -> tensor<3x10x12xf32>
  %c = kiln_graph.constant dense<5.000000e-01> : tensor<f32>
  %scaled = kiln_graph.mul %c, %s : tensor<f32>, tensor<3x10x12xf32> -> tensor<3x10x12xf32>
  %p = kiln_graph.softmax %scaled {dim = 2 : i64} : tensor<3x10x12xf32> -> tensor<3x10x12xf32>
  %o = kiln_graph.matmul %p, %v : tensor<3x10x12xf32>, tensor<3x12x6xf32> -> tensor<3x10x6xf32>
  return %o : tensor<3x10x6xf32>
}

// -----

// Left as ops: the probabilities are returned too (attention would not
// compute them), and a softmax over another dim is no attention.
// CHECK-LABEL: func.func @not_attention
// CHECK-NOT: kiln_graph.attention
// CHECK: kiln_graph.softmax
// CHECK: kiln_graph.softmax
func.func @not_attention(%q: tensor<3x10x4xf32>, %k: tensor<3x12x4xf32>, %v: tensor<3x12x6xf32>, %w: tensor<3x10x10xf32>) -> (tensor<3x10x6xf32>, tensor<3x10x12xf32>, tensor<3x12x10xf32>) {
  %s = kiln_graph.matmul %q, %k {transpose_rhs = true} : tensor<3x10x4xf32>, tensor<3x12x4xf32> -> tensor<3x10x12xf32>
  %p = kiln_graph.softmax %s {dim = 2 : i64} : tensor<3x10x12xf32> -> tensor<3x10x12xf32>
  %o = kiln_graph.matmul %p, %v : tensor<3x10x12xf32>, tensor<3x12x6xf32> -> tensor<3x10x6xf32>
  %s2 = kiln_graph.matmul %w, %q : tensor<3x10x10xf32>, tensor<3x10x4xf32> -> tensor<3x10x4xf32>
  %t = kiln_graph.matmul %k, %s2 {transpose_rhs = true} : tensor<3x12x4xf32>, tensor<3x10x4xf32> -> tensor<3x12x10xf32>
  %p2 = kiln_graph.softmax %t {dim = 1 : i64} : tensor<3x12x10xf32> -> tensor<3x12x10xf32>
  %o2 = kiln_graph.matmul %p2, %w : tensor<3x12x10xf32>, tensor<3x10x10xf32> -> tensor<3x12x10xf32>
  return %o, %p, %o2 : tensor<3x10x6xf32>, tensor<3x10x12xf32>, tensor<3x12x10xf32>
}

// -----

// Heads split and k transposed in one permute ([0, 2, 3, 1] of the
// projections' [B, S, H, E]): k is that permute with its last dims swapped.
// CHECK-LABEL: func.func @split_heads
// CHECK-SAME: (%[[QP:.*]]: tensor<1x4x16x8xf32>, %[[KP:.*]]: tensor<1x16x4x8xf32>, %[[V:.*]]: tensor<1x4x16x8xf32>)
// CHECK: %[[K:.*]] = kiln_graph.permute %[[KP]] {dims = array<i64: 0, 2, 1, 3>} : tensor<1x16x4x8xf32> -> tensor<1x4x16x8xf32>
// CHECK: kiln_graph.attention %[[QP]], %[[K]], %[[V]] {masked_rows_nan = true, scale = 1.250000e-01 : f64}
// CHECK-NOT: kiln_graph.softmax
func.func @split_heads(%q: tensor<1x4x16x8xf32>, %kp: tensor<1x16x4x8xf32>, %v: tensor<1x4x16x8xf32>) -> tensor<4x16x8xf32> {
  %kt = kiln_graph.permute %kp {dims = array<i64: 0, 2, 3, 1>} : tensor<1x16x4x8xf32> -> tensor<1x4x8x16xf32>
  %q3 = kiln_graph.reshape %q : tensor<1x4x16x8xf32> -> tensor<4x16x8xf32>
  %kt3 = kiln_graph.reshape %kt : tensor<1x4x8x16xf32> -> tensor<4x8x16xf32>
  %s = kiln_graph.matmul %q3, %kt3 : tensor<4x16x8xf32>, tensor<4x8x16xf32> -> tensor<4x16x16xf32>
  %c = kiln_graph.constant dense<8.0> : tensor<f32>
  %scaled = kiln_graph.div %s, %c : tensor<4x16x16xf32>, tensor<f32> -> tensor<4x16x16xf32>
  %p = kiln_graph.softmax %scaled {dim = 2 : i64} : tensor<4x16x16xf32> -> tensor<4x16x16xf32>
  %v3 = kiln_graph.reshape %v : tensor<1x4x16x8xf32> -> tensor<4x16x8xf32>
  %o = kiln_graph.matmul %p, %v3 : tensor<4x16x16xf32>, tensor<4x16x8xf32> -> tensor<4x16x8xf32>
  return %o : tensor<4x16x8xf32>
}
