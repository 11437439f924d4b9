// RUN: split-file %s %t
// RUN: kiln-import-fx %t/graph.json | FileCheck %s
// RUN: kiln-import-fx %t/grouped.json | FileCheck %s --check-prefix=GROUPED
// RUN: not kiln-import-fx %t/bad_groups.json 2>&1 | FileCheck %s --check-prefix=BAD

// aten.convolution (what Kiln's decomposition leaves: not transposed)
// becomes a pad and kiln_graph.conv2d; a 1-D convolution is a
// 2-D one of height 1 between reshapes.
// CHECK-LABEL: func.func @convolutions
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x8x10xf32>{{.*}}, %[[W:.*]]: tensor<4x3x3x3xf32>{{.*}}, %[[B:.*]]: tensor<4xf32>{{.*}}, %[[S:.*]]: tensor<2x3x20xf32>{{.*}}, %[[V:.*]]: tensor<5x3x3xf32>{{.*}})
// CHECK: %[[P:[0-9]+]] = kiln_graph.pad %[[X]] {high = array<i64: 0, 0, 1, 1>, low = array<i64: 0, 0, 1, 1>, value = 0.000000e+00 : f64} : tensor<2x3x8x10xf32> -> tensor<2x3x10x12xf32>
// CHECK: kiln_graph.conv2d %[[P]], %[[W]] bias %[[B]] {dilations = array<i64: 1, 1>, strides = array<i64: 2, 1>} : tensor<2x3x10x12xf32>, tensor<4x3x3x3xf32>, tensor<4xf32> -> tensor<2x4x4x10xf32>
// CHECK: %[[S4:[0-9]+]] = kiln_graph.reshape %[[S]] : tensor<2x3x20xf32> -> tensor<2x3x1x20xf32>
// CHECK: %[[V4:[0-9]+]] = kiln_graph.reshape %[[V]] : tensor<5x3x3xf32> -> tensor<5x3x1x3xf32>
// CHECK: %[[C:[0-9]+]] = kiln_graph.conv2d %[[S4]], %[[V4]] {dilations = array<i64: 1, 2>, strides = array<i64: 1, 1>} : tensor<2x3x1x20xf32>, tensor<5x3x1x3xf32> -> tensor<2x5x1x16xf32>
// CHECK: kiln_graph.reshape %[[C]] : tensor<2x5x1x16xf32> -> tensor<2x5x16xf32>

// A grouped convolution keeps its groups.
// GROUPED: kiln_graph.conv2d %arg0, %arg1 {dilations = array<i64: 1, 1>, groups = 2 : i64, strides = array<i64: 1, 1>} : tensor<1x4x8x8xf32>, tensor<4x2x3x3xf32> -> tensor<1x4x6x6xf32>
// BAD: groups must divide the output channels, and the input's channels must be the weight's times groups

//--- graph.json
{"version": 1, "name": "convolutions",
 "inputs": [{"name": "x", "shape": [2, 3, 8, 10], "dtype": "float32"},
            {"name": "w", "shape": [4, 3, 3, 3], "dtype": "float32"},
            {"name": "b", "shape": [4], "dtype": "float32"},
            {"name": "s", "shape": [2, 3, 20], "dtype": "float32"},
            {"name": "v", "shape": [5, 3, 3], "dtype": "float32"}],
 "nodes": [
  {"name": "c2", "target": "aten.convolution.default",
   "args": [{"ref": "x", "index": 0}, {"ref": "w", "index": 0}, {"ref": "b", "index": 0}, [2, 1], [1, 1], [1, 1], false, [0, 0], 1], "kwargs": {},
   "outputs": [{"shape": [2, 4, 4, 10], "dtype": "float32"}]},
  {"name": "c1", "target": "aten.convolution.default",
   "args": [{"ref": "s", "index": 0}, {"ref": "v", "index": 0}, null, [1], [0], [2], false, [0], 1], "kwargs": {},
   "outputs": [{"shape": [2, 5, 16], "dtype": "float32"}]}],
 "outputs": [{"ref": "c2", "index": 0}, {"ref": "c1", "index": 0}]}

//--- grouped.json
{"version": 1, "name": "grouped",
 "inputs": [{"name": "x", "shape": [1, 4, 8, 8], "dtype": "float32"},
            {"name": "w", "shape": [4, 2, 3, 3], "dtype": "float32"}],
 "nodes": [
  {"name": "c", "target": "aten.convolution.default",
   "args": [{"ref": "x", "index": 0}, {"ref": "w", "index": 0}, null, [1, 1], [0, 0], [1, 1], false, [0, 0], 2], "kwargs": {},
   "outputs": [{"shape": [1, 4, 6, 6], "dtype": "float32"}]}],
 "outputs": [{"ref": "c", "index": 0}]}

//--- bad_groups.json
{"version": 1, "name": "bad_groups",
 "inputs": [{"name": "x", "shape": [1, 4, 8, 8], "dtype": "float32"},
            {"name": "w", "shape": [4, 2, 3, 3], "dtype": "float32"}],
 "nodes": [
  {"name": "c", "target": "aten.convolution.default",
   "args": [{"ref": "x", "index": 0}, {"ref": "w", "index": 0}, null, [1, 1], [0, 0], [1, 1], false, [0, 0], 3], "kwargs": {},
   "outputs": [{"shape": [1, 4, 6, 6], "dtype": "float32"}]}],
 "outputs": [{"ref": "c", "index": 0}]}
