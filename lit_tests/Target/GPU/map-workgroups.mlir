// The mapping with reductions combining their partials by the
// workgroup-memory tree; map-workgroups-subgroups.mlir has the subgroup path.
// RUN: kiln-opt %s -split-input-file \
// RUN:   --pass-pipeline='builtin.module(kiln-attach-target{target=vulkan},func.func(kiln-gpu-map-workgroups{subgroups=false}))' | FileCheck %s

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
// sum), the partials meet in workgroup memory and fold in a tree (64, 32,
// ..., 1 threads, a barrier after each round), and thread 0 folds the total
// into the accumulator.
// CHECK-LABEL: func.func @full_sum
// CHECK-DAG: %[[T:.*]] = gpu.thread_id x
// CHECK-DAG: %[[IDENTITY:.*]] = arith.constant -0.000000e+00 : f32
// CHECK-DAG: %[[SHARED:.*]] = memref.alloc() : memref<128xf32, #gpu.address_space<workgroup>>
// CHECK: %[[PARTIAL:.*]] = scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[P:.*]] = %[[IDENTITY]]) -> (f32)
// CHECK:   arith.addf %[[P]], %{{.*}} fastmath<reassoc>
// CHECK: memref.store %[[PARTIAL]], %[[SHARED]][%[[T]]]
// CHECK: gpu.barrier
// CHECK: %[[C64:.*]] = arith.constant 64 : index
// CHECK: %[[OTHER:.*]] = arith.addi %[[T]], %[[C64]]
// CHECK: scf.if
// CHECK:   %[[MINE:.*]] = memref.load %[[SHARED]][%[[T]]]
// CHECK:   %[[THEIRS:.*]] = memref.load %[[SHARED]][%[[OTHER]]]
// CHECK:   %[[SUM:.*]] = arith.addf %[[MINE]], %[[THEIRS]] fastmath<reassoc>
// CHECK:   memref.store %[[SUM]], %[[SHARED]][%[[T]]]
// CHECK: gpu.barrier
// CHECK-COUNT-6: gpu.barrier
// CHECK: scf.if
// CHECK:   memref.load %[[SHARED]][%{{.*}}]
// CHECK:   memref.load %{{.*}}[] : memref<f32>
// CHECK:   memref.store %{{.*}}, %{{.*}}[] : memref<f32>
// CHECK: gpu.barrier
// CHECK-NOT: gpu.barrier
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

// -----

// A loop over rows whose body reduces each row: a workgroup takes one row
// (a row has 512 elements of work, more than the threads), and its threads
// share each row's reduction, both accumulators (a norm's sum and sum of
// squares) at once, through one workgroup array each.
// CHECK-LABEL: func.func @row_statistics
// CHECK-SAME: kiln_kernel.workgroup_alignment = 1 : i64
// CHECK: %[[SUMS:.*]] = memref.alloc() : memref<128xf32, #gpu.address_space<workgroup>>
// CHECK: %[[SQUARES:.*]] = memref.alloc() : memref<128xf32, #gpu.address_space<workgroup>>
// CHECK-DAG: %[[T:.*]] = gpu.thread_id x
// CHECK-DAG: %[[C128:.*]] = arith.constant 128 : index
// CHECK: scf.for %[[ROW:.*]] = %{{.*}} to %{{.*}} step
// CHECK:   %[[STEP:.*]] = arith.muli %{{.*}}, %[[C128]]
// CHECK:   %[[PARTIAL:.*]]:2 = scf.for %{{.*}} = %{{.*}} to %{{.*}} step %[[STEP]] iter_args
// CHECK:     memref.load %{{.*}}[%[[ROW]], %{{.*}}] : memref<64x512xf32>
// CHECK:   memref.store %[[PARTIAL]]#0, %[[SUMS]][%[[T]]]
// CHECK:   memref.store %[[PARTIAL]]#1, %[[SQUARES]][%[[T]]]
// CHECK:   gpu.barrier
// CHECK-COUNT-7: gpu.barrier
// CHECK:   scf.if
// CHECK:     memref.load %{{.*}}[%[[ROW]]] : memref<64xf32>
// CHECK:     memref.store %{{.*}}, %{{.*}}[%[[ROW]]] : memref<64xf32>
// CHECK:     memref.store %{{.*}}, %{{.*}}[%[[ROW]]] : memref<64xf32>
// CHECK: }
// CHECK: gpu.barrier
func.func @row_statistics(%id: index, %count: index, %in: memref<64x512xf32>, %sum: memref<64xf32>, %squares: memref<64xf32>)
    attributes {kiln_kernel.kernel = "row_statistics", kiln_kernel.workgroup_extent = 64 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %c512 = arith.constant 512 : index
  scf.parallel (%i) = (%c0) to (%c64) step (%c1) {
    scf.for %j = %c0 to %c512 step %c1 {
      %x = memref.load %in[%i, %j] : memref<64x512xf32>
      %s = memref.load %sum[%i] : memref<64xf32>
      %q = memref.load %squares[%i] : memref<64xf32>
      %xx = arith.mulf %x, %x : f32
      %s2 = arith.addf %s, %x fastmath<reassoc> : f32
      %q2 = arith.addf %q, %xx fastmath<reassoc> : f32
      memref.store %s2, %sum[%i] : memref<64xf32>
      memref.store %q2, %squares[%i] : memref<64xf32>
    }
    scf.reduce
  }
  return
}

