// RUN: split-file %s %t
// RUN: kiln-import-fx %t/graph.json | FileCheck %s

// Operands are converted to the node's result dtype (from the FX metadata);
// comparisons convert to the operands' common type and produce i1.
// CHECK-LABEL: func.func @promotion
// CHECK-SAME: (%[[I:.*]]: tensor<4xi64>{{.*}}, %[[F:.*]]: tensor<4xf32>{{.*}}, %[[M:.*]]: tensor<4xi1>{{.*}})

// int64 + 0.5 -> float32.
// CHECK-NEXT: %[[IF:.*]] = kiln_graph.convert %[[I]] : tensor<4xi64> -> tensor<4xf32>
// CHECK-NEXT: %[[HALF:.*]] = kiln_graph.constant dense<5.000000e-01> : tensor<f32>
// CHECK-NEXT: %[[ADD:.*]] = kiln_graph.add %[[IF]], %[[HALF]] : tensor<4xf32>, tensor<f32> -> tensor<4xf32>

// int64 > 1.5 compares in float32.
// CHECK-NEXT: %[[IF2:.*]] = kiln_graph.convert %[[I]] : tensor<4xi64> -> tensor<4xf32>
// CHECK-NEXT: %[[C15:.*]] = kiln_graph.constant dense<1.500000e+00> : tensor<f32>
// CHECK-NEXT: %[[GT:.*]] = kiln_graph.gt %[[IF2]], %[[C15]] : tensor<4xf32>, tensor<f32> -> tensor<4xi1>

// int64 == 2 stays in int64.
// CHECK-NEXT: %[[C2:.*]] = kiln_graph.constant dense<2> : tensor<i64>
// CHECK-NEXT: %[[EQ:.*]] = kiln_graph.eq %[[I]], %[[C2]] : tensor<4xi64>, tensor<i64> -> tensor<4xi1>

// int64 tensor < float32 tensor compares in float32.
// CHECK-NEXT: %[[IF3:.*]] = kiln_graph.convert %[[I]] : tensor<4xi64> -> tensor<4xf32>
// CHECK-NEXT: %[[LT:.*]] = kiln_graph.lt %[[IF3]], %[[F]] : tensor<4xf32>, tensor<4xf32> -> tensor<4xi1>

// bool != bool needs no conversion.
// CHECK-NEXT: %[[NE:.*]] = kiln_graph.ne %[[M]], %[[M]] : tensor<4xi1>, tensor<4xi1> -> tensor<4xi1>

// bool >= True compares bools.
// CHECK-NEXT: %[[TRUE:.*]] = kiln_graph.constant dense<true> : tensor<i1>
// CHECK-NEXT: %[[GE:.*]] = kiln_graph.ge %[[M]], %[[TRUE]] : tensor<4xi1>, tensor<i1> -> tensor<4xi1>

// sub with alpha: f - alpha * float(i).
// CHECK-NEXT: %[[IF4:.*]] = kiln_graph.convert %[[I]] : tensor<4xi64> -> tensor<4xf32>
// CHECK-NEXT: %[[ALPHA:.*]] = kiln_graph.constant dense<2.000000e+00> : tensor<f32>
// CHECK-NEXT: %[[SCALED:.*]] = kiln_graph.mul %[[IF4]], %[[ALPHA]] : tensor<4xf32>, tensor<f32> -> tensor<4xf32>
// CHECK-NEXT: %[[SUB:.*]] = kiln_graph.sub %[[F]], %[[SCALED]] : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>

// where(bool, int64, 0.0) -> float32; the condition stays i1.
// CHECK-NEXT: %[[IF5:.*]] = kiln_graph.convert %[[I]] : tensor<4xi64> -> tensor<4xf32>
// CHECK-NEXT: %[[ZERO:.*]] = kiln_graph.constant dense<0.000000e+00> : tensor<f32>
// CHECK-NEXT: %[[WHERE:.*]] = kiln_graph.where %[[M]], %[[IF5]], %[[ZERO]] : tensor<4xi1>, tensor<4xf32>, tensor<f32> -> tensor<4xf32>

