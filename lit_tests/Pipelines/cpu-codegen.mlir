// RUN: kiln-opt %s -split-input-file --kiln-attach-target=target=cpu:x86-64-v4 --kiln-cpu-codegen | FileCheck %s \
// RUN:   --implicit-check-not=func.func --implicit-check-not=unrealized_conversion_cast \
// RUN:   --implicit-check-not=memref. --implicit-check-not=linalg. --implicit-check-not=scf. \
// RUN:   --implicit-check-not=math. --implicit-check-not=bufferization.

// A pointwise kernel split across workgroups: an exported wrapper unpacks the
// binding array and calls the internal body, which computes its chunk of rows
// from the workgroup id and count; exp is a polynomial, not a libm call.
// CHECK-LABEL: llvm.func @kernel_0_add(
// CHECK-SAME: %[[ID:.*]]: i64, %[[COUNT:.*]]: i64, %[[BINDINGS:.*]]: !llvm.ptr) {
// CHECK-NEXT: %[[P0:.*]] = llvm.load %[[BINDINGS]] : !llvm.ptr -> !llvm.ptr
// CHECK-NEXT: %[[S1:.*]] = llvm.getelementptr %[[BINDINGS]][1] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr
// CHECK-NEXT: %[[P1:.*]] = llvm.load %[[S1]] : !llvm.ptr -> !llvm.ptr
// CHECK-NEXT: %[[S2:.*]] = llvm.getelementptr %[[BINDINGS]][2] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr
// CHECK-NEXT: %[[P2:.*]] = llvm.load %[[S2]] : !llvm.ptr -> !llvm.ptr
// CHECK-NEXT: llvm.call @kernel_0_add_body(%[[ID]], %[[COUNT]], %[[P0]], %[[P1]], %[[P2]]) : (i64, i64, !llvm.ptr, !llvm.ptr, !llvm.ptr) -> ()
// CHECK-NEXT: llvm.return
// CHECK: llvm.func internal @kernel_0_add_body(%[[WG:.*]]: i64, %[[WGC:.*]]: i64, %[[A:.*]]: !llvm.ptr, %[[B:.*]]: !llvm.ptr, %[[OUT:.*]]: !llvm.ptr)
// CHECK: llvm.udiv %{{.*}}, %[[WGC]] : i64
// CHECK: llvm.mul %[[WG]], %{{.*}} : i64
// CHECK: llvm.fadd
// CHECK: llvm.intr.fma
// CHECK-NOT: llvm.call
// CHECK: llvm.store %{{.*}}, %{{.*}} : f32, !llvm.ptr
// CHECK: llvm.return
func.func private @kernel_0_add(%wg: index, %wgc: index, %a: memref<64x16xf32>, %b: memref<16xf32>, %out: memref<64x16xf32>)
    attributes {kiln_kernel.kernel = "kernel_0_add", kiln_kernel.workgroup_extent = 64 : i64} {
  %0 = bufferization.to_tensor %a restrict : memref<64x16xf32> to tensor<64x16xf32>
  %1 = bufferization.to_tensor %b restrict : memref<16xf32> to tensor<16xf32>
  %2 = kiln_graph.add %0, %1 : tensor<64x16xf32>, tensor<16xf32> -> tensor<64x16xf32>
  %3 = kiln_graph.exp %2 : tensor<64x16xf32> -> tensor<64x16xf32>
  bufferization.materialize_in_destination %3 in restrict writable %out : (tensor<64x16xf32>, memref<64x16xf32>) -> ()
  return
}

// -----

// A matmul with its epilogue, and a single-workgroup reduction, in one module.
// CHECK-LABEL: llvm.func @kernel_0_matmul(
// CHECK-SAME: %{{.*}}: i64, %{{.*}}: i64, %{{.*}}: !llvm.ptr) {
// CHECK: llvm.call @kernel_0_matmul_body(
// CHECK: llvm.func internal @kernel_0_matmul_body(%{{.*}}: i64, %[[WGC:.*]]: i64, %{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr)
// CHECK: llvm.udiv %{{.*}}, %[[WGC]] : i64
// CHECK: llvm.return
// CHECK-LABEL: llvm.func @kernel_1_sum(
// CHECK-SAME: %{{.*}}: i64, %{{.*}}: i64, %{{.*}}: !llvm.ptr) {
// CHECK: llvm.call @kernel_1_sum_body(
// One workgroup: the loops are not split.
// CHECK: llvm.func internal @kernel_1_sum_body(
// CHECK-NOT: llvm.udiv
// CHECK: llvm.return
func.func private @kernel_0_matmul(%wg: index, %wgc: index, %a: memref<8x16xf32>, %w: memref<32x16xf32>, %b: memref<32xf32>, %out: memref<8x32xf32>)
    attributes {kiln_kernel.kernel = "kernel_0_matmul", kiln_kernel.workgroup_extent = 8 : i64} {
  %0 = bufferization.to_tensor %a restrict : memref<8x16xf32> to tensor<8x16xf32>
  %1 = bufferization.to_tensor %w restrict : memref<32x16xf32> to tensor<32x16xf32>
  %2 = bufferization.to_tensor %b restrict : memref<32xf32> to tensor<32xf32>
  %3 = kiln_graph.matmul %0, %1 {transpose_rhs = true} : tensor<8x16xf32>, tensor<32x16xf32> -> tensor<8x32xf32>
  %4 = kiln_graph.add %3, %2 : tensor<8x32xf32>, tensor<32xf32> -> tensor<8x32xf32>
  %5 = kiln_graph.relu %4 : tensor<8x32xf32> -> tensor<8x32xf32>
  bufferization.materialize_in_destination %5 in restrict writable %out : (tensor<8x32xf32>, memref<8x32xf32>) -> ()
  return
}
func.func private @kernel_1_sum(%wg: index, %wgc: index, %a: memref<8x32xf32>, %out: memref<f32>)
    attributes {kiln_kernel.kernel = "kernel_1_sum", kiln_kernel.workgroup_extent = 0 : i64} {
  %0 = bufferization.to_tensor %a restrict : memref<8x32xf32> to tensor<8x32xf32>
  %1 = kiln_graph.sum %0 {dims = array<i64>} : tensor<8x32xf32> -> tensor<f32>
  bufferization.materialize_in_destination %1 in restrict writable %out : (tensor<f32>, memref<f32>) -> ()
  return
}

// -----

// A softmax row kernel: its row statistics are small, so they live on the
// stack (kiln-stack-temporaries): no malloc or free in the kernel.
// CHECK-LABEL: llvm.func @kernel_0_softmax(
// CHECK: llvm.func internal @kernel_0_softmax_body(
// CHECK-NOT: llvm.call @malloc
// CHECK: llvm.alloca
// CHECK: llvm.alloca
// CHECK-NOT: llvm.call @malloc
// CHECK: llvm.fdiv
// CHECK-NOT: llvm.call @free
// CHECK: llvm.return
func.func private @kernel_0_softmax(%wg: index, %wgc: index, %a: memref<4x64xf32>, %out: memref<4x64xf32>)
    attributes {kiln_kernel.kernel = "kernel_0_softmax", kiln_kernel.workgroup_extent = 4 : i64} {
  %0 = bufferization.to_tensor %a restrict : memref<4x64xf32> to tensor<4x64xf32>
  %1 = kiln_graph.softmax %0 {dim = -1 : i64} : tensor<4x64xf32> -> tensor<4x64xf32>
  bufferization.materialize_in_destination %1 in restrict writable %out : (tensor<4x64xf32>, memref<4x64xf32>) -> ()
  return
}
