// RUN: kiln-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(kiln-lower-sort))' | FileCheck %s
// RUN: kiln-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(kiln-lower-sort{parallel-steps=true}))' | FileCheck %s --check-prefix=PAR

// Rows of 5 along dim 1: a loop over the rows (what the workgroups split)
// around each row's sort.
//
// By default, a merge sort per row: two run buffers each for the values
// and the indices (a row and one padding element, set to zero, which a
// merge's cursor past the last run reads); the row and its positions go
// into run A, ceil(log2 5) = 3 passes merge runs of 1, 2, 4 from one
// buffer into the other (chosen by the pass's parity), and the buffer the
// last pass wrote goes to the outputs. The merge takes the right run's
// element where its value sorts strictly before the left's (ascending: x <
// y or y NaN, and x a number), else the left's, so equal values keep their
// order; the cursors advance by the comparison.
// CHECK-LABEL: func.func @rows
// CHECK-DAG: %[[C5:.*]] = arith.constant 5 : index
// CHECK: %[[AV:.*]] = memref.alloc() : memref<6xf32>
// CHECK: memref.store %{{.*}}, %[[AV]][%[[C5]]] : memref<6xf32>
// CHECK: %[[AI:.*]] = memref.alloc() : memref<6xi64>
// CHECK: %[[BV:.*]] = memref.alloc() : memref<6xf32>
// CHECK: %[[BI:.*]] = memref.alloc() : memref<6xi64>
// CHECK: scf.for %[[ROW:.*]] = %{{.*}} to %{{.*}} step
// CHECK:   scf.for %[[J:.*]] = %{{.*}} to %[[C5]]
// CHECK:     memref.load %{{.*}}[%[[ROW]], %[[J]]] : memref<3x5xf32>
// CHECK:     memref.store %{{.*}}, %[[AV]][%[[J]]]
// CHECK:     arith.index_cast %[[J]] : index to i64
// CHECK:     memref.store %{{.*}}, %[[AI]][%[[J]]]
// CHECK:   scf.for %[[T:.*]] = %{{.*}} to %{{.*}} step
// CHECK:     arith.shli %{{.*}}, %[[T]] : index
// CHECK:     %[[FROM:.*]] = arith.select %{{.*}}, %[[AV]], %[[BV]] : memref<6xf32>
// CHECK:     %[[TO:.*]] = arith.select %{{.*}}, %[[BV]], %[[AV]] : memref<6xf32>
// CHECK:     scf.for %[[LO:.*]] = %{{.*}} to %[[C5]] step %{{.*}} {
// CHECK:       %[[MID:.*]] = arith.minui %{{.*}}, %[[C5]] : index
// CHECK:       %[[HI:.*]] = arith.minui %{{.*}}, %[[C5]] : index
// CHECK:       scf.for %[[K:.*]] = %[[LO]] to %[[HI]] step %{{.*}} iter_args(%[[I:.*]] = %[[LO]], %[[R:.*]] = %[[MID]])
// CHECK-DAG:     %[[LV:.*]] = memref.load %[[FROM]][%[[I]]]
// CHECK-DAG:     %[[RV:.*]] = memref.load %[[FROM]][%[[R]]]
// CHECK-DAG:     %[[DONE:.*]] = arith.cmpi uge, %[[I]], %[[MID]] : index
// CHECK-DAG:     %[[MORE:.*]] = arith.cmpi ult, %[[R]], %[[HI]] : index
// CHECK-DAG:     %[[LESS:.*]] = arith.cmpf ult, %[[RV]], %[[LV]] : f32
// CHECK-DAG:     %[[NUMBER:.*]] = arith.cmpf ord, %[[RV]], %[[RV]] : f32
// CHECK:         %[[PRECEDES:.*]] = arith.andi %[[LESS]], %[[NUMBER]] : i1
// CHECK:         %[[EITHER:.*]] = arith.ori %[[DONE]], %[[PRECEDES]] : i1
// CHECK:         %[[RIGHT:.*]] = arith.select %[[MORE]], %[[EITHER]], %{{.*}} : i1
// CHECK:         %[[V:.*]] = arith.select %[[RIGHT]], %[[RV]], %[[LV]] : f32
// CHECK:         memref.store %[[V]], %[[TO]][%[[K]]]
// CHECK:         scf.yield
// CHECK:   %[[LAST:.*]] = arith.select %{{.*}}, %[[BV]], %[[AV]] : memref<6xf32>
// CHECK:   scf.for %[[J2:.*]] = %{{.*}} to %[[C5]]
// CHECK:     memref.load %[[LAST]][%[[J2]]]
// CHECK:     memref.store %{{.*}}, %{{.*}}[%[[ROW]], %[[J2]]] : memref<3x5xf32>
// CHECK: memref.dealloc %[[AV]]
// CHECK-NOT: kiln_kernel.sort
//
// With parallel-steps, a bitonic network in place on the outputs, the copy
// and each step an scf.parallel marked writes_apart over every row at once
// (no row loop: short rows still give every thread a pair), the stage loop
// marked steps_over_rows: ceil(log2 5) = 3 stages over the 4 pairs of a
// row padded to 8, each a flip step (mirrored positions of each block of
// 2^(t+1)) and steps 2^s apart for s = t-1 .. 0; the pairs reaching past 5
// are skipped. The compare-exchange puts the earlier (value, index) first:
// a value that sorts before the other, or neither before the other (equal
// values, two NaNs) and the lower index.
// PAR-LABEL: func.func @rows
// PAR-DAG: %[[C3:.*]] = arith.constant 3 : index
// PAR-DAG: %[[C5:.*]] = arith.constant 5 : index
// PAR: scf.parallel (%[[ROW:.*]], %[[J:.*]]) = (%{{.*}}, %{{.*}}) to (%[[C3]], %[[C5]])
// PAR:   %[[X:.*]] = memref.load %{{.*}}[%[[ROW]], %[[J]]]
// PAR:   memref.store %[[X]], %[[V:.*]][%[[ROW]], %[[J]]]
// PAR:   %[[POS:.*]] = arith.index_cast %[[J]] : index to i64
// PAR:   memref.store %[[POS]], %[[I:.*]][%[[ROW]], %[[J]]]
// PAR: } {kiln_kernel.writes_apart}
// PAR: scf.for %[[T:.*]] = %{{.*}} to %{{.*}} step
// PAR:   scf.parallel (%[[R:.*]], %[[Q:.*]]) = (%{{.*}}, %{{.*}}) to (%[[C3]], %[[C4:[^)]*]])
// PAR:     arith.shli %{{.*}}, %[[T]] : index
// PAR:     %[[IN:.*]] = arith.cmpi ult, %[[SECOND:.*]], %[[C5]] : index
// PAR:     scf.if %[[IN]] {
// PAR-DAG:   %[[A:.*]] = memref.load %[[V]][%[[R]], %[[FIRST:.*]]] : memref<3x5xf32>
// PAR-DAG:   %[[B:.*]] = memref.load %[[V]][%[[R]], %[[SECOND]]] : memref<3x5xf32>
// PAR-DAG:   %[[IA:.*]] = memref.load %[[I]][%[[R]], %[[FIRST]]] : memref<3x5xi64>
// PAR-DAG:   %[[IB:.*]] = memref.load %[[I]][%[[R]], %[[SECOND]]] : memref<3x5xi64>
// PAR-DAG:   %[[BA:.*]] = arith.cmpf ult, %[[B]], %[[A]] : f32
// PAR-DAG:   %[[AB:.*]] = arith.cmpf ult, %[[A]], %[[B]] : f32
// PAR-DAG:   %[[EARLIER:.*]] = arith.cmpi slt, %[[IB]], %[[IA]] : i64
// PAR:       %[[LOW:.*]] = arith.select %[[SWAP:.*]], %[[B]], %[[A]] : f32
// PAR:       memref.store %[[LOW]], %[[V]][%[[R]], %[[FIRST]]]
// PAR:       %[[HIGH:.*]] = arith.select %[[SWAP]], %[[A]], %[[B]] : f32
// PAR:       memref.store %[[HIGH]], %[[V]][%[[R]], %[[SECOND]]]
// PAR:       arith.select %[[SWAP]], %[[IB]], %[[IA]] : i64
// PAR:       arith.select %[[SWAP]], %[[IA]], %[[IB]] : i64
// PAR:   } {kiln_kernel.writes_apart}
// PAR:   scf.for %{{.*}} = %{{.*}} to %[[T]]
// PAR:     scf.parallel (%{{.*}}, %{{.*}}) = (%{{.*}}, %{{.*}}) to (%[[C3]], %[[C4]])
// PAR:       arith.cmpi ult
// PAR:       scf.if
// PAR:     } {kiln_kernel.writes_apart}
// PAR: } {kiln_kernel.steps_over_rows}
// PAR-NOT: memref.alloc
func.func @rows(%x: memref<3x5xf32>, %v: memref<3x5xf32>, %i: memref<3x5xi64>) {
  kiln_kernel.sort %x into %v, %i {dim = 1 : i64} : memref<3x5xf32> into memref<3x5xf32>, memref<3x5xi64>
  return
}

