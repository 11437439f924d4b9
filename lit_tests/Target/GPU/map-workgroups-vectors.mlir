// Elementwise loops by vector loads and stores: the Vulkan target's
// vector_bits (128) gives a thread groups of 4 consecutive 32-bit elements
// of the innermost dimension, where every buffer those accesses reach is
// aligned to a group; otherwise each thread goes element by element.
// RUN: kiln-opt %s -split-input-file \
// RUN:   --pass-pipeline='builtin.module(kiln-attach-target{target=vulkan},func.func(kiln-gpu-map-workgroups))' | FileCheck %s

// Contiguous loads (the input, a bias along the columns) and the store
// become vector accesses; the row's scale, the same for a whole group, is
// loaded once; the arithmetic runs per element.
// CHECK-LABEL: func.func @rows
// CHECK-SAME: kiln_kernel.gpu_strategies = ["a thread per 4 elements by vector loads and stores where the buffers are aligned (else a thread per element)"]
// CHECK-DAG: %[[C16:.*]] = arith.constant 16 : index
// CHECK-DAG: %[[IN:.*]] = memref.extract_aligned_pointer_as_index %arg2
// CHECK-DAG: %[[BIAS:.*]] = memref.extract_aligned_pointer_as_index %arg3
// CHECK-DAG: %[[OUT:.*]] = memref.extract_aligned_pointer_as_index %arg5
// CHECK-DAG: arith.remui %[[IN]], %[[C16]]
// CHECK-DAG: arith.remui %[[BIAS]], %[[C16]]
// CHECK-DAG: arith.remui %[[OUT]], %[[C16]]
// CHECK-NOT: extract_aligned_pointer_as_index %arg4
// CHECK: scf.if %{{.*}} {
// CHECK:   scf.for
// CHECK:     %[[X:.*]] = vector.load %arg2[%{{.*}}, %{{.*}}] : memref<100x8xf32>, vector<4xf32>
// CHECK:     %[[B:.*]] = vector.load %arg3[%{{.*}}] : memref<8xf32>, vector<4xf32>
// CHECK:     %[[S:.*]] = memref.load %arg4[%{{.*}}] : memref<100xf32>
// CHECK-NOT: memref.load %arg4
// CHECK-COUNT-4: arith.mulf %{{.*}}, %[[S]] : f32
// CHECK:     %[[Y:.*]] = vector.from_elements %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : vector<4xf32>
// CHECK:     vector.store %[[Y]], %arg5[%{{.*}}, %{{.*}}] : memref<100x8xf32>, vector<4xf32>
// CHECK: } else {
// CHECK:   scf.for
// CHECK:     memref.load %arg2
// CHECK:     memref.store %{{.*}}, %arg5
// CHECK: }
// CHECK: gpu.barrier
func.func @rows(%id: index, %count: index, %in: memref<100x8xf32>, %bias: memref<8xf32>,
                %scale: memref<100xf32>, %out: memref<100x8xf32>)
    attributes {kiln_kernel.kernel = "rows", kiln_kernel.workgroup_extent = 100 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c100 = arith.constant 100 : index
  scf.parallel (%i, %j) = (%c0, %c0) to (%c100, %c8) step (%c1, %c1) {
    %x = memref.load %in[%i, %j] : memref<100x8xf32>
    %b = memref.load %bias[%j] : memref<8xf32>
    %s = memref.load %scale[%i] : memref<100xf32>
    %y = arith.addf %x, %b : f32
    %z = arith.mulf %y, %s : f32
    memref.store %z, %out[%i, %j] : memref<100x8xf32>
    scf.reduce
  }
  return
}

// -----

// A transpose's loads are not contiguous along the innermost dimension:
// each element of the group loads its own, and the store is a vector's.
// CHECK-LABEL: func.func @transpose
// CHECK: scf.if
// CHECK-COUNT-4: memref.load %arg2
// CHECK: vector.from_elements
// CHECK: vector.store %{{.*}}, %arg3
// CHECK: } else {
func.func @transpose(%id: index, %count: index, %in: memref<16x32xf32>, %out: memref<32x16xf32>)
    attributes {kiln_kernel.kernel = "transpose"} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %c32 = arith.constant 32 : index
  scf.parallel (%i, %j) = (%c0, %c0) to (%c32, %c16) step (%c1, %c1) {
    %x = memref.load %in[%j, %i] : memref<16x32xf32>
    memref.store %x, %out[%i, %j] : memref<32x16xf32>
    scf.reduce
  }
  return
}

// -----

// A 1-D loop split into rows: its chunks (128 elements) are whole groups.
// CHECK-LABEL: func.func @flat
// CHECK-SAME: kiln_kernel.workgroup_alignment = 128 : i64
// CHECK: vector.load %arg2[%{{.*}}] : memref<1000xi32>, vector<4xi32>
// CHECK: vector.store %{{.*}}, %arg3[%{{.*}}] : memref<1000xi32>, vector<4xi32>
func.func @flat(%id: index, %count: index, %in: memref<1000xi32>, %out: memref<1000xi32>)
    attributes {kiln_kernel.kernel = "flat", kiln_kernel.workgroup_extent = 1000 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c1000 = arith.constant 1000 : index
  scf.parallel (%i) = (%c0) to (%c1000) step (%c1) {
    %x = memref.load %in[%i] : memref<1000xi32>
    %y = arith.muli %x, %x : i32
    memref.store %y, %out[%i] : memref<1000xi32>
    scf.reduce
  }
  return
}

// -----

// Element by element: an innermost extent that is not a multiple of 4, 16-
// and 64-bit elements, and a symbolic extent.
// CHECK-LABEL: func.func @scalar
// CHECK-SAME: kiln_kernel.gpu_strategies = ["a thread per element"]
// CHECK-NOT: vector.
// CHECK-NOT: extract_aligned_pointer
// CHECK: return
func.func @scalar(%id: index, %count: index, %a: memref<10x6xf32>, %b: memref<10x8xf16>,
                  %c: memref<10x8xi64>, %d: memref<?x8xf32>, %n: index)
    attributes {kiln_kernel.kernel = "scalar", kiln_kernel.num_symbols = 1 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c6 = arith.constant 6 : index
  %c8 = arith.constant 8 : index
  %c10 = arith.constant 10 : index
  scf.parallel (%i, %j) = (%c0, %c0) to (%c10, %c6) step (%c1, %c1) {
    %x = memref.load %a[%i, %j] : memref<10x6xf32>
    %y = arith.addf %x, %x : f32
    memref.store %y, %a[%i, %j] : memref<10x6xf32>
    scf.reduce
  }
  scf.parallel (%i, %j) = (%c0, %c0) to (%c10, %c8) step (%c1, %c1) {
    %x = memref.load %b[%i, %j] : memref<10x8xf16>
    %y = arith.addf %x, %x : f16
    memref.store %y, %b[%i, %j] : memref<10x8xf16>
    scf.reduce
  }
  scf.parallel (%i, %j) = (%c0, %c0) to (%c10, %c8) step (%c1, %c1) {
    %x = memref.load %c[%i, %j] : memref<10x8xi64>
    %y = arith.addi %x, %x : i64
    memref.store %y, %c[%i, %j] : memref<10x8xi64>
    scf.reduce
  }
  scf.parallel (%j) = (%c0) to (%n) step (%c1) {
    %x = memref.load %d[%j, %c0] : memref<?x8xf32>
    %y = arith.addf %x, %x : f32
    memref.store %y, %d[%j, %c0] : memref<?x8xf32>
    scf.reduce
  }
  return
}
