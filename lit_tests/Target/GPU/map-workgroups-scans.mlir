// Scans of few rows along a long axis go by blocks: each thread folds a
// chunk of the axis, thread 0 turns the chunks' totals into prefixes, and
// each thread scans its chunk again from the carry and its prefix.
// map-workgroups.mlir has the scans of many rows, a step at a time.
// RUN: kiln-opt %s -split-input-file \
// RUN:   --pass-pipeline='builtin.module(kiln-attach-target{target=vulkan},func.func(kiln-gpu-map-workgroups))' | FileCheck %s

// A cumsum's loop over 2 rows of 70000 (the carry a view of a scratch
// buffer, the steps' bounds constants made inside the loop, as
// convert-linalg-to-parallel-loops leaves them): the rows one after
// another; per row four barriers.
// CHECK-LABEL: func.func @cumsum_rows
// CHECK-SAME: ["a scan by blocks of its axis over the threads"]
// CHECK: %[[PARTIALS:.*]] = memref.alloc() : memref<129xf32, #gpu.address_space<workgroup>>
// CHECK: %[[T:.*]] = gpu.thread_id x
// CHECK: %[[CARRY:.*]] = memref.reinterpret_cast
// CHECK: scf.for %[[ROW:.*]] = %{{.*}} to %{{.*}} step
// CHECK:   scf.for %[[COL:.*]] = %{{.*}} to %{{.*}} step
// The thread's chunk total, from the sum's identity.
// CHECK:     %[[FIRST:.*]] = arith.muli %[[T]], %{{.*}} : index
// CHECK:     %[[TOTAL:.*]] = scf.for %[[K:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[SUM:.*]] = %cst{{.*}}) -> (f32)
// CHECK:       %[[VIEW:.*]] = memref.subview %{{.*}}[0, %[[K]]]
// CHECK:       %[[X:.*]] = memref.load %[[VIEW]][%[[ROW]], %[[COL]]]
// CHECK:       %[[NEXT:.*]] = arith.addf %[[SUM]], %[[X]] fastmath<reassoc>
// CHECK:       scf.yield %[[NEXT]]
// CHECK:     memref.store %[[TOTAL]], %[[PARTIALS]][%[[T]]]
// CHECK:     gpu.barrier
// Thread 0's exclusive prefixes over the 128 totals, the row's total at 128.
// CHECK:     scf.if
// CHECK:       %[[ALL:.*]] = scf.for %[[I:.*]] = %{{.*}} to %c128{{.*}} step %{{.*}} iter_args(%[[BEFORE:.*]] = %cst{{.*}}) -> (f32)
// CHECK:         %[[CHUNK:.*]] = memref.load %[[PARTIALS]][%[[I]]]
// CHECK:         memref.store %[[BEFORE]], %[[PARTIALS]][%[[I]]]
// CHECK:         arith.addf %[[BEFORE]], %[[CHUNK]]
// CHECK:       memref.store %[[ALL]], %[[PARTIALS]][%c128{{.*}}]
// CHECK:     gpu.barrier
// The chunk again, from the carry and the thread's prefix; every step of an
// iteration, the carry in a register.
// CHECK-DAG: %[[OLD:.*]] = memref.load %[[CARRY]][%[[ROW]], %[[COL]]]
// CHECK-DAG: %[[PREFIX:.*]] = memref.load %[[PARTIALS]][%[[T]]]
// CHECK:     %[[START:.*]] = arith.addf %[[OLD]], %[[PREFIX]]
// CHECK:     scf.for %[[K2:.*]] = %{{.*}} iter_args(%[[RUNNING:.*]] = %[[START]]) -> (f32)
// CHECK:       memref.subview %{{.*}}[0, %[[K2]]]
// CHECK:       %[[OUT:.*]] = memref.subview %{{.*}}[0, %[[K2]]]
// CHECK:       memref.load
// CHECK:       %[[NOW:.*]] = arith.addf %[[RUNNING]], %{{.*}}
// CHECK:       memref.store %[[NOW]], %[[OUT]][%[[ROW]], %[[COL]]]
// CHECK:       scf.yield %[[NOW]]
// CHECK:     gpu.barrier
// Thread 0 adds the row's total to the carry.
// CHECK:     scf.if
// CHECK:       memref.load %[[CARRY]][%[[ROW]], %[[COL]]]
// CHECK:       memref.load %[[PARTIALS]][%c128{{.*}}]
// CHECK:       arith.addf
// CHECK:       memref.store %{{.*}}, %[[CARRY]][%[[ROW]], %[[COL]]]
// CHECK:     gpu.barrier
func.func @cumsum_rows(%id: index, %count: index, %in: memref<2x70000xf32>, %out: memref<2x70000xf32>, %scratch: memref<2xf32>)
    attributes {kiln_kernel.kernel = "cumsum_rows", kiln_kernel.workgroup_extent = 0 : i64} {
  %c1 = arith.constant 1 : index
  %c70000 = arith.constant 70000 : index
  %carry = memref.reinterpret_cast %scratch to offset: [0], sizes: [2, 1], strides: [1, 1] : memref<2xf32> to memref<2x1xf32>
  scf.for %k = %c1 to %c70000 step %c1 {
    %c0 = arith.constant 0 : index
    %c2 = arith.constant 2 : index
    %c1_ = arith.constant 1 : index
    %x_view = memref.subview %in[0, %k] [2, 1] [1, 1] : memref<2x70000xf32> to memref<2x1xf32, strided<[70000, 1], offset: ?>>
    scf.parallel (%r, %c) = (%c0, %c0) to (%c2, %c1_) step (%c1_, %c1_) {
      %x = memref.load %x_view[%r, %c] : memref<2x1xf32, strided<[70000, 1], offset: ?>>
      %a = memref.load %carry[%r, %c] : memref<2x1xf32>
      %s = arith.addf %a, %x fastmath<reassoc> : f32
      memref.store %s, %carry[%r, %c] : memref<2x1xf32>
      scf.reduce
    }
    %out_view = memref.subview %out[0, %k] [2, 1] [1, 1] : memref<2x70000xf32> to memref<2x1xf32, strided<[70000, 1], offset: ?>>
    scf.parallel (%r, %c) = (%c0, %c0) to (%c2, %c1_) step (%c1_, %c1_) {
      %a = memref.load %carry[%r, %c] : memref<2x1xf32>
      memref.store %a, %out_view[%r, %c] : memref<2x1xf32, strided<[70000, 1], offset: ?>>
      scf.reduce
    }
  }
  return
}

