// torch's functional collectives in a graph (what a tensor-parallel program
// compiles to): imported as kiln_graph.collective, kept outside kernels by
// fusion, and lowered to kiln_plan.collective between the launches.
// RUN: split-file %s %t
// RUN: kiln-import-fx %t/graph.json | FileCheck %s
// RUN: kiln-import-fx %t/graph.json | kiln-opt --kiln-attach-target=target=cpu:x86-64-v3 --kiln-graph-to-plan | FileCheck %s --check-prefix=PLAN
// RUN: kiln-compile %t/graph.json -o %t/graph.kiln
// RUN: not kiln-import-fx %t/bad-reduce.json 2>&1 | FileCheck %s --check-prefix=REDUCE
// RUN: not kiln-import-fx %t/uneven.json 2>&1 | FileCheck %s --check-prefix=UNEVEN
// RUN: not kiln-import-fx %t/wait-outside.json 2>&1 | FileCheck %s --check-prefix=WAIT

// CHECK-LABEL: func.func @tensor_parallel
// CHECK: %[[MM:.*]] = kiln_graph.matmul
// CHECK: %[[SUM:.*]] = kiln_graph.collective %[[MM]] {group = "7", group_size = 0 : i64, kind = #kiln_graph.collective<all_reduce>} : tensor<4x8xf32> -> tensor<4x8xf32>
// CHECK: %[[RELU:.*]] = kiln_graph.relu %[[SUM]]
// CHECK: kiln_graph.collective %[[RELU]] {group = "7", group_size = 2 : i64, kind = #kiln_graph.collective<all_gather>{{.*}}} : tensor<4x8xf32> -> tensor<8x8xf32>
// CHECK: kiln_graph.collective %[[RELU]] {group = "7", group_size = 2 : i64, kind = #kiln_graph.collective<reduce_scatter>, reduce_op = #kiln_graph.reduce_op<max>} : tensor<4x8xf32> -> tensor<2x8xf32>
// CHECK: kiln_graph.collective %[[RELU]] {group = "7", group_size = 2 : i64, kind = #kiln_graph.collective<all_to_all>{{.*}}} : tensor<4x8xf32> -> tensor<4x8xf32>

// The matmul's kernel, the all_reduce on its output, then the kernel that
// reads the sum (never fused with the matmul), then the other collectives.
// PLAN-LABEL: func.func @tensor_parallel
// PLAN: %[[MM:.*]] = kiln_plan.alloc : memref<4x8xf32>
// PLAN: kiln_plan.launch @kernel_0_matmul{{.*}}%[[MM]])
// PLAN: %[[SUM:.*]] = kiln_plan.alloc : memref<4x8xf32>
// PLAN-NEXT: kiln_plan.collective %[[MM]], %[[SUM]] {group = "7", group_size = 0 : i64, kind = "all_reduce", reduce_op = "sum"}
// PLAN: %[[RELU:.*]] = kiln_plan.alloc : memref<4x8xf32>
// PLAN: kiln_plan.launch @kernel_{{[0-9]+}}_relu{{.*}}(%[[SUM]], %[[RELU]])
// PLAN: kiln_plan.collective %[[RELU]], %{{.*}} {group = "7", group_size = 2 : i64, kind = "all_gather", reduce_op = "sum"} : memref<4x8xf32>, memref<8x8xf32>
// PLAN: kiln_plan.collective %[[RELU]], %{{.*}} {group = "7", group_size = 2 : i64, kind = "reduce_scatter", reduce_op = "max"} : memref<4x8xf32>, memref<2x8xf32>
// PLAN: kiln_plan.collective %[[RELU]], %{{.*}} {group = "7", group_size = 2 : i64, kind = "all_to_all", reduce_op = "sum"}

// REDUCE: _c10d_functional.all_reduce.default: reduce_op must be sum, avg, product, min or max, not 'premul_sum'
// UNEVEN: all_to_all_single takes even splits only
// A wait for a collective run elsewhere (eager, still in flight) is no identity.
// WAIT: _c10d_functional.wait_tensor.default: waits for a collective that is not in this graph

