// RUN: kiln-opt %s -split-input-file --kiln-attach-target=target=cpu:x86-64-v3 --kiln-pack-weights | FileCheck %s

// x @ w.t() with w a parameter [N = 40, K = 24]: with 256-bit vectors a panel
// is 16 columns, so w's first 32 rows are packed into [2, 24, 16] by a cached
// launch at the plan's start (into a persistent buffer), and the matmul
// kernel takes the panels as one more input, marked with whose they are. The
// 8 rows past the last panel stay in w.
// CHECK-LABEL: func.func @linear
// CHECK-NEXT: %[[P:.*]] = kiln_plan.alloc {persistent} : memref<2x24x16xf32>
// CHECK-NEXT: kiln_plan.launch @pack_0_nk[2] (%arg0, %[[P]]) {cached, num_inputs = 1 : i64}
// CHECK: kiln_plan.launch @kernel_0_matmul[1] (%arg1, %arg0, %[[P]], %{{.*}}) {num_inputs = 3 : i64}
// CHECK: func.func private @kernel_0_matmul(%{{.*}}: index, %{{.*}}: index, %{{.*}}: memref<8x24xf32>, %{{.*}}: memref<40x24xf32>, %{{.*}}: memref<2x24x16xf32> {kiln_kernel.packed_rhs = #kiln_kernel.packed_rhs<of = 3, transposed = true, panel_columns = 16>}, %{{.*}}: memref<8x40xf32>)
// CHECK: func.func private @pack_0_nk(%{{.*}}: index, %{{.*}}: index, %[[W:.*]]: memref<40x24xf32>, %[[OUT:.*]]: memref<2x24x16xf32>) attributes {kiln_kernel.kernel = "pack_0_nk", kiln_kernel.workgroup_extent = 2 : i64}
// CHECK: %[[T:.*]] = bufferization.to_tensor %[[W]]
// CHECK: %[[S:.*]] = kiln_graph.slice %[[T]] {dim = 0 : i64, start = 0 : i64, step = 1 : i64} : tensor<40x24xf32> -> tensor<32x24xf32>
// CHECK: %[[R:.*]] = kiln_graph.reshape %[[S]] : tensor<32x24xf32> -> tensor<2x16x24xf32>
// CHECK: %[[Q:.*]] = kiln_graph.permute %[[R]] {dims = array<i64: 0, 2, 1>} : tensor<2x16x24xf32> -> tensor<2x24x16xf32>
// CHECK: bufferization.materialize_in_destination %[[Q]] in restrict writable %[[OUT]]
module {
  func.func @linear(%w: memref<40x24xf32> {kiln_graph.parameter}, %x: memref<8x24xf32>) -> memref<8x40xf32> attributes {kiln_plan.entry} {
    %0 = kiln_plan.alloc : memref<8x40xf32>
    kiln_plan.launch @kernel_0_matmul[1] (%x, %w, %0) {num_inputs = 2 : i64} : memref<8x24xf32>, memref<40x24xf32>, memref<8x40xf32>
    return %0 : memref<8x40xf32>
  }
  func.func private @kernel_0_matmul(%wg: index, %count: index, %a: memref<8x24xf32>, %b: memref<40x24xf32>, %c: memref<8x40xf32>) attributes {kiln_kernel.kernel = "kernel_0_matmul", kiln_kernel.workgroup_extent = 8 : i64} {
    %0 = bufferization.to_tensor %a restrict : memref<8x24xf32> to tensor<8x24xf32>
    %1 = bufferization.to_tensor %b restrict : memref<40x24xf32> to tensor<40x24xf32>
    %2 = kiln_graph.matmul %0, %1 {transpose_rhs = true} : tensor<8x24xf32>, tensor<40x24xf32> -> tensor<8x40xf32>
    bufferization.materialize_in_destination %2 in restrict writable %c : (tensor<8x40xf32>, memref<8x40xf32>) -> ()
    return
  }
}

// -----

