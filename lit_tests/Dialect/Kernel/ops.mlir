// RUN: kiln-opt %s -split-input-file | kiln-opt -split-input-file | FileCheck %s
// RUN: kiln-opt %s -split-input-file -mlir-print-op-generic | kiln-opt -split-input-file | FileCheck %s

// CHECK-LABEL: func.func @kernel
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>, %[[Y:.*]]: tensor<8xf32>)
func.func @kernel(%x: tensor<4x8xf32>, %y: tensor<8xf32>) -> tensor<4x8xf32> {
  // CHECK: %[[K:.*]] = kiln_kernel.kernel "kernel_0_add" extent(4) ins(%[[X]], %[[Y]] : tensor<4x8xf32>, tensor<8xf32>) -> (tensor<4x8xf32>) {
  // CHECK-NEXT: ^bb0(%[[A:.*]]: tensor<4x8xf32>, %[[B:.*]]: tensor<8xf32>):
  // CHECK-NEXT:   %[[S:.*]] = kiln_graph.add %[[A]], %[[B]]
  // CHECK-NEXT:   kiln_kernel.yield %[[S]] : tensor<4x8xf32>
  // CHECK-NEXT: }
  %0 = kiln_kernel.kernel "kernel_0_add" extent(4) ins(%x, %y : tensor<4x8xf32>, tensor<8xf32>) -> (tensor<4x8xf32>) {
  ^bb0(%a: tensor<4x8xf32>, %b: tensor<8xf32>):
    %1 = kiln_graph.add %a, %b : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
    kiln_kernel.yield %1 : tensor<4x8xf32>
  }
  // CHECK: return %[[K]]
  return %0 : tensor<4x8xf32>
}

// -----

// A kernel without inputs (a constant) and with several results.
// CHECK-LABEL: func.func @no_inputs
// CHECK: %[[K:.*]]:2 = kiln_kernel.kernel "kernel_0_constant" extent(0) -> (tensor<2xf32>, tensor<2xf32>) {
// CHECK: kiln_kernel.yield %{{.*}}, %{{.*}} : tensor<2xf32>, tensor<2xf32>
func.func @no_inputs() -> (tensor<2xf32>, tensor<2xf32>) {
  %0:2 = kiln_kernel.kernel "kernel_0_constant" extent(0) -> (tensor<2xf32>, tensor<2xf32>) {
    %c = kiln_graph.constant dense<1.0> : tensor<2xf32>
    %d = kiln_graph.neg %c : tensor<2xf32> -> tensor<2xf32>
    kiln_kernel.yield %c, %d : tensor<2xf32>, tensor<2xf32>
  }
  return %0#0, %0#1 : tensor<2xf32>, tensor<2xf32>
}

// -----

// The terminator is implicit when nothing is yielded.
// CHECK-LABEL: func.func @no_results
// CHECK: kiln_kernel.kernel "empty" extent(0) ins(%{{.*}} : tensor<2xf32>) {
// CHECK-NOT: kiln_kernel.yield
// CHECK: return
func.func @no_results(%x: tensor<2xf32>) {
  kiln_kernel.kernel "empty" extent(0) ins(%x : tensor<2xf32>) {
  ^bb0(%a: tensor<2xf32>):
  }
  return
}

// -----

// CHECK-LABEL: func.func @attributes
// CHECK: kiln_kernel.kernel "k" extent(3) ins(%{{.*}} : tensor<3xf32>) attributes {note = "kept"} -> (tensor<3xf32>)
func.func @attributes(%x: tensor<3xf32>) -> tensor<3xf32> {
  %0 = kiln_kernel.kernel "k" extent(3) ins(%x : tensor<3xf32>) attributes {note = "kept"} -> (tensor<3xf32>) {
  ^bb0(%a: tensor<3xf32>):
    kiln_kernel.yield %a : tensor<3xf32>
  }
  return %0 : tensor<3xf32>
}

// -----

// kiln_kernel.attention on tensors returns its inits; on buffers it writes them.
// CHECK-LABEL: func.func @attention
// CHECK: kiln_kernel.attention %{{.*}}, %{{.*}}, %{{.*}} mask %{{.*}} into %{{.*}}, %{{.*}} {is_causal = false, scale = 5.000000e-01 : f64} : {{.*}} -> tensor<1x2x4x8xf32>, tensor<1x2x4xf32>
// CHECK: kiln_kernel.attention %{{.*}}, %{{.*}}, %{{.*}} into %{{.*}}, %{{.*}} {is_causal = true, scale = 5.000000e-01 : f64} : memref<1x2x4x8xf32>, memref<1x2x4x8xf32>, memref<1x2x4x8xf32> into memref<1x2x4x8xf32>, memref<1x2x4xf32>
func.func @attention(%q: tensor<1x2x4x8xf32>, %m: tensor<1x1x4x4xf32>, %o: tensor<1x2x4x8xf32>,
                     %l: tensor<1x2x4xf32>, %qb: memref<1x2x4x8xf32>, %ob: memref<1x2x4x8xf32>,
                     %lb: memref<1x2x4xf32>) -> tensor<1x2x4x8xf32> {
  %0:2 = kiln_kernel.attention %q, %q, %q mask %m into %o, %l {scale = 0.5 : f64, is_causal = false} : tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x1x4x4xf32> into tensor<1x2x4x8xf32>, tensor<1x2x4xf32> -> tensor<1x2x4x8xf32>, tensor<1x2x4xf32>
  kiln_kernel.attention %qb, %qb, %qb into %ob, %lb {scale = 0.5 : f64, is_causal = true} : memref<1x2x4x8xf32>, memref<1x2x4x8xf32>, memref<1x2x4x8xf32> into memref<1x2x4x8xf32>, memref<1x2x4xf32>
  return %0#0 : tensor<1x2x4x8xf32>
}