// -----

// Rows of 4 elements: a thread per row (32 rows to a workgroup), each
// reducing its row alone, no workgroup memory.
// CHECK-LABEL: func.func @short_rows
// CHECK-SAME: kiln_kernel.workgroup_alignment = 32 : i64
// CHECK-NOT: address_space<workgroup>
// CHECK: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %c128
// CHECK:   scf.for %{{.*}} = %c0{{.*}} to %c4 step %c1
func.func @short_rows(%id: index, %count: index, %in: memref<1000x4xf32>, %out: memref<1000xf32>)
    attributes {kiln_kernel.kernel = "short_rows", kiln_kernel.workgroup_extent = 1000 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c1000 = arith.constant 1000 : index
  scf.parallel (%i) = (%c0) to (%c1000) step (%c1) {
    scf.for %j = %c0 to %c4 step %c1 {
      %x = memref.load %in[%i, %j] : memref<1000x4xf32>
      %s = memref.load %out[%i] : memref<1000xf32>
      %s2 = arith.addf %s, %x fastmath<reassoc> : f32
      memref.store %s2, %out[%i] : memref<1000xf32>
    }
    scf.reduce
  }
  return
}

// -----

// A matmul goes by 32 x 64 tiles of outputs (a workgroup takes 32 rows):
// each 16-deep stage of A [32 x 16] and B [16 x 64] is loaded into
// workgroup memory by all threads, then each thread combines its 4 x 4
// outputs, carried from their initial values in k order, from there. The
// row reduction after it shares each of the workgroup's rows over the
// threads.
// CHECK-LABEL: func.func @matmul_then_row_sum
// CHECK-SAME: kiln_kernel.gpu_strategies = ["matmul tiles 32x64x16 through workgroup memory (4x4 per thread)", "row reductions over the workgroup"]
// CHECK-SAME: kiln_kernel.workgroup_alignment = 32 : i64
// CHECK: %[[PARTIALS:.*]] = memref.alloc() : memref<128xf32, #gpu.address_space<workgroup>>
// CHECK: %[[A:.*]] = memref.alloc() : memref<512xf32, #gpu.address_space<workgroup>>
// CHECK: %[[B:.*]] = memref.alloc() : memref<1024xf32, #gpu.address_space<workgroup>>
// CHECK: scf.for %[[I0:.*]] = %{{.*}} to %{{.*}} step
// CHECK:   scf.for %[[J0:.*]] = %{{.*}} to %{{.*}} step
// CHECK-COUNT-16: scf.if %{{.*}} -> (f32)
// CHECK:     %[[OUT:.*]]:16 = scf.for %[[K0:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args
// CHECK:       scf.for %{{.*}} = %{{.*}} to %{{.*}} step %c128
// CHECK:         memref.load %{{.*}} : memref<64x256xf32>
// CHECK:         memref.store %{{.*}}, %[[A]]
// CHECK:       scf.for %{{.*}} = %{{.*}} to %{{.*}} step %c128
// CHECK:         memref.load %{{.*}} : memref<256x512xf32>
// CHECK:         memref.store %{{.*}}, %[[B]]
// CHECK:       gpu.barrier
// CHECK:       scf.for %{{.*}} iter_args
// CHECK-COUNT-4: memref.load %[[A]]
// CHECK-COUNT-4: memref.load %[[B]]
// CHECK:         arith.mulf
// CHECK:         arith.addf
// CHECK:       gpu.barrier
// CHECK-COUNT-16: memref.store %[[OUT]]#{{[0-9]+}}, %{{.*}} : memref<64x512xf32>
// CHECK: gpu.barrier
// CHECK: memref.store %{{.*}}, %[[PARTIALS]][%{{.*}}] : memref<128xf32, #gpu.address_space<workgroup>>
func.func @matmul_then_row_sum(%id: index, %count: index, %a: memref<64x256xf32>, %b: memref<256x512xf32>, %c: memref<64x512xf32>, %out: memref<64xf32>)
    attributes {kiln_kernel.kernel = "matmul_then_row_sum", kiln_kernel.workgroup_extent = 64 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %c256 = arith.constant 256 : index
  %c512 = arith.constant 512 : index
  scf.parallel (%i, %j) = (%c0, %c0) to (%c64, %c512) step (%c1, %c1) {
    scf.for %k = %c0 to %c256 step %c1 {
      %x = memref.load %a[%i, %k] : memref<64x256xf32>
      %y = memref.load %b[%k, %j] : memref<256x512xf32>
      %acc = memref.load %c[%i, %j] : memref<64x512xf32>
      %p = arith.mulf %x, %y : f32
      %s = arith.addf %acc, %p fastmath<reassoc> : f32
      memref.store %s, %c[%i, %j] : memref<64x512xf32>
    }
    scf.reduce
  }
  scf.parallel (%i) = (%c0) to (%c64) step (%c1) {
    scf.for %j = %c0 to %c512 step %c1 {
      %x = memref.load %c[%i, %j] : memref<64x512xf32>
      %s = memref.load %out[%i] : memref<64xf32>
      %s2 = arith.addf %s, %x fastmath<reassoc> : f32
      memref.store %s2, %out[%i] : memref<64xf32>
    }
    scf.reduce
  }
  return
}

