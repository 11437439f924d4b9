// RUN: split-file %s %t
// RUN: kiln-import-fx %t/graph.json | FileCheck %s
// RUN: not kiln-import-fx %t/literal.json 2>&1 | FileCheck %s --check-prefix=LITERAL
// RUN: not kiln-import-fx %t/types.json 2>&1 | FileCheck %s --check-prefix=TYPES
// RUN: not kiln-import-fx %t/twice.json 2>&1 | FileCheck %s --check-prefix=TWICE

// Graph output 2 (result 1: the None output is not a result) is input 0's
// new value.
// CHECK-LABEL: func.func @step
// CHECK-SAME: kiln_graph.input_writes = [array<i64: 1, 0>]

// LITERAL: error: every input write names a tensor output and an input of the graph by index
// TYPES: error: output 1 ('tensor<4xf32>') cannot be the new value of input 1 ('tensor<2xf32>'): their types differ
// TWICE: error: input 0 is written more than once

//--- graph.json
{"version": 1, "name": "step",
 "inputs": [{"name": "x", "shape": [4], "dtype": "float32"}],
 "nodes": [{"name": "y", "target": "aten.add.Tensor", "args": [{"ref": "x", "index": 0}, 1.0], "kwargs": {},
            "outputs": [{"shape": [4], "dtype": "float32"}]}],
 "outputs": [{"ref": "x", "index": 0}, null, {"ref": "y", "index": 0}],
 "input_writes": [{"output": 2, "input": 0}]}
//--- literal.json
{"version": 1, "name": "step",
 "inputs": [{"name": "x", "shape": [4], "dtype": "float32"}],
 "nodes": [],
 "outputs": [null, {"ref": "x", "index": 0}],
 "input_writes": [{"output": 0, "input": 0}]}
//--- types.json
{"version": 1, "name": "step",
 "inputs": [{"name": "x", "shape": [4], "dtype": "float32"}, {"name": "z", "shape": [2], "dtype": "float32"}],
 "nodes": [],
 "outputs": [{"ref": "z", "index": 0}, {"ref": "x", "index": 0}],
 "input_writes": [{"output": 1, "input": 1}]}
//--- twice.json
{"version": 1, "name": "step",
 "inputs": [{"name": "x", "shape": [4], "dtype": "float32"}],
 "nodes": [],
 "outputs": [{"ref": "x", "index": 0}, {"ref": "x", "index": 0}],
 "input_writes": [{"output": 0, "input": 0}, {"output": 1, "input": 0}]}