// -----

// CHECK-LABEL: func.func @conv2d
// CHECK: kiln_kernel.conv2d %{{.*}}, %{{.*}} bias %{{.*}} into %{{.*}} {dilations = array<i64: 1, 1>, strides = array<i64: 1, 1>} : tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf32> into tensor<1x4x6x6xf32> -> tensor<1x4x6x6xf32>
// CHECK: kiln_kernel.conv2d %{{.*}}, %{{.*}} into %{{.*}} {dilations = array<i64: 1, 1>, strides = array<i64: 1, 1>} : memref<1x3x8x8xf32>, memref<4x3x3x3xf32> into memref<1x4x6x6xf32>
func.func @conv2d(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %b: tensor<4xf32>, %o: tensor<1x4x6x6xf32>,
                  %xb: memref<1x3x8x8xf32>, %wb: memref<4x3x3x3xf32>, %ob: memref<1x4x6x6xf32>) -> tensor<1x4x6x6xf32> {
  %0 = kiln_kernel.conv2d %x, %w bias %b into %o {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>} : tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf32> into tensor<1x4x6x6xf32> -> tensor<1x4x6x6xf32>
  kiln_kernel.conv2d %xb, %wb into %ob {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>} : memref<1x3x8x8xf32>, memref<4x3x3x3xf32> into memref<1x4x6x6xf32>
  return %0 : tensor<1x4x6x6xf32>
}

// -----

// CHECK-LABEL: func.func @conv2d_epilogue
// CHECK: kiln_kernel.conv2d %{{.*}}, %{{.*}} epilogue(%{{.*}} : tensor<4xf32>) into %{{.*}} {dilations = array<i64: 1, 1>, epilogue_maps = [#{{.*}}], strides = array<i64: 1, 1>}
// CHECK-NEXT: ^bb0(%{{.*}}: f32, %{{.*}}: f32):
// CHECK: kiln_kernel.epilogue_yield
#channel = affine_map<(d0, d1, d2, d3) -> (d1)>
func.func @conv2d_epilogue(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %b: tensor<4xf32>, %o: tensor<1x4x6x6xf32>) -> tensor<1x4x6x6xf32> {
  %0 = kiln_kernel.conv2d %x, %w epilogue(%b : tensor<4xf32>) into %o {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, epilogue_maps = [#channel]} : tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32> into tensor<1x4x6x6xf32> -> tensor<1x4x6x6xf32> {
  ^bb0(%v: f32, %c: f32):
    %1 = arith.addf %v, %c : f32
    kiln_kernel.epilogue_yield %1 : f32
  }
  return %0 : tensor<1x4x6x6xf32>
}

// -----

// The target and packed-weights attributes round-trip; fields left at their
// defaults (l1_bytes, subgroup_size, ...) are not printed.
// CHECK: module attributes {kiln_kernel.target = #kiln_kernel.target<kind = "cpu", name = "cpu:x86-64-v3", format = "cpu-x86_64", triple = "x86_64-unknown-linux-gnu", chip = "x86-64-v3", features = "+avx,+avx2,+fma", vector_bits = 256, vector_registers = 16, l2_bytes = 1048576>}
// CHECK-LABEL: func.func @packed
// CHECK-SAME: {kiln_kernel.packed_rhs = #kiln_kernel.packed_rhs<of = 0, transposed = false, panel_columns = 16>}
module attributes {kiln_kernel.target = #kiln_kernel.target<kind = "cpu", name = "cpu:x86-64-v3", format = "cpu-x86_64", triple = "x86_64-unknown-linux-gnu", chip = "x86-64-v3", features = "+avx,+avx2,+fma", vector_bits = 256, vector_registers = 16, l2_bytes = 1048576>} {
  func.func @packed(%b: memref<24x40xf32>,
                    %p: memref<2x24x16xf32> {kiln_kernel.packed_rhs = #kiln_kernel.packed_rhs<of = 0, transposed = false, panel_columns = 16>}) {
    return
  }
}

// -----

// kiln_kernel.sort on tensors returns its inits; on buffers it writes them.
// CHECK-LABEL: func.func @sort
// CHECK: kiln_kernel.sort %{{.*}} into %{{.*}}, %{{.*}} {descending = true, dim = 1 : i64} : tensor<4x5xf32> into tensor<4x5xf32>, tensor<4x5xi64> -> tensor<4x5xf32>, tensor<4x5xi64>
// CHECK: kiln_kernel.sort %{{.*}} into %{{.*}}, %{{.*}} {dim = 0 : i64} : memref<?xi32> into memref<?xi32>, memref<?xi64>
func.func @sort(%x: tensor<4x5xf32>, %v: tensor<4x5xf32>, %i: tensor<4x5xi64>, %xb: memref<?xi32>,
                %vb: memref<?xi32>, %ib: memref<?xi64>) -> tensor<4x5xi64> {
  %0:2 = kiln_kernel.sort %x into %v, %i {dim = 1 : i64, descending = true} : tensor<4x5xf32> into tensor<4x5xf32>, tensor<4x5xi64> -> tensor<4x5xf32>, tensor<4x5xi64>
  kiln_kernel.sort %xb into %vb, %ib {dim = 0 : i64} : memref<?xi32> into memref<?xi32>, memref<?xi64>
  return %0#1 : tensor<4x5xi64>
}