// -----

// A batched matmul with B transposed (B[b, j, k]) and a depth that is not a
// multiple of 16: the batches run one after another, each by tiles.
// CHECK-LABEL: func.func @batched_transposed
// CHECK: memref.alloc() : memref<512xf32, #gpu.address_space<workgroup>>
// CHECK: memref.alloc() : memref<1024xf32, #gpu.address_space<workgroup>>
// CHECK: scf.for %[[BATCH:.*]] = %{{.*}} to %{{.*}} step
// CHECK:   scf.for
// CHECK:     scf.for
// CHECK:       memref.load %{{.*}}[%[[BATCH]], %{{.*}}, %{{.*}}] : memref<4x40x100xf32>
// CHECK:       arith.minui %{{.*}}, %c16
func.func @batched_transposed(%id: index, %count: index, %a: memref<4x48x100xf32>, %b: memref<4x40x100xf32>, %c: memref<4x48x40xf32>)
    attributes {kiln_kernel.kernel = "batched_transposed", kiln_kernel.workgroup_extent = 4 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c40 = arith.constant 40 : index
  %c48 = arith.constant 48 : index
  %c100 = arith.constant 100 : index
  scf.parallel (%n, %i, %j) = (%c0, %c0, %c0) to (%c4, %c48, %c40) step (%c1, %c1, %c1) {
    scf.for %k = %c0 to %c100 step %c1 {
      %x = memref.load %a[%n, %i, %k] : memref<4x48x100xf32>
      %y = memref.load %b[%n, %j, %k] : memref<4x40x100xf32>
      %acc = memref.load %c[%n, %i, %j] : memref<4x48x40xf32>
      %p = arith.mulf %x, %y : f32
      %s = arith.addf %acc, %p : f32
      memref.store %s, %c[%n, %i, %j] : memref<4x48x40xf32>
    }
    scf.reduce
  }
  return
}

// -----

// Four columns do not fill half of the narrowest tile: a thread per output.
// CHECK-LABEL: func.func @narrow_matmul
// CHECK-NOT: address_space<workgroup>
// CHECK: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %c128
// CHECK:   scf.for %{{.*}} = %c0{{.*}} to %c64 step %c1
func.func @narrow_matmul(%id: index, %count: index, %a: memref<256x64xf32>, %b: memref<64x4xf32>, %c: memref<256x4xf32>)
    attributes {kiln_kernel.kernel = "narrow_matmul", kiln_kernel.workgroup_extent = 256 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c64 = arith.constant 64 : index
  %c256 = arith.constant 256 : index
  scf.parallel (%i, %j) = (%c0, %c0) to (%c256, %c4) step (%c1, %c1) {
    scf.for %k = %c0 to %c64 step %c1 {
      %x = memref.load %a[%i, %k] : memref<256x64xf32>
      %y = memref.load %b[%k, %j] : memref<64x4xf32>
      %acc = memref.load %c[%i, %j] : memref<256x4xf32>
      %p = arith.mulf %x, %y : f32
      %s = arith.addf %acc, %p : f32
      memref.store %s, %c[%i, %j] : memref<256x4xf32>
    }
    scf.reduce
  }
  return
}

// -----