// -----

// A float sum without reassoc may not be reordered: the steps go one at a
// time, in the loop's order.
// CHECK-LABEL: func.func @ordered_sum
// CHECK-SAME: ["a sequential loop, each of its steps over the threads"]
func.func @ordered_sum(%id: index, %count: index, %in: memref<2x5000xf32>, %acc: memref<2xf32>, %out: memref<2x5000xf32>)
    attributes {kiln_kernel.kernel = "ordered_sum", kiln_kernel.workgroup_extent = 0 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c5000 = arith.constant 5000 : index
  scf.for %k = %c1 to %c5000 step %c1 {
    scf.parallel (%r) = (%c0) to (%c2) step (%c1) {
      %a = memref.load %acc[%r] : memref<2xf32>
      %x = memref.load %in[%r, %k] : memref<2x5000xf32>
      %s = arith.addf %a, %x : f32
      memref.store %s, %acc[%r] : memref<2xf32>
      scf.reduce
    }
    scf.parallel (%r) = (%c0) to (%c2) step (%c1) {
      %a = memref.load %acc[%r] : memref<2xf32>
      memref.store %a, %out[%r, %k] : memref<2x5000xf32>
      scf.reduce
    }
  }
  return
}

// -----

// A step that reads what an earlier iteration wrote (out[r, k - 1]) is no
// scan of independent iterations: a step at a time.
// CHECK-LABEL: func.func @reads_the_last_output
// CHECK-SAME: ["a sequential loop, each of its steps over the threads"]
func.func @reads_the_last_output(%id: index, %count: index, %in: memref<2x5000xf32>, %acc: memref<2xf32>, %out: memref<2x5000xf32>)
    attributes {kiln_kernel.kernel = "reads_the_last_output", kiln_kernel.workgroup_extent = 0 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c5000 = arith.constant 5000 : index
  scf.for %k = %c1 to %c5000 step %c1 {
    scf.parallel (%r) = (%c0) to (%c2) step (%c1) {
      %a = memref.load %acc[%r] : memref<2xf32>
      %x = memref.load %in[%r, %k] : memref<2x5000xf32>
      %s = arith.addf %a, %x fastmath<reassoc> : f32
      memref.store %s, %acc[%r] : memref<2xf32>
      scf.reduce
    }
    scf.parallel (%r) = (%c0) to (%c2) step (%c1) {
      %a = memref.load %acc[%r] : memref<2xf32>
      %km1 = arith.subi %k, %c1 : index
      %last = memref.load %out[%r, %km1] : memref<2x5000xf32>
      %y = arith.addf %a, %last : f32
      memref.store %y, %out[%r, %k] : memref<2x5000xf32>
      scf.reduce
    }
  }
  return
}

// -----

// Many rows (1000 of them, more than the threads): a step at a time, the
// rows over the threads.
// CHECK-LABEL: func.func @many_rows
// CHECK-SAME: ["a sequential loop, each of its steps over the threads"]
func.func @many_rows(%id: index, %count: index, %in: memref<1000x300xf32>, %acc: memref<1000xf32>, %out: memref<1000x300xf32>)
    attributes {kiln_kernel.kernel = "many_rows", kiln_kernel.workgroup_extent = 0 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c300 = arith.constant 300 : index
  %c1000 = arith.constant 1000 : index
  scf.for %j = %c0 to %c300 step %c1 {
    scf.parallel (%i) = (%c0) to (%c1000) step (%c1) {
      %a = memref.load %acc[%i] : memref<1000xf32>
      %x = memref.load %in[%i, %j] : memref<1000x300xf32>
      %s = arith.addf %a, %x fastmath<reassoc> : f32
      memref.store %s, %acc[%i] : memref<1000xf32>
      scf.reduce
    }
    scf.parallel (%i) = (%c0) to (%c1000) step (%c1) {
      %a = memref.load %acc[%i] : memref<1000xf32>
      memref.store %a, %out[%i, %j] : memref<1000x300xf32>
      scf.reduce
    }
  }
  return
}
