// The importer's output must be valid MLIR that kiln-opt can read, with
// each op located at its FX node ("name") and the user's source line.
// (kiln-import-fx prints debug info in the pretty, non-parsable form.)
// RUN: split-file %s %t
// RUN: kiln-import-fx %t/graph.json | kiln-opt --mlir-print-debuginfo --mlir-print-local-scope | FileCheck %s

// CHECK-LABEL: func.func @located
// CHECK: kiln_graph.relu {{.*}} loc("relu"("/home/u/model.py":12:0))
// CHECK: kiln_graph.neg {{.*}} loc("neg")

//--- graph.json
{"version": 1, "name": "located",
 "inputs": [{"name": "x", "shape": [2, 4], "dtype": "float32"}],
 "nodes": [
  {"name": "relu", "target": "aten.relu.default", "args": [{"ref": "x", "index": 0}], "kwargs": {},
   "outputs": [{"shape": [2, 4], "dtype": "float32"}],
   "loc": {"file": "/home/u/model.py", "line": 12, "code": "torch.relu(x)"}},
  {"name": "neg", "target": "aten.neg.default", "args": [{"ref": "relu", "index": 0}], "kwargs": {},
   "outputs": [{"shape": [2, 4], "dtype": "float32"}], "loc": null}
 ],
 "outputs": [{"ref": "neg", "index": 0}]}