// An implicit GEMM (a convolution's loops as kiln-gpu-lower-kernel-ops
// makes them): addresses computed from the row and k vary with the row, so
// the input is the A tile, loaded through its address arithmetic.
// Its 32 output channels make the tile 32 wide (2 per thread), and its
// rows are the output rows and positions flattened: a workgroup's chunk is
// 2 of the 16-wide output rows, one tile.
// CHECK-LABEL: func.func @implicit_gemm
// CHECK-SAME: kiln_kernel.workgroup_alignment = 2 : i64
// CHECK: %[[A:.*]] = memref.alloc() : memref<512xf32, #gpu.address_space<workgroup>>
// CHECK: memref.alloc() : memref<512xf32, #gpu.address_space<workgroup>>
// CHECK: scf.for %{{.*}} iter_args
// CHECK:   scf.for %{{.*}} step %c128
// CHECK:     arith.divui
// CHECK:     memref.load %{{.*}} : memref<4x18x18xf32>
// CHECK:     memref.store %{{.*}}, %[[A]]
func.func @implicit_gemm(%id: index, %count: index, %in: memref<4x18x18xf32>, %w: memref<32x4x3x3xf32>, %sums: memref<16x16x32xf32>)
    attributes {kiln_kernel.kernel = "implicit_gemm", kiln_kernel.workgroup_extent = 16 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c9 = arith.constant 9 : index
  %c16 = arith.constant 16 : index
  %c32 = arith.constant 32 : index
  %c36 = arith.constant 36 : index
  scf.parallel (%y, %x, %o) = (%c0, %c0, %c0) to (%c16, %c16, %c32) step (%c1, %c1, %c1) {
    scf.for %k = %c0 to %c36 step %c1 {
      %c = arith.divui %k, %c9 : index
      %kk = arith.remui %k, %c9 : index
      %ky = arith.divui %kk, %c3 : index
      %kx = arith.remui %kk, %c3 : index
      %iy = arith.addi %y, %ky : index
      %ix = arith.addi %x, %kx : index
      %a = memref.load %in[%c, %iy, %ix] : memref<4x18x18xf32>
      %b = memref.load %w[%o, %c, %ky, %kx] : memref<32x4x3x3xf32>
      %acc = memref.load %sums[%y, %x, %o] : memref<16x16x32xf32>
      %p = arith.mulf %a, %b : f32
      %s = arith.addf %acc, %p : f32
      memref.store %s, %sums[%y, %x, %o] : memref<16x16x32xf32>
    }
    scf.reduce
  }
  return
}

// -----

// Attention by query blocks: 5 queries and 7 keys give blocks of 8 x 8;
// each (batch, head) pair of the workgroup's chunk, each block of queries,
// each tile of keys (causal: up to the block's last query) with a barrier
// between loading the tiles, the scores, the running statistics and the
// outputs. One block: no grid.
// CHECK-LABEL: func.func @attention_blocks
// CHECK-SAME: kiln_kernel.gpu_strategies = ["attention by blocks of 8 queries and tiles of 8 keys through workgroup memory"]
// CHECK-NOT: kiln_kernel.column_extent
// CHECK-DAG: %[[QB:.*]] = memref.alloc() : memref<64xf32, #gpu.address_space<workgroup>>
// CHECK-DAG: %[[KT:.*]] = memref.alloc() : memref<64xf32, #gpu.address_space<workgroup>>
// CHECK-DAG: %[[OUT:.*]] = memref.collapse_shape %{{.*}} {{\[\[}}0, 1], [2], [3]] : memref<2x3x5x8xf32> into memref<6x5x8xf32>
// CHECK: scf.for %[[PAIR:.*]] = %{{.*}} to %{{.*}} step %c1
// CHECK:   scf.for %[[Q0:.*]] = %c0{{.*}} to %c5 step %c8
// CHECK:     memref.store %{{.*}}, %[[QB]]
// CHECK:     gpu.barrier
// CHECK:     %[[LAST:.*]] = arith.addi %[[Q0]], %c8
// CHECK:     %[[KEYEND:.*]] = arith.minui %c7, %[[LAST]]
// CHECK:     scf.for %{{.*}} = %c0{{.*}} to %[[KEYEND]] step %c8{{.*}} iter_args
// CHECK:       memref.store %{{.*}}, %[[KT]]
// CHECK:       gpu.barrier
// CHECK:       arith.cmpi ugt
// CHECK:       gpu.barrier
// CHECK:       math.exp
// CHECK:       gpu.barrier
// CHECK:       gpu.barrier
// CHECK:     math.log
// CHECK:     memref.store %{{.*}}, %[[OUT]]
// CHECK:     gpu.barrier
// CHECK-NOT: kiln_kernel.attention
func.func @attention_blocks(%id: index, %count: index, %q: memref<2x3x5x8xf32>, %k: memref<2x1x7x8xf32>, %v: memref<2x1x7x8xf32>, %mask: memref<1x1x5x7xf32>, %out: memref<2x3x5x8xf32>, %lse: memref<2x3x5xf32>)
    attributes {kiln_kernel.kernel = "attention_blocks", kiln_kernel.workgroup_extent = 6 : i64} {
  kiln_kernel.attention %q, %k, %v mask %mask into %out, %lse {scale = 0.35 : f64, is_causal = true} : memref<2x3x5x8xf32>, memref<2x1x7x8xf32>, memref<2x1x7x8xf32>, memref<1x1x5x7xf32> into memref<2x3x5x8xf32>, memref<2x3x5xf32>
  return
}

