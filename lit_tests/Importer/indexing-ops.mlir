// RUN: split-file %s %t
// RUN: kiln-import-fx %t/graph.json | FileCheck %s

// Creation, padding, bitwise logic and advanced indexing.
// CHECK-LABEL: func.func @indexing
// CHECK-SAME: (%[[X:.*]]: tensor<4x5xf32>{{.*}}, %[[I:.*]]: tensor<2xi32>{{.*}}, %[[B:.*]]: tensor<4x5xi1>{{.*}})
// arange(0.5, 2.0, 0.25) and arange(2, 11, 3): f64 attributes for floats, i64 for integers.
// CHECK-NEXT: kiln_graph.iota {start = 5.000000e-01 : f64, step = 2.500000e-01 : f64} : tensor<6xf32>
// CHECK-NEXT: kiln_graph.iota {start = 2 : i64, step = 3 : i64} : tensor<3xi64>
// constant_pad_nd lists (before, after) from the last dim backwards.
// CHECK-NEXT: kiln_graph.pad %[[X]] {high = array<i64: -1, 2>, low = array<i64: 3, 1>, value = 1.500000e+00 : f64} : tensor<4x5xf32> -> tensor<6x8xf32>
// CHECK-NEXT: kiln_graph.bitwise_and %[[B]], %[[B]]
// CHECK-NEXT: kiln_graph.bitwise_not
// x[:, i]: the index is converted, range-checked against dim 1 (negative
// indices allowed) and gathered.
// CHECK-NEXT: %[[I64:.*]] = kiln_graph.convert %[[I]] : tensor<2xi32> -> tensor<2xi64>
// CHECK: %[[ALL:.*]] = kiln_graph.all
// CHECK-NEXT: kiln_graph.assert %[[ALL]] {kind = #kiln_graph.check_kind<index>, message = "index out of range in aten.index.Tensor (node index) at model.py:7: every index must be in [-5, 5)"}
// CHECK-NEXT: kiln_graph.index %[[X]][%[[I64]]] {indexed_dims = array<i64: 1>} : tensor<4x5xf32>, tensor<2xi64> -> tensor<4x2xf32>

//--- graph.json
{"version": 1, "name": "indexing",
 "inputs": [{"name": "x", "shape": [4, 5], "dtype": "float32"},
            {"name": "i", "shape": [2], "dtype": "int32"},
            {"name": "b", "shape": [4, 5], "dtype": "bool"}],
 "nodes": [
  {"name": "arange_f", "target": "aten.arange.start_step", "args": [0.5, 2.0, 0.25], "kwargs": {"dtype": {"dtype": "float32"}},
   "outputs": [{"shape": [6], "dtype": "float32"}]},
  {"name": "arange_i", "target": "aten.arange.start_step", "args": [2, 11, 3], "kwargs": {},
   "outputs": [{"shape": [3], "dtype": "int64"}]},
  {"name": "pad", "target": "aten.constant_pad_nd.default", "args": [{"ref": "x", "index": 0}, [1, 2, 3, -1], 1.5], "kwargs": {},
   "outputs": [{"shape": [6, 8], "dtype": "float32"}]},
  {"name": "and", "target": "aten.bitwise_and.Tensor", "args": [{"ref": "b", "index": 0}, {"ref": "b", "index": 0}], "kwargs": {},
   "outputs": [{"shape": [4, 5], "dtype": "bool"}]},
  {"name": "not", "target": "aten.bitwise_not.default", "args": [{"ref": "and", "index": 0}], "kwargs": {},
   "outputs": [{"shape": [4, 5], "dtype": "bool"}]},
  {"name": "index", "target": "aten.index.Tensor", "args": [{"ref": "x", "index": 0}, [null, {"ref": "i", "index": 0}]], "kwargs": {},
   "loc": {"file": "model.py", "line": 7},
   "outputs": [{"shape": [4, 2], "dtype": "float32"}]}
 ],
 "outputs": [{"ref": "arange_f", "index": 0}, {"ref": "arange_i", "index": 0}, {"ref": "pad", "index": 0},
             {"ref": "not", "index": 0}, {"ref": "index", "index": 0}]}
