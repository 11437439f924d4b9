// RUN: split-file %s %t
// RUN: kiln-import-fx %t/graph.json | FileCheck %s --check-prefix=LINEAR
// RUN: kiln-import-fx %t/scaled.json | FileCheck %s --check-prefix=SCALED

// nn.Linear as Dynamo produces it: addmm(bias, x, t(weight)). The importer
// keeps the permute; canonicalization folds it into the matmul later.
// LINEAR-LABEL: func.func @linear
// LINEAR-SAME: (%[[X:.*]]: tensor<2x4xf32>{{.*}}, %[[W:.*]]: tensor<3x4xf32>{{.*}}, %[[B:.*]]: tensor<3xf32>{{.*}}) -> tensor<2x3xf32>
// LINEAR-NEXT: %[[T:.*]] = kiln_graph.permute %[[W]] {dims = array<i64: 1, 0>} : tensor<3x4xf32> -> tensor<4x3xf32>
// LINEAR-NEXT: %[[MM:.*]] = kiln_graph.matmul %[[X]], %[[T]] : tensor<2x4xf32>, tensor<4x3xf32> -> tensor<2x3xf32>
// LINEAR-NEXT: %[[ADD:.*]] = kiln_graph.add %[[MM]], %[[B]] : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xf32>
// LINEAR-NEXT: %[[RELU:.*]] = kiln_graph.relu %[[ADD]] : tensor<2x3xf32> -> tensor<2x3xf32>
// A null graph output produces no result.
// LINEAR-NEXT: return %[[RELU]] : tensor<2x3xf32>

// beta and alpha other than 1 scale the addend and the product.
// SCALED-LABEL: func.func @scaled
// SCALED: %[[MM:.*]] = kiln_graph.matmul
// SCALED: %[[BETA:.*]] = kiln_graph.constant dense<5.000000e-01> : tensor<f32>
// SCALED: %[[SB:.*]] = kiln_graph.mul %{{.*}}, %[[BETA]] : tensor<3xf32>, tensor<f32> -> tensor<3xf32>
// SCALED: %[[ALPHA:.*]] = kiln_graph.constant dense<2.000000e+00> : tensor<f32>
// SCALED: %[[SP:.*]] = kiln_graph.mul %[[MM]], %[[ALPHA]] : tensor<2x3xf32>, tensor<f32> -> tensor<2x3xf32>
// SCALED: kiln_graph.add %[[SP]], %[[SB]]

//--- graph.json
{"version": 1, "name": "linear",
 "inputs": [{"name": "x", "shape": [2, 4], "dtype": "float32"},
            {"name": "w", "shape": [3, 4], "dtype": "float32"},
            {"name": "b", "shape": [3], "dtype": "float32"}],
 "nodes": [
  {"name": "t", "target": "aten.t.default", "args": [{"ref": "w", "index": 0}], "kwargs": {},
   "outputs": [{"shape": [4, 3], "dtype": "float32"}], "loc": null},
  {"name": "addmm", "target": "aten.addmm.default",
   "args": [{"ref": "b", "index": 0}, {"ref": "x", "index": 0}, {"ref": "t", "index": 0}], "kwargs": {},
   "outputs": [{"shape": [2, 3], "dtype": "float32"}], "loc": null},
  {"name": "relu", "target": "aten.relu.default", "args": [{"ref": "addmm", "index": 0}], "kwargs": {},
   "outputs": [{"shape": [2, 3], "dtype": "float32"}], "loc": null}
 ],
 "outputs": [{"ref": "relu", "index": 0}, null]}

//--- scaled.json
{"version": 1, "name": "scaled",
 "inputs": [{"name": "x", "shape": [2, 4], "dtype": "float32"},
            {"name": "w", "shape": [4, 3], "dtype": "float32"},
            {"name": "b", "shape": [3], "dtype": "float32"}],
 "nodes": [
  {"name": "addmm", "target": "aten.addmm.default",
   "args": [{"ref": "b", "index": 0}, {"ref": "x", "index": 0}, {"ref": "w", "index": 0}], "kwargs": {"beta": 0.5, "alpha": 2},
   "outputs": [{"shape": [2, 3], "dtype": "float32"}]}
 ],
 "outputs": [{"ref": "addmm", "index": 0}]}
