// RUN: kiln-opt %s -split-input-file -kiln-promote-accumulators | FileCheck %s

// Two accumulators of a row reduction (a layer norm's sum and sum of
// squares): each is loaded before the inner loop, carried by it, and stored
// once after it.
// CHECK-LABEL: func.func @two_sums
// CHECK: %[[SUM:.*]] = memref.alloc() : memref<4xf64>
// CHECK: %[[SQ:.*]] = memref.alloc() : memref<4xf64>
// CHECK: scf.for %[[I:.*]] =
// CHECK:   %[[S0:.*]] = memref.load %[[SUM]][%[[I]]]
// CHECK:   %[[Q0:.*]] = memref.load %[[SQ]][%[[I]]]
// CHECK:   %[[R:.*]]:2 = scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[S:.*]] = %[[S0]], %[[Q:.*]] = %[[Q0]]) -> (f64, f64) {
// CHECK-NOT: memref.store
// CHECK:     scf.yield
// CHECK:   }
// CHECK:   memref.store %[[R]]#0, %[[SUM]][%[[I]]]
// CHECK:   memref.store %[[R]]#1, %[[SQ]][%[[I]]]
func.func @two_sums(%x: memref<4x8xf64>, %out: memref<2xf64>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %sum = memref.alloc() : memref<4xf64>
  %sq = memref.alloc() : memref<4xf64>
  scf.for %i = %c0 to %c4 step %c1 {
    scf.for %j = %c0 to %c8 step %c1 {
      %v = memref.load %x[%i, %j] : memref<4x8xf64>
      %s = memref.load %sum[%i] : memref<4xf64>
      %q = memref.load %sq[%i] : memref<4xf64>
      %s2 = arith.addf %s, %v : f64
      %v2 = arith.mulf %v, %v : f64
      %q2 = arith.addf %q, %v2 : f64
      memref.store %s2, %sum[%i] : memref<4xf64>
      memref.store %q2, %sq[%i] : memref<4xf64>
    }
  }
  %s = memref.load %sum[%c0] : memref<4xf64>
  %q = memref.load %sq[%c0] : memref<4xf64>
  memref.store %s, %out[%c0] : memref<2xf64>
  memref.store %q, %out[%c1] : memref<2xf64>
  memref.dealloc %sum : memref<4xf64>
  memref.dealloc %sq : memref<4xf64>
  return
}

// -----

// Not promoted: a function argument (it may alias %x), a buffer with a view
// (a second name for its bytes), and an index that changes in the loop.
// CHECK-LABEL: func.func @kept_in_memory
// CHECK: scf.for
// CHECK-NOT: iter_args
// CHECK: memref.store %{{.*}}, %arg1[%{{.*}}]
// CHECK: memref.store %{{.*}}, %[[VIEWED:.*]][%{{.*}}]
// CHECK: memref.store %{{.*}}, %{{.*}}[%{{.*}}]
func.func @kept_in_memory(%x: memref<8xf32>, %out: memref<1xf32>) -> memref<2xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %viewed = memref.alloc() : memref<1xf32>
  %view = memref.reinterpret_cast %viewed to offset: [0], sizes: [1], strides: [1] : memref<1xf32> to memref<1xf32>
  %moving = memref.alloc() : memref<8xf32>
  scf.for %j = %c0 to %c8 step %c1 {
    %v = memref.load %x[%j] : memref<8xf32>
    %a = memref.load %out[%c0] : memref<1xf32>
    %a2 = arith.addf %a, %v : f32
    memref.store %a2, %out[%c0] : memref<1xf32>
    %b = memref.load %viewed[%c0] : memref<1xf32>
    %b2 = arith.addf %b, %v : f32
    memref.store %b2, %viewed[%c0] : memref<1xf32>
    %c = memref.load %moving[%j] : memref<8xf32>
    %c2 = arith.addf %c, %v : f32
    memref.store %c2, %moving[%j] : memref<8xf32>
  }
  %r = memref.alloc() : memref<2xf32>
  return %r : memref<2xf32>
}
