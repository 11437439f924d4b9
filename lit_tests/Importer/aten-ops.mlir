// RUN: split-file %s %t
// RUN: kiln-import-fx %t/graph.json | FileCheck %s

// One node per ATen overload family the importer maps.
// CHECK-LABEL: func.func @ops
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x4xf32>{{.*}}, %[[IDX:.*]]: tensor<5xi32>{{.*}}, %[[EMB:.*]]: tensor<10x4xf32>{{.*}}, %[[E:.*]]: tensor<0xf32>{{.*}})
// CHECK-NEXT: %[[SUM:.*]] = kiln_graph.sum %[[X]] {dims = array<i64: -1>, keepdim = true} : tensor<2x3x4xf32> -> tensor<2x3x1xf32>
// CHECK-NEXT: kiln_graph.mean %[[X]] {dims = array<i64>} : tensor<2x3x4xf32> -> tensor<f32>
// CHECK-NEXT: kiln_graph.amax %[[X]] {dims = array<i64: 0, 2>} : tensor<2x3x4xf32> -> tensor<3xf32>
// CHECK-NEXT: kiln_graph.softmax %[[X]] {dim = -1 : i64} : tensor<2x3x4xf32> -> tensor<2x3x4xf32>
// CHECK-NEXT: kiln_graph.reshape %[[X]] : tensor<2x3x4xf32> -> tensor<6x4xf32>
// transpose.int and permute normalize negative dims.
// CHECK-NEXT: %[[TR:.*]] = kiln_graph.permute %[[X]] {dims = array<i64: 0, 2, 1>} : tensor<2x3x4xf32> -> tensor<2x4x3xf32>
// CHECK-NEXT: kiln_graph.permute %[[X]] {dims = array<i64: 1, 2, 0>} : tensor<2x3x4xf32> -> tensor<3x4x2xf32>
// CHECK-NEXT: kiln_graph.expand %[[SUM]] : tensor<2x3x1xf32> -> tensor<2x3x4xf32>
// x[:, :, -3::2]: the start is normalized, the end clamped.
// CHECK-NEXT: kiln_graph.slice %[[X]] {dim = 2 : i64, start = 1 : i64, step = 2 : i64} : tensor<2x3x4xf32> -> tensor<2x3x2xf32>
// x.select(1, -1): a slice of size 1 and a reshape.
// CHECK-NEXT: %[[SEL:.*]] = kiln_graph.slice %[[X]] {dim = 1 : i64, start = 2 : i64, step = 1 : i64} : tensor<2x3x4xf32> -> tensor<2x1x4xf32>
// CHECK-NEXT: kiln_graph.reshape %[[SEL]] : tensor<2x1x4xf32> -> tensor<2x4xf32>
// cat skips the legacy empty 1-D input.
// CHECK-NEXT: kiln_graph.concat %[[X]], %[[X]] {dim = 1 : i64} : tensor<2x3x4xf32>, tensor<2x3x4xf32> -> tensor<2x6x4xf32>
// embedding indices are converted to i64 and checked to be in [0, 10).
// CHECK-NEXT: %[[I64:.*]] = kiln_graph.convert %[[IDX]] : tensor<5xi32> -> tensor<5xi64>
// CHECK-NEXT: %[[LO:.*]] = kiln_graph.constant dense<0> : tensor<i64>
// CHECK-NEXT: %[[HI:.*]] = kiln_graph.constant dense<10> : tensor<i64>
// CHECK-NEXT: %[[GE:.*]] = kiln_graph.ge %[[I64]], %[[LO]]
// CHECK-NEXT: %[[LT:.*]] = kiln_graph.lt %[[I64]], %[[HI]]
// CHECK-NEXT: %[[F:.*]] = kiln_graph.constant dense<false>
// CHECK-NEXT: %[[IN:.*]] = kiln_graph.where %[[GE]], %[[LT]], %[[F]]
// CHECK-NEXT: %[[ALL:.*]] = kiln_graph.all %[[IN]] {dims = array<i64>} : tensor<5xi1> -> tensor<i1>
// CHECK-NEXT: kiln_graph.assert %[[ALL]] {kind = #kiln_graph.check_kind<index>, message = "index out of range in aten.embedding.default (node {{.*}}) at {{.*}}: every index must be in [0, 10)"} : tensor<i1>
// CHECK-NEXT: kiln_graph.embedding %[[EMB]], %[[I64]] : tensor<10x4xf32>, tensor<5xi64> -> tensor<5x4xf32>
// CHECK-NEXT: kiln_graph.constant dense<0xFF800000> : tensor<2x2xf32>
// _to_copy with another dtype converts; clone copies.
// CHECK-NEXT: kiln_graph.convert %[[X]] : tensor<2x3x4xf32> -> tensor<2x3x4xi64>
// CHECK-NEXT: kiln_graph.clone %[[X]] : tensor<2x3x4xf32> -> tensor<2x3x4xf32>
// CHECK-NEXT: kiln_graph.gelu %[[X]] {approximate = #kiln_graph.gelu_approximation<tanh>} : tensor<2x3x4xf32> -> tensor<2x3x4xf32>
// CHECK-NEXT: kiln_graph.matmul %[[X]], %[[TR]] : tensor<2x3x4xf32>, tensor<2x4x3xf32> -> tensor<2x3x3xf32>
// CHECK-NEXT: %[[TWO:.*]] = kiln_graph.constant dense<2.000000e+00> : tensor<f32>
// CHECK-NEXT: kiln_graph.pow %[[X]], %[[TWO]] : tensor<2x3x4xf32>, tensor<f32> -> tensor<2x3x4xf32>
// CHECK-NEXT: return

