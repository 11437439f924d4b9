// RUN: kiln-opt %s -split-input-file --pass-pipeline='builtin.module(kiln-gpu-form-kernel-modules)' -verify-diagnostics

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

// -----

// expected-error @+1 {{binding 0 is not a dense memref of static shape}}
func.func @dynamic(%id: index, %count: index, %out: memref<?xf32>)
    attributes {kiln_kernel.kernel = "dynamic", kiln_kernel.workgroup_size = array<i64: 4, 1, 1>} {
  return
}

// -----

func.func @heap(%id: index, %count: index, %out: memref<4xf32>)
    attributes {kiln_kernel.kernel = "heap", kiln_kernel.workgroup_size = array<i64: 4, 1, 1>} {
  // expected-error @+1 {{allocates 'memref<4xf32>' in a GPU kernel: only workgroup memory of static size can be}}
  %buffer = memref.alloc() : memref<4xf32>
  return
}

// -----

memref.global "private" @mutable : memref<4xf32> = dense<1.0>
func.func @reads_mutable(%id: index, %count: index, %out: memref<4xf32>)
    attributes {kiln_kernel.kernel = "reads_mutable", kiln_kernel.workgroup_size = array<i64: 4, 1, 1>} {
  %t = gpu.thread_id x
  // expected-error @+1 {{reads a global that is not a constant}}
  %g = memref.get_global @mutable : memref<4xf32>
  %v = memref.load %g[%t] : memref<4xf32>
  memref.store %v, %out[%t] : memref<4xf32>
  return
}
