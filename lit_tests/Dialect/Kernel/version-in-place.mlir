// RUN: kiln-opt %s -split-input-file -kiln-version-in-place | FileCheck %s

// An eager in-place multiply (symbolic sizes): the body runs twice over,
// once reading the output argument when it is the input's memory.
// CHECK-LABEL: func.func @scale_in_place
// CHECK-SAME: (%{{[a-z0-9_]+}}: index, %[[N:[a-z0-9_]+]]: index, %[[IN:[a-z0-9_]+]]: memref<1xf32>, %[[S:[a-z0-9_]+]]: memref<f32>, %[[OUT:[a-z0-9_]+]]: memref<1xf32>)
// CHECK: %[[P:.*]] = memref.extract_aligned_pointer_as_index %[[IN]]
// CHECK: %[[Q:.*]] = memref.extract_aligned_pointer_as_index %[[OUT]]
// CHECK: %[[SAME:.*]] = arith.cmpi eq, %[[P]], %[[Q]]
// CHECK: scf.if %[[SAME]] {
// CHECK:   memref.reinterpret_cast %[[OUT]]
// CHECK:   memref.reinterpret_cast %[[OUT]]
// CHECK-NOT: %[[IN]]
// CHECK: } else {
// CHECK:   memref.reinterpret_cast %[[IN]]
// CHECK:   memref.reinterpret_cast %[[OUT]]
// CHECK:   scf.for
// CHECK:   }
// CHECK-NEXT: }
// CHECK-NEXT: return
func.func @scale_in_place(%wg: index, %n: index, %in: memref<1xf32>, %s: memref<f32>, %out: memref<1xf32>)
    attributes {kiln_kernel.kernel = "scale", kiln_kernel.num_symbols = 1 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %x = memref.reinterpret_cast %in to offset: [0], sizes: [%n], strides: [1] : memref<1xf32> to memref<?xf32>
  %y = memref.reinterpret_cast %out to offset: [0], sizes: [%n], strides: [1] : memref<1xf32> to memref<?xf32>
  scf.for %i = %c0 to %n step %c1 {
    %v = memref.load %x[%i] : memref<?xf32>
    %f = memref.load %s[] : memref<f32>
    %r = arith.mulf %v, %f : f32
    memref.store %r, %y[%i] : memref<?xf32>
  }
  return
}

// -----

// Two inputs of the output's type: a version for each, tried in order, the
// original body last.
// CHECK-LABEL: func.func @add_in_place
// CHECK-SAME: (%{{[a-z0-9_]+}}: index, %[[N:[a-z0-9_]+]]: index, %[[A:[a-z0-9_]+]]: memref<1xf32>, %[[B:[a-z0-9_]+]]: memref<1xf32>, %[[OUT:[a-z0-9_]+]]: memref<1xf32>)
// CHECK: memref.extract_aligned_pointer_as_index %[[A]]
// CHECK: scf.if
// CHECK: } else {
// CHECK:   memref.extract_aligned_pointer_as_index %[[B]]
// CHECK:   scf.if
// CHECK:   } else {
// CHECK:     memref.reinterpret_cast %[[A]]
// CHECK:     memref.reinterpret_cast %[[B]]
func.func @add_in_place(%wg: index, %n: index, %a: memref<1xf32>, %b: memref<1xf32>, %out: memref<1xf32>)
    attributes {kiln_kernel.kernel = "add", kiln_kernel.num_symbols = 1 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %x = memref.reinterpret_cast %a to offset: [0], sizes: [%n], strides: [1] : memref<1xf32> to memref<?xf32>
  %y = memref.reinterpret_cast %b to offset: [0], sizes: [%n], strides: [1] : memref<1xf32> to memref<?xf32>
  %z = memref.reinterpret_cast %out to offset: [0], sizes: [%n], strides: [1] : memref<1xf32> to memref<?xf32>
  scf.for %i = %c0 to %n step %c1 {
    %u = memref.load %x[%i] : memref<?xf32>
    %v = memref.load %y[%i] : memref<?xf32>
    %r = arith.addf %u, %v : f32
    memref.store %r, %z[%i] : memref<?xf32>
  }
  return
}

// -----

// Static sizes: only the pairs the plan may bind to one buffer.
// CHECK-LABEL: func.func @static_unmarked
// CHECK-NOT: scf.if
// CHECK: return
func.func @static_unmarked(%wg: index, %n: index, %in: memref<8xf32>, %out: memref<8xf32>)
    attributes {kiln_kernel.kernel = "neg"} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  scf.for %i = %c0 to %c8 step %c1 {
    %v = memref.load %in[%i] : memref<8xf32>
    %r = arith.negf %v : f32
    memref.store %r, %out[%i] : memref<8xf32>
  }
  return
}

// -----

// CHECK-LABEL: func.func @static_marked
// CHECK: arith.cmpi eq
// CHECK: scf.if
// CHECK:   memref.load %[[OUT:.*]][
// CHECK:   memref.store %{{.*}}, %[[OUT]][
func.func @static_marked(%wg: index, %n: index, %in: memref<8xf32>, %out: memref<8xf32>)
    attributes {kiln_kernel.kernel = "neg", kiln_kernel.in_place_operands = array<i64: 0, 1>} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  scf.for %i = %c0 to %c8 step %c1 {
    %v = memref.load %in[%i] : memref<8xf32>
    %r = arith.negf %v : f32
    memref.store %r, %out[%i] : memref<8xf32>
  }
  return
}

// -----

// Not a kernel, or a dynamic offset (equal pointers would not mean the same
// memref): left alone.
// CHECK-LABEL: func.func @not_a_kernel
// CHECK-NOT: scf.if
// CHECK-LABEL: func.func @dynamic_offset
// CHECK-NOT: scf.if
// CHECK: return
func.func @not_a_kernel(%in: memref<8xf32>, %out: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %v = memref.load %in[%c0] : memref<8xf32>
  memref.store %v, %out[%c0] : memref<8xf32>
  return
}
func.func @dynamic_offset(%wg: index, %n: index, %in: memref<8xf32, strided<[1], offset: ?>>, %out: memref<8xf32, strided<[1], offset: ?>>)
    attributes {kiln_kernel.kernel = "copy", kiln_kernel.num_symbols = 1 : i64} {
  %c0 = arith.constant 0 : index
  %v = memref.load %in[%c0] : memref<8xf32, strided<[1], offset: ?>>
  memref.store %v, %out[%c0] : memref<8xf32, strided<[1], offset: ?>>
  return
}
