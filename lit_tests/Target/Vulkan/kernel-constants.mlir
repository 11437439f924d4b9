// RUN: kiln-opt %s --pass-pipeline='builtin.module(kiln-attach-target{target=vulkan},kiln-spirv-form-kernels)' | FileCheck %s
// RUN: kiln-opt %s --pass-pipeline='builtin.module(kiln-attach-target{target=vulkan},kiln-spirv-form-kernels,gpu.module(lower-affine,canonicalize,cse),kiln-spirv-convert,spirv.module(spirv-lower-abi-attrs,kiln-spirv-push-constants,spirv-update-vce))' \
// RUN:   | FileCheck %s --check-prefix=SPIRV

// Constant tensors that bufferization made memref.globals are outside the
// gpu.module: a splat's loads become its value, a small array becomes a
// constant the kernel indexes (a function-local variable in SPIR-V).
memref.global "private" constant @zeros : memref<2x4xf32> = dense<0.0>
memref.global "private" constant @table : memref<4xf32> = dense<[1.0, 2.0, 3.0, 4.0]>

// CHECK-LABEL: gpu.func @k(
// CHECK: %[[TABLE:.*]] = arith.constant dense<[1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00]> : tensor<4xf32>
// CHECK-NOT: memref.get_global
// CHECK: tensor.extract %[[TABLE]][%{{.*}}] : tensor<4xf32>
// CHECK: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK: arith.addf %{{.*}}, %[[ZERO]]

// SPIRV: spirv.func @k
// SPIRV: %[[ARRAY:.*]] = spirv.Constant dense<[1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00]> : tensor<4xf32> : !spirv.array<4 x f32>
// SPIRV: %[[LOCAL:.*]] = spirv.Variable : !spirv.ptr<!spirv.array<4 x f32>, Function>
// SPIRV: spirv.Store "Function" %[[LOCAL]], %[[ARRAY]]
// SPIRV: spirv.AccessChain %[[LOCAL]][%{{.*}}]
// SPIRV: spirv.Load "Function"
func.func @k(%id: index, %count: index, %out: memref<2x4xf32>)
    attributes {kiln_kernel.kernel = "k", kiln_kernel.workgroup_size = array<i64: 8, 1, 1>} {
  %t = gpu.thread_id x
  %c4 = arith.constant 4 : index
  %i = arith.divui %t, %c4 : index
  %j = arith.remui %t, %c4 : index
  %zeros = memref.get_global @zeros : memref<2x4xf32>
  %table = memref.get_global @table : memref<4xf32>
  %a = memref.load %table[%j] : memref<4xf32>
  %z = memref.load %zeros[%i, %j] : memref<2x4xf32>
  %s = arith.addf %a, %z : f32
  memref.store %s, %out[%i, %j] : memref<2x4xf32>
  return
}
