// RUN: split-file %s %t
// RUN: not kiln-import-fx %t/unsupported.json 2>&1 | FileCheck %s --check-prefix=UNSUPPORTED-OP --implicit-check-not=func.func
// RUN: not kiln-import-fx %t/bad.json 2>&1 | FileCheck %s --check-prefix=BAD-JSON --implicit-check-not=func.func
// RUN: not kiln-import-fx %t/array.json 2>&1 | FileCheck %s --check-prefix=NOT-OBJECT
// RUN: not kiln-import-fx %t/version.json 2>&1 | FileCheck %s --check-prefix=VERSION
// RUN: not kiln-import-fx %t/unknown-ref.json 2>&1 | FileCheck %s --check-prefix=UNKNOWN-REF --implicit-check-not=func.func
// RUN: not kiln-import-fx %t/unknown-output.json 2>&1 | FileCheck %s --check-prefix=UNKNOWN-OUTPUT
// RUN: not kiln-import-fx %t/dtype.json 2>&1 | FileCheck %s --check-prefix=DTYPE
// RUN: not kiln-import-fx %t/shape.json 2>&1 | FileCheck %s --check-prefix=SHAPE
// RUN: not kiln-import-fx %t/no-outputs.json 2>&1 | FileCheck %s --check-prefix=NO-OUTPUTS
// RUN: not kiln-import-fx %t/metadata.json 2>&1 | FileCheck %s --check-prefix=METADATA --implicit-check-not=func.func
// RUN: not kiln-import-fx %t/gelu.json 2>&1 | FileCheck %s --check-prefix=GELU
// RUN: not kiln-import-fx %t/step.json 2>&1 | FileCheck %s --check-prefix=STEP
// RUN: not kiln-import-fx %t/select.json 2>&1 | FileCheck %s --check-prefix=SELECT
// RUN: not kiln-import-fx %t/missing-file.json 2>&1 | FileCheck %s --check-prefix=NO-FILE

// The diagnostic names the op and the user's source line.
// UNSUPPORTED-OP: "bessel"("/home/u/model.py":7:0){{.*}}: error: aten.special_bessel_j0.default: op is not supported by Kiln
// BAD-JSON: error: invalid graph JSON: {{.*}}Unexpected EOF
// NOT-OBJECT: error: graph JSON must be an object
// VERSION: error: unsupported graph JSON version (expected 1)
// UNKNOWN-REF: "relu"("m.py":3:0){{.*}}: error: aten.relu.default: reference to unknown value 'y'
// UNKNOWN-OUTPUT: error: graph output refers to unknown value 'z'
// DTYPE: "x"{{.*}}: error: unsupported dtype 'complex64' (Kiln compiles float32, float64, float16, bfloat16, int64, int32, int8, uint8 and bool)
// SHAPE: error: a dim must be a non-negative integer or a size expression over the graph's symbols
// NO-OUTPUTS: error: aten.relu.default: node has no tensor outputs
// METADATA: "relu"{{.*}}: error: 'kiln_graph.relu' op result shape must be the broadcast operand shape
// GELU: error: aten.gelu.default: approximate must be 'none' or 'tanh'
// STEP: error: aten.slice.Tensor: step must be a positive integer
// SELECT: error: aten.select.int: index out of range
// NO-FILE: kiln-import-fx: cannot open input file '{{.*}}missing-file.json'

//--- unsupported.json
{"version": 1, "name": "g",
 "inputs": [{"name": "x", "shape": [2, 4], "dtype": "float32"}],
 "nodes": [
  {"name": "bessel", "target": "aten.special_bessel_j0.default", "args": [{"ref": "x", "index": 0}], "kwargs": {},
   "outputs": [{"shape": [2, 4], "dtype": "float32"}],
   "loc": {"file": "/home/u/model.py", "line": 7, "code": "torch.special.bessel_j0(x)"}}
 ],
 "outputs": [{"ref": "bessel", "index": 0}]}

//--- bad.json
{"version": 1, "nodes": [

//--- array.json
[1, 2, 3]

//--- version.json
{"version": 2, "name": "g", "inputs": [], "nodes": [], "outputs": []}

//--- unknown-ref.json
{"version": 1, "name": "g",
 "inputs": [{"name": "x", "shape": [2, 4], "dtype": "float32"}],
 "nodes": [
  {"name": "relu", "target": "aten.relu.default", "args": [{"ref": "y", "index": 0}], "kwargs": {},
   "outputs": [{"shape": [2, 4], "dtype": "float32"}], "loc": {"file": "m.py", "line": 3, "code": ""}}
 ],
 "outputs": [{"ref": "relu", "index": 0}]}

//--- unknown-output.json
{"version": 1, "name": "g",
 "inputs": [{"name": "x", "shape": [2, 4], "dtype": "float32"}],
 "nodes": [],
 "outputs": [{"ref": "z", "index": 0}]}

//--- dtype.json
{"version": 1, "name": "g",
 "inputs": [{"name": "x", "shape": [2, 4], "dtype": "complex64"}],
 "nodes": [], "outputs": []}

//--- shape.json
{"version": 1, "name": "g",
 "inputs": [{"name": "x", "shape": [2, -1], "dtype": "float32"}],
 "nodes": [], "outputs": []}

//--- no-outputs.json
{"version": 1, "name": "g",
 "inputs": [{"name": "x", "shape": [2, 4], "dtype": "float32"}],
 "nodes": [
  {"name": "relu", "target": "aten.relu.default", "args": [{"ref": "x", "index": 0}], "kwargs": {}, "outputs": []}
 ],
 "outputs": []}

//--- metadata.json
{"version": 1, "name": "g",
 "inputs": [{"name": "x", "shape": [2, 4], "dtype": "float32"}],
 "nodes": [
  {"name": "relu", "target": "aten.relu.default", "args": [{"ref": "x", "index": 0}], "kwargs": {},
   "outputs": [{"shape": [4, 2], "dtype": "float32"}]}
 ],
 "outputs": [{"ref": "relu", "index": 0}]}

//--- gelu.json
{"version": 1, "name": "g",
 "inputs": [{"name": "x", "shape": [2, 4], "dtype": "float32"}],
 "nodes": [
  {"name": "gelu", "target": "aten.gelu.default", "args": [{"ref": "x", "index": 0}], "kwargs": {"approximate": "sigmoid"},
   "outputs": [{"shape": [2, 4], "dtype": "float32"}]}
 ],
 "outputs": [{"ref": "gelu", "index": 0}]}

//--- step.json
{"version": 1, "name": "g",
 "inputs": [{"name": "x", "shape": [2, 4], "dtype": "float32"}],
 "nodes": [
  {"name": "slice", "target": "aten.slice.Tensor", "args": [{"ref": "x", "index": 0}, 1, 0, 4, 0], "kwargs": {},
   "outputs": [{"shape": [2, 4], "dtype": "float32"}]}
 ],
 "outputs": [{"ref": "slice", "index": 0}]}

//--- select.json
{"version": 1, "name": "g",
 "inputs": [{"name": "x", "shape": [2, 4], "dtype": "float32"}],
 "nodes": [
  {"name": "select", "target": "aten.select.int", "args": [{"ref": "x", "index": 0}, 1, 4], "kwargs": {},
   "outputs": [{"shape": [2], "dtype": "float32"}]}
 ],
 "outputs": [{"ref": "select", "index": 0}]}
