// RUN: kiln-opt %s --pass-pipeline='builtin.module(kiln-attach-target{target=cpu:x86-64-v3},func.func(kiln-vectorize-matmul))' | FileCheck %s

// M, N and K known only at run time: the same 6 x 16 register tiles run up
// to M and N rounded down to the tile (computed from memref.dim), the k loop
// runs to K, and the rows and columns past the last full tile are the ragged
// edges, loops from those rounded bounds to M and N.
// CHECK-LABEL: func.func @dynamic_ikj
// CHECK-SAME: (%[[A:.*]]: memref<?x?xf32>, %[[B:.*]]: memref<?x?xf32>, %[[C:.*]]: memref<?x?xf32>)
// CHECK-NOT: linalg.generic
// CHECK-DAG: %[[M:.*]] = memref.dim %[[C]], %{{.*}} : memref<?x?xf32>
// CHECK-DAG: %[[N:.*]] = memref.dim %[[C]], %{{.*}} : memref<?x?xf32>
// CHECK-DAG: %[[K:.*]] = memref.dim %[[A]], %{{.*}} : memref<?x?xf32>
// CHECK: %[[MT:.*]] = arith.divui %[[M]], %[[C6:.*]] : index
// CHECK-NEXT: %[[MFULL:.*]] = arith.muli %[[MT]], %[[C6]] : index
// CHECK: %[[NT:.*]] = arith.divui %[[N]], %[[C16:.*]] : index
// CHECK-NEXT: %[[NFULL:.*]] = arith.muli %[[NT]], %[[C16]] : index
// CHECK: scf.for %[[IB:.*]] = %{{.*}} to %[[MFULL]] step %{{.*}} {
// CHECK: scf.for %[[J:.*]] = %{{.*}} to %[[NFULL]] step %{{.*}} {
// CHECK: scf.for %[[I:.*]] = %[[IB]] to %{{.*}} step %{{.*}} {
// CHECK: %{{.*}}:12 = scf.for %{{.*}} = %{{.*}} to %[[K]] step %{{.*}} iter_args(
// CHECK-COUNT-12: vector.fma
// CHECK-COUNT-12: vector.store
// The rows below the tiles: for each k, row k of B streams through the row
// of C in vectors up to N rounded down to a vector (a row of B further on
// prefetched: the hardware prefetchers stop at pages), then one column at a
// time. The columns right of the tiles take tiles one vector wide, then dot
// products along k. Column loops are marked for workgroups that split them.
// CHECK: scf.for %{{.*}} = %[[MFULL]] to %[[M]] step
// CHECK: %[[NVT:.*]] = arith.divui %[[N]], %[[C8:.*]] : index
// CHECK-NEXT: %[[NV:.*]] = arith.muli %[[NVT]], %[[C8]] : index
// CHECK: scf.for %{{.*}} = %{{.*}} to %[[K]] step
// CHECK: scf.for %{{.*}} = %{{.*}} to %[[NV]] step
// CHECK: memref.prefetch %[[B]][%{{.*}}, %{{.*}}], read, locality<3>, data : memref<?x?xf32>
// CHECK: vector.fma
// CHECK: } {kiln_kernel.column_loop}
// CHECK: scf.for %{{.*}} = %[[NV]] to %[[N]] step
// CHECK: } {kiln_kernel.column_loop}
// CHECK: scf.for %{{.*}} = %{{.*}} to %[[MFULL2:.*]] step
// CHECK: scf.for %{{.*}} = %[[NFULL]] to %[[NV2:.*]] step
// CHECK: %{{.*}}:6 = scf.for %{{.*}} = %{{.*}} to %[[K]] step
// CHECK: } {kiln_kernel.column_loop}
// CHECK: scf.for %{{.*}} = %{{.*}} to %[[MFULL2]] step
// CHECK: scf.for %{{.*}} = %[[NV2]] to %[[N]] step
// CHECK: scf.for %{{.*}} = %{{.*}} to %[[K]] step
// CHECK: } {kiln_kernel.column_loop}
#ikj = [affine_map<(i, k, j) -> (i, k)>, affine_map<(i, k, j) -> (k, j)>, affine_map<(i, k, j) -> (i, j)>]
func.func @dynamic_ikj(%a: memref<?x?xf32>, %b: memref<?x?xf32>, %c: memref<?x?xf32>) {
  linalg.generic {indexing_maps = #ikj, iterator_types = ["parallel", "reduction", "parallel"]}
      ins(%a, %b : memref<?x?xf32>, memref<?x?xf32>) outs(%c : memref<?x?xf32>)
      attrs = {kiln_kernel.contraction = "ikj"} {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}
