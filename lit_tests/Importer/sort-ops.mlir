// RUN: split-file %s %t
// RUN: kiln-import-fx %t/graph.json | FileCheck %s
// RUN: not kiln-import-fx %t/k-too-large.json 2>&1 | FileCheck %s --check-prefix=LARGE

// sort (dim and descending positional), sort.stable (keywords only, the
// last dim by default) and topk (a sort keeping the first k, largest first
// by default).
// CHECK-LABEL: func.func @sorts
// CHECK-SAME: (%[[X:.*]]: tensor<4x6xf32>
// CHECK: kiln_graph.sort %[[X]] {descending = true, dim = 0 : i64} : tensor<4x6xf32> -> tensor<4x6xf32>, tensor<4x6xi64>
// CHECK: kiln_graph.sort %[[X]] {dim = 1 : i64} : tensor<4x6xf32> -> tensor<4x6xf32>, tensor<4x6xi64>
// CHECK: kiln_graph.sort %[[X]] {descending = true, dim = 1 : i64, k = 2 : i64} : tensor<4x6xf32> -> tensor<4x2xf32>, tensor<4x2xi64>
// CHECK: kiln_graph.sort %[[X]] {dim = 0 : i64, k = 3 : i64} : tensor<4x6xf32> -> tensor<3x6xf32>, tensor<3x6xi64>

// LARGE: k 7 is out of range for a dim of 6 (ATen raises)

//--- graph.json
{"version": 1, "name": "sorts",
 "inputs": [{"name": "x", "shape": [4, 6], "dtype": "float32"}],
 "nodes": [
  {"name": "s", "target": "aten.sort.default", "args": [{"ref": "x", "index": 0}, 0, true], "kwargs": {},
   "outputs": [{"shape": [4, 6], "dtype": "float32"}, {"shape": [4, 6], "dtype": "int64"}]},
  {"name": "st", "target": "aten.sort.stable", "args": [{"ref": "x", "index": 0}], "kwargs": {"stable": true},
   "outputs": [{"shape": [4, 6], "dtype": "float32"}, {"shape": [4, 6], "dtype": "int64"}]},
  {"name": "top", "target": "aten.topk.default", "args": [{"ref": "x", "index": 0}, 2], "kwargs": {},
   "outputs": [{"shape": [4, 2], "dtype": "float32"}, {"shape": [4, 2], "dtype": "int64"}]},
  {"name": "low", "target": "aten.topk.default", "args": [{"ref": "x", "index": 0}, 3, 0, false], "kwargs": {},
   "outputs": [{"shape": [3, 6], "dtype": "float32"}, {"shape": [3, 6], "dtype": "int64"}]}],
 "outputs": [{"ref": "s", "index": 0}, {"ref": "s", "index": 1}, {"ref": "st", "index": 0},
             {"ref": "st", "index": 1}, {"ref": "top", "index": 0}, {"ref": "top", "index": 1},
             {"ref": "low", "index": 1}]}

//--- k-too-large.json
{"version": 1, "name": "too_large",
 "inputs": [{"name": "x", "shape": [4, 6], "dtype": "float32"}],
 "nodes": [
  {"name": "top", "target": "aten.topk.default", "args": [{"ref": "x", "index": 0}, 7], "kwargs": {},
   "outputs": [{"shape": [4, 7], "dtype": "float32"}, {"shape": [4, 7], "dtype": "int64"}]}],
 "outputs": [{"ref": "top", "index": 0}]}
