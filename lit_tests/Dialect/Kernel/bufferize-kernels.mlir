// RUN: kiln-opt %s -split-input-file -kiln-bufferize-kernels | FileCheck %s

// The result is computed in place in the output buffer: the tensor.empty
// feeding it is eliminated, and no buffer is allocated.
// CHECK-DAG: #[[ID:.*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG: #[[ROW:.*]] = affine_map<(d0, d1) -> (d1)>
// CHECK-LABEL: func.func private @kernel_0_add
// CHECK-SAME: (%{{.*}}: index, %{{.*}}: index, %[[A:.*]]: memref<4x8xf32>, %[[B:.*]]: memref<8xf32>, %[[OUT:.*]]: memref<4x8xf32>)
// CHECK-NOT: memref.alloc
// CHECK-NOT: bufferization.to_tensor
// CHECK: linalg.generic {indexing_maps = [#[[ID]], #[[ROW]], #[[ID]]], iterator_types = ["parallel", "parallel"]}
// CHECK-SAME: ins(%[[A]], %[[B]] : memref<4x8xf32>, memref<8xf32>) outs(%[[OUT]] : memref<4x8xf32>)
// CHECK: arith.addf
// CHECK-NOT: memref.alloc
// CHECK: return
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>
func.func private @kernel_0_add(%wg: index, %wgc: index, %a: memref<4x8xf32>, %b: memref<8xf32>, %out: memref<4x8xf32>)
    attributes {kiln_kernel.kernel = "kernel_0_add", kiln_kernel.workgroup_extent = 4 : i64} {
  %0 = bufferization.to_tensor %a restrict : memref<4x8xf32> to tensor<4x8xf32>
  %1 = bufferization.to_tensor %b restrict : memref<8xf32> to tensor<8xf32>
  %2 = tensor.empty() : tensor<4x8xf32>
  %3 = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%0, %1 : tensor<4x8xf32>, tensor<8xf32>) outs(%2 : tensor<4x8xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %4 = arith.addf %x, %y : f32
    linalg.yield %4 : f32
  } -> tensor<4x8xf32>
  bufferization.materialize_in_destination %3 in restrict writable %out : (tensor<4x8xf32>, memref<4x8xf32>) -> ()
  return
}

// -----

