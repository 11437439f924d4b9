#ifndef KILN_TARGET_VULKAN_PASSES
#define KILN_TARGET_VULKAN_PASSES

include "mlir/Pass/PassBase.td"

def FormSpirvKernelsPass : Pass<"kiln-spirv-form-kernels", "mlir::ModuleOp"> {
  let summary = "Turn mapped kernel functions into gpu.funcs with the Vulkan kernel ABI";
  let description = [{
    Runs after kiln-gpu-map-workgroups. Each kernel function becomes the one
    gpu.func of its own gpu.module (one SPIR-V module per kernel), taking:

    - binding i (the kernel's memref arguments, its temporaries included) as
      `memref<?xT>`: a storage buffer at descriptor set 0, binding i;
    - after them, the runtime's status buffer (`memref<?xi32>`);
    - one push-constant array of i32: word i is binding i's byte offset in
      the range the runtime bound (the runtime binds at an aligned offset
      below the address), then the size symbols' values, then the launch's
      slot in the status buffer.

    Each scf.for also carries its next induction value; one that ran and
    stopped below its upper bound writes 1 to the status slot. Lavapipe ends
    an invocation's loops after 65535 iterations in all, silently; this
    makes it an error the runtime reports, not a wrong result.

    Every load and store is rewritten onto the flat buffer with its linear
    index (views folded into their accesses first), since SPIR-V storage
    buffers have no strided memrefs. A vector load or store (the mapping's
    vector accesses) goes through a second view of its binding, an argument
    `memref<?xvector<W x T>>` after the push constants bound to the same
    descriptor (`spirv.interface_var_abi`), at the linear index over W:
    logical addressing casts no pointer, but two variables may alias one
    binding. A view's address (memref.extract_aligned_pointer_as_index,
    the mapping's alignment test) is its byte offset in the binding. The
    entry point's workgroup size comes from `kiln_kernel.workgroup_size`.
  }];
  let dependentDialects = ["mlir::gpu::GPUDialect", "mlir::spirv::SPIRVDialect",
                           "mlir::memref::MemRefDialect", "mlir::arith::ArithDialect",
                           "mlir::affine::AffineDialect", "mlir::tensor::TensorDialect",
                           "mlir::scf::SCFDialect", "mlir::vector::VectorDialect"];
}

def ConvertToSpirvPass : Pass<"kiln-spirv-convert", "mlir::ModuleOp"> {
  let summary = "Convert the kernels' gpu.modules to spirv.modules";
  let description = [{
    What upstream's convert-gpu-to-spirv does for Vulkan (memory spaces to
    storage classes, then the gpu, scf, arith, memref and func patterns),
    plus the math patterns and the tensor patterns: a `tensor.extract` from
    a constant array (kiln-spirv-form-kernels makes one of each small
    constant a kernel reads) becomes a load from a function-local variable
    initialized with it. Each gpu.module keeps its place and gains a
    converted copy.

    First, float64 math that GLSL.std.450 has no instruction for (exp, log,
    tanh...: its transcendental functions take 16- and 32-bit floats) is
    refused at the op, "not supported by the target", and math.trunc, which
    it lacks, becomes ceil or floor by sign; asinh is computed on |x| (drivers
    take log(x + sqrt(x^2 + 1)), which cancels for negative x), and a division
    by a constant zero gives its IEEE infinity or NaN (Vulkan leaves it
    undefined, and lavapipe folds it into garbage).
  }];
  let dependentDialects = ["mlir::spirv::SPIRVDialect", "mlir::math::MathDialect"];
}

def SpirvPushConstantsPass : Pass<"kiln-spirv-push-constants", "mlir::spirv::ModuleOp"> {
  let summary = "Drop descriptor bindings from push-constant variables";
  let description = [{
    spirv-lower-abi-attrs decorates every interface variable with a
    descriptor set and binding, the push-constant block included, which
    Vulkan forbids (spirv-val rejects it). This removes them there.
  }];
}

#endif
