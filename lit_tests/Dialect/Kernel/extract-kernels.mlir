// RUN: kiln-opt %s -kiln-extract-kernels | FileCheck %s

// The host plan goes; kernel functions stay.
// CHECK-NOT: func.func @graph
// CHECK: func.func private @kernel_0_exp
// CHECK-NOT: func.func @graph
module {
  func.func @graph(%arg0: memref<4xf32>) -> memref<4xf32> attributes {kiln_plan.entry} {
    %0 = kiln_plan.alloc : memref<4xf32>
    kiln_plan.launch @kernel_0_exp[1] (%arg0, %0) {num_inputs = 1 : i64} : memref<4xf32>, memref<4xf32>
    return %0 : memref<4xf32>
  }
  func.func private @kernel_0_exp(%wg: index, %wgc: index, %in: memref<4xf32>, %out: memref<4xf32>) attributes {kiln_kernel.kernel = "kernel_0_exp", kiln_kernel.workgroup_extent = 0 : i64} {
    return
  }
}