// x @ w with w [K = 24, N = 32], used by two kernels: packed once, as
// [K, P, NR] -> [P, K, NR].
// CHECK-LABEL: func.func @shared_weight
// CHECK-COUNT-1: kiln_plan.launch @pack_0_kn[2] (%arg0, %[[P:.*]]) {cached, num_inputs = 1 : i64}
// CHECK: kiln_plan.launch @kernel_0_matmul[1] (%arg1, %arg0, %[[P]], %{{.*}}) {num_inputs = 3 : i64}
// CHECK: kiln_plan.launch @kernel_1_matmul[1] (%arg1, %arg0, %[[P]], %{{.*}}) {num_inputs = 3 : i64}
// CHECK-NOT: kiln_plan.launch @pack
// CHECK: func.func private @pack_0_kn
// CHECK: kiln_graph.reshape %{{.*}} : tensor<24x32xf32> -> tensor<24x2x16xf32>
// CHECK: kiln_graph.permute %{{.*}} {dims = array<i64: 1, 0, 2>} : tensor<24x2x16xf32> -> tensor<2x24x16xf32>
module {
  func.func @shared_weight(%w: memref<24x32xf32> {kiln_graph.parameter}, %x: memref<8x24xf32>) -> (memref<8x32xf32>, memref<8x32xf32>) attributes {kiln_plan.entry} {
    %0 = kiln_plan.alloc : memref<8x32xf32>
    kiln_plan.launch @kernel_0_matmul[1] (%x, %w, %0) {num_inputs = 2 : i64} : memref<8x24xf32>, memref<24x32xf32>, memref<8x32xf32>
    %1 = kiln_plan.alloc : memref<8x32xf32>
    kiln_plan.launch @kernel_1_matmul[1] (%x, %w, %1) {num_inputs = 2 : i64} : memref<8x24xf32>, memref<24x32xf32>, memref<8x32xf32>
    return %0, %1 : memref<8x32xf32>, memref<8x32xf32>
  }
  func.func private @kernel_0_matmul(%wg: index, %count: index, %a: memref<8x24xf32>, %b: memref<24x32xf32>, %c: memref<8x32xf32>) attributes {kiln_kernel.kernel = "kernel_0_matmul", kiln_kernel.workgroup_extent = 8 : i64} {
    %0 = bufferization.to_tensor %a restrict : memref<8x24xf32> to tensor<8x24xf32>
    %1 = bufferization.to_tensor %b restrict : memref<24x32xf32> to tensor<24x32xf32>
    %2 = kiln_graph.matmul %0, %1 : tensor<8x24xf32>, tensor<24x32xf32> -> tensor<8x32xf32>
    bufferization.materialize_in_destination %2 in restrict writable %c : (tensor<8x32xf32>, memref<8x32xf32>) -> ()
    return
  }
  func.func private @kernel_1_matmul(%wg: index, %count: index, %a: memref<8x24xf32>, %b: memref<24x32xf32>, %c: memref<8x32xf32>) attributes {kiln_kernel.kernel = "kernel_1_matmul", kiln_kernel.workgroup_extent = 8 : i64} {
    %0 = bufferization.to_tensor %a restrict : memref<8x24xf32> to tensor<8x24xf32>
    %1 = bufferization.to_tensor %b restrict : memref<24x32xf32> to tensor<24x32xf32>
    %2 = kiln_graph.matmul %0, %1 : tensor<8x24xf32>, tensor<24x32xf32> -> tensor<8x32xf32>
    %3 = kiln_graph.relu %2 : tensor<8x32xf32> -> tensor<8x32xf32>
    bufferization.materialize_in_destination %3 in restrict writable %c : (tensor<8x32xf32>, memref<8x32xf32>) -> ()
    return
  }
}

// -----

