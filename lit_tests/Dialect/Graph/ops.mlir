// RUN: kiln-opt %s -split-input-file | kiln-opt -split-input-file | FileCheck %s
// RUN: kiln-opt %s -split-input-file -mlir-print-op-generic | kiln-opt -split-input-file | FileCheck %s

// CHECK-LABEL: func.func @constant
func.func @constant() -> (tensor<2x3xf32>, tensor<i64>, tensor<2xi1>) {
  // CHECK: kiln_graph.constant dense<1.500000e+00> : tensor<2x3xf32>
  %0 = kiln_graph.constant dense<1.5> : tensor<2x3xf32>
  // CHECK: kiln_graph.constant dense<7> : tensor<i64>
  %1 = kiln_graph.constant dense<7> : tensor<i64>
  // CHECK: kiln_graph.constant dense<[true, false]> : tensor<2xi1>
  %2 = kiln_graph.constant dense<[true, false]> : tensor<2xi1>
  return %0, %1, %2 : tensor<2x3xf32>, tensor<i64>, tensor<2xi1>
}

// -----

// CHECK-LABEL: func.func @arithmetic
// CHECK-SAME: (%[[A:.*]]: tensor<4x8xf32>, %[[B:.*]]: tensor<8xf32>, %[[S:.*]]: tensor<f32>)
func.func @arithmetic(%a: tensor<4x8xf32>, %b: tensor<8xf32>, %s: tensor<f32>) -> tensor<4x8xf32> {
  // CHECK: %[[ADD:.*]] = kiln_graph.add %[[A]], %[[B]] : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
  %0 = kiln_graph.add %a, %b : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
  // CHECK: %[[SUB:.*]] = kiln_graph.sub %[[ADD]], %[[S]] : tensor<4x8xf32>, tensor<f32> -> tensor<4x8xf32>
  %1 = kiln_graph.sub %0, %s : tensor<4x8xf32>, tensor<f32> -> tensor<4x8xf32>
  // CHECK: %[[MUL:.*]] = kiln_graph.mul %[[SUB]], %[[A]] : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %2 = kiln_graph.mul %1, %a : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  // CHECK: %[[DIV:.*]] = kiln_graph.div %[[MUL]], %[[B]] : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
  %3 = kiln_graph.div %2, %b : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
  // CHECK: %[[POW:.*]] = kiln_graph.pow %[[DIV]], %[[S]] : tensor<4x8xf32>, tensor<f32> -> tensor<4x8xf32>
  %4 = kiln_graph.pow %3, %s : tensor<4x8xf32>, tensor<f32> -> tensor<4x8xf32>
  // CHECK: %[[MAX:.*]] = kiln_graph.maximum %[[POW]], %[[A]] : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %5 = kiln_graph.maximum %4, %a : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  // CHECK: return %[[MAX]]
  return %5 : tensor<4x8xf32>
}

// -----

// CHECK-LABEL: func.func @integer_arithmetic
func.func @integer_arithmetic(%a: tensor<3xi64>, %b: tensor<3xi32>) -> (tensor<3xi64>, tensor<3xi32>) {
  // CHECK: kiln_graph.add %{{.*}}, %{{.*}} : tensor<3xi64>, tensor<3xi64> -> tensor<3xi64>
  %0 = kiln_graph.add %a, %a : tensor<3xi64>, tensor<3xi64> -> tensor<3xi64>
  // CHECK: kiln_graph.mul %{{.*}}, %{{.*}} : tensor<3xi32>, tensor<3xi32> -> tensor<3xi32>
  %1 = kiln_graph.mul %b, %b : tensor<3xi32>, tensor<3xi32> -> tensor<3xi32>
  return %0, %1 : tensor<3xi64>, tensor<3xi32>
}

// -----

// CHECK-LABEL: func.func @comparisons
// CHECK-SAME: (%[[A:.*]]: tensor<4x8xf32>, %[[B:.*]]: tensor<8xf32>)
func.func @comparisons(%a: tensor<4x8xf32>, %b: tensor<8xf32>)
    -> (tensor<4x8xi1>, tensor<4x8xi1>, tensor<4x8xi1>, tensor<4x8xi1>, tensor<4x8xi1>, tensor<4x8xi1>) {
  // CHECK: kiln_graph.eq %[[A]], %[[B]] : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xi1>
  %0 = kiln_graph.eq %a, %b : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xi1>
  // CHECK: kiln_graph.ne %[[A]], %[[B]] : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xi1>
  %1 = kiln_graph.ne %a, %b : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xi1>
  // CHECK: kiln_graph.lt %[[A]], %[[B]] : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xi1>
  %2 = kiln_graph.lt %a, %b : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xi1>
  // CHECK: kiln_graph.le %[[A]], %[[B]] : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xi1>
  %3 = kiln_graph.le %a, %b : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xi1>
  // CHECK: kiln_graph.gt %[[A]], %[[B]] : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xi1>
  %4 = kiln_graph.gt %a, %b : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xi1>
  // CHECK: kiln_graph.ge %[[A]], %[[B]] : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xi1>
  %5 = kiln_graph.ge %a, %b : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xi1>
  return %0, %1, %2, %3, %4, %5 : tensor<4x8xi1>, tensor<4x8xi1>, tensor<4x8xi1>, tensor<4x8xi1>, tensor<4x8xi1>, tensor<4x8xi1>
}

