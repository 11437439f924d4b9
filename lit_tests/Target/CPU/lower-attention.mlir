// RUN: kiln-opt %s --pass-pipeline='builtin.module(kiln-attach-target{target=cpu:x86-64-v4},func.func(kiln-lower-attention))' | FileCheck %s

// Causal attention with grouped-query heads (2 query heads, 1 key/value head)
// and a key mask, L = 200 queries (a block of 192 and a ragged 8), S = 70 keys
// (a tile of 64 and a ragged 6). Scratch: a [192, 64] tile of scores, the
// [16, 64] transposed tile of keys, the [192, 32] accumulator and the row max
// and sum; never the [200, 70] scores.
// CHECK-LABEL: func.func private @kernel_0_attention
// CHECK-SAME: %[[Q:[a-z0-9]+]]: memref<1x2x200x16xf32>, %[[K:[a-z0-9]+]]: memref<1x1x70x16xf32>, %[[V:[a-z0-9]+]]: memref<1x1x70x32xf32>, %[[M:[a-z0-9]+]]: memref<1x1x1x70xf32>, %[[OUT:[a-z0-9]+]]: memref<1x2x200x32xf32>, %[[LSE:[a-z0-9]+]]: memref<1x2x200xf32>
// CHECK-NOT: memref<200x70xf32>
// CHECK-DAG: %[[SCORES:[a-z0-9_]+]] = memref.alloc() : memref<192x64xf32>
// CHECK-DAG: %[[KT:[a-z0-9_]+]] = memref.alloc() : memref<16x64xf32>
// CHECK-DAG: %[[ACC:[a-z0-9_]+]] = memref.alloc() : memref<192x32xf32>
// One iteration per (batch, head) pair: the loop workgroups split.
// CHECK: scf.for %[[PAIR:[a-z0-9_]+]] = %{{.*}} to %c2 step %c1 {
// CHECK: %[[HEAD:[a-z0-9_]+]] = arith.remui %[[PAIR]]
// Query head h reads key head h / 2.
// CHECK: %[[KVHEAD:[a-z0-9_]+]] = arith.divui %[[HEAD]], %c2
// Blocks of 192 query rows; tiles of 64 keys, up to the block's last row.
// CHECK: scf.for %[[I0:[a-z0-9_]+]] = %{{.*}} to %{{.*}} step %c192
// CHECK: memref.subview %[[Q]][{{.*}}, %[[HEAD]], %[[I0]], 0] [1, 1, 192, 16]
// CHECK: arith.minui
// CHECK: %[[END:[a-z0-9_]+]] = arith.minui
// CHECK: scf.for %[[J0:[a-z0-9_]+]] = %{{.*}} to %[[END]] step %c64
// CHECK: memref.subview %[[K]][{{.*}}, %[[KVHEAD]], %[[J0]], 0] [1, 1, 64, 16]
// The tile of keys is transposed, then q @ kᵀ with broadcast FMAs.
// CHECK: memref.store %{{.*}}, %[[KT]]
// CHECK: vector.fma {{.*}} : vector<16xf32>
// Scale, mask (one value per key, broadcast over queries), causal -inf, max.
// CHECK: vector.load %[[M]]
// CHECK: arith.cmpi ugt, %{{.*}}, %{{.*}} : vector<16xindex>
// CHECK: arith.maximumf {{.*}} : vector<16xf32>
// CHECK: vector.reduction <maximumf>
// CHECK: math.exp %{{.*}} : vector<16xf32>
// CHECK: vector.reduction <add>
// p @ v into the accumulator.
// CHECK: memref.subview %[[V]][{{.*}}, %[[KVHEAD]], %[[J0]], 0] [1, 1, 64, 32]
// CHECK: vector.fma {{.*}} : vector<16xf32>
// The ragged tile of 6 keys, only if the block reaches it.
// CHECK: scf.if
// CHECK: memref.subview %[[K]][{{.*}}, %[[KVHEAD]], %c64{{.*}}, 0] [1, 1, 6, 16]
// out = acc / l and logsumexp = m + log(l); fully masked rows give 0.
// CHECK: math.log
// CHECK: memref.store %{{.*}}, %[[LSE]]
// CHECK: memref.store %{{.*}}, %[[OUT]]
// The ragged block of 8 query rows.
// CHECK: memref.subview %[[Q]][{{.*}}, %[[HEAD]], %c192{{.*}}, 0] [1, 1, 8, 16]
// CHECK: memref.dealloc %[[SCORES]]
// CHECK-NOT: kiln_kernel.attention
func.func private @kernel_0_attention(%wg: index, %wgc: index, %q: memref<1x2x200x16xf32>, %k: memref<1x1x70x16xf32>, %v: memref<1x1x70x32xf32>, %m: memref<1x1x1x70xf32>, %out: memref<1x2x200x32xf32>, %lse: memref<1x2x200xf32>)
    attributes {kiln_kernel.kernel = "kernel_0_attention", kiln_kernel.workgroup_extent = 2 : i64} {
  kiln_kernel.attention %q, %k, %v mask %m into %out, %lse {scale = 0.25 : f64, is_causal = true} : memref<1x2x200x16xf32>, memref<1x1x70x16xf32>, memref<1x1x70x32xf32>, memref<1x1x1x70xf32> into memref<1x2x200x32xf32>, memref<1x2x200xf32>
  return
}

