// RUN: split-file %s %t
// RUN: kiln-import-fx %t/graph.json | FileCheck %s

// logical_* become comparisons and selects on bools; clamps become maximum
// and minimum with the bounds; rounding an integer tensor is a copy.
// CHECK-LABEL: func.func @logic
// CHECK-SAME: (%[[X:.*]]: tensor<4xf32>{{.*}}, %[[M:.*]]: tensor<4xi1>{{.*}}, %[[I:.*]]: tensor<4xi64>{{.*}})
// logical_not(x): x != 0 first, then == false.
// CHECK: %[[Z:.*]] = kiln_graph.constant dense<0.000000e+00> : tensor<f32>
// CHECK-NEXT: %[[XB:.*]] = kiln_graph.ne %[[X]], %[[Z]] : tensor<4xf32>, tensor<f32> -> tensor<4xi1>
// CHECK-NEXT: %[[F:.*]] = kiln_graph.constant dense<false> : tensor<i1>
// CHECK-NEXT: %[[NOT:.*]] = kiln_graph.eq %[[XB]], %[[F]]
// logical_and(x, m): where(x != 0, m, false).
// CHECK: %[[AND:.*]] = kiln_graph.where %{{.*}}, %[[M]], %{{.*}} : tensor<4xi1>, tensor<4xi1>, tensor<i1> -> tensor<4xi1>
// logical_or(m, m): where(m, true, m).
// CHECK: %[[T:.*]] = kiln_graph.constant dense<true> : tensor<i1>
// CHECK-NEXT: kiln_graph.where %[[M]], %[[T]], %[[M]]
// logical_xor: ne of the truths.
// CHECK: kiln_graph.ne %[[M]], %{{.*}} : tensor<4xi1>, tensor<4xi1> -> tensor<4xi1>
// hardtanh(x) with its default bounds -1 and 1.
// CHECK: %[[LO:.*]] = kiln_graph.constant dense<-1.000000e+00> : tensor<f32>
// CHECK-NEXT: %[[HI:.*]] = kiln_graph.constant dense<1.000000e+00> : tensor<f32>
// CHECK-NEXT: %[[MAX:.*]] = kiln_graph.maximum %[[X]], %[[LO]]
// CHECK-NEXT: kiln_graph.minimum %[[MAX]], %[[HI]]
// clamp_max(x, 0.5): only the upper bound.
// CHECK: kiln_graph.minimum %[[X]], %{{.*}} : tensor<4xf32>, tensor<f32> -> tensor<4xf32>
// floor of an integer tensor.
// CHECK: kiln_graph.clone %[[I]] : tensor<4xi64> -> tensor<4xi64>
// CHECK: return

//--- graph.json
{"version": 1, "name": "logic",
 "inputs": [{"name": "x", "shape": [4], "dtype": "float32"},
            {"name": "m", "shape": [4], "dtype": "bool"},
            {"name": "i", "shape": [4], "dtype": "int64"}],
 "nodes": [
  {"name": "not", "target": "aten.logical_not.default", "args": [{"ref": "x", "index": 0}], "kwargs": {},
   "outputs": [{"shape": [4], "dtype": "bool"}]},
  {"name": "and", "target": "aten.logical_and.default", "args": [{"ref": "x", "index": 0}, {"ref": "m", "index": 0}], "kwargs": {},
   "outputs": [{"shape": [4], "dtype": "bool"}]},
  {"name": "or", "target": "aten.logical_or.default", "args": [{"ref": "m", "index": 0}, {"ref": "m", "index": 0}], "kwargs": {},
   "outputs": [{"shape": [4], "dtype": "bool"}]},
  {"name": "xor", "target": "aten.logical_xor.default", "args": [{"ref": "m", "index": 0}, {"ref": "and", "index": 0}], "kwargs": {},
   "outputs": [{"shape": [4], "dtype": "bool"}]},
  {"name": "ht", "target": "aten.hardtanh.default", "args": [{"ref": "x", "index": 0}], "kwargs": {},
   "outputs": [{"shape": [4], "dtype": "float32"}]},
  {"name": "cmax", "target": "aten.clamp_max.default", "args": [{"ref": "x", "index": 0}, 0.5], "kwargs": {},
   "outputs": [{"shape": [4], "dtype": "float32"}]},
  {"name": "fl", "target": "aten.floor.default", "args": [{"ref": "i", "index": 0}], "kwargs": {},
   "outputs": [{"shape": [4], "dtype": "int64"}]}],
 "outputs": [{"ref": "not", "index": 0}, {"ref": "xor", "index": 0}, {"ref": "ht", "index": 0},
             {"ref": "cmax", "index": 0}, {"ref": "fl", "index": 0}, {"ref": "or", "index": 0}]}
