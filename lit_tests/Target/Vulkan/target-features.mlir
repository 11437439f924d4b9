// The Vulkan target's features are written as every target's are, "+name"
// each (SPIR-V capabilities and extensions): a stage dumped with its
// target attribute parses and runs again without kiln-attach-target.
// RUN: kiln-opt %s -split-input-file --pass-pipeline='builtin.module(kiln-spirv-form-kernels)' -verify-diagnostics | FileCheck %s
// RUN: kiln-opt --pass-pipeline='builtin.module(kiln-attach-target{target=vulkan})' %s -split-input-file | FileCheck %s --check-prefix=ATTACHED

// ATTACHED: features = "+Shader,+Int64,
// ATTACHED-SAME: +GroupNonUniformArithmetic,+Int64Atomics,+AtomicFloat32AddEXT,+SPV_KHR_storage_buffer_storage_class,
// ATTACHED-SAME: +SPV_EXT_shader_atomic_float_add", vector_bits = 128, vector_registers = 0, max_workgroup_size = 128

// CHECK: spirv.target_env = #spirv.target_env<#spirv.vce<v1.3, [Shader, Int64, Float16], [SPV_KHR_storage_buffer_storage_class]>
module attributes {kiln_kernel.target = #kiln_kernel.target<kind = "vulkan", name = "vulkan", format = "vulkan-spirv", triple = "spirv64-unknown-vulkan1.2", chip = "vulkan1.2", features = "+Shader,+Int64,-Float64,+Float16,+SPV_KHR_storage_buffer_storage_class", vector_bits = 0, vector_registers = 0, max_workgroup_size = 128, shared_memory_bytes = 16384>} {
  func.func @k(%id: index, %count: index, %out: memref<4xf32>)
      attributes {kiln_kernel.kernel = "k", kiln_kernel.workgroup_size = array<i64: 4, 1, 1>} {
    %t = gpu.thread_id x
    %f = arith.constant 1.0 : f32
    memref.store %f, %out[%t] : memref<4xf32>
    return
  }
}

// -----

// A feature that is neither a capability nor an extension.
// expected-error @+1 {{kiln_kernel.target features must be SPIR-V capabilities and extensions, '+name' each, comma-separated, not '+Shader,+Warp9'}}
module attributes {kiln_kernel.target = #kiln_kernel.target<kind = "vulkan", name = "vulkan", format = "vulkan-spirv", triple = "spirv64-unknown-vulkan1.2", chip = "vulkan1.2", features = "+Shader,+Warp9", vector_bits = 0, vector_registers = 0, max_workgroup_size = 128, shared_memory_bytes = 16384>} {
}
