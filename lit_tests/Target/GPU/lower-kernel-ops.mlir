// RUN: kiln-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(kiln-gpu-lower-kernel-ops))' | FileCheck %s

// A convolution: one iteration per output element, (n * OH + y, o, x), the
// kernel's rows first; the bias starts the sum over channels and taps, the
// epilogue runs before the store.
// CHECK-LABEL: func.func @conv
// CHECK: scf.parallel (%[[R:.*]], %[[O:.*]], %[[X:.*]]) = (%c0, %c0, %c0) to (%{{.*}}, %c4, %c6{{.*}})
// CHECK:   %[[N:.*]] = arith.divui %[[R]], %c6{{.*}}
// CHECK:   %[[Y:.*]] = arith.remui %[[R]], %c6{{.*}}
// CHECK:   %[[B:.*]] = memref.load %{{.*}}[%[[O]]] : memref<4xf32>
// CHECK:   scf.for %{{.*}} iter_args(%{{.*}} = %[[B]])
// CHECK:     scf.for
// CHECK:       scf.for
// CHECK:         arith.mulf
// CHECK:   arith.maximumf
// CHECK:   memref.store %{{.*}}, %{{.*}}[%[[N]], %[[O]], %[[Y]], %[[X]]]
// CHECK: } {kiln_kernel.writes_apart}
// CHECK-NOT: kiln_kernel.conv2d
func.func @conv(%id: index, %count: index, %in: memref<2x3x8x8xf32>, %w: memref<4x3x3x3xf32>, %bias: memref<4xf32>, %out: memref<2x4x6x6xf32>)
    attributes {kiln_kernel.kernel = "conv"} {
  %zero = arith.constant 0.0 : f32
  kiln_kernel.conv2d %in, %w bias %bias into %out {dilations = array<i64: 1, 1>, strides = array<i64: 1, 1>} : memref<2x3x8x8xf32>, memref<4x3x3x3xf32>, memref<4xf32> into memref<2x4x6x6xf32> {
  ^bb0(%x: f32):
    %r = arith.maximumf %x, %zero : f32
    kiln_kernel.epilogue_yield %r : f32
  }
  return
}

// -----

// An ungrouped convolution with 64 output channels or more and 32 output
// positions or more is an implicit GEMM: sums in a [N * OH, OW, O] temporary set to the
// bias, combined over c * KH * KW in one loop whose input addresses vary
// with the position and weight addresses with the channel (the mapping
// tiles it as a matmul), then through the epilogue into the output.
// CHECK-LABEL: func.func @conv_as_gemm
// CHECK: %[[SUMS:.*]] = memref.alloc() : memref<20x10x64xf32>
// CHECK: scf.parallel (%[[R0:.*]], %[[X0:.*]], %[[O0:.*]]) =
// CHECK:   memref.load %{{.*}}[%[[O0]]] : memref<64xf32>
// CHECK:   memref.store %{{.*}}, %[[SUMS]][%[[R0]], %[[X0]], %[[O0]]]
// CHECK: } {kiln_kernel.writes_apart}
// CHECK: scf.parallel (%[[R:.*]], %[[X:.*]], %[[O:.*]]) =
// CHECK:   scf.for %[[K:.*]] = %c0{{.*}} to %c27 step %c1
// CHECK-DAG: memref.load %{{.*}} : memref<2x3x12x12xf32>
// CHECK-DAG: memref.load %{{.*}}[%[[O]], %{{.*}}, %{{.*}}, %{{.*}}] : memref<64x3x3x3xf32>
// CHECK:     memref.load %[[SUMS]][%[[R]], %[[X]], %[[O]]]
// CHECK:     memref.store %{{.*}}, %[[SUMS]][%[[R]], %[[X]], %[[O]]]
// CHECK: } {kiln_kernel.writes_apart}
// CHECK: scf.parallel
// CHECK:   memref.load %[[SUMS]]
// CHECK:   arith.maximumf
// CHECK:   memref.store %{{.*}} : memref<2x64x10x10xf32>
// CHECK-NOT: kiln_kernel.conv2d
func.func @conv_as_gemm(%id: index, %count: index, %in: memref<2x3x12x12xf32>, %w: memref<64x3x3x3xf32>, %bias: memref<64xf32>, %out: memref<2x64x10x10xf32>)
    attributes {kiln_kernel.kernel = "conv_as_gemm"} {
  %zero = arith.constant 0.0 : f32
  kiln_kernel.conv2d %in, %w bias %bias into %out {dilations = array<i64: 1, 1>, strides = array<i64: 1, 1>} : memref<2x3x12x12xf32>, memref<64x3x3x3xf32>, memref<64xf32> into memref<2x64x10x10xf32> {
  ^bb0(%x: f32):
    %r = arith.maximumf %x, %zero : f32
    kiln_kernel.epilogue_yield %r : f32
  }
  return
}
