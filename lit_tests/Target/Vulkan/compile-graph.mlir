// REQUIRES: spirv-val
// RUN: rm -rf %t && kiln-compile --target vulkan --dump-dir %t %S/Inputs/mlp.json -o %t.kiln | FileCheck %s
// RUN: mlir-translate --no-implicit-module --serialize-spirv %t/kernels/kernel_0_matmul.spirv.mlir -o %t.spv
// RUN: spirv-val --target-env vulkan1.2 %t.spv
// CHECK: (vulkan-spirv vulkan1.2,
