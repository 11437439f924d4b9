// RUN: kiln-opt %s -split-input-file -convert-kiln-graph-to-linalg | FileCheck %s

// Broadcasts live in the indexing maps: missing leading dims are dropped,
// size-1 dims read index 0.
// CHECK-DAG: #[[ID:.*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG: #[[ROW:.*]] = affine_map<(d0, d1) -> (d1)>
// CHECK-DAG: #[[COL:.*]] = affine_map<(d0, d1) -> (d0, 0)>
// CHECK-LABEL: func.func @elementwise_broadcast
// CHECK-SAME: (%[[A:.*]]: tensor<4x8xf32>, %[[B:.*]]: tensor<8xf32>, %[[C:.*]]: tensor<4x1xf32>)
// CHECK: %[[E0:.*]] = tensor.empty() : tensor<4x8xf32>
// CHECK: %[[ADD:.*]] = linalg.generic {indexing_maps = [#[[ID]], #[[ROW]], #[[ID]]], iterator_types = ["parallel", "parallel"]}
// CHECK-SAME: ins(%[[A]], %[[B]] : tensor<4x8xf32>, tensor<8xf32>) outs(%[[E0]] : tensor<4x8xf32>)
// CHECK: ^bb0(%[[X:.*]]: f32, %[[Y:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT: %[[S:.*]] = arith.addf %[[X]], %[[Y]] : f32
// CHECK-NEXT: linalg.yield %[[S]] : f32
// CHECK: %[[MUL:.*]] = linalg.generic {indexing_maps = [#[[ID]], #[[COL]], #[[ID]]], iterator_types = ["parallel", "parallel"]}
// CHECK-SAME: ins(%[[ADD]], %[[C]] : tensor<4x8xf32>, tensor<4x1xf32>)
// CHECK: arith.mulf
// CHECK: return %[[MUL]]
func.func @elementwise_broadcast(%a: tensor<4x8xf32>, %b: tensor<8xf32>, %c: tensor<4x1xf32>) -> tensor<4x8xf32> {
  %0 = kiln_graph.add %a, %b : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
  %1 = kiln_graph.mul %0, %c : tensor<4x8xf32>, tensor<4x1xf32> -> tensor<4x8xf32>
  return %1 : tensor<4x8xf32>
}

// -----