//--- graph.json
{"version": 1, "name": "tensor_parallel",
 "inputs": [{"name": "x", "shape": [4, 16], "dtype": "float32"}, {"name": "w", "shape": [16, 8], "dtype": "float32"}],
 "nodes": [
  {"name": "mm", "target": "aten.mm.default", "args": [{"ref": "x", "index": 0}, {"ref": "w", "index": 0}], "kwargs": {},
   "outputs": [{"shape": [4, 8], "dtype": "float32"}]},
  {"name": "ar", "target": "_c10d_functional.all_reduce.default", "args": [{"ref": "mm", "index": 0}, "sum", "7"], "kwargs": {},
   "outputs": [{"shape": [4, 8], "dtype": "float32"}]},
  {"name": "wait", "target": "_c10d_functional.wait_tensor.default", "args": [{"ref": "ar", "index": 0}], "kwargs": {},
   "outputs": [{"shape": [4, 8], "dtype": "float32"}]},
  {"name": "relu", "target": "aten.relu.default", "args": [{"ref": "wait", "index": 0}], "kwargs": {},
   "outputs": [{"shape": [4, 8], "dtype": "float32"}]},
  {"name": "ag", "target": "_c10d_functional.all_gather_into_tensor.default", "args": [{"ref": "relu", "index": 0}, 2, "7"], "kwargs": {},
   "outputs": [{"shape": [8, 8], "dtype": "float32"}]},
  {"name": "rs", "target": "_c10d_functional.reduce_scatter_tensor.default", "args": [{"ref": "relu", "index": 0}, "max", 2, "7"], "kwargs": {},
   "outputs": [{"shape": [2, 8], "dtype": "float32"}]},
  {"name": "a2a", "target": "_c10d_functional.all_to_all_single.default", "args": [{"ref": "relu", "index": 0}, [2, 2], [2, 2], "7"], "kwargs": {},
   "outputs": [{"shape": [4, 8], "dtype": "float32"}]}],
 "outputs": [{"ref": "ag", "index": 0}, {"ref": "rs", "index": 0}, {"ref": "a2a", "index": 0}]}

//--- bad-reduce.json
{"version": 1, "name": "bad_reduce",
 "inputs": [{"name": "x", "shape": [4], "dtype": "float32"}],
 "nodes": [
  {"name": "ar", "target": "_c10d_functional.all_reduce.default", "args": [{"ref": "x", "index": 0}, "premul_sum", "0"], "kwargs": {},
   "outputs": [{"shape": [4], "dtype": "float32"}]}],
 "outputs": [{"ref": "ar", "index": 0}]}

//--- uneven.json
{"version": 1, "name": "uneven",
 "inputs": [{"name": "x", "shape": [4], "dtype": "float32"}],
 "nodes": [
  {"name": "a2a", "target": "_c10d_functional.all_to_all_single.default", "args": [{"ref": "x", "index": 0}, [1, 3], [2, 2], "0"], "kwargs": {},
   "outputs": [{"shape": [4], "dtype": "float32"}]}],
 "outputs": [{"ref": "a2a", "index": 0}]}

//--- wait-outside.json
{"version": 1, "name": "wait_outside",
 "inputs": [{"name": "x", "shape": [4], "dtype": "float32"}],
 "nodes": [
  {"name": "wait", "target": "_c10d_functional.wait_tensor.default", "args": [{"ref": "x", "index": 0}], "kwargs": {},
   "outputs": [{"shape": [4], "dtype": "float32"}]},
  {"name": "relu", "target": "aten.relu.default", "args": [{"ref": "wait", "index": 0}], "kwargs": {},
   "outputs": [{"shape": [4], "dtype": "float32"}]}],
 "outputs": [{"ref": "relu", "index": 0}]}
