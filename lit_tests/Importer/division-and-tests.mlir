// RUN: split-file %s %t
// RUN: kiln-import-fx %t/graph.json | FileCheck %s

// div with a rounding mode and floor_divide are div_round; an integer tensor
// divisor gets a nonzero assert (ATen raises for it); isnan is x != x;
// empty is zeros; atan2 of integers divides in the promoted float type.
// CHECK-LABEL: func.func @division
// CHECK-SAME: (%[[X:.*]]: tensor<4xf32>{{.*}}, %[[I:.*]]: tensor<4xi64>{{.*}})
// CHECK: kiln_graph.div_round %[[X]], %[[X]] {rounding_mode = #kiln_graph.rounding_mode<trunc>} : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
// CHECK: kiln_graph.ne %[[I]], %{{.*}} : tensor<4xi64>, tensor<i64> -> tensor<4xi1>
// CHECK: kiln_graph.assert %{{.*}} {message = "ZeroDivisionError in aten.div.Tensor_mode
// CHECK-NEXT: kiln_graph.div_round %[[I]], %[[I]] {rounding_mode = #kiln_graph.rounding_mode<floor>} : tensor<4xi64>, tensor<4xi64> -> tensor<4xi64>
// CHECK: kiln_graph.div_round %[[I]], %{{.*}} {rounding_mode = #kiln_graph.rounding_mode<floor>} : tensor<4xi64>, tensor<i64> -> tensor<4xi64>
// CHECK: kiln_graph.div %[[X]], %[[X]] : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
// CHECK: kiln_graph.ne %[[X]], %[[X]] : tensor<4xf32>, tensor<4xf32> -> tensor<4xi1>
// CHECK: kiln_graph.constant dense<0.000000e+00> : tensor<2x3xf32>
// CHECK: %[[F:.*]] = kiln_graph.convert %[[I]] : tensor<4xi64> -> tensor<4xf32>
// CHECK: kiln_graph.atan2 %[[F]], %[[X]] : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
// CHECK: return

//--- graph.json
{"version": 1, "name": "division",
 "inputs": [{"name": "x", "shape": [4], "dtype": "float32"},
            {"name": "i", "shape": [4], "dtype": "int64"}],
 "nodes": [
  {"name": "trunc", "target": "aten.div.Tensor_mode", "args": [{"ref": "x", "index": 0}, {"ref": "x", "index": 0}], "kwargs": {"rounding_mode": "trunc"},
   "outputs": [{"shape": [4], "dtype": "float32"}]},
  {"name": "floor", "target": "aten.div.Tensor_mode", "args": [{"ref": "i", "index": 0}, {"ref": "i", "index": 0}], "kwargs": {"rounding_mode": "floor"},
   "outputs": [{"shape": [4], "dtype": "int64"}]},
  {"name": "fd", "target": "aten.floor_divide.default", "args": [{"ref": "i", "index": 0}, 3], "kwargs": {},
   "outputs": [{"shape": [4], "dtype": "int64"}]},
  {"name": "true", "target": "aten.div.Tensor_mode", "args": [{"ref": "x", "index": 0}, {"ref": "x", "index": 0}], "kwargs": {"rounding_mode": null},
   "outputs": [{"shape": [4], "dtype": "float32"}]},
  {"name": "nan", "target": "aten.isnan.default", "args": [{"ref": "x", "index": 0}], "kwargs": {},
   "outputs": [{"shape": [4], "dtype": "bool"}]},
  {"name": "e", "target": "aten.empty.memory_format", "args": [[2, 3]], "kwargs": {"dtype": "float32"},
   "outputs": [{"shape": [2, 3], "dtype": "float32"}]},
  {"name": "at", "target": "aten.atan2.default", "args": [{"ref": "i", "index": 0}, {"ref": "x", "index": 0}], "kwargs": {},
   "outputs": [{"shape": [4], "dtype": "float32"}]}],
 "outputs": [{"ref": "trunc", "index": 0}, {"ref": "floor", "index": 0}, {"ref": "fd", "index": 0},
             {"ref": "true", "index": 0}, {"ref": "nan", "index": 0}, {"ref": "e", "index": 0},
             {"ref": "at", "index": 0}]}