// CHECK-DAG: #[[SCALAR:.*]] = affine_map<(d0) -> ()>
// CHECK-LABEL: func.func @scalar_operand
// CHECK: linalg.generic {indexing_maps = [#{{.*}}, #[[SCALAR]], #{{.*}}]
// CHECK: arith.subf
func.func @scalar_operand(%a: tensor<4xf32>, %s: tensor<f32>) -> tensor<4xf32> {
  %0 = kiln_graph.sub %a, %s : tensor<4xf32>, tensor<f32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// CHECK-LABEL: func.func @integer_and_bool_arithmetic
// CHECK: arith.addi %{{.*}}, %{{.*}} : i64
// CHECK: arith.muli %{{.*}}, %{{.*}} : i64
// CHECK: arith.maxsi %{{.*}}, %{{.*}} : i64
// CHECK: arith.ori %{{.*}}, %{{.*}} : i1
// CHECK: arith.andi %{{.*}}, %{{.*}} : i1
func.func @integer_and_bool_arithmetic(%a: tensor<4xi64>, %b: tensor<4xi1>) -> (tensor<4xi64>, tensor<4xi64>, tensor<4xi64>, tensor<4xi1>, tensor<4xi1>) {
  %0 = kiln_graph.add %a, %a : tensor<4xi64>, tensor<4xi64> -> tensor<4xi64>
  %1 = kiln_graph.mul %a, %a : tensor<4xi64>, tensor<4xi64> -> tensor<4xi64>
  %2 = kiln_graph.maximum %a, %a : tensor<4xi64>, tensor<4xi64> -> tensor<4xi64>
  %3 = kiln_graph.add %b, %b : tensor<4xi1>, tensor<4xi1> -> tensor<4xi1>
  %4 = kiln_graph.mul %b, %b : tensor<4xi1>, tensor<4xi1> -> tensor<4xi1>
  return %0, %1, %2, %3, %4 : tensor<4xi64>, tensor<4xi64>, tensor<4xi64>, tensor<4xi1>, tensor<4xi1>
}

// -----

// CHECK-LABEL: func.func @comparisons
// CHECK: arith.cmpi ult, %{{.*}}, %{{.*}} : i1
// CHECK: arith.cmpf une, %{{.*}}, %{{.*}} : f32
// CHECK: arith.cmpf olt, %{{.*}}, %{{.*}} : f32
// CHECK: arith.cmpi sge, %{{.*}}, %{{.*}} : i64
func.func @comparisons(%a: tensor<4xi1>, %c: tensor<4xf32>, %d: tensor<4xi64>) -> (tensor<4xi1>, tensor<4xi1>, tensor<4xi1>, tensor<4xi1>) {
  %0 = kiln_graph.lt %a, %a : tensor<4xi1>, tensor<4xi1> -> tensor<4xi1>
  %1 = kiln_graph.ne %c, %c : tensor<4xf32>, tensor<4xf32> -> tensor<4xi1>
  %2 = kiln_graph.lt %c, %c : tensor<4xf32>, tensor<4xf32> -> tensor<4xi1>
  %3 = kiln_graph.ge %d, %d : tensor<4xi64>, tensor<4xi64> -> tensor<4xi1>
  return %0, %1, %2, %3 : tensor<4xi1>, tensor<4xi1>, tensor<4xi1>, tensor<4xi1>
}

// -----

// CHECK-LABEL: func.func @conversions
// CHECK: arith.fptosi %{{.*}} : f32 to i64
// CHECK: arith.uitofp %{{.*}} : i1 to f32
// CHECK: %[[Z:.*]] = arith.constant 0 : i64
// CHECK-NEXT: arith.cmpi ne, %{{.*}}, %[[Z]] : i64
// CHECK: %[[ZF:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT: arith.cmpf une, %{{.*}}, %[[ZF]] : f32
// CHECK: arith.sitofp %{{.*}} : i64 to f32
// CHECK: arith.extf %{{.*}} : f32 to f64
func.func @conversions(%a: tensor<4xf32>, %i: tensor<4xi64>, %c: tensor<4xi1>)
    -> (tensor<4xi64>, tensor<4xf32>, tensor<4xi1>, tensor<4xi1>, tensor<4xf32>, tensor<4xf64>) {
  %0 = kiln_graph.convert %a : tensor<4xf32> -> tensor<4xi64>
  %1 = kiln_graph.convert %c : tensor<4xi1> -> tensor<4xf32>
  %2 = kiln_graph.convert %i : tensor<4xi64> -> tensor<4xi1>
  %3 = kiln_graph.convert %a : tensor<4xf32> -> tensor<4xi1>
  %4 = kiln_graph.convert %i : tensor<4xi64> -> tensor<4xf32>
  %5 = kiln_graph.convert %a : tensor<4xf32> -> tensor<4xf64>
  return %0, %1, %2, %3, %4, %5 : tensor<4xi64>, tensor<4xf32>, tensor<4xi1>, tensor<4xi1>, tensor<4xf32>, tensor<4xf64>
}

// -----

// CHECK-LABEL: func.func @where
// CHECK-SAME: (%[[C:.*]]: tensor<4xi1>, %[[A:.*]]: tensor<4xf32>, %[[B:.*]]: tensor<4xf32>)
// CHECK: linalg.generic {{.*}} ins(%[[C]], %[[A]], %[[B]] : tensor<4xi1>, tensor<4xf32>, tensor<4xf32>)
// CHECK-NEXT: ^bb0(%[[X:.*]]: i1, %[[T:.*]]: f32, %[[F:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT: %[[S:.*]] = arith.select %[[X]], %[[T]], %[[F]] : f32
// CHECK-NEXT: linalg.yield %[[S]]
func.func @where(%c: tensor<4xi1>, %a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %0 = kiln_graph.where %c, %a, %b : tensor<4xi1>, tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// CHECK-LABEL: func.func @unary
// CHECK: arith.negf
// CHECK: %[[Z:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT: arith.maximumf %{{.*}}, %[[Z]] : f32
// CHECK: math.tanh
// CHECK: math.exp
// CHECK: math.log
// CHECK: math.sqrt
// CHECK: math.rsqrt
func.func @unary(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = kiln_graph.neg %x : tensor<4xf32> -> tensor<4xf32>
  %1 = kiln_graph.relu %0 : tensor<4xf32> -> tensor<4xf32>
  %2 = kiln_graph.tanh %1 : tensor<4xf32> -> tensor<4xf32>
  %3 = kiln_graph.exp %2 : tensor<4xf32> -> tensor<4xf32>
  %4 = kiln_graph.log %3 : tensor<4xf32> -> tensor<4xf32>
  %5 = kiln_graph.sqrt %4 : tensor<4xf32> -> tensor<4xf32>
  %6 = kiln_graph.rsqrt %5 : tensor<4xf32> -> tensor<4xf32>
  return %6 : tensor<4xf32>
}

// -----

// CHECK-LABEL: func.func @integer_neg
// CHECK: %[[Z:.*]] = arith.constant 0 : i64
// CHECK-NEXT: arith.subi %[[Z]], %{{.*}} : i64
func.func @integer_neg(%x: tensor<4xi64>) -> tensor<4xi64> {
  %0 = kiln_graph.neg %x : tensor<4xi64> -> tensor<4xi64>
  return %0 : tensor<4xi64>
}

// -----

// CHECK-LABEL: func.func @sigmoid
// CHECK: ^bb0(%[[X:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT: %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK-NEXT: %[[NEG:.*]] = arith.negf %[[X]]
// CHECK-NEXT: %[[EXP:.*]] = math.exp %[[NEG]]
// CHECK-NEXT: %[[DEN:.*]] = arith.addf %[[ONE]], %[[EXP]]
// CHECK-NEXT: %[[R:.*]] = arith.divf %[[ONE]], %[[DEN]]
// CHECK-NEXT: linalg.yield %[[R]]
func.func @sigmoid(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = kiln_graph.sigmoid %x : tensor<4xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// CHECK-LABEL: func.func @gelu
// CHECK: arith.constant 0.707106769 : f32
// CHECK: math.erf
// CHECK-NOT: math.tanh
// CHECK: linalg.yield
// CHECK: arith.constant 4.471500e-02 : f32
// CHECK: arith.constant 0.797884583 : f32
// CHECK: math.tanh
// CHECK-NOT: math.erf
// CHECK: return
func.func @gelu(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %0 = kiln_graph.gelu %x : tensor<4xf32> -> tensor<4xf32>
  %1 = kiln_graph.gelu %x {approximate = #kiln_graph.gelu_approximation<tanh>} : tensor<4xf32> -> tensor<4xf32>
  return %0, %1 : tensor<4xf32>, tensor<4xf32>
}

// -----

// A constant exponent of 2 is a multiplication; others call powf.
// CHECK-LABEL: func.func @pow
// CHECK: ^bb0(%[[X:.*]]: f32, %{{.*}}: f32, %{{.*}}: f32):
// CHECK-NEXT: %[[SQ:.*]] = arith.mulf %[[X]], %[[X]] : f32
// CHECK-NEXT: linalg.yield %[[SQ]]
// CHECK: ^bb0(%[[B:.*]]: f32, %[[E:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT: %[[P:.*]] = math.powf %[[B]], %[[E]] : f32
// CHECK-NEXT: linalg.yield %[[P]]
func.func @pow(%a: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %c2 = kiln_graph.constant dense<2.0> : tensor<f32>
  %c = kiln_graph.constant dense<2.5> : tensor<f32>
  %0 = kiln_graph.pow %a, %c2 : tensor<4xf32>, tensor<f32> -> tensor<4xf32>
  %1 = kiln_graph.pow %a, %c : tensor<4xf32>, tensor<f32> -> tensor<4xf32>
  return %0, %1 : tensor<4xf32>, tensor<4xf32>
}

// -----

// CHECK-LABEL: func.func @constant
// CHECK-NEXT: %[[C:.*]] = arith.constant dense<[1.000000e+00, 2.000000e+00]> : tensor<2xf32>
// CHECK-NEXT: return %[[C]]
func.func @constant() -> tensor<2xf32> {
  %c = kiln_graph.constant dense<[1.0, 2.0]> : tensor<2xf32>
  return %c : tensor<2xf32>
}

// -----

// The loop order follows the input: reducing a middle dim keeps the inner
// parallel loop; keepdim reinserts the reduced dim with expand_shape.
// CHECK-DAG: #[[IN:.*]] = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK-DAG: #[[OUT:.*]] = affine_map<(d0, d1, d2) -> (d0, d2)>
// CHECK-LABEL: func.func @sum_keepdim
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x4xf32>)
// CHECK-DAG: %[[E:.*]] = tensor.empty() : tensor<2x4xf32>
// CHECK-DAG: %[[Z:.*]] = arith.constant 0.000000e+00 : f32
// CHECK: %[[INIT:.*]] = linalg.fill ins(%[[Z]] : f32) outs(%[[E]] : tensor<2x4xf32>)
// CHECK: %[[R:.*]] = linalg.generic {indexing_maps = [#[[IN]], #[[OUT]]], iterator_types = ["parallel", "reduction", "parallel"]}
// CHECK-SAME: ins(%[[X]] : tensor<2x3x4xf32>) outs(%[[INIT]] : tensor<2x4xf32>)
// CHECK: arith.addf %{{.*}}, %{{.*}} fastmath<reassoc,contract> : f32
// CHECK: %[[K:.*]] = tensor.expand_shape %[[R]] {{\[}}[0], [1, 2]] output_shape [2, 1, 4] : tensor<2x4xf32> into tensor<2x1x4xf32>
// CHECK: return %[[K]]
func.func @sum_keepdim(%x: tensor<2x3x4xf32>) -> tensor<2x1x4xf32> {
  %0 = kiln_graph.sum %x {dims = array<i64: 1>, keepdim = true} : tensor<2x3x4xf32> -> tensor<2x1x4xf32>
  return %0 : tensor<2x1x4xf32>
}

// -----

// CHECK-LABEL: func.func @mean_all
// CHECK: linalg.generic {{.*}} iterator_types = ["reduction", "reduction"]
// CHECK: arith.constant 6.000000e+00 : f32
// CHECK-NEXT: arith.divf
func.func @mean_all(%x: tensor<2x3xf32>) -> tensor<f32> {
  %0 = kiln_graph.mean %x {dims = array<i64>} : tensor<2x3xf32> -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// dim 0 of a 0-d tensor names the scalar: nothing to reduce, mean divides by 1.
// CHECK-LABEL: func.func @mean_of_scalar_over_dim0
// CHECK-SAME: (%[[X:.*]]: tensor<f32>)
// CHECK: linalg.generic {{.*}} iterator_types = []} ins(%[[X]] : tensor<f32>)
// CHECK: arith.constant 1.000000e+00 : f32
// CHECK-NEXT: arith.divf
func.func @mean_of_scalar_over_dim0(%x: tensor<f32>) -> tensor<f32> {
  %0 = kiln_graph.mean %x {dims = array<i64: 0>, keepdim = true} : tensor<f32> -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// CHECK-LABEL: func.func @amax
// CHECK: %[[LOW:.*]] = arith.constant 0xFF800000 : f32
// CHECK: linalg.fill ins(%[[LOW]] : f32)
// CHECK: iterator_types = ["reduction", "parallel"]
// CHECK: arith.maximumf
// CHECK: %[[LOWI:.*]] = arith.constant -9223372036854775808 : i64
// CHECK: linalg.fill ins(%[[LOWI]] : i64)
// CHECK: arith.maxsi
func.func @amax(%x: tensor<4x8xf32>, %y: tensor<4x8xi64>) -> (tensor<8xf32>, tensor<4xi64>) {
  %0 = kiln_graph.amax %x {dims = array<i64: 0>} : tensor<4x8xf32> -> tensor<8xf32>
  %1 = kiln_graph.amax %y {dims = array<i64: -1>} : tensor<4x8xi64> -> tensor<4xi64>
  return %0, %1 : tensor<8xf32>, tensor<4xi64>
}

// -----

// Softmax: a max pass; a pass that writes exp(x - max) and sums it, so each
// exp is computed once; and a pass that scales the exps by 1 / sum in place
// (their tensor is its init).
// CHECK-DAG: #[[ID:.*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG: #[[ROWS:.*]] = affine_map<(d0, d1) -> (d0)>
// CHECK-LABEL: func.func @softmax
// CHECK-SAME: (%[[X:.*]]: tensor<2x8xf32>)
// CHECK: %[[NEGINF:.*]] = arith.constant 0xFF800000 : f32
// CHECK: %[[MAXINIT:.*]] = linalg.fill ins(%[[NEGINF]] : f32)
// CHECK: %[[MAX:.*]] = linalg.generic {indexing_maps = [#[[ID]], #[[ROWS]]], iterator_types = ["parallel", "reduction"]} ins(%[[X]] : tensor<2x8xf32>) outs(%[[MAXINIT]] : tensor<2xf32>)
// CHECK: arith.maximumf
// CHECK: %[[SUMINIT:.*]] = linalg.fill
// CHECK: %[[EXPINIT:.*]] = tensor.empty() : tensor<2x8xf32>
// CHECK: %[[EXP:.*]]:2 = linalg.generic {indexing_maps = [#[[ID]], #[[ROWS]], #[[ID]], #[[ROWS]]], iterator_types = ["parallel", "reduction"]} ins(%[[X]], %[[MAX]] : tensor<2x8xf32>, tensor<2xf32>) outs(%[[EXPINIT]], %[[SUMINIT]] : tensor<2x8xf32>, tensor<2xf32>)
// CHECK-NEXT: ^bb0(%[[V:.*]]: f32, %[[M:.*]]: f32, %{{.*}}: f32, %[[ACC:.*]]: f32):
// CHECK-NEXT: %[[D:.*]] = arith.subf %[[V]], %[[M]]
// CHECK-NEXT: %[[E:.*]] = math.exp %[[D]]
// CHECK-NEXT: %[[S:.*]] = arith.addf %[[ACC]], %[[E]] fastmath<reassoc,contract>
// CHECK-NEXT: linalg.yield %[[E]], %[[S]]
// CHECK: %[[R:.*]] = linalg.generic {indexing_maps = [#[[ROWS]], #[[ID]]], iterator_types = ["parallel", "parallel"]} ins(%[[EXP]]#1 : tensor<2xf32>) outs(%[[EXP]]#0 : tensor<2x8xf32>)
// CHECK-NEXT: ^bb0(%[[SUM:.*]]: f32, %[[OUT:.*]]: f32):
// CHECK: %[[INV:.*]] = arith.divf %{{.*}}, %[[SUM]]
// CHECK-NEXT: %[[Q:.*]] = arith.mulf %[[OUT]], %[[INV]]
// CHECK-NEXT: linalg.yield %[[Q]]
// CHECK: return %[[R]]
func.func @softmax(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %0 = kiln_graph.softmax %x {dim = 1 : i64} : tensor<2x8xf32> -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

// -----

// CHECK-LABEL: func.func @log_softmax
// CHECK: ^bb0(%[[V:.*]]: f32, %[[M:.*]]: f32, %[[S:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT: %[[D:.*]] = arith.subf %[[V]], %[[M]]
// CHECK-NEXT: %[[L:.*]] = math.log %[[S]]
// CHECK-NEXT: %[[R:.*]] = arith.subf %[[D]], %[[L]]
// CHECK-NEXT: linalg.yield %[[R]]
func.func @log_softmax(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %0 = kiln_graph.log_softmax %x {dim = -1 : i64} : tensor<2x8xf32> -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

// -----

// CHECK-LABEL: func.func @softmax_of_scalar
// CHECK: %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK-NEXT: linalg.yield %[[ONE]]
func.func @softmax_of_scalar(%x: tensor<f32>) -> tensor<f32> {
  %0 = kiln_graph.softmax %x {dim = 0 : i64} : tensor<f32> -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// Layer norm: one pass for the statistics (the sums of x - x0 and of its
// square in f64, x0 being the row's first element), the row's mean and rstd,
// then one pointwise pass; mean and rstd are returned with their kept dim.
// CHECK-DAG: #[[ID:.*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG: #[[KEPT:.*]] = affine_map<(d0, d1) -> (d0, 0)>
// CHECK-DAG: #[[ROWS:.*]] = affine_map<(d0, d1) -> (d0)>
// CHECK-DAG: #[[AFFINE:.*]] = affine_map<(d0, d1) -> (d1)>
// CHECK-LABEL: func.func @layer_norm
// CHECK-SAME: (%[[X:.*]]: tensor<2x4xf32>, %[[W:.*]]: tensor<4xf32>, %[[B:.*]]: tensor<4xf32>)
// CHECK: %[[M:.*]]:2 = linalg.generic {indexing_maps = [#[[ID]], #[[KEPT]], #[[ROWS]], #[[ROWS]]], iterator_types = ["parallel", "reduction"]} ins(%[[X]], %[[X]] : tensor<2x4xf32>, tensor<2x4xf32>) outs({{.*}} : tensor<2xf64>, tensor<2xf64>)
// CHECK-NEXT: ^bb0(%[[V:.*]]: f32, %[[X0:.*]]: f32, %[[S:.*]]: f64, %[[SS:.*]]: f64):
// CHECK-NEXT: %[[C:.*]] = arith.subf %[[V]], %[[X0]] : f32
// CHECK-NEXT: %[[CD:.*]] = arith.extf %[[C]] : f32 to f64
// CHECK-NEXT: %[[SQ:.*]] = arith.mulf %[[CD]], %[[CD]] fastmath<reassoc,contract> : f64
// CHECK-NEXT: %[[S2:.*]] = arith.addf %[[S]], %[[CD]] fastmath<reassoc,contract> : f64
// CHECK-NEXT: %[[SS2:.*]] = arith.addf %[[SS]], %[[SQ]] fastmath<reassoc,contract> : f64
// CHECK-NEXT: linalg.yield %[[S2]], %[[SS2]]
// The row's statistics read x0 again, at (row, 0).
// CHECK: %[[STATS:.*]]:2 = linalg.generic {{.*}} ins(%[[M]]#0, %[[M]]#1, %[[X]] :
// CHECK: arith.maximumf
// CHECK: math.rsqrt %{{.*}} : f64
// CHECK: %[[MEANK:.*]] = tensor.expand_shape %[[STATS]]#0
// CHECK: %[[RSTDK:.*]] = tensor.expand_shape %[[STATS]]#1
// CHECK: %[[Y:.*]] = linalg.generic {indexing_maps = [#[[ID]], #[[KEPT]], #[[KEPT]], #[[AFFINE]], #[[AFFINE]], #[[ID]]], {{.*}} ins(%[[X]], %[[MEANK]], %[[RSTDK]], %[[W]], %[[B]] :
// CHECK: return %[[Y]], %[[MEANK]], %[[RSTDK]]
func.func @layer_norm(%x: tensor<2x4xf32>, %w: tensor<4xf32>, %b: tensor<4xf32>) -> (tensor<2x4xf32>, tensor<2x1xf32>, tensor<2x1xf32>) {
  %y:3 = kiln_graph.layer_norm %x, %w, %b {normalized_rank = 1 : i64, eps = 1.0e-5 : f64}
      : tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32> -> tensor<2x4xf32>, tensor<2x1xf32>, tensor<2x1xf32>
  return %y#0, %y#1, %y#2 : tensor<2x4xf32>, tensor<2x1xf32>, tensor<2x1xf32>
}

// -----

// Loops (i, k, j): the innermost loop walks rows of B and C.
// CHECK-DAG: #[[A:.*]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-DAG: #[[B:.*]] = affine_map<(d0, d1, d2) -> (d1, d2)>
// CHECK-DAG: #[[C:.*]] = affine_map<(d0, d1, d2) -> (d0, d2)>
// CHECK-LABEL: func.func @matmul
// CHECK-SAME: (%[[LHS:.*]]: tensor<4x8xf32>, %[[RHS:.*]]: tensor<8x16xf32>)
// CHECK: %[[E:.*]] = tensor.empty() : tensor<4x16xf32>
// CHECK: %[[Z:.*]] = arith.constant 0.000000e+00 : f32
// CHECK: %[[INIT:.*]] = linalg.fill ins(%[[Z]] : f32) outs(%[[E]] : tensor<4x16xf32>)
// CHECK: %[[R:.*]] = linalg.generic {indexing_maps = [#[[A]], #[[B]], #[[C]]], iterator_types = ["parallel", "reduction", "parallel"]}
// CHECK-SAME: ins(%[[LHS]], %[[RHS]] : tensor<4x8xf32>, tensor<8x16xf32>) outs(%[[INIT]] : tensor<4x16xf32>)
// CHECK-NEXT: ^bb0(%[[X:.*]]: f32, %[[Y:.*]]: f32, %[[ACC:.*]]: f32):
// CHECK-NEXT: %[[P:.*]] = arith.mulf %[[X]], %[[Y]] fastmath<reassoc,contract> : f32
// CHECK-NEXT: %[[S:.*]] = arith.addf %[[ACC]], %[[P]] fastmath<reassoc,contract> : f32
// CHECK-NEXT: linalg.yield %[[S]]
// CHECK: return %[[R]]
func.func @matmul(%a: tensor<4x8xf32>, %b: tensor<8x16xf32>) -> tensor<4x16xf32> {
  %0 = kiln_graph.matmul %a, %b : tensor<4x8xf32>, tensor<8x16xf32> -> tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}

// -----

// With the right operand transposed the loops are (i, j, k): a dot product
// of two rows.
// CHECK-DAG: #[[A:.*]] = affine_map<(d0, d1, d2) -> (d0, d2)>
// CHECK-DAG: #[[B:.*]] = affine_map<(d0, d1, d2) -> (d1, d2)>
// CHECK-DAG: #[[C:.*]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-LABEL: func.func @matmul_transpose_rhs
// CHECK: linalg.generic {indexing_maps = [#[[A]], #[[B]], #[[C]]], iterator_types = ["parallel", "parallel", "reduction"]}
// CHECK-SAME: ins(%{{.*}}, %{{.*}} : tensor<4x8xf32>, tensor<16x8xf32>) outs(%{{.*}} : tensor<4x16xf32>)
func.func @matmul_transpose_rhs(%a: tensor<4x8xf32>, %w: tensor<16x8xf32>) -> tensor<4x16xf32> {
  %0 = kiln_graph.matmul %a, %w {transpose_rhs = true} : tensor<4x8xf32>, tensor<16x8xf32> -> tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}

// -----

// CHECK-DAG: #[[A:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
// CHECK-DAG: #[[B:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d2, d3)>
// CHECK-DAG: #[[C:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>
// CHECK-LABEL: func.func @batch_matmul
// CHECK: linalg.generic {indexing_maps = [#[[A]], #[[B]], #[[C]]], iterator_types = ["parallel", "parallel", "reduction", "parallel"]}
func.func @batch_matmul(%a: tensor<2x4x8xf32>, %b: tensor<2x8x16xf32>) -> tensor<2x4x16xf32> {
  %0 = kiln_graph.matmul %a, %b : tensor<2x4x8xf32>, tensor<2x8x16xf32> -> tensor<2x4x16xf32>
  return %0 : tensor<2x4x16xf32>
}

// -----

// CHECK-DAG: #[[A:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>
// CHECK-DAG: #[[B:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d2, d3)>
// CHECK-DAG: #[[C:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
// CHECK-LABEL: func.func @batch_matmul_transpose_rhs
// CHECK: linalg.generic {indexing_maps = [#[[A]], #[[B]], #[[C]]], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
func.func @batch_matmul_transpose_rhs(%a: tensor<2x4x8xf32>, %b: tensor<2x16x8xf32>) -> tensor<2x4x16xf32> {
  %0 = kiln_graph.matmul %a, %b {transpose_rhs = true} : tensor<2x4x8xf32>, tensor<2x16x8xf32> -> tensor<2x4x16xf32>
  return %0 : tensor<2x4x16xf32>
}

// -----

// CHECK-LABEL: func.func @integer_matmul
// CHECK: arith.muli
// CHECK-NEXT: arith.addi
func.func @integer_matmul(%a: tensor<4x8xi64>, %b: tensor<8x16xi64>) -> tensor<4x16xi64> {
  %0 = kiln_graph.matmul %a, %b : tensor<4x8xi64>, tensor<8x16xi64> -> tensor<4x16xi64>
  return %0 : tensor<4x16xi64>
}

// -----

// CHECK-LABEL: func.func @reshapes
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xf32>, %[[S:.*]]: tensor<f32>)
// CHECK: %[[FLAT:.*]] = tensor.collapse_shape %[[X]] {{\[}}[0, 1]] : tensor<2x3xf32> into tensor<6xf32>
// No reassociation between 2x3 and 3x2: through 1-D.
// CHECK: %[[TMP:.*]] = tensor.collapse_shape %[[X]] {{\[}}[0, 1]] : tensor<2x3xf32> into tensor<6xf32>
// CHECK: %[[T:.*]] = tensor.expand_shape %[[TMP]] {{\[}}[0, 1]] output_shape [3, 2] : tensor<6xf32> into tensor<3x2xf32>
// CHECK: %[[U:.*]] = tensor.expand_shape %[[S]] [] output_shape [1, 1] : tensor<f32> into tensor<1x1xf32>
// CHECK: return %[[FLAT]], %[[T]], %[[U]]
func.func @reshapes(%x: tensor<2x3xf32>, %s: tensor<f32>) -> (tensor<6xf32>, tensor<3x2xf32>, tensor<1x1xf32>) {
  %0 = kiln_graph.reshape %x : tensor<2x3xf32> -> tensor<6xf32>
  %1 = kiln_graph.reshape %x : tensor<2x3xf32> -> tensor<3x2xf32>
  %2 = kiln_graph.reshape %s : tensor<f32> -> tensor<1x1xf32>
  return %0, %1, %2 : tensor<6xf32>, tensor<3x2xf32>, tensor<1x1xf32>
}

// -----

// CHECK-LABEL: func.func @permute
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x4xf32>)
// CHECK: %[[E:.*]] = tensor.empty() : tensor<4x2x3xf32>
// CHECK: %[[T:.*]] = linalg.transpose ins(%[[X]] : tensor<2x3x4xf32>) outs(%[[E]] : tensor<4x2x3xf32>) permutation = [2, 0, 1]
// CHECK: return %[[T]]
func.func @permute(%x: tensor<2x3x4xf32>) -> tensor<4x2x3xf32> {
  %0 = kiln_graph.permute %x {dims = array<i64: 2, 0, 1>} : tensor<2x3x4xf32> -> tensor<4x2x3xf32>
  return %0 : tensor<4x2x3xf32>
}

// -----

// CHECK-DAG: #[[IN:.*]] = affine_map<(d0, d1, d2) -> (0, d2)>
// CHECK-DAG: #[[OUT:.*]] = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK-LABEL: func.func @expand
// CHECK: linalg.generic {indexing_maps = [#[[IN]], #[[OUT]]], iterator_types = ["parallel", "parallel", "parallel"]}
// CHECK-NEXT: ^bb0(%[[V:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT: linalg.yield %[[V]]
func.func @expand(%x: tensor<1x3xf32>) -> tensor<5x4x3xf32> {
  %0 = kiln_graph.expand %x : tensor<1x3xf32> -> tensor<5x4x3xf32>
  return %0 : tensor<5x4x3xf32>
}

// -----

// CHECK-LABEL: func.func @slice
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>)
// CHECK: %[[S:.*]] = tensor.extract_slice %[[X]][0, 1] [4, 3] [1, 2] : tensor<4x8xf32> to tensor<4x3xf32>
// CHECK: return %[[S]]
func.func @slice(%x: tensor<4x8xf32>) -> tensor<4x3xf32> {
  %0 = kiln_graph.slice %x {dim = 1 : i64, start = 1 : i64, step = 2 : i64} : tensor<4x8xf32> -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

// Concat is one generic over the result; every element is read from the last
// input whose range starts at or before it (reads clamped into bounds).
// CHECK-LABEL: func.func @concat
// CHECK-SAME: (%[[A:.*]]: tensor<2xf32>, %[[B:.*]]: tensor<3xf32>, %[[C:.*]]: tensor<4xf32>)
// CHECK: linalg.generic {{.*}} outs(%{{.*}} : tensor<9xf32>)
// CHECK: %[[I:.*]] = linalg.index 0 : index
// CHECK: %[[VA:.*]] = tensor.extract %[[A]][%{{.*}}] : tensor<2xf32>
// CHECK: %[[C2:.*]] = arith.constant 2 : index
// CHECK: %[[LB:.*]] = arith.subi %[[I]], %[[C2]] : index
// CHECK: %[[HB:.*]] = arith.constant 2 : index
// CHECK: %[[ZB:.*]] = arith.constant 0 : index
// CHECK: %[[MB:.*]] = arith.maxsi %[[LB]], %[[ZB]] : index
// CHECK: %[[IB:.*]] = arith.minsi %[[MB]], %[[HB]] : index
// CHECK: %[[VB:.*]] = tensor.extract %[[B]][%[[IB]]] : tensor<3xf32>
// CHECK: %[[INB:.*]] = arith.cmpi sge, %[[I]], %[[C2]] : index
// CHECK: %[[AB:.*]] = arith.select %[[INB]], %[[VB]], %[[VA]] : f32
// CHECK: %[[C5:.*]] = arith.constant 5 : index
// CHECK: %[[VC:.*]] = tensor.extract %[[C]][%{{.*}}] : tensor<4xf32>
// CHECK: %[[INC:.*]] = arith.cmpi sge, %[[I]], %[[C5]] : index
// CHECK: %[[ABC:.*]] = arith.select %[[INC]], %[[VC]], %[[AB]] : f32
// CHECK: linalg.yield %[[ABC]] : f32
func.func @concat(%a: tensor<2xf32>, %b: tensor<3xf32>, %c: tensor<4xf32>) -> tensor<9xf32> {
  %0 = kiln_graph.concat %a, %b, %c {dim = 0 : i64} : tensor<2xf32>, tensor<3xf32>, tensor<4xf32> -> tensor<9xf32>
  return %0 : tensor<9xf32>
}

// -----

// Empty inputs are skipped.
// CHECK-LABEL: func.func @concat_with_empty_input
// CHECK-SAME: (%[[A:.*]]: tensor<2x0xf32>, %[[B:.*]]: tensor<2x3xf32>)
// CHECK-NOT: tensor.extract %[[A]]
// CHECK: tensor.extract %[[B]]
// CHECK-NOT: arith.select
// CHECK: linalg.yield
func.func @concat_with_empty_input(%a: tensor<2x0xf32>, %b: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = kiln_graph.concat %a, %b {dim = 1 : i64} : tensor<2x0xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// Embedding reads the index per output row and clamps it into [0, rows).
// CHECK-DAG: #[[IDX:.*]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-DAG: #[[OUT:.*]] = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK-LABEL: func.func @embedding
// CHECK-SAME: (%[[W:.*]]: tensor<10x4xf32>, %[[I:.*]]: tensor<2x3xi64>)
// CHECK: linalg.generic {indexing_maps = [#[[IDX]], #[[OUT]]], iterator_types = ["parallel", "parallel", "parallel"]} ins(%[[I]] : tensor<2x3xi64>)
// CHECK-NEXT: ^bb0(%[[V:.*]]: i64, %{{.*}}: f32):
// CHECK-NEXT: %[[ROW:.*]] = arith.index_cast %[[V]] : i64 to index
// CHECK-NEXT: %[[LAST:.*]] = arith.constant 9 : index
// CHECK-NEXT: %[[ZERO:.*]] = arith.constant 0 : index
// CHECK-NEXT: %[[LO:.*]] = arith.maxsi %[[ROW]], %[[ZERO]] : index
// CHECK-NEXT: %[[CL:.*]] = arith.minsi %[[LO]], %[[LAST]] : index
// CHECK-NEXT: %[[COL:.*]] = linalg.index 2 : index
// CHECK-NEXT: %[[E:.*]] = tensor.extract %[[W]][%[[CL]], %[[COL]]] : tensor<10x4xf32>
// CHECK-NEXT: linalg.yield %[[E]]
func.func @embedding(%w: tensor<10x4xf32>, %i: tensor<2x3xi64>) -> tensor<2x3x4xf32> {
  %0 = kiln_graph.embedding %w, %i : tensor<10x4xf32>, tensor<2x3xi64> -> tensor<2x3x4xf32>
  return %0 : tensor<2x3x4xf32>
}

// -----

// float32 sin reduces its argument by pi/2 in float64, then picks the
// quadrant's +-sin or +-cos of the reduced value.
// CHECK-LABEL: func.func @sin_reduces_in_f64
// CHECK: arith.extf %{{.*}} : f32 to f64
// CHECK: math.roundeven %{{.*}} : f64
// CHECK: arith.truncf %{{.*}} : f64 to f32
// Minimax polynomials for |r| <= pi/4, not math.sin/cos (which reduce again).
// CHECK-NOT: math.sin
// CHECK: arith.fptosi
// CHECK: arith.select
func.func @sin_reduces_in_f64(%x: tensor<8xf32>) -> tensor<8xf32> {
  %0 = kiln_graph.sin %x : tensor<8xf32> -> tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

// CHECK-LABEL: func.func @minimum_and_rounding
// CHECK: arith.minimumf
// CHECK: math.roundeven
// CHECK: math.absi
func.func @minimum_and_rounding(%x: tensor<8xf32>, %y: tensor<8xf32>, %i: tensor<8xi64>) -> (tensor<8xf32>, tensor<8xi64>) {
  %0 = kiln_graph.minimum %x, %y : tensor<8xf32>, tensor<8xf32> -> tensor<8xf32>
  %1 = kiln_graph.round %0 : tensor<8xf32> -> tensor<8xf32>
  %2 = kiln_graph.abs %i : tensor<8xi64> -> tensor<8xi64>
  return %1, %2 : tensor<8xf32>, tensor<8xi64>
}

// -----

// sign is (x > 0) - (x < 0); atan reduces |x| before its polynomial and takes x's sign.
// CHECK-LABEL: func.func @sign_and_atan
// CHECK: arith.cmpf ogt
// CHECK: arith.cmpf olt
// CHECK: arith.subf
// CHECK: math.absf
// CHECK: math.copysign
func.func @sign_and_atan(%x: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  %0 = kiln_graph.sign %x : tensor<8xf32> -> tensor<8xf32>
  %1 = kiln_graph.atan %x : tensor<8xf32> -> tensor<8xf32>
  return %0, %1 : tensor<8xf32>, tensor<8xf32>
}

// -----

// Advanced indexing reads the index tensors at the broadcast coordinates
// (result dims 1..2 here), wraps negative indices and clamps them (the
// importer's assert reports them), and extracts from the input.
// CHECK-DAG: #[[B:.*]] = affine_map<(d0, d1, d2, d3) -> (d1, d2)>
// CHECK-DAG: #[[ID:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
// CHECK-LABEL: func.func @index_middle_dim
// CHECK-SAME: (%[[X:.*]]: tensor<4x5x6xf32>, %[[I:.*]]: tensor<2x3xi64>)
// CHECK: linalg.generic {indexing_maps = [#[[B]], #[[ID]]], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
// CHECK-SAME: ins(%[[I]] : tensor<2x3xi64>)
// CHECK: ^bb0(%[[IN:.*]]: i64, %{{.*}}: f32):
// CHECK-DAG: %[[D0:.*]] = linalg.index 0 : index
// CHECK-DAG: %[[D3:.*]] = linalg.index 3 : index
// CHECK: %[[CAST:.*]] = arith.index_cast %[[IN]] : i64 to index
// CHECK: arith.select
// CHECK: %[[ROW:.*]] = arith.minsi
// CHECK: tensor.extract %[[X]][%[[D0]], %[[ROW]], %[[D3]]] : tensor<4x5x6xf32>
func.func @index_middle_dim(%x: tensor<4x5x6xf32>, %i: tensor<2x3xi64>) -> tensor<4x2x3x6xf32> {
  %0 = kiln_graph.index %x[%i] {indexed_dims = array<i64: 1>} : tensor<4x5x6xf32>, tensor<2x3xi64> -> tensor<4x2x3x6xf32>
  return %0 : tensor<4x2x3x6xf32>
}

// -----

// CHECK-LABEL: func.func @iota_f32
// CHECK: linalg.generic
// CHECK: %[[I:.*]] = linalg.index 0 : index
// CHECK: arith.sitofp %{{.*}} : i64 to f64
// CHECK: arith.truncf %{{.*}} : f64 to f32
func.func @iota_f32() -> tensor<6xf32> {
  %0 = kiln_graph.iota {start = 0.5 : f64, step = 0.25 : f64} : tensor<6xf32>
  return %0 : tensor<6xf32>
}

// -----

// cumsum: the first slice is copied, then a loop over the scanned dim adds
// each slice to the running one (a generic that reads and writes it).
// CHECK-LABEL: func.func @cumsum_middle
// CHECK: %[[FIRST:.*]] = tensor.extract_slice %{{.*}}[0, 0, 0] [3, 1, 7] [1, 1, 1]
// CHECK: %[[INIT:.*]] = tensor.insert_slice %[[FIRST]]
// CHECK: scf.for %[[K:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[OUT:.*]] = %[[INIT]], %[[RUNNING:.*]] = %[[FIRST]])
// CHECK:   %[[S:.*]] = tensor.extract_slice %{{.*}}[0, %[[K]], 0] [3, 1, 7] [1, 1, 1]
// CHECK:   %[[SUM:.*]] = linalg.generic {{.*}} ins(%[[S]] : tensor<3x1x7xf32>) outs(%[[RUNNING]] : tensor<3x1x7xf32>)
// CHECK:     arith.addf
// CHECK:   %[[NEXT:.*]] = tensor.insert_slice %[[SUM]] into %[[OUT]][0, %[[K]], 0]
// CHECK:   scf.yield %[[NEXT]], %[[SUM]]
func.func @cumsum_middle(%x: tensor<3x4x7xf32>) -> tensor<3x4x7xf32> {
  %0 = kiln_graph.cumsum %x {dim = 1 : i64} : tensor<3x4x7xf32> -> tensor<3x4x7xf32>
  return %0 : tensor<3x4x7xf32>
}

// -----

// CHECK-LABEL: func.func @gather_dim1
// CHECK: linalg.generic
// CHECK: %[[D0:.*]] = linalg.index 0 : index
// CHECK: %[[CAST:.*]] = arith.index_cast
// CHECK: %[[ROW:.*]] = arith.minsi
// CHECK: tensor.extract %{{.*}}[%[[D0]], %[[ROW]]] : tensor<4x5xf32>
func.func @gather_dim1(%x: tensor<4x5xf32>, %i: tensor<4x2xi64>) -> tensor<4x2xf32> {
  %0 = kiln_graph.gather %x[%i] {dim = 1 : i64} : tensor<4x5xf32>, tensor<4x2xi64> -> tensor<4x2xf32>
  return %0 : tensor<4x2xf32>
}

// -----

// Indices broadcast through their indexing maps (never materialized): a
// size-1 index dim reads element 0.
// CHECK-DAG: #[[ROWS:.*]] = affine_map<(d0, d1) -> (d0, 0)>
// CHECK-DAG: #[[COLS:.*]] = affine_map<(d0, d1) -> (0, d1)>
// CHECK-LABEL: func.func @index_broadcast
// CHECK: linalg.generic {indexing_maps = [#[[ROWS]], #[[COLS]], #{{.*}}]
func.func @index_broadcast(%x: tensor<5x6xf32>, %i: tensor<4x1xi64>, %j: tensor<1x3xi64>) -> tensor<4x3xf32> {
  %0 = kiln_graph.index %x[%i, %j] {indexed_dims = array<i64: 0, 1>} : tensor<5x6xf32>, tensor<4x1xi64>, tensor<1x3xi64> -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

// Integer floor division: divisors 0 and -1 are replaced by 1 so nothing
// traps, and -1 gives the wrapping negation.
// CHECK-LABEL: func.func @div_round_integer
// CHECK: linalg.generic
// CHECK: ^bb0(%[[X:.*]]: i64, %[[Y:.*]]: i64, %{{.*}}: i64):
// CHECK: %[[SAFE:.*]] = arith.select %{{.*}}, %{{.*}}, %[[Y]] : i64
// CHECK: %[[Q:.*]] = arith.floordivsi %[[X]], %[[SAFE]] : i64
// CHECK: %[[NEG:.*]] = arith.subi %{{.*}}, %[[X]] : i64
// CHECK: %[[R:.*]] = arith.select %{{.*}}, %[[NEG]], %[[Q]] : i64
// CHECK: linalg.yield %[[R]]
// CHECK: linalg.generic
// CHECK: arith.divsi
func.func @div_round_integer(%a: tensor<4xi64>, %b: tensor<4xi64>) -> (tensor<4xi64>, tensor<4xi64>) {
  %0 = kiln_graph.div_round %a, %b {rounding_mode = #kiln_graph.rounding_mode<floor>} : tensor<4xi64>, tensor<4xi64> -> tensor<4xi64>
  %1 = kiln_graph.div_round %a, %b {rounding_mode = #kiln_graph.rounding_mode<trunc>} : tensor<4xi64>, tensor<4xi64> -> tensor<4xi64>
  return %0, %1 : tensor<4xi64>, tensor<4xi64>
}

// -----

// Float floor division as ATen computes it, from fmod.
// CHECK-LABEL: func.func @div_round_float
// CHECK: arith.remf
// CHECK: math.floor
// CHECK: math.copysign
// CHECK-LABEL: func.func @inverse_trig
// CHECK: math.atan2 %{{.*}}, %{{.*}} : f32
// CHECK: math.asinh %{{.*}} : f32
func.func @div_round_float(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %0 = kiln_graph.div_round %a, %b {rounding_mode = #kiln_graph.rounding_mode<floor>} : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
func.func @inverse_trig(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %0 = kiln_graph.atan2 %a, %b : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %1 = kiln_graph.asinh %0 : tensor<4xf32> -> tensor<4xf32>
  return %1 : tensor<4xf32>
}

// -----

// argmax: one reduction with two outputs, the best value (from -inf) and its
// index (from INT64_MAX: the smaller index wins ties, NaN wins over numbers).
// CHECK-LABEL: func.func @argmax
// CHECK: %[[NEG_INF:.*]] = arith.constant 0xFF800000 : f32
// CHECK: %[[BEST:.*]] = linalg.fill ins(%[[NEG_INF]] : f32) outs(%{{.*}} : tensor<4xf32>)
// CHECK: %[[MAX_INDEX:.*]] = arith.constant 9223372036854775807 : i64
// CHECK: %[[INDEX:.*]] = linalg.fill ins(%[[MAX_INDEX]] : i64) outs(%{{.*}} : tensor<4xi64>)
// CHECK: %[[R:.*]]:2 = linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]
// CHECK-SAME: ins(%{{.*}} : tensor<4x5xf32>) outs(%[[BEST]], %[[INDEX]] : tensor<4xf32>, tensor<4xi64>)
// CHECK: linalg.index 1
// CHECK: arith.cmpf ogt
// CHECK: arith.cmpf uno
// CHECK: linalg.yield
// CHECK: return %[[R]]#1
func.func @argmax(%x: tensor<4x5xf32>) -> tensor<4xi64> {
  %0 = kiln_graph.argmax %x {dim = 1 : i64} : tensor<4x5xf32> -> tensor<4xi64>
  return %0 : tensor<4xi64>
}

// -----

// uint8 (ui8) becomes signless i8 in linalg; the ops computing on it take
// their unsigned forms: comparisons, max, division, casts widen with zeros.
// CHECK-LABEL: func.func @unsigned
// CHECK-SAME: (%{{.*}}: tensor<4xi8>, %{{.*}}: tensor<4xi8>) -> (tensor<4xi1>, tensor<4xi8>, tensor<4xi8>, tensor<4xf32>, tensor<4xi8>)
// CHECK: arith.cmpi ult
// CHECK: arith.maxui
// CHECK: arith.divui
// CHECK: arith.uitofp %{{.*}} : i8 to f32
// CHECK: %[[WIDE:.*]] = arith.fptosi %{{.*}} : f32 to i64
// CHECK: arith.trunci %[[WIDE]] : i64 to i8
func.func @unsigned(%a: tensor<4xui8>, %b: tensor<4xui8>) -> (tensor<4xi1>, tensor<4xui8>, tensor<4xui8>, tensor<4xf32>, tensor<4xui8>) {
  %0 = kiln_graph.lt %a, %b : tensor<4xui8>, tensor<4xui8> -> tensor<4xi1>
  %1 = kiln_graph.maximum %a, %b : tensor<4xui8>, tensor<4xui8> -> tensor<4xui8>
  %2 = kiln_graph.div_round %a, %b {rounding_mode = #kiln_graph.rounding_mode<floor>} : tensor<4xui8>, tensor<4xui8> -> tensor<4xui8>
  %3 = kiln_graph.convert %a : tensor<4xui8> -> tensor<4xf32>
  %4 = kiln_graph.convert %3 : tensor<4xf32> -> tensor<4xui8>
  return %0, %1, %2, %3, %4 : tensor<4xi1>, tensor<4xui8>, tensor<4xui8>, tensor<4xf32>, tensor<4xui8>
}

// -----

// A uint8 constant keeps its bits (200 is -56 as i8); amax starts from 0.
// CHECK-LABEL: func.func @unsigned_constant_and_amax
// CHECK: arith.constant dense<-56> : tensor<4xi8>
// CHECK: %[[ZERO:.*]] = arith.constant 0 : i8
// CHECK: linalg.fill ins(%[[ZERO]] : i8)
// CHECK: arith.maxui
func.func @unsigned_constant_and_amax(%a: tensor<4xui8>) -> (tensor<4xui8>, tensor<ui8>) {
  %0 = kiln_graph.constant dense<200> : tensor<4xui8>
  %1 = kiln_graph.amax %a {dims = array<i64>} : tensor<4xui8> -> tensor<ui8>
  return %0, %1 : tensor<4xui8>, tensor<ui8>
}

// -----

// scatter_reduce(amax, include_self=False): a loop nest resetting the
// written positions to -inf, then one combining src into them; indices are
// clamped.
// CHECK-LABEL: func.func @scatter_amax
// CHECK-SAME: (%[[X:.*]]: tensor<4x5xf32>, %[[I:.*]]: tensor<2x5xi64>, %[[S:.*]]: tensor<2x5xf32>)
// CHECK: %[[NEG_INF:.*]] = arith.constant 0xFF800000 : f32
// CHECK: %[[RESET:.*]] = scf.for %[[A:.*]] = {{.*}} iter_args(%[[T0:.*]] = %[[X]]) -> (tensor<4x5xf32>)
// CHECK: scf.for %[[B:.*]] = {{.*}} iter_args(%[[T1:.*]] = %[[T0]])
// CHECK: tensor.extract %[[I]][%[[A]], %[[B]]]
// CHECK: arith.minsi
// CHECK: tensor.insert %[[NEG_INF]] into %[[T1]]
// CHECK: scf.for {{.*}} iter_args(%{{.*}} = %[[RESET]])
// CHECK: scf.for
// CHECK: %[[V:.*]] = tensor.extract %[[S]]
// CHECK: %[[OLD:.*]] = tensor.extract
// CHECK: %[[M:.*]] = arith.maximumf %[[OLD]], %[[V]] : f32
// CHECK: tensor.insert %[[M]]
func.func @scatter_amax(%x: tensor<4x5xf32>, %i: tensor<2x5xi64>, %s: tensor<2x5xf32>) -> tensor<4x5xf32> {
  %0 = kiln_graph.scatter %x[%i], %s {dim = 0 : i64, reduce = #kiln_graph.scatter_reduction<amax>, include_self = false} : tensor<4x5xf32>, tensor<2x5xi64>, tensor<2x5xf32> -> tensor<4x5xf32>
  return %0 : tensor<4x5xf32>
}

// -----

// A float scatter sum may be reassociated (a GPU adds by atomics, in any
// order) unless `ordered` (torch.use_deterministic_algorithms): then its
// adds carry no fast-math flags, and every target adds in the index's order.
// CHECK-LABEL: func.func @scatter_sums
// CHECK: arith.addf %{{.*}}, %{{.*}} fastmath<reassoc,contract> : f32
// CHECK: arith.addf %{{.*}}, %{{.*}} : f32
func.func @scatter_sums(%x: tensor<5xf32>, %i: tensor<9xi64>, %s: tensor<9xf32>) -> (tensor<5xf32>, tensor<5xf32>) {
  %0 = kiln_graph.scatter %x[%i], %s {dim = 0 : i64, reduce = #kiln_graph.scatter_reduction<sum>} : tensor<5xf32>, tensor<9xi64>, tensor<9xf32> -> tensor<5xf32>
  %1 = kiln_graph.scatter %x[%i], %s {dim = 0 : i64, reduce = #kiln_graph.scatter_reduction<sum>, ordered} : tensor<5xf32>, tensor<9xi64>, tensor<9xf32> -> tensor<5xf32>
  return %0, %1 : tensor<5xf32>, tensor<5xf32>
}

// -----

// Attention stays one op, in destination style, for the target to lower.
// CHECK-LABEL: func.func @attention
// CHECK-SAME: (%[[Q:.*]]: tensor<1x2x8x16xf32>, %[[K:.*]]: tensor<1x1x6x16xf32>, %[[M:.*]]: tensor<1x1x8x6xf32>)
// CHECK: %[[OUT:.*]] = tensor.empty() : tensor<1x2x8x16xf32>
// CHECK: %[[LSE:.*]] = tensor.empty() : tensor<1x2x8xf32>
// CHECK: %[[R:.*]]:2 = kiln_kernel.attention %[[Q]], %[[K]], %[[K]] mask %[[M]] into %[[OUT]], %[[LSE]] {is_causal = true, scale = 2.500000e-01 : f64}
// CHECK: return %[[R]]#0
func.func @attention(%q: tensor<1x2x8x16xf32>, %k: tensor<1x1x6x16xf32>, %m: tensor<1x1x8x6xf32>) -> tensor<1x2x8x16xf32> {
  %0:2 = kiln_graph.attention %q, %k, %k mask %m {scale = 0.25 : f64, is_causal = true} : tensor<1x2x8x16xf32>, tensor<1x1x6x16xf32>, tensor<1x1x6x16xf32>, tensor<1x1x8x6xf32> -> tensor<1x2x8x16xf32>, tensor<1x2x8xf32>
  return %0#0 : tensor<1x2x8x16xf32>
}

// -----

// So does convolution.
// CHECK-LABEL: func.func @conv2d
// CHECK-SAME: (%[[X:.*]]: tensor<1x3x8x8xf32>, %[[W:.*]]: tensor<4x3x3x3xf32>)
// CHECK: %[[OUT:.*]] = tensor.empty() : tensor<1x4x6x6xf32>
// CHECK: kiln_kernel.conv2d %[[X]], %[[W]] into %[[OUT]] {dilations = array<i64: 1, 1>, strides = array<i64: 1, 1>}
func.func @conv2d(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32> {
  %0 = kiln_graph.conv2d %x, %w {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>} : tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32> -> tensor<1x4x6x6xf32>
  return %0 : tensor<1x4x6x6xf32>
}

// -----

// sort stays one op (kiln-lower-sort lowers its buffer form), into empty
// tensors, unsigned where its input is.
// CHECK-LABEL: func.func @sort
// CHECK: %[[V:.*]] = tensor.empty() : tensor<3x9xf32>
// CHECK: %[[I:.*]] = tensor.empty() : tensor<3x9xi64>
// CHECK: kiln_kernel.sort %{{.*}} into %[[V]], %[[I]] {descending = true, dim = 1 : i64} : tensor<3x9xf32> into tensor<3x9xf32>, tensor<3x9xi64> -> tensor<3x9xf32>, tensor<3x9xi64>
// CHECK: kiln_kernel.sort %{{.*}} into %{{.*}}, %{{.*}} {dim = 0 : i64, kiln_kernel.unsigned} : tensor<5xi8>
// A top-k sorts into whole-length temporaries and keeps their first k.
// CHECK: %[[TOP:.*]]:2 = kiln_kernel.sort %{{.*}} into %{{.*}}, %{{.*}} {descending = true, dim = 1 : i64, k = 2 : i64} : tensor<3x9xf32> into tensor<3x9xf32>, tensor<3x9xi64>
// CHECK: tensor.extract_slice %[[TOP]]#0[0, 0] [3, 2] [1, 1] : tensor<3x9xf32> to tensor<3x2xf32>
// CHECK: tensor.extract_slice %[[TOP]]#1[0, 0] [3, 2] [1, 1] : tensor<3x9xi64> to tensor<3x2xi64>
func.func @sort(%x: tensor<3x9xf32>, %u: tensor<5xui8>) -> (tensor<3x9xf32>, tensor<3x9xi64>, tensor<5xi64>, tensor<3x2xi64>) {
  %0:2 = kiln_graph.sort %x {dim = 1 : i64, descending = true} : tensor<3x9xf32> -> tensor<3x9xf32>, tensor<3x9xi64>
  %1:2 = kiln_graph.sort %u {dim = 0 : i64} : tensor<5xui8> -> tensor<5xui8>, tensor<5xi64>
  %2:2 = kiln_graph.sort %x {dim = 1 : i64, descending = true, k = 2 : i64} : tensor<3x9xf32> -> tensor<3x2xf32>, tensor<3x2xi64>
  return %0#0, %0#1, %1#1, %2#1 : tensor<3x9xf32>, tensor<3x9xi64>, tensor<5xi64>, tensor<3x2xi64>
}
