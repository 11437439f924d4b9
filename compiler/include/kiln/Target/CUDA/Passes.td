#ifndef KILN_TARGET_CUDA_PASSES
#define KILN_TARGET_CUDA_PASSES

include "mlir/Pass/PassBase.td"

def FormNvvmKernelsPass : Pass<"kiln-nvvm-form-kernels", "mlir::ModuleOp"> {
  let summary = "Turn mapped kernel functions into gpu.funcs with the CUDA kernel ABI";
  let description = [{
    Runs after kiln-gpu-map-workgroups. Each kernel function becomes the one
    gpu.func of its own gpu.module (one CUDA module per kernel), taking its
    bindings as the memrefs they are (dense, of static shape: with
    convert-gpu-to-nvvm's bare-pointer convention each is one device
    pointer) and then the size symbols as i64, the interface of the
    runtime's CUDA container (kiln/runtime/CudaContainer.h). Its
    `known_block_size` is the mapping's workgroup size. Workgroup memory
    (`memref.alloc` in `#gpu.address_space<workgroup>`) becomes the
    gpu.func's workgroup attributions (shared memory); the constants a kernel
    reads (`memref.global`) are copied into its gpu.module.
  }];
  let dependentDialects = ["mlir::gpu::GPUDialect", "mlir::arith::ArithDialect",
                           "mlir::memref::MemRefDialect"];
}

#endif
