// RUN: kiln-opt %s -split-input-file | kiln-opt -split-input-file | FileCheck %s
// RUN: kiln-opt %s -split-input-file -mlir-print-op-generic | kiln-opt -split-input-file | FileCheck %s

// CHECK-LABEL: func.func @alloc
func.func @alloc() -> (memref<4x8xf32>, memref<i1>) {
  // CHECK: kiln_plan.alloc : memref<4x8xf32>
  %0 = kiln_plan.alloc : memref<4x8xf32>
  // CHECK: kiln_plan.alloc : memref<i1>
  %1 = kiln_plan.alloc : memref<i1>
  return %0, %1 : memref<4x8xf32>, memref<i1>
}

// -----

// CHECK-LABEL: func.func @view
// CHECK-SAME: (%[[B:.*]]: memref<4x8xf32>)
func.func @view(%b: memref<4x8xf32>) -> (memref<32xf32>, memref<2x8xf32>, memref<16xi64>) {
  // CHECK: kiln_plan.view %[[B]] : memref<4x8xf32> to memref<32xf32>
  %0 = kiln_plan.view %b : memref<4x8xf32> to memref<32xf32>
  // CHECK: kiln_plan.view %[[B]] {byte_offset = 64 : i64} : memref<4x8xf32> to memref<2x8xf32>
  %1 = kiln_plan.view %b {byte_offset = 64 : i64} : memref<4x8xf32> to memref<2x8xf32>
  // The element type may change: a view reinterprets bytes.
  // CHECK: kiln_plan.view %[[B]] : memref<4x8xf32> to memref<16xi64>
  %2 = kiln_plan.view %b : memref<4x8xf32> to memref<16xi64>
  return %0, %1, %2 : memref<32xf32>, memref<2x8xf32>, memref<16xi64>
}

// -----

func.func private @kernel_0_add(%wg: index, %wgc: index, %a: memref<4x8xf32>, %b: memref<8xf32>, %out: memref<4x8xf32>)

// CHECK-LABEL: func.func @launch
// CHECK-SAME: (%[[A:.*]]: memref<4x8xf32>, %[[B:.*]]: memref<8xf32>)
func.func @launch(%a: memref<4x8xf32>, %b: memref<8xf32>) -> memref<4x8xf32> attributes {kiln_plan.entry} {
  // CHECK: %[[OUT:.*]] = kiln_plan.alloc : memref<4x8xf32>
  %out = kiln_plan.alloc : memref<4x8xf32>
  // CHECK: kiln_plan.launch @kernel_0_add[4] (%[[A]], %[[B]], %[[OUT]]) {num_inputs = 2 : i64} : memref<4x8xf32>, memref<8xf32>, memref<4x8xf32>
  kiln_plan.launch @kernel_0_add[4](%a, %b, %out) {num_inputs = 2 : i64} : memref<4x8xf32>, memref<8xf32>, memref<4x8xf32>
  // CHECK: return %[[OUT]]
  return %out : memref<4x8xf32>
}

// -----

func.func private @kernel_0_constant(%wg: index, %wgc: index, %out: memref<f32>)

// CHECK-LABEL: func.func @launch_without_inputs
func.func @launch_without_inputs() -> memref<f32> attributes {kiln_plan.entry} {
  %out = kiln_plan.alloc : memref<f32>
  // CHECK: kiln_plan.launch @kernel_0_constant[1] (%{{.*}}) {num_inputs = 0 : i64} : memref<f32>
  kiln_plan.launch @kernel_0_constant[1](%out) {num_inputs = 0 : i64} : memref<f32>
  return %out : memref<f32>
}

// -----

// Empty buffers are passed to kernels as memref<0xT>.
func.func private @kernel_0_neg(%wg: index, %wgc: index, %a: memref<0xf32>, %out: memref<0xf32>)

