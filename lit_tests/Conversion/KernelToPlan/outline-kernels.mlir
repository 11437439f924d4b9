// RUN: kiln-opt %s -split-input-file -kiln-outline-kernels | FileCheck %s
// RUN: kiln-opt %s -split-input-file -kiln-outline-kernels="min-work-per-workgroup=1024 max-workgroups=4" | FileCheck %s --check-prefix=SMALL

// CHECK-LABEL: func.func @pointwise
// CHECK-SAME: (%[[X:.*]]: memref<64x32xf32>, %[[Y:.*]]: memref<32xf32>) -> memref<64x32xf32> attributes {kiln_plan.entry}
// CHECK-NEXT: %[[OUT:.*]] = kiln_plan.alloc : memref<64x32xf32>
// 2 ops x 2048 elements is less than the default 32768 per workgroup.
// CHECK-NEXT: kiln_plan.launch @kernel_0_add[1] (%[[X]], %[[Y]], %[[OUT]]) {num_inputs = 2 : i64} : memref<64x32xf32>, memref<32xf32>, memref<64x32xf32>
// CHECK-NEXT: return %[[OUT]] : memref<64x32xf32>
// CHECK: func.func private @kernel_0_add
// CHECK-SAME: (%{{.*}}: index, %{{.*}}: index, %[[A:.*]]: memref<64x32xf32>, %[[B:.*]]: memref<32xf32>, %[[R:.*]]: memref<64x32xf32>)
// CHECK-SAME: attributes {kiln_kernel.kernel = "kernel_0_add", kiln_kernel.workgroup_extent = 64 : i64}
// CHECK-NEXT: %[[TA:.*]] = bufferization.to_tensor %[[A]] restrict : memref<64x32xf32> to tensor<64x32xf32>
// CHECK-NEXT: %[[TB:.*]] = bufferization.to_tensor %[[B]] restrict : memref<32xf32> to tensor<32xf32>
// CHECK-NEXT: %[[ADD:.*]] = kiln_graph.add %[[TA]], %[[TB]]
// CHECK-NEXT: %[[RELU:.*]] = kiln_graph.relu %[[ADD]]
// CHECK-NEXT: bufferization.materialize_in_destination %[[RELU]] in restrict writable %[[R]] : (tensor<64x32xf32>, memref<64x32xf32>) -> ()
// CHECK-NEXT: return
// 4096 / 1024 = 4 workgroups.
// SMALL-LABEL: func.func @pointwise
// SMALL: kiln_plan.launch @kernel_0_add[4]
func.func @pointwise(%x: tensor<64x32xf32>, %y: tensor<32xf32>) -> tensor<64x32xf32> {
  %0 = kiln_kernel.kernel "kernel_0_add" extent(64) ins(%x, %y : tensor<64x32xf32>, tensor<32xf32>) -> (tensor<64x32xf32>) {
  ^bb0(%a: tensor<64x32xf32>, %b: tensor<32xf32>):
    %1 = kiln_graph.add %a, %b : tensor<64x32xf32>, tensor<32xf32> -> tensor<64x32xf32>
    %2 = kiln_graph.relu %1 : tensor<64x32xf32> -> tensor<64x32xf32>
    kiln_kernel.yield %2 : tensor<64x32xf32>
  }
  return %0 : tensor<64x32xf32>
}

// -----

// A matmul counts its multiply-adds / 16 (vector FMAs), its elements and
// B's (streaming B is the cost when rows are few): 16 x 64 x 32 / 16 +
// 16 x 64 + 32 x 64 = 5120, one workgroup by default; with 1024 per
// workgroup, 5, capped at 4 (codegen may split the columns too, so the rows
// do not cap the count).
// CHECK-LABEL: func.func @matmul
// CHECK: kiln_plan.launch @kernel_0_matmul[1]
// SMALL-LABEL: func.func @matmul
// SMALL: kiln_plan.launch @kernel_0_matmul[4]
func.func @matmul(%x: tensor<16x32xf32>, %w: tensor<32x64xf32>) -> tensor<16x64xf32> {
  %0 = kiln_kernel.kernel "kernel_0_matmul" extent(16) ins(%x, %w : tensor<16x32xf32>, tensor<32x64xf32>) -> (tensor<16x64xf32>) {
  ^bb0(%a: tensor<16x32xf32>, %b: tensor<32x64xf32>):
    %1 = kiln_graph.matmul %a, %b : tensor<16x32xf32>, tensor<32x64xf32> -> tensor<16x64xf32>
    kiln_kernel.yield %1 : tensor<16x64xf32>
  }
  return %0 : tensor<16x64xf32>
}

