// RUN: kiln-opt %s -split-input-file -verify-diagnostics \
// RUN:   --pass-pipeline='builtin.module(kiln-attach-target{target=vulkan},func.func(kiln-gpu-map-workgroups))'

func.func @conv(%id: index, %count: index, %in: memref<1x1x4x4xf32>, %w: memref<1x1x3x3xf32>, %out: memref<1x1x2x2xf32>)
    attributes {kiln_kernel.kernel = "conv"} {
  // expected-error @+1 {{has no GPU lowering}}
  kiln_kernel.conv2d %in, %w into %out {dilations = array<i64: 1, 1>, strides = array<i64: 1, 1>} : memref<1x1x4x4xf32>, memref<1x1x3x3xf32> into memref<1x1x2x2xf32>
  return
}

// -----

func.func @sort(%id: index, %count: index, %x: memref<8xf32>, %v: memref<8xf32>, %i: memref<8xi64>)
    attributes {kiln_kernel.kernel = "sort"} {
  // expected-error @+1 {{has no GPU lowering here}}
  kiln_kernel.sort %x into %v, %i {dim = 0 : i64} : memref<8xf32> into memref<8xf32>, memref<8xi64>
  return
}

// -----

func.func @no_ids(%out: memref<4xf32>) attributes {kiln_kernel.kernel = "no_ids"} {
  // expected-error @-1 {{kernel must start with (index workgroup_id, index workgroup_count)}}
  return
}

// -----

func.func @nested_attention(%id: index, %count: index, %q: memref<1x1x4x8xf32>, %k: memref<1x1x4x8xf32>, %v: memref<1x1x4x8xf32>, %out: memref<1x1x4x8xf32>, %lse: memref<1x1x4xf32>)
    attributes {kiln_kernel.kernel = "nested_attention"} {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %c1 = arith.constant 1 : index
  scf.for %i = %c0 to %c2 step %c1 {
    // expected-error @+1 {{has no GPU lowering here (kiln-gpu-lower-kernel-ops lowers convolutions, kiln-lower-sort sorts, and attention must be a kernel's top-level op)}}
    kiln_kernel.attention %q, %k, %v into %out, %lse {scale = 0.35 : f64, is_causal = false} : memref<1x1x4x8xf32>, memref<1x1x4x8xf32>, memref<1x1x4x8xf32> into memref<1x1x4x8xf32>, memref<1x1x4xf32>
  }
  return
}

// -----

func.func @integer_attention(%id: index, %count: index, %q: memref<1x1x4x8xi32>, %k: memref<1x1x4x8xi32>, %v: memref<1x1x4x8xi32>, %out: memref<1x1x4x8xi32>, %lse: memref<1x1x4xi32>)
    attributes {kiln_kernel.kernel = "integer_attention"} {
  // expected-error @+1 {{has no GPU lowering for 'i32' elements}}
  kiln_kernel.attention %q, %k, %v into %out, %lse {scale = 0.35 : f64, is_causal = false} : memref<1x1x4x8xi32>, memref<1x1x4x8xi32>, memref<1x1x4x8xi32> into memref<1x1x4x8xi32>, memref<1x1x4xi32>
  return
}
