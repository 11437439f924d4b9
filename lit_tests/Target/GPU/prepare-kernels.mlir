// RUN: kiln-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(kiln-gpu-prepare-kernels))' | FileCheck %s

// A temporary becomes a buffer of the launch: an argument after the
// bindings (before the size symbol), reinterpreted at its shape; its byte
// size is an expression over the symbols.
// CHECK: #map = affine_map<()[s0] -> (s0 * 32)>
// CHECK-LABEL: func.func @temporary
// CHECK-SAME: (%{{.*}}: index, %{{.*}}: index, %[[IN:.*]]: memref<1xf32>, %[[OUT:.*]]: memref<1xf32>, %[[TMP:.*]]: memref<1xf32>, %[[N:.*]]: index)
// CHECK-SAME: kiln_kernel.scratch_buffers = [#map]
// CHECK: memref.reinterpret_cast %[[TMP]] to offset: [0], sizes: [%[[N]], 8], strides: [8, 1]
// CHECK-NOT: memref.alloc
// CHECK-NOT: memref.dealloc
#extent = affine_map<()[s0] -> (s0)>
func.func @temporary(%id: index, %count: index, %in: memref<1xf32>, %out: memref<1xf32>, %n: index)
    attributes {kiln_kernel.kernel = "temporary", kiln_kernel.num_symbols = 1 : i64,
                kiln_kernel.workgroup_extent = #extent} {
  %a = memref.reinterpret_cast %in to offset: [0], sizes: [%n, 8], strides: [8, 1] : memref<1xf32> to memref<?x8xf32>
  %b = memref.reinterpret_cast %out to offset: [0], sizes: [%n, 8], strides: [8, 1] : memref<1xf32> to memref<?x8xf32>
  %t = memref.alloc(%n) : memref<?x8xf32>
  linalg.copy ins(%a : memref<?x8xf32>) outs(%t : memref<?x8xf32>)
  linalg.copy ins(%t : memref<?x8xf32>) outs(%b : memref<?x8xf32>)
  memref.dealloc %t : memref<?x8xf32>
  return
}

// -----

// A symbolic inner size: the outer stride is the product of the inner sizes.
// CHECK-LABEL: func.func @symbolic_inner
// CHECK-SAME: %[[N:[^:]*]]: index)
// CHECK: memref.reinterpret_cast %{{.*}} to offset: [0], sizes: [4, %[[N]]], strides: [%[[N]], 1]
#extent1 = affine_map<()[s0] -> (s0)>
func.func @symbolic_inner(%id: index, %count: index, %out: memref<1xf32>, %n: index)
    attributes {kiln_kernel.kernel = "symbolic_inner", kiln_kernel.num_symbols = 1 : i64,
                kiln_kernel.workgroup_extent = #extent1} {
  %t = memref.alloc(%n) : memref<4x?xf32>
  %f = arith.constant 1.0 : f32
  linalg.fill ins(%f : f32) outs(%t : memref<4x?xf32>)
  return
}

// -----

// Reductions go inside the parallel loops.
// CHECK-LABEL: func.func @column_sum
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]
func.func @column_sum(%id: index, %count: index, %in: memref<16x8xf32>, %out: memref<8xf32>)
    attributes {kiln_kernel.kernel = "column_sum"} {
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>],
                  iterator_types = ["reduction", "parallel"]}
      ins(%in : memref<16x8xf32>) outs(%out : memref<8xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %s = arith.addf %x, %acc : f32
    linalg.yield %s : f32
  }
  return
}
