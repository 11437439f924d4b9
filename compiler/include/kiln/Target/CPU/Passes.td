#ifndef KILN_TARGET_CPU_PASSES
#define KILN_TARGET_CPU_PASSES

include "mlir/Pass/PassBase.td"

def ApproximateMathPass : Pass<"kiln-approximate-math"> {
  let summary = "Replace transcendental math ops with inline polynomials";
  let description = [{
    exp, log, tanh, erf, ... become arithmetic the LLVM loop vectorizer can
    widen (a libm call per element cannot be vectorized). Accuracy is within
    a few ulp of libm for float32.
  }];
  let dependentDialects = ["mlir::math::MathDialect", "mlir::arith::ArithDialect",
                           "mlir::vector::VectorDialect"];
}

def EmitKernelABIPass : Pass<"kiln-emit-kernel-abi", "mlir::ModuleOp"> {
  let summary = "Wrap each kernel in the runtime's C ABI";
  let description = [{
    Runs on the LLVM dialect. Each kernel `@k(i64, i64, ptr...)` (bare-pointer
    memref convention) is renamed `@k_body`, made internal, and called from a
    new exported `void @k(i64 workgroup_id, i64 workgroup_count, ptr
    bindings)` that loads the binding pointers from the array.
  }];
  let dependentDialects = ["mlir::LLVM::LLVMDialect"];
}

#endif // KILN_TARGET_CPU_PASSES