// CHECK-LABEL: func.func @launch_empty
func.func @launch_empty(%a: memref<0x4xf32>) -> memref<4x0xf32> attributes {kiln_plan.entry} {
  %out = kiln_plan.alloc : memref<4x0xf32>
  // CHECK: kiln_plan.launch @kernel_0_neg[1] (%{{.*}}, %{{.*}}) {num_inputs = 1 : i64} : memref<0x4xf32>, memref<4x0xf32>
  kiln_plan.launch @kernel_0_neg[1](%a, %out) {num_inputs = 1 : i64} : memref<0x4xf32>, memref<4x0xf32>
  return %out : memref<4x0xf32>
}

// -----

// CHECK-LABEL: func.func @check
// CHECK: kiln_plan.check %{{.*}} {kind = "index", message = "index out of range"} : memref<i1>
func.func @check(%b: memref<i1>) {
  kiln_plan.check %b {kind = "index", message = "index out of range"} : memref<i1>
  return
}

// -----

// Symbolic buffers: each `?` dim is an expression of the `dims` map over the
// graph's size symbols; a launch may size its workgroups at run time.
// CHECK-LABEL: func.func @symbolic
// CHECK-SAME: (%[[X:.*]]: memref<?x8xf32> {kiln_plan.dims = #{{.*}}})
// CHECK: %[[OUT:.*]] = kiln_plan.alloc {dims = #{{.*}}} : memref<?x8xf32>
// CHECK: kiln_plan.view %[[OUT]] {dims = #{{.*}}} : memref<?x8xf32> to memref<?x2x4xf32>
// CHECK: kiln_plan.launch @k[64] (%[[X]], %[[OUT]]) {num_inputs = 1 : i64, symbolic_extent = #{{.*}}, symbolic_work = #{{.*}}}
#s0 = affine_map<()[s0] -> (s0)>
#work = affine_map<()[s0] -> (s0 floordiv 1024)>
func.func private @k(%wg: index, %wgc: index, %a: memref<1xf32>, %b: memref<1xf32>, %s0: index)
    attributes {kiln_kernel.num_symbols = 1 : i64}
func.func @symbolic(%x: memref<?x8xf32> {kiln_plan.dims = #s0}) -> memref<?x2x4xf32>
    attributes {kiln_plan.entry, kiln_graph.symbols = [{name = "s0"}]} {
  %out = kiln_plan.alloc {dims = #s0} : memref<?x8xf32>
  %view = kiln_plan.view %out {dims = #s0} : memref<?x8xf32> to memref<?x2x4xf32>
  kiln_plan.launch @k[64](%x, %out) {num_inputs = 1 : i64, symbolic_extent = #s0, symbolic_work = #work} : memref<?x8xf32>, memref<?x8xf32>
  return %view : memref<?x2x4xf32>
}

// -----

// A weight packed by a cached launch into a persistent buffer.
func.func private @pack(%wg: index, %wgc: index, %w: memref<64x32xf32>, %p: memref<2x32x32xf32>)
// CHECK-LABEL: func.func @packed
// CHECK: %[[P:.*]] = kiln_plan.alloc {persistent} : memref<2x32x32xf32>
// CHECK: kiln_plan.launch @pack[2] (%arg0, %[[P]]) {cached, num_inputs = 1 : i64} : memref<64x32xf32>, memref<2x32x32xf32>
func.func @packed(%w: memref<64x32xf32> {kiln_graph.parameter}) attributes {kiln_plan.entry} {
  %p = kiln_plan.alloc {persistent} : memref<2x32x32xf32>
  kiln_plan.launch @pack[2] (%w, %p) {cached, num_inputs = 1 : i64} : memref<64x32xf32>, memref<2x32x32xf32>
  return
}

// -----

// CHECK-LABEL: func.func @collective
func.func @collective(%x: memref<4x8xf32>) -> memref<8x8xf32> attributes {kiln_plan.entry} {
  %0 = kiln_plan.alloc : memref<8x8xf32>
  // CHECK: kiln_plan.collective %{{.*}}, %{{.*}} {group = "tp", group_size = 2 : i64, kind = "all_gather", reduce_op = "sum"} : memref<4x8xf32>, memref<8x8xf32>
  kiln_plan.collective %x, %0 {kind = "all_gather", reduce_op = "sum", group = "tp", group_size = 2} : memref<4x8xf32>, memref<8x8xf32>
  return %0 : memref<8x8xf32>
}
