// RUN: kiln-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(kiln-mark-in-place-operands))' | FileCheck %s

// An SGD step with momentum: each input is read at the element written, by
// generics no later than the one whose result is written over it. Bindings
// 0 (buf), 1 (grad), 2 (param), 3 (new buf), 4 (new param): buf may hold the
// new buf (0, 3), and param the new param (2, 4). Every input of the same
// type whose reads come early enough pairs with an output: the plan only
// uses the pairs of inputs the graph overwrites.
// CHECK-LABEL: func.func private @momentum
// CHECK-SAME: kiln_kernel.in_place_operands = array<i64: 0, 3, 0, 4, 1, 3, 1, 4, 2, 4>
#map = affine_map<(d0) -> (d0)>
func.func private @momentum(%wg: index, %wgc: index, %buf: memref<64xf32>, %grad: memref<64xf32>,
                            %param: memref<64xf32>, %newBuf: memref<64xf32>,
                            %newParam: memref<64xf32>) attributes {kiln_kernel.kernel = "momentum"} {
  %b = bufferization.to_tensor %buf restrict : memref<64xf32> to tensor<64xf32>
  %g = bufferization.to_tensor %grad restrict : memref<64xf32> to tensor<64xf32>
  %p = bufferization.to_tensor %param restrict : memref<64xf32> to tensor<64xf32>
  %empty = tensor.empty() : tensor<64xf32>
  %nb = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel"]}
      ins(%b, %g : tensor<64xf32>, tensor<64xf32>) outs(%empty : tensor<64xf32>) {
  ^bb0(%x: f32, %y: f32, %out: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  } -> tensor<64xf32>
  %np = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel"]}
      ins(%p, %nb : tensor<64xf32>, tensor<64xf32>) outs(%empty : tensor<64xf32>) {
  ^bb0(%x: f32, %y: f32, %out: f32):
    %s = arith.subf %x, %y : f32
    linalg.yield %s : f32
  } -> tensor<64xf32>
  bufferization.materialize_in_destination %nb in restrict writable %newBuf : (tensor<64xf32>, memref<64xf32>) -> ()
  bufferization.materialize_in_destination %np in restrict writable %newParam : (tensor<64xf32>, memref<64xf32>) -> ()
  return
}

// -----

// The input is read after the generic that computes the output: once the
// output is written over it, the second generic would read new values.
// CHECK-LABEL: func.func private @read_after_write
// CHECK-SAME: kiln_kernel.in_place_operands = array<i64: 0, 2>
// CHECK-NOT: 0, 1
#map = affine_map<(d0) -> (d0)>
func.func private @read_after_write(%wg: index, %wgc: index, %in: memref<64xf32>,
                                    %first: memref<64xf32>, %second: memref<64xf32>)
    attributes {kiln_kernel.kernel = "read_after_write"} {
  %x = bufferization.to_tensor %in restrict : memref<64xf32> to tensor<64xf32>
  %empty = tensor.empty() : tensor<64xf32>
  %a = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel"]}
      ins(%x : tensor<64xf32>) outs(%empty : tensor<64xf32>) {
  ^bb0(%v: f32, %out: f32):
    %s = arith.addf %v, %v : f32
    linalg.yield %s : f32
  } -> tensor<64xf32>
  %b = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel"]}
      ins(%x : tensor<64xf32>) outs(%empty : tensor<64xf32>) {
  ^bb0(%v: f32, %out: f32):
    %s = arith.mulf %v, %v : f32
    linalg.yield %s : f32
  } -> tensor<64xf32>
  bufferization.materialize_in_destination %a in restrict writable %first : (tensor<64xf32>, memref<64xf32>) -> ()
  bufferization.materialize_in_destination %b in restrict writable %second : (tensor<64xf32>, memref<64xf32>) -> ()
  return
}

// -----

// Read at other elements (reversed), or reduced: never in place.
// CHECK-LABEL: func.func private @reversed
// CHECK-NOT: kiln_kernel.in_place_operands
#map = affine_map<(d0) -> (d0)>
#reverse = affine_map<(d0) -> (63 - d0)>
func.func private @reversed(%wg: index, %wgc: index, %in: memref<64xf32>, %out: memref<64xf32>)
    attributes {kiln_kernel.kernel = "reversed"} {
  %x = bufferization.to_tensor %in restrict : memref<64xf32> to tensor<64xf32>
  %empty = tensor.empty() : tensor<64xf32>
  %r = linalg.generic {indexing_maps = [#reverse, #map, #map], iterator_types = ["parallel"]}
      ins(%x, %x : tensor<64xf32>, tensor<64xf32>) outs(%empty : tensor<64xf32>) {
  ^bb0(%v: f32, %w: f32, %o: f32):
    %s = arith.addf %v, %w : f32
    linalg.yield %s : f32
  } -> tensor<64xf32>
  bufferization.materialize_in_destination %r in restrict writable %out : (tensor<64xf32>, memref<64xf32>) -> ()
  return
}

// -----

// CHECK-LABEL: func.func private @reduced
// CHECK-NOT: kiln_kernel.in_place_operands
#rows = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
func.func private @reduced(%wg: index, %wgc: index, %in: memref<8x8xf32>, %out: memref<8x8xf32>)
    attributes {kiln_kernel.kernel = "reduced"} {
  %x = bufferization.to_tensor %in restrict : memref<8x8xf32> to tensor<8x8xf32>
  %zero = arith.constant 0.0 : f32
  %init = tensor.empty() : tensor<8xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%init : tensor<8xf32>) -> tensor<8xf32>
  %sum = linalg.generic {indexing_maps = [#rows, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<8x8xf32>) outs(%acc : tensor<8xf32>) {
  ^bb0(%v: f32, %a: f32):
    %s = arith.addf %v, %a : f32
    linalg.yield %s : f32
  } -> tensor<8xf32>
  %empty = tensor.empty() : tensor<8x8xf32>
  %centered = linalg.generic {indexing_maps = [#rows, #row, #rows], iterator_types = ["parallel", "parallel"]}
      ins(%x, %sum : tensor<8x8xf32>, tensor<8xf32>) outs(%empty : tensor<8x8xf32>) {
  ^bb0(%v: f32, %m: f32, %o: f32):
    %s = arith.subf %v, %m : f32
    linalg.yield %s : f32
  } -> tensor<8x8xf32>
  bufferization.materialize_in_destination %centered in restrict writable %out : (tensor<8x8xf32>, memref<8x8xf32>) -> ()
  return
}
