// RUN: kiln-opt %s -split-input-file --pass-pipeline='builtin.module(kiln-attach-target{target=cpu:x86-64-v3},func.func(kiln-vectorize-matmul))' | FileCheck %s

// With 256-bit vectors (8 x f32), B in [K, N] ("ikj"): 6-row tiles of C by
// 2 x 8 columns stay in twelve vector<8xf32> accumulators across the k loop;
// each k broadcasts A[i + r, k] and FMAs it with two vector loads of row k of
// B. Constants are matched out of order, and the nesting of the row and
// column tile loops is left open: neither is significant.
// CHECK-LABEL: func.func @matmul_ikj
// CHECK-SAME: (%[[A:.*]]: memref<12x10xf32>, %[[B:.*]]: memref<10x32xf32>, %[[C:.*]]: memref<12x32xf32>)
// CHECK-NOT: linalg.generic
// CHECK-DAG: %[[C6:.*]] = arith.constant 6 : index
// CHECK-DAG: %[[C16:.*]] = arith.constant 16 : index
// CHECK-DAG: %[[C32:.*]] = arith.constant 32 : index
// CHECK-DAG: scf.for %[[I:.*]] = %{{.*}} to %{{.*}} step %[[C6]] {
// CHECK-DAG: scf.for %[[J:.*]] = %{{.*}} to %[[C32]] step %[[C16]] {
// CHECK: %[[C00:.*]] = vector.load %[[C]][%[[I]], %[[J]]] : memref<12x32xf32>, vector<8xf32>
// CHECK: %[[C01:.*]] = vector.load %[[C]][%[[I]], %{{.*}}] : memref<12x32xf32>, vector<8xf32>
// CHECK-COUNT-10: vector.load %[[C]][%{{.*}}, %{{.*}}] : memref<12x32xf32>, vector<8xf32>
// CHECK-DAG: %[[C10:.*]] = arith.constant 10 : index
// CHECK: %[[ACC:.*]]:12 = scf.for %[[K:.*]] = %{{.*}} to %[[C10]] step %{{.*}} iter_args(%[[ACC00:.*]] = %[[C00]], %[[ACC01:.*]] = %[[C01]], %{{.*}}) -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>) {
// CHECK: %[[B0:.*]] = vector.load %[[B]][%[[K]], %[[J]]] : memref<10x32xf32>, vector<8xf32>
// CHECK: %[[B1:.*]] = vector.load %[[B]][%[[K]], %{{.*}}] : memref<10x32xf32>, vector<8xf32>
// CHECK: %[[A0:.*]] = memref.load %[[A]][%[[I]], %[[K]]] : memref<12x10xf32>
// CHECK: %[[BCAST:.*]] = vector.broadcast %[[A0]] : f32 to vector<8xf32>
// CHECK: %[[F00:.*]] = vector.fma %[[BCAST]], %[[B0]], %[[ACC00]] : vector<8xf32>
// CHECK: %[[F01:.*]] = vector.fma %[[BCAST]], %[[B1]], %[[ACC01]] : vector<8xf32>
// CHECK-COUNT-5: vector.broadcast
// CHECK: scf.yield %[[F00]], %[[F01]], %{{.*}} : vector<8xf32>
// CHECK: vector.store %[[ACC]]#0, %[[C]][%[[I]], %[[J]]] : memref<12x32xf32>, vector<8xf32>
// CHECK: vector.store %[[ACC]]#1, %[[C]][%[[I]], %{{.*}}] : memref<12x32xf32>, vector<8xf32>
// CHECK-COUNT-10: vector.store %[[ACC]]#{{[0-9]+}}, %[[C]]
// No ragged edges: no scalar loops.
// CHECK-NOT: scf.for
// CHECK: return
#a = affine_map<(d0, d1, d2) -> (d0, d1)>
#b = affine_map<(d0, d1, d2) -> (d1, d2)>
#c = affine_map<(d0, d1, d2) -> (d0, d2)>
func.func @matmul_ikj(%a: memref<12x10xf32>, %b: memref<10x32xf32>, %c: memref<12x32xf32>) {
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "reduction", "parallel"]}
      ins(%a, %b : memref<12x10xf32>, memref<10x32xf32>) outs(%c : memref<12x32xf32>)
      attrs = {kiln_kernel.contraction = "ikj"} {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y fastmath<reassoc,contract> : f32
    %s = arith.addf %acc, %p fastmath<reassoc,contract> : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// B in [N, K] ("ijk"): 3 x 3 tiles of C, each a vector<8xf32> of partial dot
// products along k (from zero), reduced horizontally and added to C.
// CHECK-LABEL: func.func @matmul_ijk
// CHECK-SAME: (%[[A:.*]]: memref<6x16xf32>, %[[B:.*]]: memref<6x16xf32>, %[[C:.*]]: memref<6x6xf32>)
// CHECK-NOT: linalg.generic
// CHECK-DAG: %[[C3:.*]] = arith.constant 3 : index
// CHECK-DAG: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %[[C3]] {
// CHECK: %[[ZERO:.*]] = arith.constant dense<0.000000e+00> : vector<8xf32>
// CHECK-DAG: %[[C8:.*]] = arith.constant 8 : index
// CHECK-DAG: %[[C16:.*]] = arith.constant 16 : index
// CHECK: %[[ACC:.*]]:9 = scf.for %[[K:.*]] = %{{.*}} to %[[C16]] step %[[C8]] iter_args(%{{.*}} = %[[ZERO]], %{{.*}} = %[[ZERO]],
// CHECK: %[[A0:.*]] = vector.load %[[A]][%[[I:.*]], %[[K]]] : memref<6x16xf32>, vector<8xf32>
// CHECK-COUNT-2: vector.load %[[A]]
// CHECK: %[[B0:.*]] = vector.load %[[B]][%[[J:.*]], %[[K]]] : memref<6x16xf32>, vector<8xf32>
// CHECK-COUNT-2: vector.load %[[B]]
// CHECK: %[[F00:.*]] = vector.fma %[[A0]], %[[B0]], %{{.*}} : vector<8xf32>
// CHECK-COUNT-8: vector.fma
// CHECK: scf.yield %[[F00]], %{{.*}} : vector<8xf32>
// CHECK: %[[SUM:.*]] = vector.reduction <add>, %[[ACC]]#0 fastmath<reassoc> : vector<8xf32> into f32
// CHECK: %[[OLD:.*]] = memref.load %[[C]][%[[I]], %[[J]]] : memref<6x6xf32>
// CHECK: %[[NEW:.*]] = arith.addf %[[OLD]], %[[SUM]] : f32
// CHECK: memref.store %[[NEW]], %[[C]][%[[I]], %[[J]]] : memref<6x6xf32>
// CHECK-COUNT-8: vector.reduction <add>
// CHECK-NOT: scf.for
// CHECK: return
#a = affine_map<(d0, d1, d2) -> (d0, d2)>
#b = affine_map<(d0, d1, d2) -> (d1, d2)>
#c = affine_map<(d0, d1, d2) -> (d0, d1)>
func.func @matmul_ijk(%a: memref<6x16xf32>, %b: memref<6x16xf32>, %c: memref<6x6xf32>) {
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : memref<6x16xf32>, memref<6x16xf32>) outs(%c : memref<6x6xf32>)
      attrs = {kiln_kernel.contraction = "ijk"} {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y fastmath<reassoc,contract> : f32
    %s = arith.addf %acc, %p fastmath<reassoc,contract> : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// M = 13, N = 40: 6 x 16 tiles cover rows [0, 12) and columns [0, 32); the
// last block of rows adds a one-row tile for row 12. Columns [32, 40) take
// tiles one vector wide, the same way. Every nest iterates blocks of rows,
// and loops marked kiln_kernel.column_loop iterate columns: workgroups may split
// both.
// CHECK-LABEL: func.func @matmul_ikj_ragged
// CHECK-SAME: (%[[A:.*]]: memref<13x4xf32>, %[[B:.*]]: memref<4x40xf32>, %[[C:.*]]: memref<13x40xf32>)
// CHECK-SAME: kiln_kernel.column_alignment = 16 : i64, kiln_kernel.column_extent = 40 : i64
// CHECK-DAG: %[[C48:.*]] = arith.constant 48 : index
// CHECK-DAG: %[[C13:.*]] = arith.constant 13 : index
// CHECK: scf.for %[[IB:.*]] = %{{.*}} to %[[C13]] step %[[C48]] {
// CHECK: %[[LAST:.*]] = arith.cmpi sge, %{{.*}}, %{{.*}} : index
// CHECK-DAG: %[[C32:.*]] = arith.constant 32 : index
// CHECK-DAG: %[[C16:.*]] = arith.constant 16 : index
// CHECK: scf.for %[[J:.*]] = %{{.*}} to %[[C32]] step %[[C16]] {
// CHECK: scf.for %{{.*}} = %[[IB]] to %{{.*}} step %{{.*}} {
// CHECK: %{{.*}}:12 = scf.for
// CHECK: vector.store %{{.*}}#11, %[[C]]
// CHECK: scf.if %[[LAST]] {
// CHECK: %{{.*}}:2 = scf.for
// CHECK: vector.store %{{.*}}#1, %[[C]]
// CHECK: } {kiln_kernel.column_loop}
// Columns [32, 40): rows [0, 12) in 6 x 8 tiles, row 12 in a 1 x 8 one.
// CHECK: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK-DAG: %[[V0:.*]] = arith.constant 32 : index
// CHECK-DAG: %[[V1:.*]] = arith.constant 40 : index
// CHECK-DAG: %[[C8:.*]] = arith.constant 8 : index
// CHECK: scf.for %{{.*}} = %[[V0]] to %[[V1]] step %[[C8]] {
// CHECK: %{{.*}}:6 = scf.for
// CHECK: } {kiln_kernel.column_loop}
// CHECK: scf.if
// CHECK: scf.for
// CHECK: scf.for {{.*}} iter_args({{[^,]*}}) -> (vector<8xf32>)
// CHECK: } {kiln_kernel.column_loop}
// CHECK-NOT: memref.store
// CHECK: return
#a = affine_map<(d0, d1, d2) -> (d0, d1)>
#b = affine_map<(d0, d1, d2) -> (d1, d2)>
#c = affine_map<(d0, d1, d2) -> (d0, d2)>
func.func @matmul_ikj_ragged(%a: memref<13x4xf32>, %b: memref<4x40xf32>, %c: memref<13x40xf32>) {
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "reduction", "parallel"]}
      ins(%a, %b : memref<13x4xf32>, memref<4x40xf32>) outs(%c : memref<13x40xf32>)
      attrs = {kiln_kernel.contraction = "ikj"} {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y fastmath<reassoc,contract> : f32
    %s = arith.addf %acc, %p fastmath<reassoc,contract> : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// Fewer rows than a tile (M = 5) and fewer columns than a vector (N = 7):
// for each k, row k of B streams through the five rows of C, scalar.
// CHECK-LABEL: func.func @matmul_ikj_small
// CHECK-NOT: vector.
// CHECK: scf.for
// CHECK: scf.for
// CHECK-COUNT-5: memref.load %arg0
// CHECK: scf.for
// CHECK-COUNT-5: arith.mulf
// CHECK: } {kiln_kernel.column_loop}
// CHECK-NOT: vector.
// CHECK-NOT: linalg.generic
// CHECK: return
#a = affine_map<(d0, d1, d2) -> (d0, d1)>
#b = affine_map<(d0, d1, d2) -> (d1, d2)>
#c = affine_map<(d0, d1, d2) -> (d0, d2)>
func.func @matmul_ikj_small(%a: memref<5x4xf32>, %b: memref<4x7xf32>, %c: memref<5x7xf32>) {
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "reduction", "parallel"]}
      ins(%a, %b : memref<5x4xf32>, memref<4x7xf32>) outs(%c : memref<5x7xf32>)
      attrs = {kiln_kernel.contraction = "ikj"} {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y fastmath<reassoc,contract> : f32
    %s = arith.addf %acc, %p fastmath<reassoc,contract> : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// "ijk" with M = 7, N = 8, K = 20: the tile dot products cover k in [0, 16)
// with vectors and finish k in [16, 20) with a scalar loop; row 6 takes
// one-row tiles of the same columns; columns [6, 8) of every row are scalar
// dot products.
// CHECK-LABEL: func.func @matmul_ijk_ragged
// CHECK-SAME: (%[[A:.*]]: memref<7x20xf32>, %[[B:.*]]: memref<8x20xf32>, %[[C:.*]]: memref<7x8xf32>)
// CHECK-SAME: kiln_kernel.column_alignment = 3 : i64, kiln_kernel.column_extent = 8 : i64
// CHECK-DAG: %[[C16:.*]] = arith.constant 16 : index
// CHECK-DAG: %[[C8:.*]] = arith.constant 8 : index
// CHECK: %[[ACC:.*]]:9 = scf.for %{{.*}} = %{{.*}} to %[[C16]] step %[[C8]] iter_args(
// CHECK: %[[RED:.*]] = vector.reduction <add>, %[[ACC]]#0 fastmath<reassoc> : vector<8xf32> into f32
// CHECK-DAG: %[[KT0:.*]] = arith.constant 16 : index
// CHECK-DAG: %[[KT1:.*]] = arith.constant 20 : index
// CHECK: %[[DOT:.*]] = scf.for %[[K:.*]] = %[[KT0]] to %[[KT1]] step %{{.*}} iter_args(%[[PART:.*]] = %[[RED]]) -> (f32) {
// CHECK: %[[X:.*]] = memref.load %[[A]][%[[I:.*]], %[[K]]] : memref<7x20xf32>
// CHECK: %[[Y:.*]] = memref.load %[[B]][%[[J:.*]], %[[K]]] : memref<8x20xf32>
// CHECK: %[[P:.*]] = arith.mulf %[[X]], %[[Y]] fastmath<reassoc,contract> : f32
// CHECK: %[[S:.*]] = arith.addf %[[PART]], %[[P]] fastmath<reassoc,contract> : f32
// CHECK: scf.yield %[[S]] : f32
// CHECK: %[[OLD:.*]] = memref.load %[[C]][%[[I]], %[[J]]] : memref<7x8xf32>
// CHECK: %[[NEW:.*]] = arith.addf %[[OLD]], %[[DOT]] : f32
// CHECK: memref.store %[[NEW]], %[[C]][%[[I]], %[[J]]] : memref<7x8xf32>
// CHECK-COUNT-8: vector.reduction <add>
// Row 6, columns [0, 6): the last block of rows adds one-row tiles of three
// dot products.
// CHECK: scf.if
// CHECK: %{{.*}}:3 = scf.for
// CHECK: vector.reduction <add>
// CHECK: } {kiln_kernel.column_loop}
// Columns 6 and 7 of every row, per block of rows.
// CHECK: scf.for %[[CB:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK: scf.for %[[CRI:.*]] = %[[CB]] to %{{.*}} step %{{.*}} {
// CHECK-DAG: %[[CJ0:.*]] = arith.constant 6 : index
// CHECK-DAG: %[[CJ1:.*]] = arith.constant 8 : index
// CHECK: scf.for %[[CRJ:.*]] = %[[CJ0]] to %[[CJ1]] step %{{.*}} {
// CHECK: scf.for
// CHECK: memref.load %[[A]][%[[CRI]], %{{.*}}] : memref<7x20xf32>
// CHECK: memref.load %[[B]][%[[CRJ]], %{{.*}}] : memref<8x20xf32>
// CHECK: memref.store %{{.*}}, %[[C]][%[[CRI]], %[[CRJ]]] : memref<7x8xf32>
// CHECK: } {kiln_kernel.column_loop}
// CHECK-NOT: scf.for
// CHECK: return
#a = affine_map<(d0, d1, d2) -> (d0, d2)>
#b = affine_map<(d0, d1, d2) -> (d1, d2)>
#c = affine_map<(d0, d1, d2) -> (d0, d1)>
func.func @matmul_ijk_ragged(%a: memref<7x20xf32>, %b: memref<8x20xf32>, %c: memref<7x8xf32>) {
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : memref<7x20xf32>, memref<8x20xf32>) outs(%c : memref<7x8xf32>)
      attrs = {kiln_kernel.contraction = "ijk"} {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y fastmath<reassoc,contract> : f32
    %s = arith.addf %acc, %p fastmath<reassoc,contract> : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// Batched: the batch loop is outermost (it is the kernel's leading dim) and
// every access is indexed by it.
// CHECK-LABEL: func.func @batch_matmul_ikj
// CHECK-SAME: (%[[A:.*]]: memref<2x12x4xf32>, %[[B:.*]]: memref<2x4x32xf32>, %[[C:.*]]: memref<2x12x32xf32>)
// CHECK-DAG: %[[C2:.*]] = arith.constant 2 : index
// CHECK-DAG: %[[C1:.*]] = arith.constant 1 : index
// CHECK: scf.for %[[N:.*]] = %{{.*}} to %[[C2]] step %[[C1]] {
// CHECK-DAG: %[[C6:.*]] = arith.constant 6 : index
// CHECK-DAG: %[[C16:.*]] = arith.constant 16 : index
// CHECK-DAG: scf.for %[[I:.*]] = %{{.*}} to %{{.*}} step %[[C6]] {
// CHECK-DAG: scf.for %[[J:.*]] = %{{.*}} to %{{.*}} step %[[C16]] {
// CHECK: vector.load %[[C]][%[[N]], %[[I]], %[[J]]] : memref<2x12x32xf32>, vector<8xf32>
// CHECK: %[[ACC:.*]]:12 = scf.for %[[K:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args(
// CHECK: vector.load %[[B]][%[[N]], %[[K]], %[[J]]] : memref<2x4x32xf32>, vector<8xf32>
// CHECK: memref.load %[[A]][%[[N]], %[[I]], %[[K]]] : memref<2x12x4xf32>
// CHECK: vector.fma %{{.*}}, %{{.*}}, %{{.*}} : vector<8xf32>
// CHECK: vector.store %[[ACC]]#0, %[[C]][%[[N]], %[[I]], %[[J]]] : memref<2x12x32xf32>, vector<8xf32>
// CHECK-NOT: linalg.generic
#a = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
#b = affine_map<(d0, d1, d2, d3) -> (d0, d2, d3)>
#c = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>
func.func @batch_matmul_ikj(%a: memref<2x12x4xf32>, %b: memref<2x4x32xf32>, %c: memref<2x12x32xf32>) {
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction", "parallel"]}
      ins(%a, %b : memref<2x12x4xf32>, memref<2x4x32xf32>) outs(%c : memref<2x12x32xf32>)
      attrs = {kiln_kernel.contraction = "ikj"} {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y fastmath<reassoc,contract> : f32
    %s = arith.addf %acc, %p fastmath<reassoc,contract> : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// CHECK-LABEL: func.func @batch_matmul_ijk
// CHECK-SAME: (%[[A:.*]]: memref<2x3x8xf32>, %[[B:.*]]: memref<2x3x8xf32>, %[[C:.*]]: memref<2x3x3xf32>)
// CHECK-DAG: %[[C2:.*]] = arith.constant 2 : index
// CHECK: scf.for %[[N:.*]] = %{{.*}} to %[[C2]] step %{{.*}} {
// CHECK: %[[ACC:.*]]:9 = scf.for %[[K:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args(
// CHECK: vector.load %[[A]][%[[N]], %[[I:.*]], %[[K]]] : memref<2x3x8xf32>, vector<8xf32>
// CHECK: vector.load %[[B]][%[[N]], %[[J:.*]], %[[K]]] : memref<2x3x8xf32>, vector<8xf32>
// CHECK: %[[SUM:.*]] = vector.reduction <add>, %[[ACC]]#0 fastmath<reassoc> : vector<8xf32> into f32
// CHECK: %[[OLD:.*]] = memref.load %[[C]][%[[N]], %[[I]], %[[J]]] : memref<2x3x3xf32>
// CHECK: %[[NEW:.*]] = arith.addf %[[OLD]], %[[SUM]] : f32
// CHECK: memref.store %[[NEW]], %[[C]][%[[N]], %[[I]], %[[J]]] : memref<2x3x3xf32>
// CHECK-NOT: linalg.generic
#a = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>
#b = affine_map<(d0, d1, d2, d3) -> (d0, d2, d3)>
#c = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
func.func @batch_matmul_ijk(%a: memref<2x3x8xf32>, %b: memref<2x3x8xf32>, %c: memref<2x3x3xf32>) {
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%a, %b : memref<2x3x8xf32>, memref<2x3x8xf32>) outs(%c : memref<2x3x3xf32>)
      attrs = {kiln_kernel.contraction = "ijk"} {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y fastmath<reassoc,contract> : f32
    %s = arith.addf %acc, %p fastmath<reassoc,contract> : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// f64: 4 lanes per 256-bit vector, so a tile is 6 rows x 8 columns.
// CHECK-LABEL: func.func @matmul_f64
// CHECK-DAG: %[[C6:.*]] = arith.constant 6 : index
// CHECK-DAG: %[[C8:.*]] = arith.constant 8 : index
// CHECK-DAG: %[[C16:.*]] = arith.constant 16 : index
// CHECK-DAG: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %[[C6]] {
// CHECK-DAG: scf.for %{{.*}} = %{{.*}} to %[[C16]] step %[[C8]] {
// CHECK: %{{.*}}:12 = scf.for
// CHECK-SAME: -> (vector<4xf64>,
// CHECK: vector.fma %{{.*}}, %{{.*}}, %{{.*}} : vector<4xf64>
#a = affine_map<(d0, d1, d2) -> (d0, d1)>
#b = affine_map<(d0, d1, d2) -> (d1, d2)>
#c = affine_map<(d0, d1, d2) -> (d0, d2)>
func.func @matmul_f64(%a: memref<12x4xf64>, %b: memref<4x16xf64>, %c: memref<12x16xf64>) {
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "reduction", "parallel"]}
      ins(%a, %b : memref<12x4xf64>, memref<4x16xf64>) outs(%c : memref<12x16xf64>)
      attrs = {kiln_kernel.contraction = "ikj"} {
  ^bb0(%x: f64, %y: f64, %acc: f64):
    %p = arith.mulf %x, %y fastmath<reassoc,contract> : f64
    %s = arith.addf %acc, %p fastmath<reassoc,contract> : f64
    linalg.yield %s : f64
  }
  return
}

// -----

// Integer matmuls keep the generic (its loops come from linalg).
// CHECK-LABEL: func.func @matmul_i64_untouched
// CHECK-NOT: scf.for
// CHECK-NOT: vector.
// CHECK: linalg.generic
// CHECK-SAME: kiln_kernel.contraction = "ikj"
// CHECK: arith.muli
// CHECK-NOT: scf.for
#a = affine_map<(d0, d1, d2) -> (d0, d1)>
#b = affine_map<(d0, d1, d2) -> (d1, d2)>
#c = affine_map<(d0, d1, d2) -> (d0, d2)>
func.func @matmul_i64_untouched(%a: memref<12x4xi64>, %b: memref<4x16xi64>, %c: memref<12x16xi64>) {
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "reduction", "parallel"]}
      ins(%a, %b : memref<12x4xi64>, memref<4x16xi64>) outs(%c : memref<12x16xi64>)
      attrs = {kiln_kernel.contraction = "ikj"} {
  ^bb0(%x: i64, %y: i64, %acc: i64):
    %p = arith.muli %x, %y : i64
    %s = arith.addi %acc, %p : i64
    linalg.yield %s : i64
  }
  return
}

// -----

// Only generics marked by the graph lowering are rewritten.
// CHECK-LABEL: func.func @unmarked_generic_untouched
// CHECK-NOT: scf.for
// CHECK: linalg.generic
// CHECK-NOT: kiln_kernel.contraction
// CHECK: arith.mulf
// CHECK-NOT: scf.for
#a = affine_map<(d0, d1, d2) -> (d0, d1)>
#b = affine_map<(d0, d1, d2) -> (d1, d2)>
#c = affine_map<(d0, d1, d2) -> (d0, d2)>
func.func @unmarked_generic_untouched(%a: memref<12x4xf32>, %b: memref<4x16xf32>, %c: memref<12x16xf32>) {
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "reduction", "parallel"]}
      ins(%a, %b : memref<12x4xf32>, memref<4x16xf32>) outs(%c : memref<12x16xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y fastmath<reassoc,contract> : f32
    %s = arith.addf %acc, %p fastmath<reassoc,contract> : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// Before bufferization (tensors) the pass does nothing.
// CHECK-LABEL: func.func @tensor_matmul_untouched
// CHECK-NOT: scf.for
// CHECK: linalg.generic
// CHECK-SAME: kiln_kernel.contraction = "ikj"
// CHECK-NOT: scf.for
#a = affine_map<(d0, d1, d2) -> (d0, d1)>
#b = affine_map<(d0, d1, d2) -> (d1, d2)>
#c = affine_map<(d0, d1, d2) -> (d0, d2)>
func.func @tensor_matmul_untouched(%a: tensor<12x4xf32>, %b: tensor<4x16xf32>, %c: tensor<12x16xf32>) -> tensor<12x16xf32> {
  %0 = linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "reduction", "parallel"]}
      ins(%a, %b : tensor<12x4xf32>, tensor<4x16xf32>) outs(%c : tensor<12x16xf32>)
      attrs = {kiln_kernel.contraction = "ikj"} {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y fastmath<reassoc,contract> : f32
    %s = arith.addf %acc, %p fastmath<reassoc,contract> : f32
    linalg.yield %s : f32
  } -> tensor<12x16xf32>
  return %0 : tensor<12x16xf32>
}


