// RUN: kiln-opt %s -split-input-file -convert-kiln-graph-to-linalg -canonicalize | FileCheck %s

// In a kernel with size symbols (its last `kiln_kernel.num_symbols` arguments),
// symbolic dims become values computed from the symbols: tensor.empty takes
// them, reshapes that group dims keep to one collapse or expand, and a mean
// divides by its symbolic count. The graph's symbolic encodings leave the
// types (linalg sees plain `?` dims).
// CHECK-LABEL: func.func @rows
// CHECK-SAME: (%[[X:.*]]: tensor<?x?x8xf32>, %[[W:.*]]: tensor<8x4xf32>, %[[S0:.*]]: index, %[[S1:.*]]: index) -> (tensor<?x4xf32>, tensor<?xf32>)
// CHECK: %[[FLAT:.*]] = tensor.collapse_shape %{{.*}} {{\[\[}}0, 1], [2]] : tensor<?x?x8xf32> into tensor<?x8xf32>
// CHECK: %[[ROWS:.*]] = arith.muli %[[S0]], %[[S1]]
// CHECK: %[[MM:.*]] = tensor.empty(%[[ROWS]]) : tensor<?x4xf32>
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %[[W]] : tensor<?x8xf32>, tensor<8x4xf32>) outs(%{{.*}} : tensor<?x4xf32>) attrs = {kiln_kernel.contraction = "ikj"}
// Softmax's exps are as many as the matmul's outputs (s0 * s1 rows).
// CHECK: tensor.empty(%{{.*}}) : tensor<?x4xf32>
// The mean's count, s1 * 8, is a value converted to f32 once.
// CHECK: %[[COUNT:.*]] = arith.muli %[[S1]], %{{.*}}
// CHECK: %[[COUNTI:.*]] = arith.index_cast %[[COUNT]] : index to i64
// CHECK: %[[COUNTF:.*]] = arith.sitofp %[[COUNTI]] : i64 to f32
// CHECK: tensor.empty(%[[S0]]) : tensor<?xf32>
// CHECK: arith.divf %{{.*}}, %[[COUNTF]] : f32
#s0 = affine_map<()[s0] -> (s0)>
#bs = affine_map<()[s0, s1] -> (s0, s1)>
#p = affine_map<()[s0, s1] -> (s0 * s1)>
func.func @rows(%x: tensor<?x?x8xf32, #bs>, %w: tensor<8x4xf32>, %s0: index, %s1: index)
    -> (tensor<?x4xf32, #p>, tensor<?xf32, #s0>) attributes {kiln_kernel.num_symbols = 2 : i64} {
  %0 = kiln_graph.reshape %x : tensor<?x?x8xf32, #bs> -> tensor<?x8xf32, #p>
  %1 = kiln_graph.matmul %0, %w : tensor<?x8xf32, #p>, tensor<8x4xf32> -> tensor<?x4xf32, #p>
  %2 = kiln_graph.softmax %1 {dim = 1 : i64} : tensor<?x4xf32, #p> -> tensor<?x4xf32, #p>
  %3 = kiln_graph.mean %x {dims = array<i64: 1, 2>} : tensor<?x?x8xf32, #bs> -> tensor<?xf32, #s0>
  return %2, %3 : tensor<?x4xf32, #p>, tensor<?xf32, #s0>
}

// -----

// Gathers of rows, concatenation, ranges and slices with symbolic sizes: the
// rows of an embedding and a range are s0; the concatenation's second part
// starts at s0 (the first one's clamped index stops at s0 - 1); a slice keeps
// its constant start and step and takes its sizes from the symbols.
// CHECK-LABEL: func.func @gathers
// CHECK-SAME: %[[X:[a-z0-9_]+]]: tensor<?x8xf32>, %[[Y:[a-z0-9_]+]]: tensor<4x8xf32>, %[[S0:[a-z0-9_]+]]: index)
// CHECK: tensor.empty(%[[S0]]) : tensor<?x8xf32>
// CHECK: tensor.extract %{{.*}} : tensor<10x8xf32>
// CHECK: %[[ROWS:.*]] = arith.addi %[[S0]], %{{.*}} : index
// CHECK: tensor.empty(%[[ROWS]]) : tensor<?x8xf32>
// CHECK: arith.subi %[[S0]], %{{.*}} : index
// CHECK: tensor.extract %[[X]]
// CHECK: arith.subi %{{.*}}, %[[S0]] : index
// CHECK: tensor.extract %[[Y]]
// CHECK: arith.cmpi sge, %{{.*}}, %[[S0]] : index
// CHECK: tensor.empty(%[[S0]]) : tensor<?xi64>
// CHECK: tensor.extract_slice %[[X]][0, 2] [%[[S0]], 2] [1, 3] : tensor<?x8xf32> to tensor<?x2xf32>
#s0 = affine_map<()[s0] -> (s0)>
#p1 = affine_map<()[s0] -> (s0 + 4)>
func.func @gathers(%ids: tensor<?xi64, #s0>, %w: tensor<10x8xf32>, %x: tensor<?x8xf32, #s0>,
                   %y: tensor<4x8xf32>, %s0: index)
    -> (tensor<?x8xf32, #s0>, tensor<?x8xf32, #p1>, tensor<?xi64, #s0>, tensor<?x2xf32, #s0>)
    attributes {kiln_kernel.num_symbols = 1 : i64} {
  %0 = kiln_graph.embedding %w, %ids : tensor<10x8xf32>, tensor<?xi64, #s0> -> tensor<?x8xf32, #s0>
  %1 = kiln_graph.concat %x, %y {dim = 0 : i64} : tensor<?x8xf32, #s0>, tensor<4x8xf32> -> tensor<?x8xf32, #p1>
  %2 = kiln_graph.iota {start = 0 : i64, step = 1 : i64} : tensor<?xi64, #s0>
  %3 = kiln_graph.slice %x {dim = 1 : i64, start = 2 : i64, step = 3 : i64} : tensor<?x8xf32, #s0> -> tensor<?x2xf32, #s0>
  return %0, %1, %2, %3 : tensor<?x8xf32, #s0>, tensor<?x8xf32, #p1>, tensor<?xi64, #s0>, tensor<?x2xf32, #s0>
}

// -----

// Attention with a symbolic batch (s0) and length (s1) stays one op, its
// destinations sized from the symbols.
// CHECK-LABEL: func.func @attention
// CHECK-SAME: %[[Q:[a-z0-9_]+]]: tensor<?x2x?x16xf32>, %[[S0:[a-z0-9_]+]]: index, %[[S1:[a-z0-9_]+]]: index)
// CHECK-DAG: %[[OUT:.*]] = tensor.empty(%[[S0]], %[[S1]]) : tensor<?x2x?x16xf32>
// CHECK-DAG: %[[LSE:.*]] = tensor.empty(%[[S0]], %[[S1]]) : tensor<?x2x?xf32>
// CHECK: kiln_kernel.attention %[[Q]], %[[Q]], %[[Q]] into %[[OUT]], %[[LSE]] {is_causal = true, scale = 2.500000e-01 : f64} : tensor<?x2x?x16xf32>
#bl = affine_map<()[s0, s1] -> (s0, s1)>
func.func @attention(%q: tensor<?x2x?x16xf32, #bl>, %s0: index, %s1: index) -> tensor<?x2x?x16xf32, #bl>
    attributes {kiln_kernel.num_symbols = 2 : i64} {
  %0:2 = kiln_graph.attention %q, %q, %q {scale = 0.25 : f64, is_causal = true} : tensor<?x2x?x16xf32, #bl>, tensor<?x2x?x16xf32, #bl>, tensor<?x2x?x16xf32, #bl> -> tensor<?x2x?x16xf32, #bl>, tensor<?x2x?xf32, #bl>
  return %0#0 : tensor<?x2x?x16xf32, #bl>
}

// -----

// A reshape whose dims do not group and whose result has two symbolic dims:
// the input collapses to 1-D and the result copies from it at the row-major
// offset of each element (memref lowering cannot expand one dim into several
// dynamic ones).
// CHECK-LABEL: func.func @ungrouped_reshape
// CHECK-SAME: (%[[X:[a-z0-9_]+]]: tensor<?x?x2xf32>, %[[S0:[a-z0-9_]+]]: index, %[[S1:[a-z0-9_]+]]: index)
// CHECK: %[[FLAT:.*]] = tensor.collapse_shape %[[X]] {{\[\[}}0, 1, 2]] : tensor<?x?x2xf32> into tensor<?xf32>
// CHECK: %[[ROWS:.*]] = arith.muli %[[S0]], %c4
// CHECK: %[[STRIDE0:.*]] = arith.muli %[[S1]], %c3
// CHECK: tensor.empty(%[[ROWS]], %[[S1]]) : tensor<?x?x3xf32>
// CHECK: linalg.generic
// CHECK: %[[I0:.*]] = linalg.index 0
// CHECK: arith.muli %[[I0]], %[[STRIDE0]]
// CHECK: tensor.extract %[[FLAT]]
#a = affine_map<()[s0, s1] -> (s0 * 6, s1)>
#b = affine_map<()[s0, s1] -> (s0 * 4, s1)>
func.func @ungrouped_reshape(%x: tensor<?x?x2xf32, #a>, %s0: index, %s1: index) -> tensor<?x?x3xf32, #b>
    attributes {kiln_kernel.num_symbols = 2 : i64} {
  %0 = kiln_graph.reshape %x : tensor<?x?x2xf32, #a> -> tensor<?x?x3xf32, #b>
  return %0 : tensor<?x?x3xf32, #b>
}

// -----

// Gathers, scans, pads and sizes as values with symbolic sizes: index
// bounds, scan lengths and pad bounds are values computed from the symbols
// before the loops.
// CHECK-LABEL: func.func @gathers_and_scans
// CHECK-SAME: (%[[X:[a-z0-9_]+]]: tensor<?x4xf32>, %[[I:[a-z0-9_]+]]: tensor<3xi64>, %[[S0:[a-z0-9_]+]]: index)
// kiln_graph.size: s0 * 2 as an f32 scalar.
// CHECK: %[[TWICE:.*]] = arith.muli %[[S0]], %c2
// CHECK: %[[TWICEI:.*]] = arith.index_cast %[[TWICE]] : index to i64
// CHECK: arith.sitofp %[[TWICEI]] : i64 to f32
// Index: wraps negative indices by s0 and clamps to s0 - 1.
// CHECK: linalg.generic
// CHECK: arith.addi %{{.*}}, %[[S0]] : index
// CHECK: tensor.extract %[[X]]
// Cumsum along the symbolic dim: a loop to s0.
// CHECK: tensor.empty(%[[S0]]) : tensor<?x4xf32>
// CHECK: scf.for %{{.*}} = %c1 to %[[S0]] step %c1
// Pad: the result has s0 + 3 rows; the input's s0 bounds the reads.
// CHECK: %[[ROWS:.*]] = arith.addi %[[S0]], %c3
// CHECK: tensor.empty(%[[ROWS]]) : tensor<?x4xf32>
// CHECK: arith.cmpi slt, %{{.*}}, %[[S0]] : index
#s0 = affine_map<()[s0] -> (s0)>
#twice = affine_map<()[s0] -> (s0 * 2)>
#p3 = affine_map<()[s0] -> (s0 + 3)>
func.func @gathers_and_scans(%x: tensor<?x4xf32, #s0>, %i: tensor<3xi64>, %s0: index)
    -> (tensor<3x4xf32>, tensor<?x4xf32, #s0>, tensor<?x4xf32, #p3>)
    attributes {kiln_kernel.num_symbols = 1 : i64} {
  %n = kiln_graph.size #twice : tensor<f32>
  %0 = kiln_graph.index %x[%i] {indexed_dims = array<i64: 0>} : tensor<?x4xf32, #s0>, tensor<3xi64> -> tensor<3x4xf32>
  %1 = kiln_graph.mul %0, %n : tensor<3x4xf32>, tensor<f32> -> tensor<3x4xf32>
  %2 = kiln_graph.cumsum %x {dim = 0 : i64} : tensor<?x4xf32, #s0> -> tensor<?x4xf32, #s0>
  %3 = kiln_graph.pad %x {low = array<i64: 1, 0>, high = array<i64: 2, 0>, value = 0.0 : f64} : tensor<?x4xf32, #s0> -> tensor<?x4xf32, #p3>
  return %1, %2, %3 : tensor<3x4xf32>, tensor<?x4xf32, #s0>, tensor<?x4xf32, #p3>
}

// -----

// A convolution with a symbolic batch stays one op, its destination sized
// from the symbol.
// CHECK-LABEL: func.func @conv2d_batch
// CHECK-SAME: (%[[X:[a-z0-9_]+]]: tensor<?x3x8x8xf32>, %[[W:[a-z0-9_]+]]: tensor<4x3x3x3xf32>, %[[S0:[a-z0-9_]+]]: index)
// CHECK: %[[OUT:.*]] = tensor.empty(%[[S0]]) : tensor<?x4x6x6xf32>
// CHECK: kiln_kernel.conv2d %[[X]], %[[W]] into %[[OUT]]
#s0 = affine_map<()[s0] -> (s0)>
func.func @conv2d_batch(%x: tensor<?x3x8x8xf32, #s0>, %w: tensor<4x3x3x3xf32>, %s0: index) -> tensor<?x4x6x6xf32, #s0>
    attributes {kiln_kernel.num_symbols = 1 : i64} {
  %0 = kiln_graph.conv2d %x, %w {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>} : tensor<?x3x8x8xf32, #s0>, tensor<4x3x3x3xf32> -> tensor<?x4x6x6xf32, #s0>
  return %0 : tensor<?x4x6x6xf32, #s0>
}