// -----

// The workgroup count never exceeds the extent.
// CHECK-LABEL: func.func @big_kernel
// 1024 x 1024 elements / 262144 = 4 workgroups.
// CHECK: kiln_plan.launch @kernel_0_exp[4]
// SMALL-LABEL: func.func @big_kernel
// SMALL: kiln_plan.launch @kernel_0_exp[4]
func.func @big_kernel(%x: tensor<1024x1024xf32>) -> tensor<1024x1024xf32> {
  %0 = kiln_kernel.kernel "kernel_0_exp" extent(1024) ins(%x : tensor<1024x1024xf32>) -> (tensor<1024x1024xf32>) {
  ^bb0(%a: tensor<1024x1024xf32>):
    %1 = kiln_graph.exp %a : tensor<1024x1024xf32> -> tensor<1024x1024xf32>
    kiln_kernel.yield %1 : tensor<1024x1024xf32>
  }
  return %0 : tensor<1024x1024xf32>
}

// -----

// A gathered element weighs 9 units (scalar address arithmetic and load):
// 4 x 128 x 128 = 65536 gathered elements are 589824 units, 2 workgroups
// (as plain elements they would be 1).
// CHECK-LABEL: func.func @gather_work
// CHECK: kiln_plan.launch @kernel_0_index[2]
func.func @gather_work(%x: tensor<4x200x128xf32>, %i: tensor<128xi64>) -> tensor<4x128x128xf32> {
  %0 = kiln_kernel.kernel "kernel_0_index" extent(4) ins(%x, %i : tensor<4x200x128xf32>, tensor<128xi64>) -> (tensor<4x128x128xf32>) {
  ^bb0(%a: tensor<4x200x128xf32>, %b: tensor<128xi64>):
    %1 = kiln_graph.index %a[%b] {indexed_dims = array<i64: 1>} : tensor<4x200x128xf32>, tensor<128xi64> -> tensor<4x128x128xf32>
    kiln_kernel.yield %1 : tensor<4x128x128xf32>
  }
  return %0 : tensor<4x128x128xf32>
}

// -----

// CHECK-LABEL: func.func @wide_rows
// 2 rows of 1048576: the extent caps the count at 2.
// CHECK: kiln_plan.launch @kernel_0_exp[2]
func.func @wide_rows(%x: tensor<2x1048576xf32>) -> tensor<2x1048576xf32> {
  %0 = kiln_kernel.kernel "kernel_0_exp" extent(2) ins(%x : tensor<2x1048576xf32>) -> (tensor<2x1048576xf32>) {
  ^bb0(%a: tensor<2x1048576xf32>):
    %1 = kiln_graph.exp %a : tensor<2x1048576xf32> -> tensor<2x1048576xf32>
    kiln_kernel.yield %1 : tensor<2x1048576xf32>
  }
  return %0 : tensor<2x1048576xf32>
}

// -----

// Extent 0: one workgroup, however much work.
// CHECK-LABEL: func.func @single_workgroup
// CHECK: kiln_plan.launch @kernel_0_sum[1]
// CHECK: func.func private @kernel_0_sum
// CHECK-SAME: kiln_kernel.workgroup_extent = 0 : i64
// SMALL-LABEL: func.func @single_workgroup
// SMALL: kiln_plan.launch @kernel_0_sum[1]
func.func @single_workgroup(%x: tensor<256x1024xf32>) -> tensor<1024xf32> {
  %0 = kiln_kernel.kernel "kernel_0_sum" extent(0) ins(%x : tensor<256x1024xf32>) -> (tensor<1024xf32>) {
  ^bb0(%a: tensor<256x1024xf32>):
    %1 = kiln_graph.sum %a {dims = array<i64: 0>} : tensor<256x1024xf32> -> tensor<1024xf32>
    kiln_kernel.yield %1 : tensor<1024xf32>
  }
  return %0 : tensor<1024xf32>
}

// -----

