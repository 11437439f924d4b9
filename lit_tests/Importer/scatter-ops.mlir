// RUN: split-file %s %t
// RUN: kiln-import-fx %t/graph.json | FileCheck %s
// RUN: kiln-import-fx %t/deterministic.json | FileCheck %s --check-prefix=ORDERED

// scatter (src larger than the index is sliced to it), scatter_reduce mean
// (a sum over a count, floor divided for integers), index_put of leading
// rows as a scatter of rows, and index_put of another dim as a scatter into
// the flattened input at linear offsets.
// CHECK-LABEL: func.func @scatters
// CHECK-SAME: (%[[X:.*]]: tensor<4x3xi64>{{.*}}, %[[I:.*]]: tensor<2x3xi64>{{.*}}, %[[S:.*]]: tensor<3x3xi64>{{.*}}, %[[R:.*]]: tensor<2xi64>{{.*}})
// CHECK: %[[SRC:.*]] = kiln_graph.slice %[[S]] {dim = 0 : i64, start = 0 : i64, step = 1 : i64} : tensor<3x3xi64> -> tensor<2x3xi64>
// CHECK: kiln_graph.assert %{{.*}} {kind = #kiln_graph.check_kind<index>, message = "index out of range in aten.scatter.src
// CHECK-NEXT: kiln_graph.scatter %[[X]][%[[I]]], %[[SRC]] {dim = 0 : i64} : tensor<4x3xi64>, tensor<2x3xi64>, tensor<2x3xi64> -> tensor<4x3xi64>
// CHECK: %[[SUM:.*]] = kiln_graph.scatter %[[X]][%[[I]]], %{{.*}} {dim = 0 : i64, include_self = false, reduce = #kiln_graph.scatter_reduction<sum>}
// CHECK: %[[COUNT:.*]] = kiln_graph.scatter %{{.*}}[%[[I]]], %{{.*}} {dim = 0 : i64, reduce = #kiln_graph.scatter_reduction<sum>}
// CHECK: %[[SAFE:.*]] = kiln_graph.where
// CHECK: kiln_graph.div_round %[[SUM]], %[[SAFE]] {rounding_mode = #kiln_graph.rounding_mode<floor>}
// x[r] = i with r indexing dim 0: rows r (negatives from the back) in every
// column, x[r[n], c] = i[n, c], so each column's updates stay apart.
// CHECK: %[[ROW:.*]] = kiln_graph.where %{{.*}}, %{{.*}}, %[[R]] : tensor<2xi1>, tensor<2xi64>, tensor<2xi64> -> tensor<2xi64>
// CHECK: kiln_graph.reshape %[[ROW]] : tensor<2xi64> -> tensor<2x1xi64>
// CHECK: %[[ROWS:.*]] = kiln_graph.add %{{.*}}, %{{.*}} : tensor<2x3xi64>, tensor<2x1xi64> -> tensor<2x3xi64>
// CHECK: kiln_graph.scatter %[[X]][%[[ROWS]]], %[[I]] {dim = 0 : i64} : tensor<4x3xi64>, tensor<2x3xi64>, tensor<2x3xi64> -> tensor<4x3xi64>
// x[:, c] = 5 with c indexing dim 1: offsets iota(4) * 3 + c, 4x2 of them.
// CHECK: kiln_graph.iota {start = 0 : i64, step = 1 : i64} : tensor<4xi64>
// CHECK: %[[FLAT:.*]] = kiln_graph.reshape %[[X]] : tensor<4x3xi64> -> tensor<12xi64>
// CHECK: %[[PUT:.*]] = kiln_graph.scatter %[[FLAT]][%{{.*}}], %{{.*}} {dim = 0 : i64} : tensor<12xi64>, tensor<8xi64>, tensor<8xi64> -> tensor<12xi64>
// CHECK: kiln_graph.reshape %[[PUT]] : tensor<12xi64> -> tensor<4x3xi64>

// Under torch.use_deterministic_algorithms(True) the graph says so, and its
// scatters (index_put with accumulate among them) add in order.
// ORDERED-LABEL: func.func @deterministic
// ORDERED: kiln_graph.scatter {{.*}} {dim = 0 : i64, ordered, reduce = #kiln_graph.scatter_reduction<sum>}
// ORDERED: kiln_graph.scatter {{.*}} {dim = 0 : i64, ordered, reduce = #kiln_graph.scatter_reduction<sum>}

//--- graph.json
{"version": 1, "name": "scatters",
 "inputs": [{"name": "x", "shape": [4, 3], "dtype": "int64"},
            {"name": "i", "shape": [2, 3], "dtype": "int64"},
            {"name": "s", "shape": [3, 3], "dtype": "int64"},
            {"name": "r", "shape": [2], "dtype": "int64"}],
 "nodes": [
  {"name": "sc", "target": "aten.scatter.src", "args": [{"ref": "x", "index": 0}, 0, {"ref": "i", "index": 0}, {"ref": "s", "index": 0}], "kwargs": {},
   "outputs": [{"shape": [4, 3], "dtype": "int64"}]},
  {"name": "mean", "target": "aten.scatter_reduce.two", "args": [{"ref": "x", "index": 0}, 0, {"ref": "i", "index": 0}, {"ref": "s", "index": 0}, "mean"], "kwargs": {"include_self": false},
   "outputs": [{"shape": [4, 3], "dtype": "int64"}]},
  {"name": "put", "target": "aten.index_put.default", "args": [{"ref": "x", "index": 0}, [{"ref": "r", "index": 0}], {"ref": "i", "index": 0}], "kwargs": {},
   "outputs": [{"shape": [4, 3], "dtype": "int64"}]},
  {"name": "put_columns", "target": "aten.index_put.default", "args": [{"ref": "x", "index": 0}, [null, {"ref": "r", "index": 0}], {"ref": "r", "index": 0}], "kwargs": {},
   "outputs": [{"shape": [4, 3], "dtype": "int64"}]}],
 "outputs": [{"ref": "sc", "index": 0}, {"ref": "mean", "index": 0}, {"ref": "put", "index": 0}, {"ref": "put_columns", "index": 0}]}

//--- deterministic.json
{"version": 1, "name": "deterministic", "deterministic": true,
 "inputs": [{"name": "x", "shape": [4], "dtype": "float32"},
            {"name": "i", "shape": [6], "dtype": "int64"},
            {"name": "s", "shape": [6], "dtype": "float32"}],
 "nodes": [
  {"name": "add", "target": "aten.scatter_add.default", "args": [{"ref": "x", "index": 0}, 0, {"ref": "i", "index": 0}, {"ref": "s", "index": 0}], "kwargs": {},
   "outputs": [{"shape": [4], "dtype": "float32"}]},
  {"name": "put", "target": "aten.index_put.default", "args": [{"ref": "x", "index": 0}, [{"ref": "i", "index": 0}], {"ref": "s", "index": 0}, true], "kwargs": {},
   "outputs": [{"shape": [4], "dtype": "float32"}]}],
 "outputs": [{"ref": "add", "index": 0}, {"ref": "put", "index": 0}]}
