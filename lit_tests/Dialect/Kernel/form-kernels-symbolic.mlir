// RUN: kiln-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(kiln-form-kernels))' | FileCheck %s
// RUN: kiln-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(kiln-form-kernels))' | kiln-opt -split-input-file | FileCheck %s

// A symbolic leading dim is a workgroup extent like any other: ops over the
// same symbolic rows share a kernel, whose extent is printed as the map of
// its expression (and parses back).
// CHECK: #[[S0:.*]] = affine_map<()[s0] -> (s0)>
// CHECK-LABEL: func.func @same_rows
// CHECK: kiln_kernel.kernel "kernel_0_matmul" extent(#[[S0]])
// CHECK: kiln_graph.matmul
// CHECK-NEXT: kiln_graph.relu
// CHECK-NEXT: kiln_graph.softmax
// CHECK-NOT: kiln_kernel.kernel
#s0 = affine_map<()[s0] -> (s0)>
func.func @same_rows(%x: tensor<?x16xf32, #s0>, %w: tensor<16x32xf32>) -> tensor<?x32xf32, #s0>
    attributes {kiln_graph.symbols = [{name = "s77"}]} {
  %0 = kiln_graph.matmul %x, %w : tensor<?x16xf32, #s0>, tensor<16x32xf32> -> tensor<?x32xf32, #s0>
  %1 = kiln_graph.relu %0 : tensor<?x32xf32, #s0> -> tensor<?x32xf32, #s0>
  %2 = kiln_graph.softmax %1 {dim = 1 : i64} : tensor<?x32xf32, #s0> -> tensor<?x32xf32, #s0>
  return %2 : tensor<?x32xf32, #s0>
}

// -----

// Rows of s0 * s1 and rows of s0 are different extents, though both are `?`:
// the reshape between them is a kernel boundary.
// CHECK-DAG: #[[P:.*]] = affine_map<()[s0, s1] -> (s0 * s1)>
// CHECK-DAG: #[[B:.*]] = affine_map<()[s0] -> (s0)>
// CHECK-LABEL: func.func @different_rows
// CHECK: kiln_kernel.kernel "kernel_0_exp" extent(#[[P]])
// CHECK: kiln_kernel.kernel "kernel_1_sum" extent(#[[B]])
#bs = affine_map<()[s0, s1] -> (s0, s1)>
#p = affine_map<()[s0, s1] -> (s0 * s1)>
#b = affine_map<()[s0] -> (s0)>
func.func @different_rows(%x: tensor<?x8xf32, #p>) -> tensor<?x8xf32, #b>
    attributes {kiln_graph.symbols = [{name = "s0"}, {name = "s1"}]} {
  %0 = kiln_graph.exp %x : tensor<?x8xf32, #p> -> tensor<?x8xf32, #p>
  %1 = kiln_graph.reshape %0 : tensor<?x8xf32, #p> -> tensor<?x?x8xf32, #bs>
  %2 = kiln_graph.sum %1 {dims = array<i64: 1>} : tensor<?x?x8xf32, #bs> -> tensor<?x8xf32, #b>
  return %2 : tensor<?x8xf32, #b>
}

// -----

// A size as a value (kiln_graph.size) is rematerialized, like a constant, in
// each kernel that reads it: both kernels compute s0 * 2 from their symbols.
// CHECK-LABEL: func.func @size_values
// CHECK: kiln_kernel.kernel "kernel_0_mul"
// CHECK: kiln_graph.size
// CHECK: kiln_graph.mul
// CHECK: kiln_kernel.kernel "kernel_1_sum"
// CHECK: kiln_kernel.kernel "kernel_2_add"
// CHECK: kiln_graph.size
// CHECK: kiln_graph.add
#s0 = affine_map<()[s0] -> (s0)>
#twice = affine_map<()[s0] -> (s0 * 2)>
func.func @size_values(%x: tensor<?x8xf32, #s0>) -> (tensor<?x8xf32, #s0>, tensor<8xf32>)
    attributes {kiln_graph.symbols = [{name = "s77"}]} {
  %f = kiln_graph.size #twice : tensor<f32>
  %0 = kiln_graph.mul %x, %f : tensor<?x8xf32, #s0>, tensor<f32> -> tensor<?x8xf32, #s0>
  %1 = kiln_graph.sum %0 {dims = array<i64: 0>} : tensor<?x8xf32, #s0> -> tensor<8xf32>
  %2 = kiln_graph.add %1, %f : tensor<8xf32>, tensor<f32> -> tensor<8xf32>
  return %0, %2 : tensor<?x8xf32, #s0>, tensor<8xf32>
}