// -----

// A long K (at least two blocks of 128): each 2 x 8-column tile of B is
// copied 128 rows at a time into a 128 x 16 panel on the stack (allocated
// once, at the function's start), and the row tiles' k loop reads the panel
// for the block's length (the last block is shorter: 300 = 128 + 128 + 44).
// CHECK-LABEL: func.func @matmul_packed
// CHECK: %[[PANEL:.*]] = memref.alloca() {alignment = 64 : i64} : memref<128x16xf32>
// CHECK: scf.for %[[K0:.*]] = %{{.*}} to %c300{{.*}} step %c128
// CHECK: %[[LEN:.*]] = arith.minsi
// CHECK: scf.for %[[KK:.*]] = %{{.*}} to %[[LEN]]
// CHECK: %[[ROW:.*]] = vector.load %{{.*}} : memref<300x32xf32>, vector<8xf32>
// CHECK: vector.store %[[ROW]], %[[PANEL]][%[[KK]], %{{.*}}] : memref<128x16xf32>, vector<8xf32>
// CHECK: scf.for %{{.*}} = %{{.*}} to %[[LEN]] step %{{.*}} iter_args(
// CHECK: vector.load %[[PANEL]]
// CHECK: vector.fma
func.func @matmul_packed(%a: memref<12x300xf32>, %b: memref<300x32xf32>, %c: memref<12x32xf32>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d2)>], iterator_types = ["parallel", "reduction", "parallel"]}
      ins(%a, %b : memref<12x300xf32>, memref<300x32xf32>) outs(%c : memref<12x32xf32>)
      attrs = {kiln_kernel.contraction = "ikj"} {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y fastmath<reassoc,contract> : f32
    %s = arith.addf %acc, %p fastmath<reassoc,contract> : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// x @ w.t() (B in [N, K]) with 64 rows and K = 256: B is transposed into a
// 128 x 16 stack panel per column tile and block of K, 8 x 8 blocks at a
// time (three rounds of 8 two-source shuffles), so the broadcast-FMA tiles
// run instead of dot products.
// CHECK-LABEL: func.func @matmul_ijk_packed
// CHECK-SAME: (%[[A:.*]]: memref<64x256xf32>, %[[B:.*]]: memref<16x256xf32>, %[[C:.*]]: memref<64x16xf32>)
// CHECK-SAME: kiln_kernel.column_alignment = 16 : i64
// CHECK: %[[PANEL:.*]] = memref.alloca() {alignment = 64 : i64} : memref<128x16xf32>
// CHECK: vector.load %[[B]][%{{.*}}, %{{.*}}] : memref<16x256xf32>, vector<8xf32>
// CHECK-COUNT-7: vector.load %[[B]]
// CHECK-COUNT-24: vector.shuffle
// CHECK: vector.store %{{.*}}, %[[PANEL]][%{{.*}}, %{{.*}}] : memref<128x16xf32>, vector<8xf32>
// CHECK: %{{.*}}:12 = scf.for
// CHECK: vector.load %[[PANEL]]
// CHECK: memref.load %[[A]]
// CHECK: vector.fma
// CHECK-NOT: vector.reduction
// CHECK: return
#a = affine_map<(d0, d1, d2) -> (d0, d2)>
#b = affine_map<(d0, d1, d2) -> (d1, d2)>
#c = affine_map<(d0, d1, d2) -> (d0, d1)>
func.func @matmul_ijk_packed(%a: memref<64x256xf32>, %b: memref<16x256xf32>, %c: memref<64x16xf32>) {
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : memref<64x256xf32>, memref<16x256xf32>) outs(%c : memref<64x16xf32>)
      attrs = {kiln_kernel.contraction = "ijk"} {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y fastmath<reassoc,contract> : f32
    %s = arith.addf %acc, %p fastmath<reassoc,contract> : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// B [N = 40, K = 24] given as [N, K], with its first two 16-column panels
// packed ahead of the call (kiln-pack-weights): the tiles broadcast A against
// rows of panel j0 / 16 (no transposing, no dot products); the 8 columns past
// the panels are dot products against B itself.
// CHECK-LABEL: func.func @matmul_prepacked
// CHECK-SAME: (%[[A:.*]]: memref<8x24xf32>, %[[B:.*]]: memref<40x24xf32>, %[[P:.*]]: memref<2x24x16xf32> {kiln_kernel.packed_rhs = #kiln_kernel.packed_rhs<of = 1, transposed = true, panel_columns = 16>}, %[[C:.*]]: memref<8x40xf32>)
// CHECK-NOT: vector.shuffle
// CHECK: %[[PANEL:.*]] = arith.divui %{{.*}}, %{{.*}} : index
// CHECK: scf.for {{.*}} iter_args
// CHECK: vector.load %[[P]][%[[PANEL]], %{{.*}}, %{{.*}}] : memref<2x24x16xf32>, vector<8xf32>
// CHECK: vector.fma
// CHECK: memref.load %[[B]]
// CHECK-NOT: vector.load %[[B]]
// CHECK: return
#a = affine_map<(d0, d1, d2) -> (d0, d2)>
#b = affine_map<(d0, d1, d2) -> (d1, d2)>
#c = affine_map<(d0, d1, d2) -> (d0, d1)>
func.func @matmul_prepacked(%a: memref<8x24xf32>, %b: memref<40x24xf32>,
                            %p: memref<2x24x16xf32> {kiln_kernel.packed_rhs = #kiln_kernel.packed_rhs<of = 1, transposed = true, panel_columns = 16>},
                            %c: memref<8x40xf32>) {
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : memref<8x24xf32>, memref<40x24xf32>) outs(%c : memref<8x40xf32>)
      attrs = {kiln_kernel.contraction = "ijk"} {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %m = arith.mulf %x, %y fastmath<reassoc,contract> : f32
    %s = arith.addf %acc, %m fastmath<reassoc,contract> : f32
    linalg.yield %s : f32
  }
  return
}