// -----

// A symbolic length: the passes or stages (32 - ctlz(n - 1), in 32 bits)
// are counted at run time, the run buffers sized n + 1; sorting dim 0
// needs no row loop. Descending and unsigned: the larger value first,
// compared unsigned.
// CHECK-LABEL: func.func @symbolic
// CHECK: %[[N:.*]] = memref.dim %{{.*}}, %{{.*}} : memref<?xi32>
// CHECK: %[[PADDED:.*]] = arith.addi %[[N]], %{{.*}} : index
// CHECK: memref.alloc(%[[PADDED]]) : memref<?xi32>
// CHECK: scf.for %{{.*}} = %{{.*}} to %[[N]]
// CHECK: %[[ZEROS:.*]] = math.ctlz %{{.*}} : i32
// CHECK: %[[LOG:.*]] = arith.subi %{{.*}}, %[[ZEROS]] : i32
// CHECK: %[[PASSES:.*]] = arith.index_castui %[[LOG]] : i32 to index
// CHECK: scf.for %{{.*}} = %{{.*}} to %[[PASSES]]
// CHECK:   arith.cmpi ugt, %{{.*}}, %{{.*}} : i32
// The network's steps run over the pairs of the row padded to 2^stages.
// PAR-LABEL: func.func @symbolic
// PAR: %[[N:.*]] = memref.dim %{{.*}}, %{{.*}} : memref<?xi32>
// PAR: scf.parallel (%{{.*}}) = (%{{.*}}) to (%[[N]])
// PAR: %[[LAST:.*]] = arith.subi
// PAR: %[[LAST32:.*]] = arith.index_castui %[[LAST]] : index to i32
// PAR: %[[ZEROS:.*]] = math.ctlz %[[LAST32]] : i32
// PAR: %[[LOG:.*]] = arith.subi %{{.*}}, %[[ZEROS]] : i32
// PAR: %[[STAGES:.*]] = arith.index_castui %[[LOG]] : i32 to index
// PAR: %[[PADDED:.*]] = arith.shli %{{.*}}, %[[STAGES]] : index
// PAR: %[[PAIRS:.*]] = arith.shrui %[[PADDED]], %{{.*}} : index
// PAR: scf.for %{{.*}} = %{{.*}} to %[[STAGES]]
// PAR:   scf.parallel (%{{.*}}) = (%{{.*}}) to (%[[PAIRS]])
// PAR:     arith.cmpi ugt, %{{.*}}, %{{.*}} : i32
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

