// The importer trusts nothing in the graph JSON: references, names, sizes
// and integer scalars are checked, and integers stay exact 64-bit values.
// RUN: split-file %s %t
// RUN: not kiln-import-fx %t/negative-output.json 2>&1 | FileCheck %s --check-prefix=NEGATIVE-OUTPUT
// RUN: not kiln-import-fx %t/negative-ref.json 2>&1 | FileCheck %s --check-prefix=NEGATIVE-REF
// RUN: not kiln-import-fx %t/duplicate-node.json 2>&1 | FileCheck %s --check-prefix=DUPLICATE-NODE
// RUN: not kiln-import-fx %t/duplicate-input.json 2>&1 | FileCheck %s --check-prefix=DUPLICATE-INPUT
// RUN: not kiln-import-fx %t/unnamed-node.json 2>&1 | FileCheck %s --check-prefix=UNNAMED
// RUN: not kiln-import-fx %t/unnamed-input.json 2>&1 | FileCheck %s --check-prefix=UNNAMED-INPUT
// RUN: not kiln-import-fx %t/huge.json 2>&1 | FileCheck %s --check-prefix=HUGE
// RUN: kiln-import-fx %t/exact.json | FileCheck %s --check-prefix=EXACT

// NEGATIVE-OUTPUT: error: graph output refers to unknown value 'x'
// NEGATIVE-REF: "relu"{{.*}}: error: aten.relu.default: 'x' has no result -1
// DUPLICATE-NODE: "relu"{{.*}}: error: aten.neg.default: the graph defines 'relu' twice
// DUPLICATE-INPUT: "x"{{.*}}: error: the graph has two inputs named 'x'
// UNNAMED: error: aten.relu.default: node has no name
// UNNAMED-INPUT: error: input 0 has no name
// HUGE: "x"{{.*}}: error: the shape has more bytes than an int64 counts
// 2**53 + 1 and the largest int64 survive: a double would round both.
// EXACT: dense<9007199254740993> : tensor<2xi64>
// EXACT: dense<9223372036854775807> : tensor<i64>

//--- negative-output.json
{"version": 1, "name": "g",
 "inputs": [{"name": "x", "shape": [2], "dtype": "float32"}],
 "nodes": [],
 "outputs": [{"ref": "x", "index": -1}]}

//--- negative-ref.json
{"version": 1, "name": "g",
 "inputs": [{"name": "x", "shape": [2], "dtype": "float32"}],
 "nodes": [{"name": "relu", "target": "aten.relu.default", "args": [{"ref": "x", "index": -1}],
            "kwargs": {}, "outputs": [{"shape": [2], "dtype": "float32"}]}],
 "outputs": [{"ref": "relu", "index": 0}]}

//--- duplicate-node.json
{"version": 1, "name": "g",
 "inputs": [{"name": "x", "shape": [2], "dtype": "float32"}],
 "nodes": [{"name": "relu", "target": "aten.relu.default", "args": [{"ref": "x", "index": 0}],
            "kwargs": {}, "outputs": [{"shape": [2], "dtype": "float32"}]},
           {"name": "relu", "target": "aten.neg.default", "args": [{"ref": "x", "index": 0}],
            "kwargs": {}, "outputs": [{"shape": [2], "dtype": "float32"}]}],
 "outputs": [{"ref": "relu", "index": 0}]}

//--- duplicate-input.json
{"version": 1, "name": "g",
 "inputs": [{"name": "x", "shape": [2], "dtype": "float32"}, {"name": "x", "shape": [3], "dtype": "float32"}],
 "nodes": [],
 "outputs": [{"ref": "x", "index": 0}]}

//--- unnamed-node.json
{"version": 1, "name": "g",
 "inputs": [{"name": "x", "shape": [2], "dtype": "float32"}],
 "nodes": [{"target": "aten.relu.default", "args": [{"ref": "x", "index": 0}],
            "kwargs": {}, "outputs": [{"shape": [2], "dtype": "float32"}]}],
 "outputs": [{"ref": "x", "index": 0}]}

//--- unnamed-input.json
{"version": 1, "name": "g",
 "inputs": [{"shape": [2], "dtype": "float32"}],
 "nodes": [],
 "outputs": []}

//--- huge.json
{"version": 1, "name": "g",
 "inputs": [{"name": "x", "shape": [4294967296, 4294967296], "dtype": "float32"}],
 "nodes": [],
 "outputs": [{"ref": "x", "index": 0}]}

//--- exact.json
{"version": 1, "name": "g",
 "inputs": [],
 "nodes": [{"name": "full", "target": "aten.full.default", "args": [[2], 9007199254740993],
            "kwargs": {"dtype": "int64"}, "outputs": [{"shape": [2], "dtype": "int64"}]},
           {"name": "big", "target": "aten.full.default", "args": [[], 9223372036854775807],
            "kwargs": {"dtype": "int64"}, "outputs": [{"shape": [], "dtype": "int64"}]}],
 "outputs": [{"ref": "full", "index": 0}, {"ref": "big", "index": 0}]}
