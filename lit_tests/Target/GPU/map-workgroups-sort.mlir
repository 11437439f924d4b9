// A sort's network (kiln-lower-sort with parallel steps) on the threads:
// every thread runs the row, stage and step loops (their bounds are the
// same for all), each step spread over the threads with a barrier after it.
// RUN: kiln-opt %s -split-input-file \
// RUN:   --pass-pipeline='builtin.module(kiln-attach-target{target=vulkan},func.func(kiln-lower-sort{parallel-steps=true},kiln-gpu-map-workgroups))' | FileCheck %s

// Rows of 5 split over the workgroups: the steps take every row of the
// workgroup's chunk at once (26 rows, so that the copy's 5 elements a row
// give every thread one), their rows clamped to the chunk; the stage
// loops run whole on every thread, a barrier after each step.
// CHECK-LABEL: func.func @sort_rows
// CHECK-SAME: ["a thread per element", "a sequential loop, each of its steps over the threads"]
// CHECK-SAME: kiln_kernel.workgroup_alignment = 26 : i64
// CHECK: %[[T:.*]] = gpu.thread_id x
// CHECK: scf.for %{{.*}} = %[[T]] to %{{.*}} step %c128
// CHECK:   memref.store
// CHECK: gpu.barrier
// CHECK: scf.for %[[STAGE:.*]] = %{{.*}} to %{{.*}} step
// CHECK:   arith.maxsi %{{.*}}, %[[BEGIN:.*]] : index
// CHECK:   scf.for %[[L:.*]] = %[[T]] to %{{.*}} step %c128
// CHECK:     %[[R:.*]] = arith.divui %{{.*}}, %{{.*}} : index
// CHECK:     arith.addi %[[BEGIN]], %{{.*}} : index
// CHECK:     scf.if
// CHECK:   gpu.barrier
// CHECK:   scf.for %{{.*}} = %{{.*}} to %[[STAGE]] step
// CHECK:     scf.for %{{.*}} = %[[T]] to %{{.*}} step %c128
// CHECK:       scf.if
// CHECK:     gpu.barrier
// CHECK-NOT: scf.parallel
func.func @sort_rows(%id: index, %count: index, %x: memref<100x5xf32>, %v: memref<100x5xf32>, %i: memref<100x5xi64>)
    attributes {kiln_kernel.kernel = "sort_rows", kiln_kernel.workgroup_extent = 100 : i64} {
  kiln_kernel.sort %x into %v, %i {dim = 1 : i64} : memref<100x5xf32> into memref<100x5xf32>, memref<100x5xi64>
  return
}

// -----

// One symbolic row in one workgroup: the copy a thread per element, then
// the stages counted at launch, their steps over the threads.
// CHECK-LABEL: func.func @sort_one_row
// CHECK-SAME: ["a thread per element", "a sequential loop, each of its steps over the threads"]
// CHECK: %[[T:.*]] = gpu.thread_id x
// CHECK: scf.for %{{.*}} = %[[T]] to %{{.*}} step %c128
// CHECK: gpu.barrier
// CHECK: math.ctlz
// CHECK: scf.for %[[STAGE:.*]] = %{{.*}} to %{{.*}} step
// CHECK:   scf.for %{{.*}} = %[[T]] to %{{.*}} step %c128
// CHECK:   gpu.barrier
// CHECK:   scf.for %{{.*}} = %{{.*}} to %[[STAGE]] step
// CHECK:     scf.for %{{.*}} = %[[T]] to %{{.*}} step %c128
// CHECK:     gpu.barrier
func.func @sort_one_row(%id: index, %count: index, %x: memref<?xi32>, %v: memref<?xi32>, %i: memref<?xi64>)
    attributes {kiln_kernel.kernel = "sort_one_row", kiln_kernel.workgroup_extent = 0 : i64} {
  kiln_kernel.sort %x into %v, %i {dim = 0 : i64} : memref<?xi32> into memref<?xi32>, memref<?xi64>
  return
}
