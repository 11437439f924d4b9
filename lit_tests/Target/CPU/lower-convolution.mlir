// RUN: kiln-opt %s -split-input-file --pass-pipeline='builtin.module(kiln-attach-target{target=cpu:x86-64-v4},func.func(kiln-lower-convolution))' | FileCheck %s

// A 3x3 stride-2 convolution with bias: 7 output channels (a tile of 6 and a
// ragged 1), output rows of 20 columns (one vector of 16 and 4 masked lanes).
// The input is read in place (gathers every second column): no buffer.
// CHECK-LABEL: func.func private @kernel_0_conv2d
// CHECK-SAME: %[[X:[a-z0-9]+]]: memref<2x3x19x41xf32>, %[[W:[a-z0-9]+]]: memref<7x3x3x3xf32>, %[[B:[a-z0-9]+]]: memref<7xf32>, %[[OUT:[a-z0-9]+]]: memref<2x7x9x20xf32>
// CHECK-NOT: memref.alloc
// One iteration per output row (N * OH = 18): the loop workgroups split.
// CHECK: scf.for %[[ROW:[a-z0-9_]+]] = %{{.*}} to %c18 step %c1
// CHECK: %[[N:[0-9]+]] = arith.divui %[[ROW]], %c9
// Tiles of 6 output channels.
// CHECK: scf.for %[[O0:[a-z0-9_]+]] = %{{.*}} to %c6 step %c6
// The accumulators start at the bias.
// CHECK: memref.load %[[B]][%[[O0]]]
// The reduction over (c, ky), 9 steps, carrying 6 x 2 vectors; each tap
// gathers input columns 2 apart and FMAs them with broadcast weights.
// CHECK: scf.for %{{.*}} = %{{.*}} to %c9{{.*}} iter_args({{.*}}) -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>)
// CHECK: vector.gather %[[X]][%[[N]],
// CHECK: memref.load %[[W]]
// CHECK: vector.fma
// CHECK: vector.store %{{.*}}, %[[OUT]][%[[N]], %[[O0]],
// The 4 ragged columns: masked gathers and stores.
// CHECK: vector.constant_mask [4] : vector<16xi1>
// CHECK: vector.gather
// CHECK: vector.maskedstore %[[OUT]]
// The ragged seventh channel: a tile of one.
// CHECK: scf.for %{{.*}} iter_args({{.*}}) -> (vector<16xf32>, vector<16xf32>) {
// CHECK-NOT: kiln_kernel.conv2d
func.func private @kernel_0_conv2d(%wg: index, %wgc: index, %x: memref<2x3x19x41xf32>, %w: memref<7x3x3x3xf32>, %b: memref<7xf32>, %out: memref<2x7x9x20xf32>)
    attributes {kiln_kernel.kernel = "kernel_0_conv2d", kiln_kernel.workgroup_extent = 18 : i64} {
  kiln_kernel.conv2d %x, %w bias %b into %out {strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>} : memref<2x3x19x41xf32>, memref<7x3x3x3xf32>, memref<7xf32> into memref<2x7x9x20xf32>
  return
}

// -----

