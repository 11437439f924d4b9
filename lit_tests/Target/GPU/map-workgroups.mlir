// RUN: kiln-opt %s -split-input-file \
// RUN:   --pass-pipeline='builtin.module(kiln-attach-target{target=vulkan},func.func(kiln-gpu-map-workgroups))' | FileCheck %s

// Rows of 8 elements, 128 threads: a workgroup takes 16 rows (the chunk's
// alignment), and thread t takes elements t, t + 128, ... of its rows;
// a barrier follows each loop nest.
// CHECK-LABEL: func.func @rows
// CHECK-SAME: kiln_kernel.workgroup_alignment = 16 : i64
// CHECK-SAME: kiln_kernel.workgroup_size = array<i64: 128, 1, 1>
// CHECK-DAG: %[[T:.*]] = gpu.thread_id x
// CHECK-DAG: %[[C128:.*]] = arith.constant 128 : index
// CHECK-DAG: gpu.block_id x
// CHECK-DAG: gpu.grid_dim x
// CHECK: scf.for %[[L:.*]] = %[[T]] to %{{.*}} step %[[C128]]
// CHECK:   arith.remui %[[L]], %{{.*}}
// CHECK:   memref.store
// CHECK: gpu.barrier
// CHECK-NOT: scf.parallel
func.func @rows(%id: index, %count: index, %in: memref<100x8xf32>, %out: memref<100x8xf32>)
    attributes {kiln_kernel.kernel = "rows", kiln_kernel.workgroup_extent = 100 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c100 = arith.constant 100 : index
  scf.parallel (%i, %j) = (%c0, %c0) to (%c100, %c8) step (%c1, %c1) {
    %x = memref.load %in[%i, %j] : memref<100x8xf32>
    %y = arith.addf %x, %x : f32
    memref.store %y, %out[%i, %j] : memref<100x8xf32>
    scf.reduce
  }
  return
}

// -----

// A loop whose iterations may write the same element (a scatter through
// loaded indices) runs on thread 0 alone.
// CHECK-LABEL: func.func @scatter
// CHECK: %[[FIRST:.*]] = arith.cmpi eq, %{{.*}}, %c0
// CHECK: scf.if %[[FIRST]] {
// CHECK:   scf.for
// CHECK:     memref.store
// CHECK: gpu.barrier
func.func @scatter(%id: index, %count: index, %index: memref<16xi64>, %src: memref<16xf32>, %out: memref<4xf32>)
    attributes {kiln_kernel.kernel = "scatter"} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  scf.parallel (%i) = (%c0) to (%c16) step (%c1) {
    %k = memref.load %index[%i] : memref<16xi64>
    %ki = arith.index_cast %k : i64 to index
    %x = memref.load %src[%i] : memref<16xf32>
    %old = memref.load %out[%ki] : memref<4xf32>
    %s = arith.addf %x, %old : f32
    memref.store %s, %out[%ki] : memref<4xf32>
    scf.reduce
  }
  return
}

// -----

// A reduction into one element spreads over the threads: each folds every
// 128th element into a partial from the identity (-0.0 for a reassociable
// sum), the partials meet in workgroup memory, thread 0 folds them into the
// accumulator.
// CHECK-LABEL: func.func @full_sum
// CHECK-DAG: %[[T:.*]] = gpu.thread_id x
// CHECK-DAG: %[[IDENTITY:.*]] = arith.constant -0.000000e+00 : f32
// CHECK: %[[PARTIAL:.*]] = scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[P:.*]] = %[[IDENTITY]]) -> (f32)
// CHECK:   arith.addf %[[P]], %{{.*}} fastmath<reassoc>
// CHECK: %[[SHARED:.*]] = memref.alloc() : memref<128xf32, #gpu.address_space<workgroup>>
// CHECK: memref.store %[[PARTIAL]], %[[SHARED]][%[[T]]]
// CHECK: gpu.barrier
// CHECK: scf.if
// CHECK:   scf.for {{.*}} iter_args
// CHECK:     memref.load %[[SHARED]]
// CHECK:   memref.store %{{.*}}, %{{.*}}[] : memref<f32>
// CHECK: gpu.barrier
func.func @full_sum(%id: index, %count: index, %in: memref<1000xf32>, %out: memref<f32>)
    attributes {kiln_kernel.kernel = "full_sum", kiln_kernel.workgroup_extent = 0 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c1000 = arith.constant 1000 : index
  scf.for %i = %c0 to %c1000 step %c1 {
    %x = memref.load %in[%i] : memref<1000xf32>
    %acc = memref.load %out[] : memref<f32>
    %s = arith.addf %acc, %x fastmath<reassoc> : f32
    memref.store %s, %out[] : memref<f32>
  }
  return
}

// -----

// Without reassoc a float sum keeps its order: thread 0 alone.
// CHECK-LABEL: func.func @ordered_sum
// CHECK-NOT: address_space<workgroup>
// CHECK: scf.if
// CHECK:   scf.for
func.func @ordered_sum(%id: index, %count: index, %in: memref<1000xf32>, %out: memref<f32>)
    attributes {kiln_kernel.kernel = "ordered_sum", kiln_kernel.workgroup_extent = 0 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c1000 = arith.constant 1000 : index
  scf.for %i = %c0 to %c1000 step %c1 {
    %x = memref.load %in[%i] : memref<1000xf32>
    %acc = memref.load %out[] : memref<f32>
    %s = arith.addf %acc, %x : f32
    memref.store %s, %out[] : memref<f32>
  }
  return
}
