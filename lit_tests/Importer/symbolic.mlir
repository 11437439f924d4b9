// RUN: split-file %s %t
// RUN: kiln-import-fx %t/graph.json | FileCheck %s
// RUN: not kiln-import-fx %t/unsupported.json 2>&1 | FileCheck %s --check-prefix=REFUSED
// RUN: not kiln-import-fx %t/bad-size.json 2>&1 | FileCheck %s --check-prefix=BAD-SIZE
// RUN: kiln-import-fx %t/values.json | FileCheck %s --check-prefix=VALUES

// Dynamo's symbolic sizes: shapes hold size expressions over the graph's
// symbols (["s", i], sums, products, floor division by constants), and the
// symbols' names and ranges become the function's kiln_graph.symbols.
// CHECK-DAG: #[[BS:.*]] = affine_map<()[s0, s1] -> (s0, s1 + 1)>
// CHECK-DAG: #[[P:.*]] = affine_map<()[s0, s1] -> (s0 * (s1 + 1))>
// CHECK-LABEL: func.func @dynamic
// CHECK-SAME: (%[[X:.*]]: tensor<?x?x8xf32, #[[BS]]>{{.*}}, %[[W:.*]]: tensor<8x4xf32>{{.*}}) -> tensor<?x4xf32, #[[P]]>
// CHECK-SAME: kiln_graph.symbols = [{max = 64 : i64, min = 2 : i64, name = "s77"}, {max = 9223372036854775807 : i64, min = 0 : i64, name = "s27"}]
// CHECK: %[[V:.*]] = kiln_graph.reshape %[[X]] : tensor<?x?x8xf32, #[[BS]]> -> tensor<?x8xf32, #[[P]]>
// CHECK: %[[MM:.*]] = kiln_graph.matmul %[[V]], %[[W]] : tensor<?x8xf32, #[[P]]>, tensor<8x4xf32> -> tensor<?x4xf32, #[[P]]>
// CHECK: kiln_graph.relu %[[MM]] : tensor<?x4xf32, #[[P]]> -> tensor<?x4xf32, #[[P]]>

// An op whose lowering needs static shapes is refused at the node, naming it.
// REFUSED: error: aten.scatter_add.default: symbolic sizes are not supported for this op yet

// SymInts as values: the bound of an index check on a symbolic dim, and a
// scalar operand, are kiln_graph.size ops (0-d i64) over the symbols; the
// check's message names Dynamo's symbol.
// VALUES-DAG: #[[S0:.*]] = affine_map<()[s0] -> (s0)>
// VALUES-DAG: #[[TWICE:.*]] = affine_map<()[s0] -> (s0 * 2)>
// VALUES-LABEL: func.func @values
// VALUES: %[[N:.*]] = kiln_graph.size #[[S0]] : tensor<i64>
// VALUES: kiln_graph.lt %{{.*}}, %[[N]]
// VALUES: kiln_graph.assert {{.*}} {kind = #kiln_graph.check_kind<index>, message = "index out of range in aten.index_select.default (node index_select) at {{.*}}: every index must be in [0, s77)"}
// VALUES: kiln_graph.index
// VALUES: %[[F:.*]] = kiln_graph.size #[[TWICE]] : tensor<f32>
// VALUES: kiln_graph.mul %{{.*}}, %[[F]]

// BAD-SIZE: a dim must be a non-negative integer or a size expression over the graph's symbols

//--- graph.json
{"version": 1, "name": "dynamic",
 "symbols": [{"name": "s77", "min": 2, "max": 64}, {"name": "s27"}],
 "inputs": [{"name": "x", "shape": [["s", 0], ["+", ["s", 1], 1], 8], "dtype": "float32"},
            {"name": "w", "shape": [8, 4], "dtype": "float32"}],
 "nodes": [
  {"name": "view", "target": "aten.view.default",
   "args": [{"ref": "x", "index": 0}, [{"size": ["*", ["s", 0], ["+", ["s", 1], 1]]}, 8]],
   "kwargs": {}, "outputs": [{"shape": [["*", ["s", 0], ["+", ["s", 1], 1]], 8], "dtype": "float32"}]},
  {"name": "mm", "target": "aten.mm.default",
   "args": [{"ref": "view", "index": 0}, {"ref": "w", "index": 0}],
   "kwargs": {}, "outputs": [{"shape": [["*", ["s", 0], ["+", ["s", 1], 1]], 4], "dtype": "float32"}]},
  {"name": "relu", "target": "aten.relu.default", "args": [{"ref": "mm", "index": 0}],
   "kwargs": {}, "outputs": [{"shape": [["*", ["s", 0], ["+", ["s", 1], 1]], 4], "dtype": "float32"}]}],
 "outputs": [{"ref": "relu", "index": 0}]}

//--- unsupported.json
{"version": 1, "name": "unsupported", "symbols": [{"name": "s0", "min": 2}],
 "inputs": [{"name": "x", "shape": [["s", 0], 4], "dtype": "float32"}],
 "nodes": [
  {"name": "scatter_add", "target": "aten.scatter_add.default",
   "args": [{"ref": "x", "index": 0}, 0, {"ref": "x", "index": 0}, {"ref": "x", "index": 0}],
   "kwargs": {}, "outputs": [{"shape": [["s", 0], 4], "dtype": "float32"}]}],
 "outputs": [{"ref": "scatter_add", "index": 0}]}

//--- bad-size.json
{"version": 1, "name": "bad", "symbols": [{"name": "s0"}],
 "inputs": [{"name": "x", "shape": [["//", ["s", 0], ["s", 0]]], "dtype": "float32"}],
 "nodes": [], "outputs": [{"ref": "x", "index": 0}]}

//--- values.json
{"version": 1, "name": "values", "symbols": [{"name": "s77", "min": 2}],
 "inputs": [{"name": "x", "shape": [["s", 0], 4], "dtype": "float32"},
            {"name": "i", "shape": [3], "dtype": "int64"}],
 "nodes": [
  {"name": "index_select", "target": "aten.index_select.default",
   "args": [{"ref": "x", "index": 0}, 0, {"ref": "i", "index": 0}],
   "kwargs": {}, "outputs": [{"shape": [3, 4], "dtype": "float32"}]},
  {"name": "mul", "target": "aten.mul.Tensor",
   "args": [{"ref": "index_select", "index": 0}, {"size": ["*", ["s", 0], 2]}],
   "kwargs": {}, "outputs": [{"shape": [3, 4], "dtype": "float32"}]}],
 "outputs": [{"ref": "mul", "index": 0}]}
