// RUN: kiln-opt %s --pass-pipeline='builtin.module(kiln-spirv-convert)' -verify-diagnostics

// Float64 transcendentals have no GLSL.std.450 instruction: refused at the
// op with the words the Python side reads as "not supported by the target".
module attributes {gpu.container_module} {
  gpu.module @k attributes {spirv.target_env = #spirv.target_env<#spirv.vce<v1.3, [Shader, Float64], []>, #spirv.resource_limits<>>} {
    gpu.func @k(%out: memref<?xf64>, %pc: memref<1xi32, #spirv.storage_class<PushConstant>>) kernel
        attributes {spirv.entry_point_abi = #spirv.entry_point_abi<workgroup_size = [1, 1, 1]>} {
      %c0 = arith.constant 0 : index
      %x = memref.load %out[%c0] : memref<?xf64>
      %r = math.sqrt %x : f64
      // expected-error @+1 {{'math.exp' op on float64 is not supported by the target}}
      %e = math.exp %r : f64
      memref.store %e, %out[%c0] : memref<?xf64>
      gpu.return
    }
  }
}