// -----

// 70 queries in blocks of 32: three blocks, over a grid of workgroups (the
// kernel's column extent): workgroup id / (count / row chunks) is the row
// chunk, the remainder the chunk of blocks.
// CHECK-LABEL: func.func @attention_grid
// CHECK-SAME: kiln_kernel.column_alignment = 1 : i64, kiln_kernel.column_extent = 3 : i64
// CHECK-SAME: ["attention by blocks of 32 queries and tiles of 32 keys through workgroup memory, the blocks over the grid"]
// CHECK: %[[ID:.*]] = gpu.block_id x
// CHECK: %[[COUNT:.*]] = gpu.grid_dim x
// CHECK: %[[ROWGROUPS:.*]] = arith.maxui %c1{{[_0-9]*}}, %{{.*}} : index
// CHECK: %[[PER:.*]] = arith.divui %[[COUNT]], %[[ROWGROUPS]]
// CHECK: %[[GROUPS:.*]] = arith.maxui %{{.*}}, %[[PER]]
// CHECK: arith.divui %[[ID]], %[[GROUPS]]
// CHECK: arith.remui %[[ID]], %[[GROUPS]]
// CHECK: scf.for
// CHECK:   %[[BLOCKS:.*]] = arith.ceildivui %c70, %c32
// CHECK:   %[[PER:.*]] = arith.ceildivui %[[BLOCKS]], %c3
// CHECK:   %[[PERQ:.*]] = arith.muli %[[PER]], %c32
// CHECK:   %[[FIRST:.*]] = arith.minui %c70, %{{.*}}
// CHECK:   %[[LAST:.*]] = arith.minui %c70, %{{.*}}
// CHECK:   scf.for %{{.*}} = %[[FIRST]] to %[[LAST]] step %c32
func.func @attention_grid(%id: index, %count: index, %q: memref<1x2x70x8xf32>, %k: memref<1x2x90x8xf32>, %v: memref<1x2x90x8xf32>, %out: memref<1x2x70x8xf32>, %lse: memref<1x2x70xf32>)
    attributes {kiln_kernel.kernel = "attention_grid", kiln_kernel.workgroup_extent = 2 : i64} {
  kiln_kernel.attention %q, %k, %v into %out, %lse {scale = 0.35 : f64, is_causal = false} : memref<1x2x70x8xf32>, memref<1x2x90x8xf32>, memref<1x2x90x8xf32> into memref<1x2x70x8xf32>, memref<1x2x70xf32>
  return
}

// -----

// Heads of 512: not even 4 x 4 blocks fit in 16 KiB, so each query row is a
// thread's (b * H + h, i), with the online softmax over the keys.
// CHECK-LABEL: func.func @attention_rows
// CHECK-SAME: ["attention by query rows, a thread each"]
// CHECK-NOT: #gpu.address_space<workgroup>
// CHECK: scf.for %[[FLAT:.*]] = %{{.*}} to %{{.*}} step %c128
// CHECK:   scf.for %{{.*}} = %c0{{.*}} to %c5{{.*}} step %c1{{.*}} iter_args
// CHECK:     math.exp
// CHECK:   math.log
func.func @attention_rows(%id: index, %count: index, %q: memref<1x2x3x512xf32>, %k: memref<1x2x5x512xf32>, %v: memref<1x2x5x512xf32>, %out: memref<1x2x3x512xf32>, %lse: memref<1x2x3xf32>)
    attributes {kiln_kernel.kernel = "attention_rows", kiln_kernel.workgroup_extent = 2 : i64} {
  kiln_kernel.attention %q, %k, %v into %out, %lse {scale = 0.125 : f64, is_causal = false} : memref<1x2x3x512xf32>, memref<1x2x5x512xf32>, memref<1x2x5x512xf32> into memref<1x2x3x512xf32>, memref<1x2x3xf32>
  return
}

// -----

