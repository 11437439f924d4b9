// RUN: kiln-opt %s -split-input-file -verify-diagnostics \
// RUN:   --pass-pipeline='builtin.module(kiln-attach-target{target=vulkan},func.func(kiln-gpu-map-workgroups))'

func.func @conv(%id: index, %count: index, %in: memref<1x1x4x4xf32>, %w: memref<1x1x3x3xf32>, %out: memref<1x1x2x2xf32>)
    attributes {kiln_kernel.kernel = "conv"} {
  // expected-error @+1 {{has no GPU lowering}}
  kiln_kernel.conv2d %in, %w into %out {dilations = array<i64: 1, 1>, strides = array<i64: 1, 1>} : memref<1x1x4x4xf32>, memref<1x1x3x3xf32> into memref<1x1x2x2xf32>
  return
}

// -----

func.func @no_ids(%out: memref<4xf32>) attributes {kiln_kernel.kernel = "no_ids"} {
  // expected-error @-1 {{kernel must start with (index workgroup_id, index workgroup_count)}}
  return
}