//--- graph.json
{"version": 1, "name": "ops",
 "inputs": [{"name": "x", "shape": [2, 3, 4], "dtype": "float32"},
            {"name": "idx", "shape": [5], "dtype": "int32"},
            {"name": "emb", "shape": [10, 4], "dtype": "float32"},
            {"name": "e", "shape": [0], "dtype": "float32"}],
 "nodes": [
  {"name": "sum", "target": "aten.sum.dim_IntList", "args": [{"ref": "x", "index": 0}, [-1], true], "kwargs": {},
   "outputs": [{"shape": [2, 3, 1], "dtype": "float32"}]},
  {"name": "mean", "target": "aten.mean.default", "args": [{"ref": "x", "index": 0}], "kwargs": {},
   "outputs": [{"shape": [], "dtype": "float32"}]},
  {"name": "amax", "target": "aten.amax.default", "args": [{"ref": "x", "index": 0}, [0, 2]], "kwargs": {},
   "outputs": [{"shape": [3], "dtype": "float32"}]},
  {"name": "softmax", "target": "aten._softmax.default", "args": [{"ref": "x", "index": 0}, -1, false], "kwargs": {},
   "outputs": [{"shape": [2, 3, 4], "dtype": "float32"}]},
  {"name": "view", "target": "aten.view.default", "args": [{"ref": "x", "index": 0}, [6, 4]], "kwargs": {},
   "outputs": [{"shape": [6, 4], "dtype": "float32"}]},
  {"name": "transpose", "target": "aten.transpose.int", "args": [{"ref": "x", "index": 0}, -1, 1], "kwargs": {},
   "outputs": [{"shape": [2, 4, 3], "dtype": "float32"}]},
  {"name": "permute", "target": "aten.permute.default", "args": [{"ref": "x", "index": 0}, [1, -1, 0]], "kwargs": {},
   "outputs": [{"shape": [3, 4, 2], "dtype": "float32"}]},
  {"name": "expand", "target": "aten.expand.default", "args": [{"ref": "sum", "index": 0}, [2, 3, 4]], "kwargs": {},
   "outputs": [{"shape": [2, 3, 4], "dtype": "float32"}]},
  {"name": "slice", "target": "aten.slice.Tensor", "args": [{"ref": "x", "index": 0}, 2, -3, 9223372036854775807, 2], "kwargs": {},
   "outputs": [{"shape": [2, 3, 2], "dtype": "float32"}]},
  {"name": "select", "target": "aten.select.int", "args": [{"ref": "x", "index": 0}, 1, -1], "kwargs": {},
   "outputs": [{"shape": [2, 4], "dtype": "float32"}]},
  {"name": "cat", "target": "aten.cat.default",
   "args": [[{"ref": "x", "index": 0}, {"ref": "e", "index": 0}, {"ref": "x", "index": 0}], 1], "kwargs": {},
   "outputs": [{"shape": [2, 6, 4], "dtype": "float32"}]},
  {"name": "embedding", "target": "aten.embedding.default", "args": [{"ref": "emb", "index": 0}, {"ref": "idx", "index": 0}], "kwargs": {},
   "outputs": [{"shape": [5, 4], "dtype": "float32"}]},
  {"name": "full", "target": "aten.full.default", "args": [[2, 2], {"float": "-inf"}], "kwargs": {"dtype": {"dtype": "float32"}},
   "outputs": [{"shape": [2, 2], "dtype": "float32"}]},
  {"name": "to", "target": "aten._to_copy.default", "args": [{"ref": "x", "index": 0}], "kwargs": {"dtype": {"dtype": "int64"}},
   "outputs": [{"shape": [2, 3, 4], "dtype": "int64"}]},
  {"name": "clone", "target": "aten.clone.default", "args": [{"ref": "x", "index": 0}], "kwargs": {},
   "outputs": [{"shape": [2, 3, 4], "dtype": "float32"}]},
  {"name": "gelu", "target": "aten.gelu.default", "args": [{"ref": "x", "index": 0}], "kwargs": {"approximate": "tanh"},
   "outputs": [{"shape": [2, 3, 4], "dtype": "float32"}]},
  {"name": "bmm", "target": "aten.bmm.default", "args": [{"ref": "x", "index": 0}, {"ref": "transpose", "index": 0}], "kwargs": {},
   "outputs": [{"shape": [2, 3, 3], "dtype": "float32"}]},
  {"name": "pow", "target": "aten.pow.Tensor_Scalar", "args": [{"ref": "x", "index": 0}, 2], "kwargs": {},
   "outputs": [{"shape": [2, 3, 4], "dtype": "float32"}]}
 ],
 "outputs": [{"ref": "sum", "index": 0}, {"ref": "mean", "index": 0}, {"ref": "amax", "index": 0},
             {"ref": "softmax", "index": 0}, {"ref": "view", "index": 0}, {"ref": "permute", "index": 0},
             {"ref": "slice", "index": 0}, {"ref": "select", "index": 0}, {"ref": "cat", "index": 0},
             {"ref": "embedding", "index": 0}, {"ref": "full", "index": 0}, {"ref": "to", "index": 0},
             {"ref": "clone", "index": 0}, {"ref": "gelu", "index": 0}, {"ref": "bmm", "index": 0},
             {"ref": "pow", "index": 0}, {"ref": "expand", "index": 0}]}
