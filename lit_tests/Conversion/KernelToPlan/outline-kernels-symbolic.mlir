// RUN: kiln-opt %s --kiln-attach-target=target=cpu:x86-64-v4 --kiln-graph-to-plan | FileCheck %s

// A graph with symbolic sizes becomes a plan whose buffers keep their `?`
// dims, each described by a `dims` map over the symbols: the runtime
// evaluates them from the input shapes. Kernels take the symbols as their
// last arguments and rebuild their buffers' shapes from them.
// CHECK-DAG: #[[P:.*]] = affine_map<()[s0, s1] -> (s0 * s1)>
// CHECK-DAG: #[[BS:.*]] = affine_map<()[s0, s1] -> (s0, s1)>
// CHECK-DAG: #[[B:.*]] = affine_map<()[s0] -> (s0)>
// CHECK-DAG: #[[WORK:.*]] = affine_map<()[s0, s1] -> (((s0 * s1) * 40 + 128) floordiv 262144)>
// CHECK-LABEL: func.func @symbolic
// CHECK-SAME: (%[[X:.*]]: memref<?x?x8xf32> {kiln_plan.dims = #[[BS]]}, %[[W:.*]]: memref<8x16xf32>) -> memref<?x16xf32>
// CHECK-SAME: kiln_graph.symbols = [{max = 64 : i64, min = 2 : i64, name = "s77"}, {max = 9223372036854775807 : i64, min = 2 : i64, name = "s27"}], kiln_plan.entry
// CHECK: %[[V:.*]] = kiln_plan.view %[[X]] {dims = #[[P]]} : memref<?x?x8xf32> to memref<?x8xf32>
// CHECK: %[[H:.*]] = kiln_plan.alloc {dims = #[[P]]} : memref<?x16xf32>
// The workgroup count is computed at launch: clamp(work, 1, min(extent, 64)).
// CHECK: kiln_plan.launch @kernel_0_matmul[64] (%[[V]], %[[W]], %[[H]]) {num_inputs = 2 : i64, symbolic_extent = #[[P]], symbolic_work = #[[WORK]]}
// CHECK: %[[HV:.*]] = kiln_plan.view %[[H]] {dims = #[[BS]]} : memref<?x16xf32> to memref<?x?x16xf32>
// CHECK: %[[OUT:.*]] = kiln_plan.alloc {dims = #[[B]]} : memref<?x16xf32>
// CHECK: kiln_plan.launch @kernel_1_sum[64] (%[[HV]], %[[OUT]])
// CHECK: return %[[OUT]] : memref<?x16xf32>

// CHECK-LABEL: func.func private @kernel_0_matmul
// CHECK-SAME: (%{{.*}}: index, %{{.*}}: index, %[[IN:.*]]: memref<1xf32>, %{{.*}}: memref<8x16xf32>, %[[RES:.*]]: memref<1xf32>, %[[S0:.*]]: index, %[[S1:.*]]: index)
// CHECK-SAME: kiln_kernel.num_symbols = 2 : i64, kiln_kernel.workgroup_extent = #[[P]]
// CHECK: %[[ROWS:.*]] = arith.muli %[[S0]], %[[S1]]
// CHECK: %[[INB:.*]] = memref.reinterpret_cast %[[IN]] to offset: [0], sizes: [%[[ROWS]], 8], strides: [8, 1] : memref<1xf32> to memref<?x8xf32>
// CHECK: %[[T:.*]] = bufferization.to_tensor %[[INB]] restrict : memref<?x8xf32> to tensor<?x8xf32>
// CHECK: tensor.cast %[[T]] : tensor<?x8xf32> to tensor<?x8xf32, #[[P]]>
// CHECK: kiln_graph.matmul
// CHECK: memref.reinterpret_cast %[[RES]] to offset: [0], sizes: [%{{.*}}, 16], strides: [16, 1] : memref<1xf32> to memref<?x16xf32>
// CHECK: bufferization.materialize_in_destination

// CHECK-LABEL: func.func private @kernel_1_sum
// CHECK-SAME: %[[S0:[a-z0-9_]+]]: index, %[[S1:[a-z0-9_]+]]: index)
// CHECK: %[[C16:.*]] = arith.constant 16 : index
// CHECK: %[[STRIDE:.*]] = arith.muli %[[S1]], %[[C16]]
// CHECK: memref.reinterpret_cast %{{.*}} to offset: [0], sizes: [%[[S0]], %[[S1]], 16], strides: [%[[STRIDE]], 16, 1] : memref<1xf32> to memref<?x?x16xf32>
#b = affine_map<()[s0] -> (s0)>
#bs = affine_map<()[s0, s1] -> (s0, s1)>
#p = affine_map<()[s0, s1] -> (s0 * s1)>
func.func @symbolic(%x: tensor<?x?x8xf32, #bs>, %w: tensor<8x16xf32>) -> tensor<?x16xf32, #b>
    attributes {kiln_graph.symbols = [{name = "s77", min = 2 : i64, max = 64 : i64},
                                      {name = "s27", min = 2 : i64, max = 9223372036854775807 : i64}]} {
  %0 = kiln_graph.reshape %x : tensor<?x?x8xf32, #bs> -> tensor<?x8xf32, #p>
  %1 = kiln_graph.matmul %0, %w : tensor<?x8xf32, #p>, tensor<8x16xf32> -> tensor<?x16xf32, #p>
  %2 = kiln_graph.relu %1 : tensor<?x16xf32, #p> -> tensor<?x16xf32, #p>
  %3 = kiln_graph.reshape %2 : tensor<?x16xf32, #p> -> tensor<?x?x16xf32, #bs>
  %4 = kiln_graph.sum %3 {dims = array<i64: 1>} : tensor<?x?x16xf32, #bs> -> tensor<?x16xf32, #b>
  return %4 : tensor<?x16xf32, #b>
}
