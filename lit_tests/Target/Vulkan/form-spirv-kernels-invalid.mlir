// RUN: kiln-opt %s -split-input-file --pass-pipeline='builtin.module(kiln-attach-target{target=vulkan},kiln-spirv-form-kernels)' -verify-diagnostics
// RUN: not kiln-opt %s -split-input-file --pass-pipeline='builtin.module(kiln-spirv-form-kernels)' 2>&1 | FileCheck %s --check-prefix=NO-TARGET

// NO-TARGET: kiln-spirv-form-kernels needs

// expected-error @+1 {{has no kiln_kernel.workgroup_size}}
func.func @unmapped(%id: index, %count: index, %out: memref<4xf32>)
    attributes {kiln_kernel.kernel = "unmapped"} {
  return
}

// -----

// expected-error @+1 {{still uses its workgroup id or count arguments}}
func.func @uses_id(%id: index, %count: index, %out: memref<4xf32>)
    attributes {kiln_kernel.kernel = "uses_id", kiln_kernel.workgroup_size = array<i64: 128, 1, 1>} {
  %f = arith.constant 1.0 : f32
  memref.store %f, %out[%id] : memref<4xf32>
  return
}