// A scan along 300 of 1000 rows (a kernel not split into rows): the loop
// along the axis runs on every thread, each of its steps spread over the
// threads with a barrier after it.
// CHECK-LABEL: func.func @scan_steps
// CHECK-SAME: ["a sequential loop, each of its steps over the threads"]
// CHECK: %[[T:.*]] = gpu.thread_id x
// CHECK: scf.for %{{.*}} = %c0{{.*}} to %c300 step %c1 {
// CHECK:   scf.for %{{.*}} = %[[T]] to %{{.*}} step %c128
// CHECK:     arith.addf
// CHECK:   gpu.barrier
// CHECK:   scf.for %{{.*}} = %[[T]] to %{{.*}} step %c128
// CHECK:     memref.store
// CHECK:   gpu.barrier
// CHECK: }
// CHECK: gpu.barrier
// CHECK-NOT: scf.if
func.func @scan_steps(%id: index, %count: index, %in: memref<1000x300xf32>, %acc: memref<1000xf32>, %out: memref<1000x300xf32>)
    attributes {kiln_kernel.kernel = "scan_steps", kiln_kernel.workgroup_extent = 0 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c300 = arith.constant 300 : index
  %c1000 = arith.constant 1000 : index
  scf.for %j = %c0 to %c300 step %c1 {
    scf.parallel (%i) = (%c0) to (%c1000) step (%c1) {
      %a = memref.load %acc[%i] : memref<1000xf32>
      %x = memref.load %in[%i, %j] : memref<1000x300xf32>
      %s = arith.addf %a, %x : f32
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

// -----

// A sequential loop with a step whose iterations may write the same element
// (a scatter) stays on thread 0.
// CHECK-LABEL: func.func @steps_with_a_scatter
// CHECK-SAME: ["thread 0 alone (writes that may meet, or a sequential loop)"]
// CHECK: scf.if %{{.*}} {
// CHECK:   scf.for
func.func @steps_with_a_scatter(%id: index, %count: index, %index: memref<16xi64>, %src: memref<16xf32>, %out: memref<4xf32>)
    attributes {kiln_kernel.kernel = "steps_with_a_scatter", kiln_kernel.workgroup_extent = 0 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c16 = arith.constant 16 : index
  scf.for %j = %c0 to %c3 step %c1 {
    scf.parallel (%i) = (%c0) to (%c16) step (%c1) {
      %k = memref.load %index[%i] : memref<16xi64>
      %ki = arith.index_cast %k : i64 to index
      %x = memref.load %src[%i] : memref<16xf32>
      %old = memref.load %out[%ki] : memref<4xf32>
      %s = arith.addf %x, %old : f32
      memref.store %s, %out[%ki] : memref<4xf32>
      scf.reduce
    }
  }
  return
}

// -----

// A scatter along rows of 300 columns, out[index[i, j], j] += src[i, j]:
// its writes fall apart by j, so the columns go over the threads and each
// thread runs the rows in order (each element's updates in the nest's
// order: deterministic, no atomics).
// CHECK-LABEL: func.func @scatter_columns
// CHECK-SAME: ["a loop nest whose writes fall apart by some of its loops, those over the threads, the others in order"]
// CHECK: %[[T:.*]] = gpu.thread_id x
// CHECK: scf.for %[[FLAT:.*]] = %[[T]] to %{{.*}} step %c128 {
// CHECK:   %[[J:.*]] = arith.muli %[[FLAT]], %{{.*}}
// CHECK:   scf.for %[[I:.*]] = %c0{{.*}} to %c400
// CHECK:     memref.load %{{.*}}[%[[I]], %{{.*}}] : memref<400x300xi64>
// CHECK:     memref.store %{{.*}}, %{{.*}}[%{{.*}}, %{{.*}}] : memref<50x300xf32>
// CHECK-NOT: scf.if
func.func @scatter_columns(%id: index, %count: index, %index: memref<400x300xi64>, %src: memref<400x300xf32>, %out: memref<50x300xf32>)
    attributes {kiln_kernel.kernel = "scatter_columns", kiln_kernel.workgroup_extent = 0 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c300 = arith.constant 300 : index
  %c400 = arith.constant 400 : index
  scf.for %i = %c0 to %c400 step %c1 {
    scf.for %j = %c0 to %c300 step %c1 {
      %k = memref.load %index[%i, %j] : memref<400x300xi64>
      %ki = arith.index_cast %k : i64 to index
      %x = memref.load %src[%i, %j] : memref<400x300xf32>
      %old = memref.load %out[%ki, %j] : memref<50x300xf32>
      %s = arith.addf %old, %x : f32
      memref.store %s, %out[%ki, %j] : memref<50x300xf32>
    }
  }
  return
}

// -----

// A nest that reads what it writes at another column (out[k, 0]), or
// through another view of the buffer, does not write apart: thread 0 alone.
// CHECK-LABEL: func.func @scatter_reads_across
// CHECK-SAME: ["thread 0 alone (writes that may meet, or a sequential loop)"]
// CHECK-LABEL: func.func @scatter_through_a_view
// CHECK-SAME: ["thread 0 alone (writes that may meet, or a sequential loop)"]
func.func @scatter_reads_across(%id: index, %count: index, %index: memref<40x30xi64>, %out: memref<5x30xf32>)
    attributes {kiln_kernel.kernel = "scatter_reads_across", kiln_kernel.workgroup_extent = 0 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c30 = arith.constant 30 : index
  %c40 = arith.constant 40 : index
  scf.for %i = %c0 to %c40 step %c1 {
    scf.for %j = %c0 to %c30 step %c1 {
      %k = memref.load %index[%i, %j] : memref<40x30xi64>
      %ki = arith.index_cast %k : i64 to index
      %first = memref.load %out[%ki, %c0] : memref<5x30xf32>
      %old = memref.load %out[%ki, %j] : memref<5x30xf32>
      %s = arith.addf %old, %first : f32
      memref.store %s, %out[%ki, %j] : memref<5x30xf32>
    }
  }
  return
}
func.func @scatter_through_a_view(%id: index, %count: index, %index: memref<40x30xi64>, %out: memref<5x30xf32>)
    attributes {kiln_kernel.kernel = "scatter_through_a_view", kiln_kernel.workgroup_extent = 0 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c30 = arith.constant 30 : index
  %c40 = arith.constant 40 : index
  %flat = memref.collapse_shape %out [[0, 1]] : memref<5x30xf32> into memref<150xf32>
  scf.for %i = %c0 to %c40 step %c1 {
    scf.for %j = %c0 to %c30 step %c1 {
      %k = memref.load %index[%i, %j] : memref<40x30xi64>
      %ki = arith.index_cast %k : i64 to index
      %other = memref.load %flat[%j] : memref<150xf32>
      %old = memref.load %out[%ki, %j] : memref<5x30xf32>
      %s = arith.addf %old, %other : f32
      memref.store %s, %out[%ki, %j] : memref<5x30xf32>
    }
  }
  return
}

// -----

// A boolean reduction (all) spreads over the threads too, its partials kept
// as 32-bit integers in workgroup memory.
// CHECK-LABEL: func.func @all_true
// CHECK-SAME: ["a reduction into one element over the workgroup"]
// CHECK: %[[PARTIALS:.*]] = memref.alloc() : memref<128xi32, #gpu.address_space<workgroup>>
// CHECK: %[[MINE:.*]] = scf.for {{.*}} iter_args(%{{.*}} = %true) -> (i1)
// CHECK: %[[WIDE:.*]] = arith.extui %[[MINE]] : i1 to i32
// CHECK: memref.store %[[WIDE]], %[[PARTIALS]]
// CHECK: arith.trunci %{{.*}} : i32 to i1
// CHECK: arith.andi
func.func @all_true(%id: index, %count: index, %in: memref<100000xi1>, %out: memref<i1>)
    attributes {kiln_kernel.kernel = "all_true"} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = arith.constant 100000 : index
  scf.for %i = %c0 to %n step %c1 {
    %x = memref.load %in[%i] : memref<100000xi1>
    %acc = memref.load %out[] : memref<i1>
    %r = arith.andi %acc, %x : i1
    memref.store %r, %out[] : memref<i1>
  }
  return
}

// -----

// A symbolic count of queries: the blocks split into 32 columns of the
// grid, each taking ceil(ceil(L / 16) / 32) blocks.
// CHECK-LABEL: func.func @attention_symbolic_queries
// CHECK-SAME: kiln_kernel.column_alignment = 1 : i64, kiln_kernel.column_extent = 32 : i64
// CHECK-SAME: the blocks over the grid
// CHECK: %[[L:.*]] = memref.dim %{{.*}}, %c2
// CHECK: %[[BLOCKS:.*]] = arith.ceildivui %[[L]], %c16
// CHECK: %[[PER:.*]] = arith.ceildivui %[[BLOCKS]], %c32
// CHECK: %[[PERQ:.*]] = arith.muli %[[PER]], %c16
// CHECK: arith.muli %{{.*}}, %[[PERQ]]
// CHECK: scf.for %{{.*}} step %c16
func.func @attention_symbolic_queries(%id: index, %count: index, %q: memref<1x2x?x64xf32>, %k: memref<1x2x?x64xf32>, %v: memref<1x2x?x64xf32>, %out: memref<1x2x?x64xf32>, %lse: memref<1x2x?xf32>)
    attributes {kiln_kernel.kernel = "attention_symbolic_queries", kiln_kernel.workgroup_extent = 2 : i64} {
  kiln_kernel.attention %q, %k, %v into %out, %lse {scale = 0.125 : f64, is_causal = true} : memref<1x2x?x64xf32>, memref<1x2x?x64xf32>, memref<1x2x?x64xf32> into memref<1x2x?x64xf32>, memref<1x2x?xf32>
  return
}

// -----

// Two reductions in one kernel: the second runs after the barrier that
// ends the first, so it takes the first's partials buffer again instead
// of workgroup memory of its own.
// CHECK-LABEL: func.func @two_sums_share_their_partials
// CHECK: %[[PARTIALS:.*]] = memref.alloc() : memref<128xf32, #gpu.address_space<workgroup>>
// CHECK-NOT: memref.alloc
// CHECK: memref.store %{{.*}}, %[[PARTIALS]][%{{.*}}]
// CHECK: memref.store %{{.*}}, %{{.*}}[] : memref<f32>
// CHECK: gpu.barrier
// CHECK: memref.store %{{.*}}, %[[PARTIALS]][%{{.*}}]
// CHECK: memref.store %{{.*}}, %{{.*}}[] : memref<f32>
func.func @two_sums_share_their_partials(%id: index, %count: index, %in: memref<1000xf32>,
                                         %first: memref<f32>, %second: memref<f32>)
    attributes {kiln_kernel.kernel = "two_sums_share_their_partials", kiln_kernel.workgroup_extent = 0 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c1000 = arith.constant 1000 : index
  scf.for %i = %c0 to %c1000 step %c1 {
    %x = memref.load %in[%i] : memref<1000xf32>
    %acc = memref.load %first[] : memref<f32>
    %s = arith.addf %acc, %x fastmath<reassoc> : f32
    memref.store %s, %first[] : memref<f32>
  }
  scf.for %i = %c0 to %c1000 step %c1 {
    %x = memref.load %in[%i] : memref<1000xf32>
    %acc = memref.load %second[] : memref<f32>
    %m = arith.maximumf %acc, %x : f32
    memref.store %m, %second[] : memref<f32>
  }
  return
}

// -----

// A row reduction that also stores an element per iteration (a softmax's
// exponentials, written as their sum is taken): the threads share the row,
// each storing the elements of its own iterations.
// CHECK-LABEL: func.func @sum_and_store_exponentials
// CHECK-SAME: ["row reductions over the workgroup"]
// CHECK: %[[PARTIAL:.*]] = scf.for %[[K:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args
// CHECK:   %[[E:.*]] = math.exp
// CHECK:   memref.store %[[E]], %{{.*}}[%{{.*}}, %[[K]]] : memref<2x5000xf32>
// CHECK:   arith.addf %{{.*}}, %[[E]]
// CHECK: gpu.barrier
func.func @sum_and_store_exponentials(%id: index, %count: index, %in: memref<2x5000xf32>,
                                      %e: memref<2x5000xf32>, %sum: memref<2xf32>)
    attributes {kiln_kernel.kernel = "sum_and_store_exponentials", kiln_kernel.workgroup_extent = 2 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c5000 = arith.constant 5000 : index
  scf.parallel (%r) = (%c0) to (%c2) step (%c1) {
    scf.for %k = %c0 to %c5000 step %c1 {
      %x = memref.load %in[%r, %k] : memref<2x5000xf32>
      %acc = memref.load %sum[%r] : memref<2xf32>
      %ex = math.exp %x : f32
      %s = arith.addf %acc, %ex fastmath<reassoc> : f32
      memref.store %ex, %e[%r, %k] : memref<2x5000xf32>
      memref.store %s, %sum[%r] : memref<2xf32>
    }
    scf.reduce
  }
  return
}

// -----

// Storing the running sum (a scan) reads the accumulator: no reduction the
// threads may share, so a thread per row.
// CHECK-LABEL: func.func @store_the_running_sum
// CHECK-SAME: ["a thread per element"]
func.func @store_the_running_sum(%id: index, %count: index, %in: memref<2x5000xf32>,
                                 %running: memref<2x5000xf32>, %sum: memref<2xf32>)
    attributes {kiln_kernel.kernel = "store_the_running_sum", kiln_kernel.workgroup_extent = 2 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c5000 = arith.constant 5000 : index
  scf.parallel (%r) = (%c0) to (%c2) step (%c1) {
    scf.for %k = %c0 to %c5000 step %c1 {
      %x = memref.load %in[%r, %k] : memref<2x5000xf32>
      %acc = memref.load %sum[%r] : memref<2xf32>
      %s = arith.addf %acc, %x fastmath<reassoc> : f32
      memref.store %s, %running[%r, %k] : memref<2x5000xf32>
      memref.store %s, %sum[%r] : memref<2xf32>
    }
    scf.reduce
  }
  return
}
