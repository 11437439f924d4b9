// RUN: kiln-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(kiln-lower-sort))' | FileCheck %s
// RUN: kiln-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(kiln-lower-sort{parallel-steps=true}))' | FileCheck %s --check-prefix=PAR

// Rows of 5 along dim 1: a loop over the rows (what the workgroups split)
// around the copy and the network: ceil(log2 5) = 3 stages over the 4 pairs
// of a row padded to 8, each a flip step (mirrored positions of each block
// of 2^(t+1)) and steps 2^s apart for s = t-1 .. 0; the pairs reaching past
// 5 are skipped. The compare-exchange puts the earlier (value, index) first:
// a smaller value, a number before NaN, or equal values (two NaNs too) in
// index order.
// CHECK-LABEL: func.func @rows
// CHECK-DAG: %[[C3:.*]] = arith.constant 3 : index
// CHECK-DAG: %[[C5:.*]] = arith.constant 5 : index
// CHECK: scf.for %[[ROW:.*]] = %{{.*}} to %[[C3]]
// CHECK:   scf.for %[[J:.*]] = %{{.*}} to %[[C5]]
// CHECK:     %[[X:.*]] = memref.load %{{.*}}[%[[ROW]], %[[J]]]
// CHECK:     memref.store %[[X]], %[[V:.*]][%[[ROW]], %[[J]]]
// CHECK:     %[[POS:.*]] = arith.index_cast %[[J]] : index to i64
// CHECK:     memref.store %[[POS]], %[[I:.*]][%[[ROW]], %[[J]]]
// CHECK:   scf.for %[[T:.*]] = %{{.*}} to %[[C3]]
// CHECK:     scf.for %[[Q:.*]] = %{{.*}} to %[[C4:.*]] step
// CHECK:       %[[HALF:.*]] = arith.shli %{{.*}}, %[[T]] : index
// CHECK:       %[[IN:.*]] = arith.cmpi ult, %[[SECOND:.*]], %[[C5]] : index
// CHECK:       scf.if %[[IN]] {
// CHECK-DAG:     %[[A:.*]] = memref.load %[[V]][%[[ROW]], %[[FIRST:.*]]] : memref<3x5xf32>
// CHECK-DAG:     %[[B:.*]] = memref.load %[[V]][%[[ROW]], %[[SECOND]]] : memref<3x5xf32>
// CHECK-DAG:     %[[IA:.*]] = memref.load %[[I]][%[[ROW]], %[[FIRST]]] : memref<3x5xi64>
// CHECK-DAG:     %[[IB:.*]] = memref.load %[[I]][%[[ROW]], %[[SECOND]]] : memref<3x5xi64>
// CHECK-DAG:     %[[EARLIER:.*]] = arith.cmpi slt, %[[IB]], %[[IA]] : i64
// CHECK-DAG:     %[[SMALLER:.*]] = arith.cmpf olt, %[[B]], %[[A]] : f32
// CHECK-DAG:     %[[EQUAL:.*]] = arith.cmpf oeq, %[[B]], %[[A]] : f32
// CHECK:         %[[LOW:.*]] = arith.select %[[SWAP:.*]], %[[B]], %[[A]] : f32
// CHECK:         memref.store %[[LOW]], %[[V]][%[[ROW]], %[[FIRST]]]
// CHECK:         %[[HIGH:.*]] = arith.select %[[SWAP]], %[[A]], %[[B]] : f32
// CHECK:         memref.store %[[HIGH]], %[[V]][%[[ROW]], %[[SECOND]]]
// CHECK:         arith.select %[[SWAP]], %[[IB]], %[[IA]] : i64
// CHECK:         arith.select %[[SWAP]], %[[IA]], %[[IB]] : i64
// CHECK:     scf.for %[[U:.*]] = %{{.*}} to %[[T]]
// CHECK:       scf.for %{{.*}} = %{{.*}} to %[[C4]]
// CHECK:         arith.cmpi ult
// CHECK:         scf.if
// CHECK-NOT: kiln_kernel.sort
// With parallel steps: the copy and each step an scf.parallel marked
// writes_apart, inside the same row and stage loops.
// PAR-LABEL: func.func @rows
// PAR: scf.for
// PAR:   scf.parallel
// PAR:   } {kiln_kernel.writes_apart}
// PAR:   scf.for
// PAR:     scf.parallel
// PAR:     } {kiln_kernel.writes_apart}
// PAR:     scf.for
// PAR:       scf.parallel
// PAR:       } {kiln_kernel.writes_apart}
func.func @rows(%x: memref<3x5xf32>, %v: memref<3x5xf32>, %i: memref<3x5xi64>) {
  kiln_kernel.sort %x into %v, %i {dim = 1 : i64} : memref<3x5xf32> into memref<3x5xf32>, memref<3x5xi64>
  return
}

// -----

// A symbolic length: the stages (32 - ctlz(n - 1), in 32 bits) and the
// padded row's pairs are counted at run time; sorting dim 0 needs no row
// loop. Descending and unsigned: the larger value first, compared unsigned.
// CHECK-LABEL: func.func @symbolic
// CHECK: %[[N:.*]] = memref.dim %{{.*}}, %{{.*}} : memref<?xi32>
// CHECK: scf.for %{{.*}} = %{{.*}} to %[[N]]
// CHECK: %[[LAST:.*]] = arith.subi
// CHECK: %[[LAST32:.*]] = arith.index_castui %[[LAST]] : index to i32
// CHECK: %[[ZEROS:.*]] = math.ctlz %[[LAST32]] : i32
// CHECK: %[[LOG:.*]] = arith.subi %{{.*}}, %[[ZEROS]] : i32
// CHECK: %[[STAGES:.*]] = arith.index_castui %[[LOG]] : i32 to index
// CHECK: %[[PADDED:.*]] = arith.shli %{{.*}}, %[[STAGES]] : index
// CHECK: %[[PAIRS:.*]] = arith.shrui %[[PADDED]], %{{.*}} : index
// CHECK: scf.for %{{.*}} = %{{.*}} to %[[STAGES]]
// CHECK:   scf.for %{{.*}} = %{{.*}} to %[[PAIRS]]
// CHECK:     arith.cmpi ugt, %{{.*}}, %{{.*}} : i32
func.func @symbolic(%x: memref<?xi32>, %v: memref<?xi32>, %i: memref<?xi64>) {
  kiln_kernel.sort %x into %v, %i {dim = 0 : i64, descending = true, kiln_kernel.unsigned} : memref<?xi32> into memref<?xi32>, memref<?xi64>
  return
}

// -----

// A scalar is its own sort, at index 0.
// CHECK-LABEL: func.func @scalar
// CHECK: %[[X:.*]] = memref.load %{{.*}}[] : memref<f32>
// CHECK: memref.store %[[X]], %{{.*}}[] : memref<f32>
// CHECK: %[[ZERO:.*]] = arith.constant 0 : i64
// CHECK: memref.store %[[ZERO]], %{{.*}}[] : memref<i64>
func.func @scalar(%x: memref<f32>, %v: memref<f32>, %i: memref<i64>) {
  kiln_kernel.sort %x into %v, %i {dim = 0 : i64} : memref<f32> into memref<f32>, memref<i64>
  return
}
