// RUN: kiln-opt %s -split-input-file -kiln-write-inputs-in-place | FileCheck %s

// An SGD step: the launch computes the new momentum buffer and parameter,
// reading each input only where it writes (kiln_kernel.in_place_operands), and
// nothing reads them later: both are computed in the inputs' own buffers,
// and the plan returns the inputs.
// CHECK-LABEL: func.func @sgd
// CHECK-SAME: (%[[BUF:.*]]: memref<64xf32>, %[[GRAD:.*]]: memref<64xf32>, %[[PARAM:.*]]: memref<64xf32>)
// CHECK-NOT: kiln_plan.alloc
// CHECK: kiln_plan.launch @step[1] (%[[BUF]], %[[GRAD]], %[[PARAM]], %[[BUF]], %[[PARAM]])
// CHECK-NEXT: return %[[BUF]], %[[PARAM]]
func.func @sgd(%buf: memref<64xf32>, %grad: memref<64xf32>, %param: memref<64xf32>)
    -> (memref<64xf32>, memref<64xf32>)
    attributes {kiln_plan.entry, kiln_graph.input_writes = [array<i64: 0, 0>, array<i64: 1, 2>]} {
  %newBuf = kiln_plan.alloc : memref<64xf32>
  %newParam = kiln_plan.alloc : memref<64xf32>
  kiln_plan.launch @step[1] (%buf, %grad, %param, %newBuf, %newParam) {num_inputs = 3 : i64}
      : memref<64xf32>, memref<64xf32>, memref<64xf32>, memref<64xf32>, memref<64xf32>
  return %newBuf, %newParam : memref<64xf32>, memref<64xf32>
}
func.func private @step(index, index, memref<64xf32>, memref<64xf32>, memref<64xf32>,
                        memref<64xf32>, memref<64xf32>)
    attributes {kiln_kernel.kernel = "step", kiln_kernel.in_place_operands = array<i64: 0, 3, 2, 4>}

// -----

// A later launch still reads the old value: the new one keeps its buffer.
// The kernel that reads the input at other elements than it writes (no
// pair) keeps its own too.
// CHECK-LABEL: func.func @old_value_read_later
// CHECK: %[[NEW:.*]] = kiln_plan.alloc
// CHECK: kiln_plan.launch @scale[1] (%{{.*}}, %[[NEW]])
// CHECK: return %[[NEW]], %{{[0-9]+}}, %{{[0-9]+}} :
func.func @old_value_read_later(%x: memref<64xf32>, %y: memref<64xf32>)
    -> (memref<64xf32>, memref<64xf32>, memref<64xf32>)
    attributes {kiln_plan.entry,
                kiln_graph.input_writes = [array<i64: 0, 0>, array<i64: 2, 1>]} {
  %new = kiln_plan.alloc : memref<64xf32>
  %other = kiln_plan.alloc : memref<64xf32>
  %newY = kiln_plan.alloc : memref<64xf32>
  kiln_plan.launch @scale[1] (%x, %new) {num_inputs = 1 : i64} : memref<64xf32>, memref<64xf32>
  kiln_plan.launch @scale[1] (%x, %other) {num_inputs = 1 : i64} : memref<64xf32>, memref<64xf32>
  kiln_plan.launch @reverse[1] (%y, %newY) {num_inputs = 1 : i64} : memref<64xf32>, memref<64xf32>
  return %new, %other, %newY : memref<64xf32>, memref<64xf32>, memref<64xf32>
}
func.func private @scale(index, index, memref<64xf32>, memref<64xf32>)
    attributes {kiln_kernel.kernel = "scale", kiln_kernel.in_place_operands = array<i64: 0, 1>}
func.func private @reverse(index, index, memref<64xf32>, memref<64xf32>)
    attributes {kiln_kernel.kernel = "reverse"}

// -----

// The input is also returned (its old value), a cached launch reads the
// other one, and a third's new value is also another output: none in place.
// CHECK-LABEL: func.func @kept
// CHECK-SAME: (%[[X:[^:]*]]: memref
// CHECK: return %{{[0-9]+}}, %[[X]], %{{[0-9]+}}, %[[Z:[0-9]+]], %[[Z]] :
func.func @kept(%x: memref<64xf32>, %w: memref<64xf32>, %z: memref<64xf32>)
    -> (memref<64xf32>, memref<64xf32>, memref<64xf32>, memref<64xf32>, memref<64xf32>)
    attributes {kiln_plan.entry,
                kiln_graph.input_writes = [array<i64: 0, 0>, array<i64: 2, 1>, array<i64: 3, 2>]} {
  %newX = kiln_plan.alloc : memref<64xf32>
  %packed = kiln_plan.alloc {persistent} : memref<64xf32>
  %newW = kiln_plan.alloc : memref<64xf32>
  %newZ = kiln_plan.alloc : memref<64xf32>
  kiln_plan.launch @scale[1] (%x, %newX) {num_inputs = 1 : i64} : memref<64xf32>, memref<64xf32>
  kiln_plan.launch @scale[1] (%w, %packed) {num_inputs = 1 : i64, cached} : memref<64xf32>, memref<64xf32>
  kiln_plan.launch @scale[1] (%w, %newW) {num_inputs = 1 : i64} : memref<64xf32>, memref<64xf32>
  kiln_plan.launch @scale[1] (%z, %newZ) {num_inputs = 1 : i64} : memref<64xf32>, memref<64xf32>
  return %newX, %x, %newW, %newZ, %newZ : memref<64xf32>, memref<64xf32>, memref<64xf32>, memref<64xf32>, memref<64xf32>
}
func.func private @scale(index, index, memref<64xf32>, memref<64xf32>)
    attributes {kiln_kernel.kernel = "scale", kiln_kernel.in_place_operands = array<i64: 0, 1>}