// bool * 3 -> int64.
// CHECK-NEXT: %[[MI:.*]] = kiln_graph.convert %[[M]] : tensor<4xi1> -> tensor<4xi64>
// CHECK-NEXT: %[[C3:.*]] = kiln_graph.constant dense<3> : tensor<i64>
// CHECK-NEXT: %[[MUL:.*]] = kiln_graph.mul %[[MI]], %[[C3]] : tensor<4xi64>, tensor<i64> -> tensor<4xi64>

// int64 / 2 is true division in float32.
// CHECK-NEXT: %[[IF6:.*]] = kiln_graph.convert %[[I]] : tensor<4xi64> -> tensor<4xf32>
// CHECK-NEXT: %[[TWO:.*]] = kiln_graph.constant dense<2.000000e+00> : tensor<f32>
// CHECK-NEXT: %[[DIV:.*]] = kiln_graph.div %[[IF6]], %[[TWO]] : tensor<4xf32>, tensor<f32> -> tensor<4xf32>

// CHECK-NEXT: return %[[ADD]], %[[GT]], %[[EQ]], %[[LT]], %[[NE]], %[[GE]], %[[SUB]], %[[WHERE]], %[[MUL]], %[[DIV]] :

//--- graph.json
{"version": 1, "name": "promotion",
 "inputs": [{"name": "i", "shape": [4], "dtype": "int64"},
            {"name": "f", "shape": [4], "dtype": "float32"},
            {"name": "m", "shape": [4], "dtype": "bool"}],
 "nodes": [
  {"name": "add", "target": "aten.add.Tensor", "args": [{"ref": "i", "index": 0}, 0.5], "kwargs": {},
   "outputs": [{"shape": [4], "dtype": "float32"}]},
  {"name": "gt", "target": "aten.gt.Scalar", "args": [{"ref": "i", "index": 0}, 1.5], "kwargs": {},
   "outputs": [{"shape": [4], "dtype": "bool"}]},
  {"name": "eq", "target": "aten.eq.Scalar", "args": [{"ref": "i", "index": 0}, 2], "kwargs": {},
   "outputs": [{"shape": [4], "dtype": "bool"}]},
  {"name": "lt", "target": "aten.lt.Tensor", "args": [{"ref": "i", "index": 0}, {"ref": "f", "index": 0}], "kwargs": {},
   "outputs": [{"shape": [4], "dtype": "bool"}]},
  {"name": "ne", "target": "aten.ne.Tensor", "args": [{"ref": "m", "index": 0}, {"ref": "m", "index": 0}], "kwargs": {},
   "outputs": [{"shape": [4], "dtype": "bool"}]},
  {"name": "ge", "target": "aten.ge.Scalar", "args": [{"ref": "m", "index": 0}, true], "kwargs": {},
   "outputs": [{"shape": [4], "dtype": "bool"}]},
  {"name": "sub", "target": "aten.sub.Tensor", "args": [{"ref": "f", "index": 0}, {"ref": "i", "index": 0}], "kwargs": {"alpha": 2},
   "outputs": [{"shape": [4], "dtype": "float32"}]},
  {"name": "where", "target": "aten.where.self", "args": [{"ref": "m", "index": 0}, {"ref": "i", "index": 0}, 0.0], "kwargs": {},
   "outputs": [{"shape": [4], "dtype": "float32"}]},
  {"name": "mul", "target": "aten.mul.Tensor", "args": [{"ref": "m", "index": 0}, 3], "kwargs": {},
   "outputs": [{"shape": [4], "dtype": "int64"}]},
  {"name": "div", "target": "aten.div.Tensor", "args": [{"ref": "i", "index": 0}, 2], "kwargs": {},
   "outputs": [{"shape": [4], "dtype": "float32"}]}
 ],
 "outputs": [{"ref": "add", "index": 0}, {"ref": "gt", "index": 0}, {"ref": "eq", "index": 0},
             {"ref": "lt", "index": 0}, {"ref": "ne", "index": 0}, {"ref": "ge", "index": 0},
             {"ref": "sub", "index": 0}, {"ref": "where", "index": 0}, {"ref": "mul", "index": 0},
             {"ref": "div", "index": 0}]}