// Kernel results get one buffer each; they feed later launches; a reshape
// between kernels becomes a view.
// CHECK-LABEL: func.func @chain
// CHECK-SAME: (%[[X:.*]]: memref<8x16xf32>) -> (memref<4x32xf32>, memref<8xf32>)
// CHECK-NEXT: %[[B0:.*]] = kiln_plan.alloc : memref<8x16xf32>
// CHECK-NEXT: %[[B1:.*]] = kiln_plan.alloc : memref<8xf32>
// CHECK-NEXT: kiln_plan.launch @kernel_0_exp[1] (%[[X]], %[[B0]], %[[B1]]) {num_inputs = 1 : i64}
// CHECK-NEXT: %[[V:.*]] = kiln_plan.view %[[B0]] : memref<8x16xf32> to memref<4x32xf32>
// CHECK-NEXT: %[[B2:.*]] = kiln_plan.alloc : memref<4x32xf32>
// CHECK-NEXT: kiln_plan.launch @kernel_1_neg[1] (%[[V]], %[[B2]]) {num_inputs = 1 : i64} : memref<4x32xf32>, memref<4x32xf32>
// CHECK-NEXT: return %[[B2]], %[[B1]] : memref<4x32xf32>, memref<8xf32>
// CHECK: func.func private @kernel_0_exp
// CHECK-SAME: (%{{.*}}: index, %{{.*}}: index, %[[IN:.*]]: memref<8x16xf32>, %[[OUT0:.*]]: memref<8x16xf32>, %[[OUT1:.*]]: memref<8xf32>)
// CHECK: %[[E:.*]] = kiln_graph.exp
// CHECK: %[[S:.*]] = kiln_graph.sum
// CHECK: bufferization.materialize_in_destination %[[E]] in restrict writable %[[OUT0]]
// CHECK: bufferization.materialize_in_destination %[[S]] in restrict writable %[[OUT1]]
// CHECK: func.func private @kernel_1_neg
// CHECK-SAME: kiln_kernel.workgroup_extent = 4 : i64
func.func @chain(%x: tensor<8x16xf32>) -> (tensor<4x32xf32>, tensor<8xf32>) {
  %0:2 = kiln_kernel.kernel "kernel_0_exp" extent(8) ins(%x : tensor<8x16xf32>) -> (tensor<8x16xf32>, tensor<8xf32>) {
  ^bb0(%a: tensor<8x16xf32>):
    %e = kiln_graph.exp %a : tensor<8x16xf32> -> tensor<8x16xf32>
    %s = kiln_graph.sum %e {dims = array<i64: 1>} : tensor<8x16xf32> -> tensor<8xf32>
    kiln_kernel.yield %e, %s : tensor<8x16xf32>, tensor<8xf32>
  }
  %1 = kiln_graph.reshape %0#0 : tensor<8x16xf32> -> tensor<4x32xf32>
  %2 = kiln_kernel.kernel "kernel_1_neg" extent(4) ins(%1 : tensor<4x32xf32>) -> (tensor<4x32xf32>) {
  ^bb0(%a: tensor<4x32xf32>):
    %n = kiln_graph.neg %a : tensor<4x32xf32> -> tensor<4x32xf32>
    kiln_kernel.yield %n : tensor<4x32xf32>
  }
  return %2, %0#1 : tensor<4x32xf32>, tensor<8xf32>
}

// -----

// A kernel without inputs; a reshape of an argument is a view of it.
// CHECK-LABEL: func.func @constant_and_view
// CHECK-SAME: (%[[X:.*]]: memref<2x3xf32>) -> (memref<6xf32>, memref<6xf32>)
// CHECK-NEXT: %[[B:.*]] = kiln_plan.alloc : memref<6xf32>
// CHECK-NEXT: kiln_plan.launch @kernel_0_constant[1] (%[[B]]) {num_inputs = 0 : i64} : memref<6xf32>
// CHECK-NEXT: %[[V:.*]] = kiln_plan.view %[[X]] : memref<2x3xf32> to memref<6xf32>
// CHECK-NEXT: return %[[B]], %[[V]]
// CHECK: func.func private @kernel_0_constant(%{{.*}}: index, %{{.*}}: index, %[[OUT:.*]]: memref<6xf32>)
// CHECK-NEXT: %[[C:.*]] = kiln_graph.constant
// CHECK-NEXT: bufferization.materialize_in_destination %[[C]] in restrict writable %[[OUT]]
func.func @constant_and_view(%x: tensor<2x3xf32>) -> (tensor<6xf32>, tensor<6xf32>) {
  %0 = kiln_kernel.kernel "kernel_0_constant" extent(0) -> (tensor<6xf32>) {
    %c = kiln_graph.constant dense<1.0> : tensor<6xf32>
    kiln_kernel.yield %c : tensor<6xf32>
  }
  %1 = kiln_graph.reshape %x : tensor<2x3xf32> -> tensor<6xf32>
  return %0, %1 : tensor<6xf32>, tensor<6xf32>
}

