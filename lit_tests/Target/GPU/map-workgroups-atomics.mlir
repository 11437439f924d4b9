// Loop nests whose updates may meet (a 1-D scatter) by atomics: each
// update becomes a memref.atomic_rmw and the nest's iterations go over the
// threads, in rounds every thread runs (uniform control flow around the
// atomics), the last round's threads past the end guarded.
// RUN: kiln-opt %s -split-input-file \
// RUN:   --pass-pipeline='builtin.module(kiln-attach-target{target=vulkan},func.func(kiln-gpu-map-workgroups))' | FileCheck %s
// RUN: kiln-opt %s -split-input-file \
// RUN:   --pass-pipeline='builtin.module(kiln-attach-target{target=vulkan},func.func(kiln-gpu-map-workgroups{atomics=false}))' | FileCheck %s --check-prefix=NONE

// index_add: out[index[i]] += src[i], a float sum that may be reassociated.
// CHECK-LABEL: func.func @index_add
// CHECK-SAME: ["a loop nest of atomic updates (adds, max, min), its iterations over the threads"]
// CHECK: %[[T:.*]] = gpu.thread_id x
// CHECK: scf.for %[[ROUND:.*]] = %{{.*}} to %[[TOTAL:.*]] step %c128
// CHECK:   %[[I:.*]] = arith.addi %[[ROUND]], %[[T]] : index
// CHECK:   %[[IN:.*]] = arith.cmpi ult, %[[I]], %[[TOTAL]] : index
// CHECK:   scf.if %[[IN]] {
// CHECK:     %[[SRC:.*]] = memref.load %{{.*}} : memref<700xf32>
// CHECK:     memref.atomic_rmw addf %[[SRC]], %{{.*}}[%{{.*}}] : (f32, memref<50xf32>) -> f32
// CHECK-NOT: memref.store
// CHECK: gpu.barrier
// Without atomics, thread 0 runs it alone.
// NONE-LABEL: func.func @index_add
// NONE-SAME: ["thread 0 alone (writes that may meet, or a sequential loop)"]
// NONE-NOT: atomic_rmw
func.func @index_add(%id: index, %count: index, %idx: memref<700xi64>, %src: memref<700xf32>, %out: memref<50xf32>)
    attributes {kiln_kernel.kernel = "index_add", kiln_kernel.workgroup_extent = 0 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c49 = arith.constant 49 : index
  %c700 = arith.constant 700 : index
  scf.for %i = %c0 to %c700 step %c1 {
    %0 = memref.load %idx[%i] : memref<700xi64>
    %1 = arith.index_cast %0 : i64 to index
    %2 = arith.maxsi %1, %c0 : index
    %3 = arith.minsi %2, %c49 : index
    %4 = memref.load %src[%i] : memref<700xf32>
    %5 = memref.load %out[%3] : memref<50xf32>
    %6 = arith.addf %5, %4 fastmath<reassoc,contract> : f32
    memref.store %6, %out[%3] : memref<50xf32>
  }
  return
}

// -----

// A scatter's amin without its input: positions reset to the identity
// (one value the nest does not compute, whichever thread writes last),
// then int64 mins, into a reinterpretation of a scratch binding.
// CHECK-LABEL: func.func @reset_then_min
// CHECK: scf.for
// CHECK:   scf.if
// CHECK:     memref.store %{{.*}}, %[[VIEW:.*]][%{{.*}}] : memref<13xi64>
// CHECK: gpu.barrier
// CHECK: scf.for
// CHECK:   scf.if
// CHECK:     memref.atomic_rmw mins %{{.*}}, %[[VIEW]][%{{.*}}] : (i64, memref<13xi64>) -> i64
func.func @reset_then_min(%id: index, %count: index, %idx: memref<90xi64>, %src: memref<90xi64>, %scratch: memref<1xi64>)
    attributes {kiln_kernel.kernel = "reset_then_min", kiln_kernel.workgroup_extent = 0 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c12 = arith.constant 12 : index
  %c90 = arith.constant 90 : index
  %max = arith.constant 9223372036854775807 : i64
  %view = memref.reinterpret_cast %scratch to offset: [0], sizes: [13], strides: [1] : memref<1xi64> to memref<13xi64>
  scf.for %i = %c0 to %c90 step %c1 {
    %0 = memref.load %idx[%i] : memref<90xi64>
    %1 = arith.index_cast %0 : i64 to index
    %2 = arith.minsi %1, %c12 : index
    memref.store %max, %view[%2] : memref<13xi64>
  }
  scf.for %i = %c0 to %c90 step %c1 {
    %0 = memref.load %idx[%i] : memref<90xi64>
    %1 = arith.index_cast %0 : i64 to index
    %2 = arith.minsi %1, %c12 : index
    %3 = memref.load %src[%i] : memref<90xi64>
    %4 = memref.load %view[%2] : memref<13xi64>
    %5 = arith.minsi %4, %3 : i64
    memref.store %5, %view[%2] : memref<13xi64>
  }
  return
}

// -----

// What no atomic does stays on thread 0: a float sum that must keep its
// order (no reassoc), an 8-bit sum, a store of a value the nest computes
// (the last write wins), and an update whose buffer the nest also reads
// elsewhere.
// CHECK-LABEL: func.func @refusals
// CHECK-SAME: ["thread 0 alone (writes that may meet, or a sequential loop)"]
// CHECK-NOT: atomic_rmw
func.func @refusals(%id: index, %count: index, %idx: memref<9xindex>, %f: memref<9xf32>, %b: memref<9xi8>,
                    %of: memref<4xf32>, %ob: memref<4xi8>, %oc: memref<4xf32>, %od: memref<4xi32>, %src: memref<9xi32>)
    attributes {kiln_kernel.kernel = "refusals", kiln_kernel.workgroup_extent = 0 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c9 = arith.constant 9 : index
  scf.for %i = %c0 to %c9 step %c1 {
    %j = memref.load %idx[%i] : memref<9xindex>
    %x = memref.load %f[%i] : memref<9xf32>
    %a = memref.load %of[%j] : memref<4xf32>
    %s = arith.addf %a, %x : f32
    memref.store %s, %of[%j] : memref<4xf32>
  }
  scf.for %i = %c0 to %c9 step %c1 {
    %j = memref.load %idx[%i] : memref<9xindex>
    %x = memref.load %b[%i] : memref<9xi8>
    %a = memref.load %ob[%j] : memref<4xi8>
    %s = arith.addi %a, %x : i8
    memref.store %s, %ob[%j] : memref<4xi8>
  }
  scf.for %i = %c0 to %c9 step %c1 {
    %j = memref.load %idx[%i] : memref<9xindex>
    %x = memref.load %f[%i] : memref<9xf32>
    memref.store %x, %oc[%j] : memref<4xf32>
  }
  scf.for %i = %c0 to %c9 step %c1 {
    %j = memref.load %idx[%i] : memref<9xindex>
    %x = memref.load %src[%i] : memref<9xi32>
    %a = memref.load %od[%j] : memref<4xi32>
    %s = arith.addi %a, %x : i32
    memref.store %s, %od[%j] : memref<4xi32>
    %first = memref.load %od[%c0] : memref<4xi32>
    memref.store %first, %od[%c1] : memref<4xi32>
  }
  return
}