// Values that are not kernel results get a buffer of their own.
// CHECK-LABEL: func.func private @kernel_0_sum
// CHECK-SAME: (%{{.*}}: index, %{{.*}}: index, %[[A:.*]]: memref<4x8xf32>, %[[OUT:.*]]: memref<4x8xf32>)
// CHECK: %[[TMP:.*]] = memref.alloc() {{.*}} : memref<4xf32>
// CHECK: linalg.fill ins(%{{.*}} : f32) outs(%[[TMP]] : memref<4xf32>)
// CHECK: linalg.generic {{.*}} ins(%[[A]] : memref<4x8xf32>) outs(%[[TMP]] : memref<4xf32>)
// CHECK: linalg.generic {{.*}} ins(%[[A]], %[[TMP]] : memref<4x8xf32>, memref<4xf32>) outs(%[[OUT]] : memref<4x8xf32>)
#id = affine_map<(d0, d1) -> (d0, d1)>
#rows = affine_map<(d0, d1) -> (d0)>
func.func private @kernel_0_sum(%wg: index, %wgc: index, %a: memref<4x8xf32>, %out: memref<4x8xf32>)
    attributes {kiln_kernel.kernel = "kernel_0_sum", kiln_kernel.workgroup_extent = 4 : i64} {
  %0 = bufferization.to_tensor %a restrict : memref<4x8xf32> to tensor<4x8xf32>
  %e = tensor.empty() : tensor<4xf32>
  %z = arith.constant 0.0 : f32
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  %s = linalg.generic {indexing_maps = [#id, #rows], iterator_types = ["parallel", "reduction"]}
      ins(%0 : tensor<4x8xf32>) outs(%f : tensor<4xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %r = arith.addf %x, %acc : f32
    linalg.yield %r : f32
  } -> tensor<4xf32>
  %e2 = tensor.empty() : tensor<4x8xf32>
  %d = linalg.generic {indexing_maps = [#id, #rows, #id], iterator_types = ["parallel", "parallel"]}
      ins(%0, %s : tensor<4x8xf32>, tensor<4xf32>) outs(%e2 : tensor<4x8xf32>) {
  ^bb0(%x: f32, %t: f32, %o: f32):
    %r = arith.divf %x, %t : f32
    linalg.yield %r : f32
  } -> tensor<4x8xf32>
  bufferization.materialize_in_destination %d in restrict writable %out : (tensor<4x8xf32>, memref<4x8xf32>) -> ()
  return
}

// -----

// Copies are linalg.copy (they become loops like every other op), not
// memref.copy.
// CHECK-LABEL: func.func private @kernel_0_copy
// CHECK-SAME: (%{{.*}}: index, %{{.*}}: index, %[[A:.*]]: memref<4x8xf32>, %[[O1:.*]]: memref<4x8xf32>, %[[O2:.*]]: memref<4x8xf32>)
// CHECK-NOT: memref.copy
// CHECK: linalg.copy ins(%[[A]] : memref<4x8xf32>) outs(%[[O1]] : memref<4x8xf32>)
// CHECK: linalg.copy ins(%[[A]] : memref<4x8xf32>) outs(%[[O2]] : memref<4x8xf32>)
// CHECK-NOT: memref.copy
func.func private @kernel_0_copy(%wg: index, %wgc: index, %a: memref<4x8xf32>, %o1: memref<4x8xf32>, %o2: memref<4x8xf32>)
    attributes {kiln_kernel.kernel = "kernel_0_copy", kiln_kernel.workgroup_extent = 4 : i64} {
  %0 = bufferization.to_tensor %a restrict : memref<4x8xf32> to tensor<4x8xf32>
  bufferization.materialize_in_destination %0 in restrict writable %o1 : (tensor<4x8xf32>, memref<4x8xf32>) -> ()
  bufferization.materialize_in_destination %0 in restrict writable %o2 : (tensor<4x8xf32>, memref<4x8xf32>) -> ()
  return
}

// -----

// Functions that are not kernels (the plan) are not bufferized.
// CHECK-LABEL: func.func @plan
// CHECK-SAME: (%[[A:.*]]: memref<4xf32>) -> memref<4xf32> attributes {kiln_plan.entry}
// CHECK-NEXT: %[[B:.*]] = kiln_plan.alloc : memref<4xf32>
// CHECK-NEXT: return %[[B]]
func.func @plan(%a: memref<4xf32>) -> memref<4xf32> attributes {kiln_plan.entry} {
  %b = kiln_plan.alloc : memref<4xf32>
  return %b : memref<4xf32>
}

// -----

// Two reductions that share one (CSE-merged) zero-filled init each get their
// own copy of it, so they are written to their own output buffers. Before,
// both were placed in %sum0 and the second result overwrote the first.
// CHECK-LABEL: func.func private @kernel_0_two_sums
// CHECK-SAME: %[[SUM0:[a-z0-9]+]]: memref<3xf32>, %[[SUM1:[a-z0-9]+]]: memref<1x3xf32>)
// CHECK: %[[OWN:.*]] = memref.alloc
// CHECK: linalg.generic {{.*}} outs(%[[OWN]] : memref<3xf32>)
// CHECK: linalg.generic {{.*}} outs(%[[SUM0]] : memref<3xf32>)
// CHECK: linalg.generic {{.*}} ins(%{{.*}} : memref<1x3xf32>) outs(%[[SUM0]] : memref<3xf32>)
// CHECK: linalg.generic {{.*}} ins(%{{.*}} : memref<1x3xf32>) outs(%[[OWN]] : memref<3xf32>)
// CHECK: %[[E:.*]] = memref.expand_shape %[[OWN]]
// CHECK: linalg.copy ins(%[[E]] : memref<1x3xf32>) outs(%[[SUM1]] : memref<1x3xf32>)
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
#id1 = affine_map<(d0) -> (d0)>
func.func private @kernel_0_two_sums(%wg: index, %wgc: index, %a: memref<1x3xf32>, %c: memref<1x3xf32>,
                                     %sum0: memref<3xf32>, %sum1: memref<1x3xf32>)
    attributes {kiln_kernel.kernel = "kernel_0_two_sums", kiln_kernel.workgroup_extent = 0 : i64} {
  %zero = arith.constant 0.0 : f32
  %0 = bufferization.to_tensor %a restrict : memref<1x3xf32> to tensor<1x3xf32>
  %1 = bufferization.to_tensor %c restrict : memref<1x3xf32> to tensor<1x3xf32>
  %2 = tensor.empty() : tensor<3xf32>
  %3 = linalg.generic {indexing_maps = [#id1], iterator_types = ["parallel"]} outs(%2 : tensor<3xf32>) {
  ^bb0(%o: f32):
    linalg.yield %zero : f32
  } -> tensor<3xf32>
  %4 = linalg.generic {indexing_maps = [#id2, #col], iterator_types = ["reduction", "parallel"]}
      ins(%0 : tensor<1x3xf32>) outs(%3 : tensor<3xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %s = arith.addf %acc, %x : f32
    linalg.yield %s : f32
  } -> tensor<3xf32>
  %5 = linalg.generic {indexing_maps = [#id2, #col], iterator_types = ["reduction", "parallel"]}
      ins(%1 : tensor<1x3xf32>) outs(%3 : tensor<3xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %s = arith.addf %acc, %x : f32
    linalg.yield %s : f32
  } -> tensor<3xf32>
  %6 = tensor.expand_shape %5 [[0, 1]] output_shape [1, 3] : tensor<3xf32> into tensor<1x3xf32>
  bufferization.materialize_in_destination %4 in restrict writable %sum0 : (tensor<3xf32>, memref<3xf32>) -> ()
  bufferization.materialize_in_destination %6 in restrict writable %sum1 : (tensor<1x3xf32>, memref<1x3xf32>) -> ()
  return
}

// -----

// Attention writes both results into the kernel's output buffers.
// CHECK-LABEL: func.func private @kernel_0_attention
// CHECK-SAME: (%{{.*}}: index, %{{.*}}: index, %[[Q:.*]]: memref<1x2x8x16xf32>, %[[OUT:.*]]: memref<1x2x8x16xf32>, %[[LSE:.*]]: memref<1x2x8xf32>)
// CHECK-NOT: memref.alloc
// CHECK: kiln_kernel.attention %[[Q]], %[[Q]], %[[Q]] into %[[OUT]], %[[LSE]]
// CHECK-NOT: memref.alloc
// CHECK: return
func.func private @kernel_0_attention(%wg: index, %wgc: index, %q: memref<1x2x8x16xf32>, %out: memref<1x2x8x16xf32>, %lse: memref<1x2x8xf32>)
    attributes {kiln_kernel.kernel = "kernel_0_attention", kiln_kernel.workgroup_extent = 2 : i64} {
  %0 = bufferization.to_tensor %q restrict : memref<1x2x8x16xf32> to tensor<1x2x8x16xf32>
  %1 = tensor.empty() : tensor<1x2x8x16xf32>
  %2 = tensor.empty() : tensor<1x2x8xf32>
  %3:2 = kiln_kernel.attention %0, %0, %0 into %1, %2 {scale = 0.25 : f64, is_causal = false} : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32> into tensor<1x2x8x16xf32>, tensor<1x2x8xf32> -> tensor<1x2x8x16xf32>, tensor<1x2x8xf32>
  bufferization.materialize_in_destination %3#0 in restrict writable %out : (tensor<1x2x8x16xf32>, memref<1x2x8x16xf32>) -> ()
  bufferization.materialize_in_destination %3#1 in restrict writable %lse : (tensor<1x2x8xf32>, memref<1x2x8xf32>) -> ()
  return
}