// -----

// Empty tensors have no data: kernels take them as memref<0xT>, read them as
// tensor.empty and write nothing to them.
// CHECK-LABEL: func.func @empty_tensors
// CHECK-SAME: (%[[E:.*]]: memref<0x4xf32>, %[[Y:.*]]: memref<2x4xf32>) -> (memref<2x4xf32>, memref<0x4xf32>)
// CHECK-NEXT: %[[B0:.*]] = kiln_plan.alloc : memref<2x4xf32>
// CHECK-NEXT: %[[B1:.*]] = kiln_plan.alloc : memref<0x4xf32>
// CHECK-NEXT: kiln_plan.launch @kernel_0_concat[1] (%[[E]], %[[Y]], %[[B0]], %[[B1]]) {num_inputs = 2 : i64} : memref<0x4xf32>, memref<2x4xf32>, memref<2x4xf32>, memref<0x4xf32>
// CHECK: func.func private @kernel_0_concat(%{{.*}}: index, %{{.*}}: index, %{{.*}}: memref<0xf32>, %[[A:.*]]: memref<2x4xf32>, %[[R0:.*]]: memref<2x4xf32>, %{{.*}}: memref<0xf32>)
// CHECK-NEXT: %[[TE:.*]] = tensor.empty() : tensor<0x4xf32>
// CHECK-NEXT: %[[TA:.*]] = bufferization.to_tensor %[[A]] restrict
// CHECK-NEXT: %[[C:.*]] = kiln_graph.concat %[[TE]], %[[TA]]
// CHECK-NEXT: kiln_graph.neg %[[TE]]
// CHECK-NEXT: bufferization.materialize_in_destination %[[C]] in restrict writable %[[R0]]
// CHECK-NEXT: return
func.func @empty_tensors(%x: tensor<0x4xf32>, %y: tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<0x4xf32>) {
  %0:2 = kiln_kernel.kernel "kernel_0_concat" extent(2) ins(%x, %y : tensor<0x4xf32>, tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<0x4xf32>) {
  ^bb0(%a: tensor<0x4xf32>, %b: tensor<2x4xf32>):
    %1 = kiln_graph.concat %a, %b {dim = 0 : i64} : tensor<0x4xf32>, tensor<2x4xf32> -> tensor<2x4xf32>
    %2 = kiln_graph.neg %a : tensor<0x4xf32> -> tensor<0x4xf32>
    kiln_kernel.yield %1, %2 : tensor<2x4xf32>, tensor<0x4xf32>
  }
  return %0#0, %0#1 : tensor<2x4xf32>, tensor<0x4xf32>
}

// -----

// Declarations, existing kernel functions and visibility are kept.
// CHECK-LABEL: func.func private @declared(tensor<4xf32>)
// CHECK-LABEL: func.func private @kernel_9(%{{.*}}: index, %{{.*}}: index, %{{.*}}: memref<4xf32>) attributes {kiln_kernel.kernel = "kernel_9"}
// CHECK-LABEL: func.func private @hidden(%{{.*}}: memref<4xf32>) -> memref<4xf32> attributes {kiln_plan.entry, note = "kept"}
// CHECK-NEXT: return %{{.*}} : memref<4xf32>
func.func private @declared(tensor<4xf32>)
func.func private @kernel_9(%wg: index, %wgc: index, %a: memref<4xf32>) attributes {kiln_kernel.kernel = "kernel_9"} {
  return
}
func.func private @hidden(%x: tensor<4xf32>) -> tensor<4xf32> attributes {note = "kept"} {
  return %x : tensor<4xf32>
}

// -----

