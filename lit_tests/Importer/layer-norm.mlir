// RUN: split-file %s %t
// RUN: kiln-import-fx %t/graph.json | FileCheck %s

// native_layer_norm has three results; FX getitem nodes become refs with an
// index. Missing weight and bias become constants of the normalized shape.
// CHECK-LABEL: func.func @norm
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x8xf32>{{.*}}, %[[W:.*]]: tensor<8xf32>{{.*}}) -> (tensor<2x3x8xf32>, tensor<2x3x1xf32>)
// CHECK-NEXT: %[[B0:.*]] = kiln_graph.constant dense<0.000000e+00> : tensor<8xf32>
// CHECK-NEXT: %[[Y:.*]], %[[MEAN:.*]], %[[RSTD:.*]] = kiln_graph.layer_norm %[[X]], %[[W]], %[[B0]] {eps = 1.000000e-05 : f64, normalized_rank = 1 : i64}
// CHECK-SAME: : tensor<2x3x8xf32>, tensor<8xf32>, tensor<8xf32> -> tensor<2x3x8xf32>, tensor<2x3x1xf32>, tensor<2x3x1xf32>
// CHECK-NEXT: %[[W1:.*]] = kiln_graph.constant dense<1.000000e+00> : tensor<3x8xf32>
// CHECK-NEXT: %[[B1:.*]] = kiln_graph.constant dense<0.000000e+00> : tensor<3x8xf32>
// CHECK-NEXT: %[[Y2:.*]], %{{.*}}, %{{.*}} = kiln_graph.layer_norm %[[Y]], %[[W1]], %[[B1]] {{.*}}normalized_rank = 2 : i64}
// CHECK-SAME: -> tensor<2x3x8xf32>, tensor<2x1x1xf32>, tensor<2x1x1xf32>
// getitem(ln, 2) is rstd.
// CHECK-NEXT: %[[SUM:.*]] = kiln_graph.add %[[Y2]], %[[RSTD]] : tensor<2x3x8xf32>, tensor<2x3x1xf32> -> tensor<2x3x8xf32>
// getitem(ln, 1) is the mean.
// CHECK-NEXT: return %[[SUM]], %[[MEAN]] : tensor<2x3x8xf32>, tensor<2x3x1xf32>

//--- graph.json
{"version": 1, "name": "norm",
 "inputs": [{"name": "x", "shape": [2, 3, 8], "dtype": "float32"},
            {"name": "w", "shape": [8], "dtype": "float32"}],
 "nodes": [
  {"name": "ln", "target": "aten.native_layer_norm.default",
   "args": [{"ref": "x", "index": 0}, [8], {"ref": "w", "index": 0}, null, 1e-05], "kwargs": {},
   "outputs": [{"shape": [2, 3, 8], "dtype": "float32"}, {"shape": [2, 3, 1], "dtype": "float32"},
               {"shape": [2, 3, 1], "dtype": "float32"}]},
  {"name": "ln2", "target": "aten.native_layer_norm.default",
   "args": [{"ref": "ln", "index": 0}, [3, 8], null, null, 1e-06], "kwargs": {},
   "outputs": [{"shape": [2, 3, 8], "dtype": "float32"}, {"shape": [2, 1, 1], "dtype": "float32"},
               {"shape": [2, 1, 1], "dtype": "float32"}]},
  {"name": "add", "target": "aten.add.Tensor", "args": [{"ref": "ln2", "index": 0}, {"ref": "ln", "index": 2}], "kwargs": {},
   "outputs": [{"shape": [2, 3, 8], "dtype": "float32"}]}
 ],
 "outputs": [{"ref": "add", "index": 0}, {"ref": "ln", "index": 1}]}
