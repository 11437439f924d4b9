// The whole compiler on one FX graph: JSON -> kiln_graph -> plan, and JSON ->
// artifact with kiln-compile.
// RUN: split-file %s %t
// RUN: kiln-import-fx %t/graph.json | kiln-opt --kiln-attach-target=target=cpu:x86-64-v4 --kiln-graph-to-plan | FileCheck %s
// RUN: kiln-compile %t/graph.json -o %t/graph.kiln | FileCheck %s --check-prefix=COMPILE

// CHECK-LABEL: func.func @graph_0
// CHECK-SAME: kiln_plan.entry
// CHECK: %[[OUT:.*]] = kiln_plan.alloc : memref<4x3xf32>
// CHECK: kiln_plan.launch @kernel_0_matmul[1] (%{{.*}}, %{{.*}}, %{{.*}}, %[[OUT]])
// CHECK: return %[[OUT]]
// CHECK: func.func private @kernel_0_matmul
// CHECK: kiln_graph.matmul {{.*}} {transpose_rhs = true}
// CHECK: kiln_graph.add
// CHECK: kiln_graph.relu

// COMPILE: 1 kernels
// COMPILE: kernel_0_matmul [1 workgroups]: matmul add relu  (model.py:12, ...)

//--- graph.json
{"version": 1, "name": "graph_0",
 "inputs": [{"name": "w", "shape": [3, 5], "dtype": "float32"},
            {"name": "b", "shape": [3], "dtype": "float32"},
            {"name": "x", "shape": [4, 5], "dtype": "float32"}],
 "nodes": [
  {"name": "t", "target": "aten.permute.default", "args": [{"ref": "w"}, [1, 0]], "kwargs": {},
   "outputs": [{"shape": [5, 3], "dtype": "float32"}], "loc": {"file": "model.py", "line": 12}},
  {"name": "addmm", "target": "aten.addmm.default", "args": [{"ref": "b"}, {"ref": "x"}, {"ref": "t"}], "kwargs": {},
   "outputs": [{"shape": [4, 3], "dtype": "float32"}], "loc": {"file": "model.py", "line": 12}},
  {"name": "relu", "target": "aten.relu.default", "args": [{"ref": "addmm"}], "kwargs": {},
   "outputs": [{"shape": [4, 3], "dtype": "float32"}], "loc": {"file": "model.py", "line": 13}}],
 "outputs": [{"ref": "relu"}]}