// Kernel names are made unique across graphs.
// CHECK-LABEL: func.func @first
// CHECK: kiln_plan.launch @kernel_0_exp[1]
// CHECK: func.func private @kernel_0_exp(
// CHECK-LABEL: func.func @second
// CHECK: kiln_plan.launch @[[NAME:kernel_0_exp_.*]][1]
// CHECK: func.func private @[[NAME]](
func.func @first(%x: tensor<8xf32>) -> tensor<8xf32> {
  %0 = kiln_kernel.kernel "kernel_0_exp" extent(8) ins(%x : tensor<8xf32>) -> (tensor<8xf32>) {
  ^bb0(%a: tensor<8xf32>):
    %1 = kiln_graph.exp %a : tensor<8xf32> -> tensor<8xf32>
    kiln_kernel.yield %1 : tensor<8xf32>
  }
  return %0 : tensor<8xf32>
}
func.func @second(%x: tensor<8xf32>) -> tensor<8xf32> {
  %0 = kiln_kernel.kernel "kernel_0_exp" extent(8) ins(%x : tensor<8xf32>) -> (tensor<8xf32>) {
  ^bb0(%a: tensor<8xf32>):
    %1 = kiln_graph.exp %a : tensor<8xf32> -> tensor<8xf32>
    kiln_kernel.yield %1 : tensor<8xf32>
  }
  return %0 : tensor<8xf32>
}

// -----

// Two graphs in one module: kernel symbols stay unique, and each kernel's
// kiln_kernel.kernel attribute names the symbol it ended up with.
// CHECK-LABEL: func.func @first
// CHECK: kiln_plan.launch @kernel_0_exp[
// CHECK: func.func private @kernel_0_exp({{.*}} attributes {kiln_kernel.kernel = "kernel_0_exp",
// CHECK-LABEL: func.func @second
// CHECK: kiln_plan.launch @[[SECOND:kernel_0_exp_[0-9]+]][
// CHECK: func.func private @[[SECOND]]({{.*}} attributes {kiln_kernel.kernel = "[[SECOND]]",
func.func @first(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = kiln_kernel.kernel "kernel_0_exp" extent(0) ins(%x : tensor<4xf32>) -> (tensor<4xf32>) {
  ^bb0(%a: tensor<4xf32>):
    %1 = kiln_graph.exp %a : tensor<4xf32> -> tensor<4xf32>
    kiln_kernel.yield %1 : tensor<4xf32>
  }
  return %0 : tensor<4xf32>
}
func.func @second(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = kiln_kernel.kernel "kernel_0_exp" extent(0) ins(%x : tensor<4xf32>) -> (tensor<4xf32>) {
  ^bb0(%a: tensor<4xf32>):
    %1 = kiln_graph.exp %a : tensor<4xf32> -> tensor<4xf32>
    kiln_kernel.yield %1 : tensor<4xf32>
  }
  return %0 : tensor<4xf32>
}

// -----

// An assert between kernels becomes a plan check of the buffer its
// condition was written to, after the launch that writes it.
// CHECK-LABEL: func.func @assert_becomes_check
// CHECK: %[[FLAG:.*]] = kiln_plan.alloc : memref<i1>
// CHECK: kiln_plan.launch @kernel_0_all[1]
// CHECK-NEXT: kiln_plan.check %[[FLAG]] {kind = "index", message = "index out of range"} : memref<i1>
func.func @assert_becomes_check(%x: tensor<4xi1>) -> tensor<4xi1> {
  %0 = kiln_kernel.kernel "kernel_0_all" extent(0) ins(%x : tensor<4xi1>) -> (tensor<i1>) {
  ^bb0(%a: tensor<4xi1>):
    %1 = kiln_graph.all %a {dims = array<i64>} : tensor<4xi1> -> tensor<i1>
    kiln_kernel.yield %1 : tensor<i1>
  }
  kiln_graph.assert %0 {kind = #kiln_graph.check_kind<index>, message = "index out of range"} : tensor<i1>
  %2 = kiln_kernel.kernel "kernel_1_not" extent(4) ins(%x : tensor<4xi1>) -> (tensor<4xi1>) {
  ^bb0(%a: tensor<4xi1>):
    %3 = kiln_graph.bitwise_not %a : tensor<4xi1> -> tensor<4xi1>
    kiln_kernel.yield %3 : tensor<4xi1>
  }
  return %2 : tensor<4xi1>
}