// An epilogue (per-channel scale, residual add, ReLU with a hoisted 0) runs
// on each accumulator vector before its store: the scale is a broadcast
// scalar of the tile's channel, the residual a vector load at the output
// index, the body's scalar ops become vector ops.
// CHECK-LABEL: func.func private @kernel_0_conv2d_epilogue
// CHECK-SAME: %[[S:[a-z0-9]+]]: memref<4x1x1xf32>, %[[R:[a-z0-9]+]]: memref<1x4x6x16xf32>, %[[OUT:[a-z0-9]+]]: memref<1x4x6x16xf32>
// CHECK: scf.for %{{.*}} iter_args
// CHECK: vector.fma
// CHECK: %[[SCALE:[0-9]+]] = memref.load %[[S]][%{{.*}}, %c0{{.*}}, %c0{{.*}}] : memref<4x1x1xf32>
// CHECK: %[[SPLAT:[0-9]+]] = vector.broadcast %[[SCALE]] : f32 to vector<16xf32>
// CHECK: %[[RES:[0-9]+]] = vector.load %[[R]][
// CHECK: %[[M:[0-9]+]] = arith.mulf %{{.*}}, %[[SPLAT]] : vector<16xf32>
// CHECK: %[[A:[0-9]+]] = arith.addf %[[M]], %[[RES]] : vector<16xf32>
// CHECK: %[[RELU:[0-9]+]] = arith.maximumf %[[A]], %{{.*}} : vector<16xf32>
// CHECK: vector.store %[[RELU]], %[[OUT]]
#channel = affine_map<(d0, d1, d2, d3) -> (d1, 0, 0)>
#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
func.func private @kernel_0_conv2d_epilogue(%wg: index, %wgc: index, %x: memref<1x4x8x18xf32>, %w: memref<4x4x3x3xf32>, %s: memref<4x1x1xf32>, %r: memref<1x4x6x16xf32>, %out: memref<1x4x6x16xf32>)
    attributes {kiln_kernel.kernel = "kernel_0_conv2d", kiln_kernel.workgroup_extent = 6 : i64} {
  %zero = arith.constant 0.0 : f32
  kiln_kernel.conv2d %x, %w epilogue(%s, %r : memref<4x1x1xf32>, memref<1x4x6x16xf32>) into %out {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, epilogue_maps = [#channel, #id]} : memref<1x4x8x18xf32>, memref<4x4x3x3xf32> into memref<1x4x6x16xf32> {
  ^bb0(%v: f32, %scale: f32, %res: f32):
    %0 = arith.mulf %v, %scale : f32
    %1 = arith.addf %0, %res : f32
    %2 = arith.maximumf %1, %zero : f32
    kiln_kernel.epilogue_yield %2 : f32
  }
  return
}

// -----

// A symbolic batch: the row loop ends at N * OH, N read from the result
// buffer; the tiles inside are those of a static batch.
// CHECK-LABEL: func.func private @kernel_0_conv2d_batch
// CHECK-SAME: %[[OUT:[a-z0-9]+]]: memref<?x4x6x16xf32>
// CHECK: %[[N:[a-z0-9_]+]] = memref.dim %[[OUT]], %c0
// CHECK: %[[ROWS:[a-z0-9_]+]] = arith.muli %[[N]], %c6
// CHECK: scf.for %{{.*}} = %{{.*}} to %[[ROWS]] step %c1
// CHECK: vector.fma
func.func private @kernel_0_conv2d_batch(%wg: index, %wgc: index, %x: memref<?x4x8x18xf32>, %w: memref<4x4x3x3xf32>, %out: memref<?x4x6x16xf32>)
    attributes {kiln_kernel.kernel = "kernel_0_conv2d_batch"} {
  kiln_kernel.conv2d %x, %w into %out {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>} : memref<?x4x8x18xf32>, memref<4x4x3x3xf32> into memref<?x4x6x16xf32>
  return
}

// -----

// Two groups of 8 output channels over 4 input channels each: a loop over the
// groups, each a tile of 6 channels and a ragged 2, reducing over its group's
// 4 channels x 3 rows of taps; the input channel is the group's first (g * 4)
// plus the weight's.
// CHECK-LABEL: func.func private @kernel_grouped
// CHECK-SAME: %[[X:[a-z0-9]+]]: memref<1x8x5x34xf32>, %[[W:[a-z0-9]+]]: memref<16x4x3x3xf32>
// CHECK: scf.for %[[G:[a-z0-9_]+]] = %{{.*}} to %c2{{.*}} step %c1
// CHECK: %[[FIRST:[0-9]+]] = arith.muli %[[G]], %c4
// CHECK: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %c6
// CHECK: scf.for %{{.*}} = %{{.*}} to %c12{{.*}} iter_args
// CHECK: %[[C:[0-9]+]] = arith.divui
// CHECK: %[[IC:[0-9]+]] = arith.addi %[[FIRST]], %[[C]]
// CHECK: vector.load %[[X]][%{{.*}}, %[[IC]], %{{.*}}, %{{.*}}]
// CHECK: memref.load %[[W]][%{{.*}}, %[[C]], %{{.*}}, %{{.*}}]
func.func private @kernel_grouped(%wg: index, %wgc: index, %x: memref<1x8x5x34xf32>, %w: memref<16x4x3x3xf32>, %out: memref<1x16x3x32xf32>)
    attributes {kiln_kernel.kernel = "kernel_grouped", kiln_kernel.workgroup_extent = 3 : i64} {
  kiln_kernel.conv2d %x, %w into %out {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, groups = 2 : i64} : memref<1x8x5x34xf32>, memref<16x4x3x3xf32> into memref<1x16x3x32xf32>
  return
}