// -----

// A top-2 (k = 2, largest first) selects by insertion in one pass over each
// row, without run buffers: an element enters where fewer than 2 are held
// or it sorts strictly before the second (x > y or x NaN, and y a number),
// and goes in at its place, the held ones after it moving down. With
// parallel steps, the whole network (the slice keeps the first k).
// CHECK-LABEL: func.func @top2
// CHECK-NOT: memref.alloc
// CHECK: scf.for %[[ROW:.*]] = %{{.*}} to %{{.*}} step
// CHECK:   scf.for %[[E:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[HELD:.*]] = %{{.*}}) -> (index)
// CHECK:     %[[X:.*]] = memref.load %{{.*}}[%[[ROW]], %[[E]]] : memref<3x100xf32>
// CHECK:     %[[FULL:.*]] = arith.cmpi uge, %[[HELD]], %{{.*}} : index
// CHECK:     %[[ADMIT:.*]] = scf.if %[[FULL]] -> (i1) {
// CHECK:       %[[SECOND:.*]] = memref.load %{{.*}}[%[[ROW]], %{{.*}}] : memref<3x100xf32>
// CHECK:       arith.cmpf ugt, %[[X]], %[[SECOND]] : f32
// CHECK:     scf.if %[[ADMIT]] {
// CHECK:       scf.for {{.*}} iter_args
// CHECK:         scf.if
// CHECK:           memref.store
// CHECK:         scf.if
// CHECK:           memref.store %[[X]]
// CHECK:     arith.select %[[ADMIT]]
// PAR-LABEL: func.func @top2
// PAR: scf.parallel
// PAR: scf.for
func.func @top2(%x: memref<3x100xf32>, %v: memref<3x100xf32>, %i: memref<3x100xi64>) {
  kiln_kernel.sort %x into %v, %i {dim = 1 : i64, descending = true, k = 2 : i64} : memref<3x100xf32> into memref<3x100xf32>, memref<3x100xi64>
  return
}