// -----

// CHECK-LABEL: func.func @where
// CHECK-SAME: (%[[C:.*]]: tensor<4x1xi1>, %[[T:.*]]: tensor<8xf32>, %[[F:.*]]: tensor<f32>)
func.func @where(%c: tensor<4x1xi1>, %t: tensor<8xf32>, %f: tensor<f32>) -> tensor<4x8xf32> {
  // CHECK: kiln_graph.where %[[C]], %[[T]], %[[F]] : tensor<4x1xi1>, tensor<8xf32>, tensor<f32> -> tensor<4x8xf32>
  %0 = kiln_graph.where %c, %t, %f : tensor<4x1xi1>, tensor<8xf32>, tensor<f32> -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

// CHECK-LABEL: func.func @unary
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xf32>)
func.func @unary(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // CHECK: %[[NEG:.*]] = kiln_graph.neg %[[X]] : tensor<2x3xf32> -> tensor<2x3xf32>
  %0 = kiln_graph.neg %x : tensor<2x3xf32> -> tensor<2x3xf32>
  // CHECK: %[[RELU:.*]] = kiln_graph.relu %[[NEG]] : tensor<2x3xf32> -> tensor<2x3xf32>
  %1 = kiln_graph.relu %0 : tensor<2x3xf32> -> tensor<2x3xf32>
  // CHECK: %[[TANH:.*]] = kiln_graph.tanh %[[RELU]] : tensor<2x3xf32> -> tensor<2x3xf32>
  %2 = kiln_graph.tanh %1 : tensor<2x3xf32> -> tensor<2x3xf32>
  // CHECK: %[[EXP:.*]] = kiln_graph.exp %[[TANH]] : tensor<2x3xf32> -> tensor<2x3xf32>
  %3 = kiln_graph.exp %2 : tensor<2x3xf32> -> tensor<2x3xf32>
  // CHECK: %[[LOG:.*]] = kiln_graph.log %[[EXP]] : tensor<2x3xf32> -> tensor<2x3xf32>
  %4 = kiln_graph.log %3 : tensor<2x3xf32> -> tensor<2x3xf32>
  // CHECK: %[[SQRT:.*]] = kiln_graph.sqrt %[[LOG]] : tensor<2x3xf32> -> tensor<2x3xf32>
  %5 = kiln_graph.sqrt %4 : tensor<2x3xf32> -> tensor<2x3xf32>
  // CHECK: %[[RSQRT:.*]] = kiln_graph.rsqrt %[[SQRT]] : tensor<2x3xf32> -> tensor<2x3xf32>
  %6 = kiln_graph.rsqrt %5 : tensor<2x3xf32> -> tensor<2x3xf32>
  // CHECK: %[[SIG:.*]] = kiln_graph.sigmoid %[[RSQRT]] : tensor<2x3xf32> -> tensor<2x3xf32>
  %7 = kiln_graph.sigmoid %6 : tensor<2x3xf32> -> tensor<2x3xf32>
  // CHECK: %[[CLONE:.*]] = kiln_graph.clone %[[SIG]] : tensor<2x3xf32> -> tensor<2x3xf32>
  %8 = kiln_graph.clone %7 : tensor<2x3xf32> -> tensor<2x3xf32>
  // CHECK: return %[[CLONE]]
  return %8 : tensor<2x3xf32>
}

// -----

// CHECK-LABEL: func.func @convert
func.func @convert(%x: tensor<5xi64>) -> (tensor<5xf32>, tensor<5xi1>, tensor<5xf64>) {
  // CHECK: %[[F:.*]] = kiln_graph.convert %{{.*}} : tensor<5xi64> -> tensor<5xf32>
  %0 = kiln_graph.convert %x : tensor<5xi64> -> tensor<5xf32>
  // CHECK: kiln_graph.convert %[[F]] : tensor<5xf32> -> tensor<5xi1>
  %1 = kiln_graph.convert %0 : tensor<5xf32> -> tensor<5xi1>
  // CHECK: kiln_graph.convert %[[F]] : tensor<5xf32> -> tensor<5xf64>
  %2 = kiln_graph.convert %0 : tensor<5xf32> -> tensor<5xf64>
  return %0, %1, %2 : tensor<5xf32>, tensor<5xi1>, tensor<5xf64>
}

