// RUN: kiln-opt %s -split-input-file --pass-pipeline='builtin.module(kiln-spirv-convert)' | FileCheck %s

// What SPIR-V lacks or drivers get wrong: trunc by sign, a division by a
// constant zero as IEEE infinities and NaN, asinh on |x|.
// CHECK: spirv.module
// CHECK-LABEL: spirv.func @k
// CHECK-NOT: spirv.FDiv
// CHECK: spirv.GL.Floor
// CHECK: spirv.GL.Ceil
// CHECK: spirv.Select
// CHECK: spirv.GL.FAbs
// CHECK: spirv.GL.Asinh
module attributes {gpu.container_module} {
  gpu.module @k attributes {spirv.target_env = #spirv.target_env<#spirv.vce<v1.3, [Shader, Float64], []>, #spirv.resource_limits<>>} {
    gpu.func @k(%out: memref<?xf32>, %pc: memref<1xi32, #spirv.storage_class<PushConstant>>) kernel
        attributes {spirv.entry_point_abi = #spirv.entry_point_abi<workgroup_size = [1, 1, 1]>} {
      %c0 = arith.constant 0 : index
      %x = memref.load %out[%c0] : memref<?xf32>
      %zero = arith.constant 0.0 : f32
      %t = math.trunc %x : f32
      %q = arith.divf %t, %zero : f32
      %s = math.asinh %q : f32
      memref.store %s, %out[%c0] : memref<?xf32>
      gpu.return
    }
  }
}

// -----

// A loop with results that may run no iteration: its results are its
// initial values then (the SPIR-V conversion leaves them undefined).
// CHECK-LABEL: spirv.func @empty_loop
// CHECK: spirv.mlir.loop
// CHECK: spirv.SLessThan
// CHECK: spirv.Select
module attributes {gpu.container_module} {
  gpu.module @empty_loop attributes {spirv.target_env = #spirv.target_env<#spirv.vce<v1.3, [Shader], []>, #spirv.resource_limits<>>} {
    gpu.func @empty_loop(%out: memref<?xf32>, %pc: memref<1xi32, #spirv.storage_class<PushConstant>>) kernel
        attributes {spirv.entry_point_abi = #spirv.entry_point_abi<workgroup_size = [1, 1, 1]>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %one = arith.constant 1.0 : f32
      %t = gpu.thread_id x
      %r = scf.for %i = %t to %c1 step %c1 iter_args(%p = %one) -> (f32) {
        %x = memref.load %out[%i] : memref<?xf32>
        %m = arith.mulf %p, %x : f32
        scf.yield %m : f32
      }
      memref.store %r, %out[%c0] : memref<?xf32>
      gpu.return
    }
  }
}

// -----

// A barrier orders storage buffers as well as workgroup memory: a kernel's
// steps pass values through global buffers.
// CHECK-LABEL: spirv.func @barrier
// CHECK: spirv.ControlBarrier <Workgroup>, <Workgroup>, <AcquireRelease|UniformMemory|WorkgroupMemory>
module attributes {gpu.container_module} {
  gpu.module @barrier attributes {spirv.target_env = #spirv.target_env<#spirv.vce<v1.3, [Shader], []>, #spirv.resource_limits<>>} {
    gpu.func @barrier(%out: memref<?xf32>, %pc: memref<1xi32, #spirv.storage_class<PushConstant>>) kernel
        attributes {spirv.entry_point_abi = #spirv.entry_point_abi<workgroup_size = [2, 1, 1]>} {
      %c0 = arith.constant 0 : index
      %one = arith.constant 1.0 : f32
      memref.store %one, %out[%c0] : memref<?xf32>
      gpu.barrier
      gpu.return
    }
  }
}

// -----

// Scatters' atomics: a float32 add as SPV_EXT_shader_atomic_float_add's
// OpAtomicFAddEXT, integer ones as upstream converts them (64-bit ones
// with Int64Atomics).
// CHECK-LABEL: spirv.func @atomics
// CHECK: spirv.EXT.AtomicFAdd <Device> <AcquireRelease> %{{.*}}, %{{.*}} : !spirv.ptr<f32, StorageBuffer>
// CHECK: spirv.AtomicSMax <Device> <AcquireRelease> %{{.*}}, %{{.*}} : !spirv.ptr<i64, StorageBuffer>
module attributes {gpu.container_module} {
  gpu.module @atomics attributes {spirv.target_env = #spirv.target_env<#spirv.vce<v1.3, [Shader, Int64, Int64Atomics, AtomicFloat32AddEXT], [SPV_KHR_storage_buffer_storage_class, SPV_EXT_shader_atomic_float_add]>, #spirv.resource_limits<>>} {
    gpu.func @atomics(%f: memref<?xf32>, %i: memref<?xi64>, %pc: memref<1xi32, #spirv.storage_class<PushConstant>>) kernel
        attributes {spirv.entry_point_abi = #spirv.entry_point_abi<workgroup_size = [1, 1, 1]>} {
      %c0 = arith.constant 0 : index
      %x = arith.constant 1.5 : f32
      %y = arith.constant 7 : i64
      %0 = memref.atomic_rmw addf %x, %f[%c0] : (f32, memref<?xf32>) -> f32
      %1 = memref.atomic_rmw maxs %y, %i[%c0] : (i64, memref<?xi64>) -> i64
      gpu.return
    }
  }
}