// Symbolic batch and lengths: the scratch is one whole block (192 rows, 64
// keys); the (batch, head) loop, the full blocks and tiles run to bounds read
// from the buffers; the ragged block of rows and the ragged tile of keys are
// sized at run time and run only when not empty; rows stay vectorized.
// CHECK-LABEL: func.func private @kernel_1_attention
// CHECK-SAME: %[[Q:[a-z0-9]+]]: memref<?x2x?x16xf32>, %[[K:[a-z0-9]+]]: memref<?x1x?x16xf32>
// CHECK-DAG: memref.alloc() : memref<192x64xf32>
// CHECK-DAG: memref.alloc() : memref<192x32xf32>
// CHECK-DAG: %[[BATCH:[a-z0-9_]+]] = memref.dim %[[Q]], %c0
// CHECK-DAG: %[[QUERIES:[a-z0-9_]+]] = memref.dim %[[Q]], %c2
// CHECK-DAG: %[[KEYS:[a-z0-9_]+]] = memref.dim %[[K]], %c2
// CHECK: %[[PAIRS:[a-z0-9_]+]] = arith.muli %[[BATCH]], %c2
// CHECK: scf.for %{{.*}} = %{{.*}} to %[[PAIRS]] step %c1 {
// CHECK: %[[BLOCKS:[a-z0-9_]+]] = arith.divui %[[QUERIES]], %c192
// CHECK: %[[FULL:[a-z0-9_]+]] = arith.muli %[[BLOCKS]], %c192
// CHECK: scf.for %{{.*}} = %{{.*}} to %[[FULL]] step %c192
// CHECK: memref.subview %[[Q]]{{.*}} [1, 1, 192, 16]
// CHECK: scf.for %{{.*}} step %c64
// CHECK: vector.reduction <maximumf>
// CHECK: vector.reduction <add>
// CHECK: scf.if
// CHECK: memref.subview %[[K]]{{.*}} [1, 1, %{{.*}}, 16]
// The ragged block of rows: queries - full rows of them.
// CHECK: %[[RAGGED:[a-z0-9_]+]] = arith.cmpi ult, %[[FULL]], %[[QUERIES]]
// CHECK: scf.if %[[RAGGED]]
// CHECK: %[[REST:[a-z0-9_]+]] = arith.subi %[[QUERIES]], %[[FULL]]
// CHECK: memref.subview %[[Q]]{{.*}} [1, 1, %[[REST]], 16]
func.func private @kernel_1_attention(%wg: index, %wgc: index, %q: memref<?x2x?x16xf32>, %k: memref<?x1x?x16xf32>, %v: memref<?x1x?x32xf32>, %out: memref<?x2x?x32xf32>, %lse: memref<?x2x?xf32>)
    attributes {kiln_kernel.kernel = "kernel_1_attention"} {
  kiln_kernel.attention %q, %k, %v into %out, %lse {scale = 0.25 : f64, is_causal = true} : memref<?x2x?x16xf32>, memref<?x1x?x16xf32>, memref<?x1x?x32xf32> into memref<?x2x?x32xf32>, memref<?x2x?xf32>
  return
}

// With masked_rows_nan (attention matched from softmax written out), a row
// whose keys are all masked divides by its zero sum (NaN, as softmax): the
// output divides by the sum itself, the logsumexp still by the guarded one.
// CHECK-LABEL: func.func private @kernel_2_attention
// CHECK: math.log %[[GUARDED:[0-9]+]]
// CHECK-NOT: arith.divf %{{.*}}, %[[GUARDED]] : f32
// CHECK: arith.divf %cst{{.*}}, %{{[0-9]+}} : f32
func.func private @kernel_2_attention(%wg: index, %wgc: index, %q: memref<1x1x8x16xf32>, %k: memref<1x1x8x16xf32>, %v: memref<1x1x8x16xf32>, %out: memref<1x1x8x16xf32>, %lse: memref<1x1x8xf32>)
    attributes {kiln_kernel.kernel = "kernel_2_attention", kiln_kernel.workgroup_extent = 1 : i64} {
  kiln_kernel.attention %q, %k, %v into %out, %lse {scale = 0.25 : f64, is_causal = false, masked_rows_nan = true} : memref<1x1x8x16xf32>, memref<1x1x8x16xf32>, memref<1x1x8x16xf32> into memref<1x1x8x16xf32>, memref<1x1x8xf32>
  return
}