// -----

// CHECK-LABEL: func.func @gelu
func.func @gelu(%x: tensor<16xf32>) -> (tensor<16xf32>, tensor<16xf32>) {
  // CHECK: kiln_graph.gelu %{{.*}} : tensor<16xf32> -> tensor<16xf32>
  %0 = kiln_graph.gelu %x : tensor<16xf32> -> tensor<16xf32>
  // CHECK: kiln_graph.gelu %{{.*}} {approximate = #kiln_graph.gelu_approximation<tanh>} : tensor<16xf32> -> tensor<16xf32>
  %1 = kiln_graph.gelu %x {approximate = #kiln_graph.gelu_approximation<tanh>} : tensor<16xf32> -> tensor<16xf32>
  return %0, %1 : tensor<16xf32>, tensor<16xf32>
}

// -----

// CHECK-LABEL: func.func @reductions
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x4xf32>)
func.func @reductions(%x: tensor<2x3x4xf32>) -> (tensor<2x4xf32>, tensor<2x1x1xf32>, tensor<f32>) {
  // CHECK: kiln_graph.sum %[[X]] {dims = array<i64: 1>} : tensor<2x3x4xf32> -> tensor<2x4xf32>
  %0 = kiln_graph.sum %x {dims = array<i64: 1>} : tensor<2x3x4xf32> -> tensor<2x4xf32>
  // CHECK: kiln_graph.mean %[[X]] {dims = array<i64: -1, 1>, keepdim = true} : tensor<2x3x4xf32> -> tensor<2x1x1xf32>
  %1 = kiln_graph.mean %x {dims = array<i64: -1, 1>, keepdim = true} : tensor<2x3x4xf32> -> tensor<2x1x1xf32>
  // CHECK: kiln_graph.amax %[[X]] {dims = array<i64>} : tensor<2x3x4xf32> -> tensor<f32>
  %2 = kiln_graph.amax %x {dims = array<i64>} : tensor<2x3x4xf32> -> tensor<f32>
  return %0, %1, %2 : tensor<2x4xf32>, tensor<2x1x1xf32>, tensor<f32>
}

// -----

// CHECK-LABEL: func.func @softmax
func.func @softmax(%x: tensor<2x8xf32>) -> (tensor<2x8xf32>, tensor<2x8xf32>) {
  // CHECK: kiln_graph.softmax %{{.*}} {dim = -1 : i64} : tensor<2x8xf32> -> tensor<2x8xf32>
  %0 = kiln_graph.softmax %x {dim = -1 : i64} : tensor<2x8xf32> -> tensor<2x8xf32>
  // CHECK: kiln_graph.log_softmax %{{.*}} {dim = 0 : i64} : tensor<2x8xf32> -> tensor<2x8xf32>
  %1 = kiln_graph.log_softmax %x {dim = 0 : i64} : tensor<2x8xf32> -> tensor<2x8xf32>
  return %0, %1 : tensor<2x8xf32>, tensor<2x8xf32>
}

// -----

// CHECK-LABEL: func.func @layer_norm
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x4xf32>, %[[W:.*]]: tensor<4xf32>, %[[B:.*]]: tensor<4xf32>)
func.func @layer_norm(%x: tensor<2x3x4xf32>, %w: tensor<4xf32>, %b: tensor<4xf32>)
    -> (tensor<2x3x4xf32>, tensor<2x3x1xf32>, tensor<2x3x1xf32>) {
  // CHECK: %[[Y:.*]], %[[MEAN:.*]], %[[RSTD:.*]] = kiln_graph.layer_norm %[[X]], %[[W]], %[[B]] {eps = 1.000000e-05 : f64, normalized_rank = 1 : i64}
  // CHECK-SAME: : tensor<2x3x4xf32>, tensor<4xf32>, tensor<4xf32> -> tensor<2x3x4xf32>, tensor<2x3x1xf32>, tensor<2x3x1xf32>
  %y:3 = kiln_graph.layer_norm %x, %w, %b {normalized_rank = 1 : i64, eps = 1.0e-5 : f64}
      : tensor<2x3x4xf32>, tensor<4xf32>, tensor<4xf32> -> tensor<2x3x4xf32>, tensor<2x3x1xf32>, tensor<2x3x1xf32>
  // CHECK: return %[[Y]], %[[MEAN]], %[[RSTD]]
  return %y#0, %y#1, %y#2 : tensor<2x3x4xf32>, tensor<2x3x1xf32>, tensor<2x3x1xf32>
}