// Left alone: a right-hand side that is no parameter (an activation), and a
// parameter narrower than one panel.
// CHECK-LABEL: func.func @not_packed
// CHECK-NOT: kiln_plan.launch @pack
// CHECK-NOT: persistent
// CHECK-NOT: kiln_kernel.packed_rhs
module {
  func.func @not_packed(%w: memref<8x24xf32> {kiln_graph.parameter}, %x: memref<8x24xf32>, %y: memref<24x32xf32>) -> (memref<8x8xf32>, memref<8x32xf32>) attributes {kiln_plan.entry} {
    %0 = kiln_plan.alloc : memref<8x8xf32>
    kiln_plan.launch @kernel_0_matmul[1] (%x, %w, %0) {num_inputs = 2 : i64} : memref<8x24xf32>, memref<8x24xf32>, memref<8x8xf32>
    %1 = kiln_plan.alloc : memref<8x32xf32>
    kiln_plan.launch @kernel_1_matmul[1] (%x, %y, %1) {num_inputs = 2 : i64} : memref<8x24xf32>, memref<24x32xf32>, memref<8x32xf32>
    return %0, %1 : memref<8x8xf32>, memref<8x32xf32>
  }
  func.func private @kernel_0_matmul(%wg: index, %count: index, %a: memref<8x24xf32>, %b: memref<8x24xf32>, %c: memref<8x8xf32>) attributes {kiln_kernel.kernel = "kernel_0_matmul", kiln_kernel.workgroup_extent = 8 : i64} {
    %0 = bufferization.to_tensor %a restrict : memref<8x24xf32> to tensor<8x24xf32>
    %1 = bufferization.to_tensor %b restrict : memref<8x24xf32> to tensor<8x24xf32>
    %2 = kiln_graph.matmul %0, %1 {transpose_rhs = true} : tensor<8x24xf32>, tensor<8x24xf32> -> tensor<8x8xf32>
    bufferization.materialize_in_destination %2 in restrict writable %c : (tensor<8x8xf32>, memref<8x8xf32>) -> ()
    return
  }
  func.func private @kernel_1_matmul(%wg: index, %count: index, %a: memref<8x24xf32>, %b: memref<24x32xf32>, %c: memref<8x32xf32>) attributes {kiln_kernel.kernel = "kernel_1_matmul", kiln_kernel.workgroup_extent = 8 : i64} {
    %0 = bufferization.to_tensor %a restrict : memref<8x24xf32> to tensor<8x24xf32>
    %1 = bufferization.to_tensor %b restrict : memref<24x32xf32> to tensor<24x32xf32>
    %2 = kiln_graph.matmul %0, %1 : tensor<8x24xf32>, tensor<24x32xf32> -> tensor<8x32xf32>
    bufferization.materialize_in_destination %2 in restrict writable %c : (tensor<8x32xf32>, memref<8x32xf32>) -> ()
    return
  }
}

// -----

// A launch reading only parameters (a per-channel scale from a weight and a
// running variance) is cached and its buffer persistent; one whose result is
// returned, or that reads an activation, is not.
// CHECK-LABEL: func.func @parameter_kernels
// CHECK: %[[S:.*]] = kiln_plan.alloc {persistent} : memref<8xf32>
// CHECK: kiln_plan.launch @kernel_0_scale[1] (%arg0, %arg1, %[[S]]) {cached, num_inputs = 2 : i64}
// CHECK: %[[R:.*]] = kiln_plan.alloc : memref<8xf32>
// CHECK: kiln_plan.launch @kernel_1_returned[1] (%arg0, %arg1, %[[R]]) {num_inputs = 2 : i64}
// CHECK: %[[Y:.*]] = kiln_plan.alloc : memref<4x8xf32>
// CHECK: kiln_plan.launch @kernel_2_apply[1] (%arg2, %[[S]], %[[Y]]) {num_inputs = 2 : i64}
module {
  func.func @parameter_kernels(%w: memref<8xf32> {kiln_graph.parameter}, %v: memref<8xf32> {kiln_graph.parameter}, %x: memref<4x8xf32>) -> (memref<4x8xf32>, memref<8xf32>) attributes {kiln_plan.entry} {
    %0 = kiln_plan.alloc : memref<8xf32>
    kiln_plan.launch @kernel_0_scale[1] (%w, %v, %0) {num_inputs = 2 : i64} : memref<8xf32>, memref<8xf32>, memref<8xf32>
    %1 = kiln_plan.alloc : memref<8xf32>
    kiln_plan.launch @kernel_1_returned[1] (%w, %v, %1) {num_inputs = 2 : i64} : memref<8xf32>, memref<8xf32>, memref<8xf32>
    %2 = kiln_plan.alloc : memref<4x8xf32>
    kiln_plan.launch @kernel_2_apply[1] (%x, %0, %2) {num_inputs = 2 : i64} : memref<4x8xf32>, memref<8xf32>, memref<4x8xf32>
    return %2, %1 : memref<4x8xf32>, memref<8xf32>
  }
  func.func private @kernel_0_scale(%wg: index, %count: index, %a: memref<8xf32>, %b: memref<8xf32>, %c: memref<8xf32>) attributes {kiln_kernel.kernel = "kernel_0_scale", kiln_kernel.workgroup_extent = 8 : i64} {
    return
  }
  func.func private @kernel_1_returned(%wg: index, %count: index, %a: memref<8xf32>, %b: memref<8xf32>, %c: memref<8xf32>) attributes {kiln_kernel.kernel = "kernel_1_returned", kiln_kernel.workgroup_extent = 8 : i64} {
    return
  }
  func.func private @kernel_2_apply(%wg: index, %count: index, %a: memref<4x8xf32>, %b: memref<8xf32>, %c: memref<4x8xf32>) attributes {kiln_kernel.kernel = "kernel_2_apply", kiln_kernel.workgroup_extent = 4 : i64} {
    return
  }
}