// -----

// CHECK-LABEL: func.func @matmul
// CHECK-SAME: (%[[A:.*]]: tensor<4x8xf32>, %[[B:.*]]: tensor<8x16xf32>)
func.func @matmul(%a: tensor<4x8xf32>, %b: tensor<8x16xf32>) -> tensor<4x16xf32> {
  // CHECK: kiln_graph.matmul %[[A]], %[[B]] : tensor<4x8xf32>, tensor<8x16xf32> -> tensor<4x16xf32>
  %0 = kiln_graph.matmul %a, %b : tensor<4x8xf32>, tensor<8x16xf32> -> tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}

// Half operands may give a float32 result (accumulated in float32).
// CHECK-LABEL: func.func @matmul_half_operands
func.func @matmul_half_operands(%a: tensor<4x8xbf16>, %b: tensor<8x16xbf16>) -> tensor<4x16xf32> {
  // CHECK: kiln_graph.matmul %{{.*}}, %{{.*}} : tensor<4x8xbf16>, tensor<8x16xbf16> -> tensor<4x16xf32>
  %0 = kiln_graph.matmul %a, %b : tensor<4x8xbf16>, tensor<8x16xbf16> -> tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}

// -----

// CHECK-LABEL: func.func @matmul_transpose_rhs
func.func @matmul_transpose_rhs(%a: tensor<4x8xf32>, %w: tensor<16x8xf32>) -> tensor<4x16xf32> {
  // CHECK: kiln_graph.matmul %{{.*}}, %{{.*}} {transpose_rhs = true} : tensor<4x8xf32>, tensor<16x8xf32> -> tensor<4x16xf32>
  %0 = kiln_graph.matmul %a, %w {transpose_rhs = true} : tensor<4x8xf32>, tensor<16x8xf32> -> tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}

// -----

// CHECK-LABEL: func.func @batch_matmul
func.func @batch_matmul(%a: tensor<2x4x8xf32>, %b: tensor<2x8x16xf32>) -> tensor<2x4x16xf32> {
  // CHECK: kiln_graph.matmul %{{.*}}, %{{.*}} : tensor<2x4x8xf32>, tensor<2x8x16xf32> -> tensor<2x4x16xf32>
  %0 = kiln_graph.matmul %a, %b : tensor<2x4x8xf32>, tensor<2x8x16xf32> -> tensor<2x4x16xf32>
  return %0 : tensor<2x4x16xf32>
}

// -----

// CHECK-LABEL: func.func @shape_ops
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x4xf32>)
func.func @shape_ops(%x: tensor<2x3x4xf32>) -> (tensor<6x4xf32>, tensor<4x2x3xf32>, tensor<5x2x3x4xf32>, tensor<2x3x2xf32>) {
  // CHECK: kiln_graph.reshape %[[X]] : tensor<2x3x4xf32> -> tensor<6x4xf32>
  %0 = kiln_graph.reshape %x : tensor<2x3x4xf32> -> tensor<6x4xf32>
  // CHECK: kiln_graph.permute %[[X]] {dims = array<i64: 2, 0, 1>} : tensor<2x3x4xf32> -> tensor<4x2x3xf32>
  %1 = kiln_graph.permute %x {dims = array<i64: 2, 0, 1>} : tensor<2x3x4xf32> -> tensor<4x2x3xf32>
  // CHECK: kiln_graph.expand %[[X]] : tensor<2x3x4xf32> -> tensor<5x2x3x4xf32>
  %2 = kiln_graph.expand %x : tensor<2x3x4xf32> -> tensor<5x2x3x4xf32>
  // CHECK: kiln_graph.slice %[[X]] {dim = 2 : i64, start = 1 : i64, step = 2 : i64} : tensor<2x3x4xf32> -> tensor<2x3x2xf32>
  %3 = kiln_graph.slice %x {dim = 2 : i64, start = 1 : i64, step = 2 : i64} : tensor<2x3x4xf32> -> tensor<2x3x2xf32>
  return %0, %1, %2, %3 : tensor<6x4xf32>, tensor<4x2x3xf32>, tensor<5x2x3x4xf32>, tensor<2x3x2xf32>
}

// -----

// CHECK-LABEL: func.func @concat
// CHECK-SAME: (%[[A:.*]]: tensor<2x3xf32>, %[[B:.*]]: tensor<2x5xf32>)
func.func @concat(%a: tensor<2x3xf32>, %b: tensor<2x5xf32>) -> tensor<2x8xf32> {
  // CHECK: kiln_graph.concat %[[A]], %[[B]] {dim = 1 : i64} : tensor<2x3xf32>, tensor<2x5xf32> -> tensor<2x8xf32>
  %0 = kiln_graph.concat %a, %b {dim = 1 : i64} : tensor<2x3xf32>, tensor<2x5xf32> -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

// -----

// CHECK-LABEL: func.func @embedding
// CHECK-SAME: (%[[W:.*]]: tensor<10x4xf32>, %[[I:.*]]: tensor<2x3xi64>)
func.func @embedding(%w: tensor<10x4xf32>, %i: tensor<2x3xi64>) -> tensor<2x3x4xf32> {
  // CHECK: kiln_graph.embedding %[[W]], %[[I]] : tensor<10x4xf32>, tensor<2x3xi64> -> tensor<2x3x4xf32>
  %0 = kiln_graph.embedding %w, %i : tensor<10x4xf32>, tensor<2x3xi64> -> tensor<2x3x4xf32>
  return %0 : tensor<2x3x4xf32>
}

// -----

// CHECK-LABEL: func.func @math_and_rounding
func.func @math_and_rounding(%a: tensor<4xf32>, %i: tensor<4xi64>) -> (tensor<4xf32>, tensor<4xi64>) {
  // CHECK: kiln_graph.abs %{{.*}} : tensor<4xi64> -> tensor<4xi64>
  %0 = kiln_graph.abs %i : tensor<4xi64> -> tensor<4xi64>
  // CHECK: kiln_graph.sin
  %1 = kiln_graph.sin %a : tensor<4xf32> -> tensor<4xf32>
  // CHECK: kiln_graph.cos
  %2 = kiln_graph.cos %1 : tensor<4xf32> -> tensor<4xf32>
  // CHECK: kiln_graph.floor
  %3 = kiln_graph.floor %2 : tensor<4xf32> -> tensor<4xf32>
  // CHECK: kiln_graph.ceil
  %4 = kiln_graph.ceil %3 : tensor<4xf32> -> tensor<4xf32>
  // CHECK: kiln_graph.trunc
  %5 = kiln_graph.trunc %4 : tensor<4xf32> -> tensor<4xf32>
  // CHECK: kiln_graph.round
  %6 = kiln_graph.round %5 : tensor<4xf32> -> tensor<4xf32>
  // CHECK: kiln_graph.minimum %{{.*}}, %{{.*}} : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %7 = kiln_graph.minimum %6, %a : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  // CHECK: kiln_graph.sign
  %8 = kiln_graph.sign %7 : tensor<4xf32> -> tensor<4xf32>
  // CHECK: kiln_graph.frac
  %9 = kiln_graph.frac %8 : tensor<4xf32> -> tensor<4xf32>
  // CHECK: kiln_graph.exp2
  %10 = kiln_graph.exp2 %9 : tensor<4xf32> -> tensor<4xf32>
  // CHECK: kiln_graph.expm1
  %11 = kiln_graph.expm1 %10 : tensor<4xf32> -> tensor<4xf32>
  // CHECK: kiln_graph.log1p
  %12 = kiln_graph.log1p %11 : tensor<4xf32> -> tensor<4xf32>
  // CHECK: kiln_graph.log2
  %13 = kiln_graph.log2 %12 : tensor<4xf32> -> tensor<4xf32>
  // CHECK: kiln_graph.log10
  %14 = kiln_graph.log10 %13 : tensor<4xf32> -> tensor<4xf32>
  // CHECK: kiln_graph.erf
  %15 = kiln_graph.erf %14 : tensor<4xf32> -> tensor<4xf32>
  // CHECK: kiln_graph.tan
  %16 = kiln_graph.tan %15 : tensor<4xf32> -> tensor<4xf32>
  // CHECK: kiln_graph.atan
  %17 = kiln_graph.atan %16 : tensor<4xf32> -> tensor<4xf32>
  // CHECK: kiln_graph.sinh
  %18 = kiln_graph.sinh %17 : tensor<4xf32> -> tensor<4xf32>
  // CHECK: kiln_graph.cosh
  %19 = kiln_graph.cosh %18 : tensor<4xf32> -> tensor<4xf32>
  return %19, %0 : tensor<4xf32>, tensor<4xi64>
}

// -----

// CHECK-LABEL: func.func @indexing_and_checks
func.func @indexing_and_checks(%x: tensor<4x5x6xf32>, %i: tensor<2x3xi64>, %b: tensor<4xi1>)
    -> (tensor<4x2x3x6xf32>, tensor<5x7x6xf32>, tensor<5xf32>, tensor<3xi64>, tensor<4xi1>, tensor<i1>) {
  // CHECK: kiln_graph.index %{{.*}}[%{{.*}}] {indexed_dims = array<i64: 1>} : tensor<4x5x6xf32>, tensor<2x3xi64> -> tensor<4x2x3x6xf32>
  %0 = kiln_graph.index %x[%i] {indexed_dims = array<i64: 1>} : tensor<4x5x6xf32>, tensor<2x3xi64> -> tensor<4x2x3x6xf32>
  // CHECK: kiln_graph.pad %{{.*}} {high = array<i64: 0, 1, 0>, low = array<i64: 1, 1, 0>, value = 2.500000e+00 : f64}
  %1 = kiln_graph.pad %x {low = array<i64: 1, 1, 0>, high = array<i64: 0, 1, 0>, value = 2.5 : f64} : tensor<4x5x6xf32> -> tensor<5x7x6xf32>
  // CHECK: kiln_graph.iota {start = 5.000000e-01 : f64, step = 2.500000e-01 : f64} : tensor<5xf32>
  %2 = kiln_graph.iota {start = 0.5 : f64, step = 0.25 : f64} : tensor<5xf32>
  // CHECK: kiln_graph.iota {start = 2 : i64, step = 3 : i64} : tensor<3xi64>
  %3 = kiln_graph.iota {start = 2 : i64, step = 3 : i64} : tensor<3xi64>
  // CHECK: kiln_graph.bitwise_and
  %4 = kiln_graph.bitwise_and %b, %b : tensor<4xi1>, tensor<4xi1> -> tensor<4xi1>
  // CHECK: kiln_graph.bitwise_not
  %5 = kiln_graph.bitwise_not %4 : tensor<4xi1> -> tensor<4xi1>
  // CHECK: kiln_graph.all %{{.*}} {dims = array<i64>} : tensor<4xi1> -> tensor<i1>
  %6 = kiln_graph.all %5 {dims = array<i64>} : tensor<4xi1> -> tensor<i1>
  // CHECK: kiln_graph.any
  %7 = kiln_graph.any %5 {dims = array<i64: 0>} : tensor<4xi1> -> tensor<i1>
  // CHECK: kiln_graph.amin
  %8 = kiln_graph.amin %x {dims = array<i64: 0, 2>} : tensor<4x5x6xf32> -> tensor<5xf32>
  // CHECK: kiln_graph.prod
  %9 = kiln_graph.prod %8 {dims = array<i64: 0>} : tensor<5xf32> -> tensor<f32>
  // CHECK: kiln_graph.assert %{{.*}} {kind = #kiln_graph.check_kind<index>, message = "bad index"} : tensor<i1>
  kiln_graph.assert %6 {kind = #kiln_graph.check_kind<index>, message = "bad index"} : tensor<i1>
  return %0, %1, %2, %3, %5, %7 : tensor<4x2x3x6xf32>, tensor<5x7x6xf32>, tensor<5xf32>, tensor<3xi64>, tensor<4xi1>, tensor<i1>
}

// -----

// CHECK-LABEL: func.func @gather_and_cumsum
func.func @gather_and_cumsum(%x: tensor<4x5xf32>, %i: tensor<4x2xi64>) -> (tensor<4x2xf32>, tensor<4x5xf32>) {
  // CHECK: kiln_graph.gather %{{.*}}[%{{.*}}] {dim = 1 : i64} : tensor<4x5xf32>, tensor<4x2xi64> -> tensor<4x2xf32>
  %0 = kiln_graph.gather %x[%i] {dim = 1 : i64} : tensor<4x5xf32>, tensor<4x2xi64> -> tensor<4x2xf32>
  // CHECK: kiln_graph.cumsum %{{.*}} {dim = 1 : i64} : tensor<4x5xf32> -> tensor<4x5xf32>
  %1 = kiln_graph.cumsum %x {dim = 1 : i64} : tensor<4x5xf32> -> tensor<4x5xf32>
  return %0, %1 : tensor<4x2xf32>, tensor<4x5xf32>
}

// -----

// CHECK-LABEL: func.func @arg_reduce_and_division
func.func @arg_reduce_and_division(%x: tensor<4x5xf32>, %i: tensor<4xi64>) -> (tensor<4xi64>, tensor<1x5xi64>, tensor<4xi64>, tensor<4x5xf32>) {
  // CHECK: kiln_graph.argmax %{{.*}} {dim = 1 : i64} : tensor<4x5xf32> -> tensor<4xi64>
  %0 = kiln_graph.argmax %x {dim = 1 : i64} : tensor<4x5xf32> -> tensor<4xi64>
  // CHECK: kiln_graph.argmin %{{.*}} {dim = 0 : i64, keepdim = true} : tensor<4x5xf32> -> tensor<1x5xi64>
  %1 = kiln_graph.argmin %x {dim = 0 : i64, keepdim = true} : tensor<4x5xf32> -> tensor<1x5xi64>
  // CHECK: kiln_graph.div_round %{{.*}}, %{{.*}} {rounding_mode = #kiln_graph.rounding_mode<floor>} : tensor<4xi64>, tensor<4xi64> -> tensor<4xi64>
  %2 = kiln_graph.div_round %i, %i {rounding_mode = #kiln_graph.rounding_mode<floor>} : tensor<4xi64>, tensor<4xi64> -> tensor<4xi64>
  // CHECK: kiln_graph.atan2 %{{.*}}, %{{.*}} : tensor<4x5xf32>, tensor<4x5xf32> -> tensor<4x5xf32>
  %3 = kiln_graph.atan2 %x, %x : tensor<4x5xf32>, tensor<4x5xf32> -> tensor<4x5xf32>
  return %0, %1, %2, %3 : tensor<4xi64>, tensor<1x5xi64>, tensor<4xi64>, tensor<4x5xf32>
}

// -----

// CHECK-LABEL: func.func @scatter
func.func @scatter(%x: tensor<4x5xf32>, %i: tensor<2x5xi64>, %s: tensor<2x5xf32>) -> (tensor<4x5xf32>, tensor<4x5xf32>) {
  // CHECK: kiln_graph.scatter %{{.*}}[%{{.*}}], %{{.*}} {dim = 0 : i64} : tensor<4x5xf32>, tensor<2x5xi64>, tensor<2x5xf32> -> tensor<4x5xf32>
  %0 = kiln_graph.scatter %x[%i], %s {dim = 0 : i64} : tensor<4x5xf32>, tensor<2x5xi64>, tensor<2x5xf32> -> tensor<4x5xf32>
  // CHECK: kiln_graph.scatter %{{.*}}[%{{.*}}], %{{.*}} {dim = 0 : i64, include_self = false, reduce = #kiln_graph.scatter_reduction<amax>}
  %1 = kiln_graph.scatter %x[%i], %s {dim = 0 : i64, reduce = #kiln_graph.scatter_reduction<amax>, include_self = false} : tensor<4x5xf32>, tensor<2x5xi64>, tensor<2x5xf32> -> tensor<4x5xf32>
  return %0, %1 : tensor<4x5xf32>, tensor<4x5xf32>
}

// -----

// CHECK-LABEL: func.func @attention
// CHECK: kiln_graph.attention %{{.*}}, %{{.*}}, %{{.*}} {scale = 2.500000e-01 : f64} : tensor<2x4x8x16xf32>, tensor<2x2x6x16xf32>, tensor<2x2x6x8xf32> -> tensor<2x4x8x8xf32>, tensor<2x4x8xf32>
// CHECK: kiln_graph.attention %{{.*}}, %{{.*}}, %{{.*}} mask %{{.*}} {is_causal = true, scale = 1.000000e+00 : f64} : {{.*}}, tensor<2x1x1x6xf32> -> tensor<2x4x8x8xf32>, tensor<2x4x8xf32>
func.func @attention(%q: tensor<2x4x8x16xf32>, %k: tensor<2x2x6x16xf32>, %v: tensor<2x2x6x8xf32>,
                     %m: tensor<2x1x1x6xf32>) -> (tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32>) {
  %0:2 = kiln_graph.attention %q, %k, %v {scale = 0.25 : f64} : tensor<2x4x8x16xf32>, tensor<2x2x6x16xf32>, tensor<2x2x6x8xf32> -> tensor<2x4x8x8xf32>, tensor<2x4x8xf32>
  %1:2 = kiln_graph.attention %q, %k, %v mask %m {scale = 1.0 : f64, is_causal = true} : tensor<2x4x8x16xf32>, tensor<2x2x6x16xf32>, tensor<2x2x6x8xf32>, tensor<2x1x1x6xf32> -> tensor<2x4x8x8xf32>, tensor<2x4x8xf32>
  return %0#0, %1#0 : tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32>
}

// -----

// Half-precision attention keeps its logsumexp in float32, as ATen's does.
// CHECK-LABEL: func.func @attention_bfloat16
// CHECK: kiln_graph.attention {{.*}} -> tensor<1x2x4x8xbf16>, tensor<1x2x4xf32>
func.func @attention_bfloat16(%q: tensor<1x2x4x8xbf16>) -> tensor<1x2x4x8xbf16> {
  %0:2 = kiln_graph.attention %q, %q, %q {scale = 1.0 : f64} : tensor<1x2x4x8xbf16>, tensor<1x2x4x8xbf16>, tensor<1x2x4x8xbf16> -> tensor<1x2x4x8xbf16>, tensor<1x2x4xf32>
  return %0#0 : tensor<1x2x4x8xbf16>
}

// -----

// CHECK-LABEL: func.func @conv2d
// CHECK: kiln_graph.conv2d %{{.*}}, %{{.*}} bias %{{.*}} {dilations = array<i64: 1, 2>, strides = array<i64: 2, 1>} : tensor<1x3x9x12xf32>, tensor<8x3x3x3xf32>, tensor<8xf32> -> tensor<1x8x4x8xf32>
func.func @conv2d(%x: tensor<1x3x9x12xf32>, %w: tensor<8x3x3x3xf32>, %b: tensor<8xf32>) -> tensor<1x8x4x8xf32> {
  %0 = kiln_graph.conv2d %x, %w bias %b {strides = array<i64: 2, 1>, dilations = array<i64: 1, 2>} : tensor<1x3x9x12xf32>, tensor<8x3x3x3xf32>, tensor<8xf32> -> tensor<1x8x4x8xf32>
  return %0 : tensor<1x8x4x8xf32>
}

// -----

// CHECK-LABEL: func.func @sort
func.func @sort(%x: tensor<4x5xf32>) -> (tensor<4x5xf32>, tensor<4x5xi64>) {
  // CHECK: kiln_graph.sort %{{.*}} {descending = true, dim = 1 : i64} : tensor<4x5xf32> -> tensor<4x5xf32>, tensor<4x5xi64>
  %0:2 = kiln_graph.sort %x {dim = 1 : i64, descending = true} : tensor<4x5xf32> -> tensor<4x5xf32>, tensor<4x5xi64>
  // CHECK: kiln_graph.sort %{{.*}} {dim = 0 : i64, k = 2 : i64} : tensor<4x5xf32> -> tensor<2x5xf32>, tensor<2x5xi64>
  %1:2 = kiln_graph.sort %x {dim = 0 : i64, k = 2 : i64} : tensor<4x5xf32> -> tensor<2x5xf32>, tensor<2x5xi64>
  return %0#0, %0#1 : tensor<4x5xf32>, tensor<4x5xi64>
}

// -----

// CHECK-LABEL: func.func @collectives
func.func @collectives(%x: tensor<4x8xf32>, %s: tensor<?x8xf32, affine_map<()[s0] -> (s0 * 2)>>)
    -> (tensor<4x8xf32>, tensor<8x8xf32>, tensor<2x8xf32>, tensor<?x8xf32, affine_map<()[s0] -> (s0)>>) {
  // CHECK: kiln_graph.collective %{{.*}} {group = "0", group_size = 0 : i64, kind = #kiln_graph.collective<all_reduce>, reduce_op = #kiln_graph.reduce_op<avg>} : tensor<4x8xf32> -> tensor<4x8xf32>
  %0 = kiln_graph.collective %x {kind = #kiln_graph.collective<all_reduce>, reduce_op = #kiln_graph.reduce_op<avg>, group = "0", group_size = 0} : tensor<4x8xf32> -> tensor<4x8xf32>
  // CHECK: kiln_graph.collective %{{.*}} {group = "0", group_size = 2 : i64, kind = #kiln_graph.collective<all_gather>} : tensor<4x8xf32> -> tensor<8x8xf32>
  %1 = kiln_graph.collective %x {kind = #kiln_graph.collective<all_gather>, group = "0", group_size = 2} : tensor<4x8xf32> -> tensor<8x8xf32>
  // CHECK: kiln_graph.collective %{{.*}} {group = "0", group_size = 2 : i64, kind = #kiln_graph.collective<reduce_scatter>} : tensor<4x8xf32> -> tensor<2x8xf32>
  %2 = kiln_graph.collective %x {kind = #kiln_graph.collective<reduce_scatter>, group = "0", group_size = 2} : tensor<4x8xf32> -> tensor<2x8xf32>
  // A symbolic reduce_scatter: 2 * s0 rows over 2 ranks leave s0.
  // CHECK: kiln_graph.collective %{{.*}} {group = "0", group_size = 2 : i64, kind = #kiln_graph.collective<reduce_scatter>}
  %3 = kiln_graph.collective %s {kind = #kiln_graph.collective<reduce_scatter>, group = "0", group_size = 2} : tensor<?x8xf32, affine_map<()[s0] -> (s0 * 2)>> -> tensor<?x8xf32, affine_map<()[s0] -> (s0)>>
  return %0, %1, %2, %3 : tensor<4x8xf32>, tensor<8x8xf32>, tensor<2x8xf32>, tensor<?x8xf32, affine_map<()[s0] -> (s0)>>
}
