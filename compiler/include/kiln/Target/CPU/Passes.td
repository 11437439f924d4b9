#ifndef KILN_TARGET_CPU_PASSES
#define KILN_TARGET_CPU_PASSES

include "mlir/Pass/PassBase.td"

def ApproximateMathPass : Pass<"kiln-approximate-math"> {
  let summary = "Replace transcendental math ops with inline polynomials";
  let description = [{
    exp, log, tanh, erf, ... become arithmetic the LLVM loop vectorizer can
    widen (a libm call per element cannot be vectorized). Accuracy is within
    a few ulp of libm for float32. The float64 math ops that LLVM has no
    intrinsic for (erf) become calls to the C library's function, which the
    kernel library resolves when it is loaded.
  }];
  let dependentDialects = ["mlir::math::MathDialect", "mlir::arith::ArithDialect",
                           "mlir::vector::VectorDialect", "mlir::func::FuncDialect"];
  let options = [
    Option<"libmCalls", "libm-calls", "bool", /*default=*/"true",
           "Call the C library for the functions above (false where kernels cannot call "
           "it, on GPUs: atan2 takes the polynomial, asinh, acosh and atanh go through "
           "log1p, asin and acos stay math ops for the target's own instructions)">,
  ];
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

def VectorizeMatmulPass : Pass<"kiln-vectorize-matmul", "mlir::func::FuncOp"> {
  let summary = "Register-blocked vector microkernels for matmul generics";
  let description = [{
    Runs on bufferized kernels, before linalg becomes loops. Vector widths
    and tiles come from the module's `kiln_kernel.target` (TileSizes.h). Each f32/f64
    matmul generic (marked `kiln_kernel.contraction` by the graph lowering) becomes
    a loop over MR-row blocks of C whose body keeps an MR x NR tile of C in
    vector registers across the whole k loop, with vector FMAs (B in [K, N]:
    broadcast A, load rows of B) or vector dot products (B given as [N, K]).
    Ragged rows are a shorter tile (or stream B's rows through C's when the
    rows are few or unknown); ragged columns are tiles one vector wide, then
    dot products. Every top-level loop still iterates the kernel's leading
    dimension. When the kernel is just the matmul (2-D, static N) and a
    pointwise epilogue over the same [M, N], the pass marks it with
    `kiln_kernel.column_extent` and `kiln_kernel.column_alignment`, and marks column loops
    nested deeper than directly inside a top-level loop `kiln_kernel.column_loop`:
    kiln-distribute-workgroups then splits the columns as well as the rows.
  }];
  let dependentDialects = ["mlir::vector::VectorDialect", "mlir::scf::SCFDialect",
                           "mlir::memref::MemRefDialect", "mlir::arith::ArithDialect"];
}

def PackWeightsPass : Pass<"kiln-pack-weights", "mlir::ModuleOp"> {
  let summary = "Pack parameter matmul operands into panels once, not per call";
  let description = [{
    Runs on the host plan and its kernels (still graph ops). Where a kernel's
    2-D f32 matmul takes its right-hand side straight from a graph input
    marked `kiln_graph.parameter` (a module's weight, [K, N] or, with
    `transpose_rhs`, [N, K]), a new kernel copies that weight into the
    microkernel's panel layout, [N / NR, K, NR] with NR the width of the
    target's broadcast tile (TileSizes.h: two vectors; the columns past the
    last full panel stay where they are): an `alloc
    {persistent}` written by a `launch {cached}` at the plan's start, which
    the runtime re-runs only when the weight changes (a new tensor, or an
    in-place update that bumps its version counter). The matmul kernel takes
    the panels as one more input, marked `#kiln_kernel.packed_rhs` with the
    panel width, and reads B's full panels from there (kiln-vectorize-matmul,
    which fails if its tile is not that wide): no per-call transpose or
    copy of the weight. A weight used by several kernels is packed once.

    Any other launch that reads only parameters (batch norm's per-channel
    scale and shift computed from its weight, bias and running statistics)
    is cached the same way: its buffers become persistent, unless one is (a
    view of) a graph output.
  }];
  let dependentDialects = ["mlir::bufferization::BufferizationDialect"];
}

def LowerAttentionPass : Pass<"kiln-lower-attention", "mlir::func::FuncOp"> {
  let summary = "Fused attention loops: online softmax over tiles of keys";
  let description = [{
    Runs on bufferized kernels. Each `kiln_kernel.attention` becomes one loop
    over the B * H (batch, head) pairs, the kernel's workgroup extent. For
    each block of query rows, it walks the keys in tiles: scores of the tile
    (a transposed matmul microkernel, tiled for the module's
    `kiln_kernel.target`, into a small stack buffer), the running
    row maximum and sum rescaled as in FlashAttention, and the accumulator
    updated with the tile's probabilities times the values (a second
    microkernel). The [L, S] scores are never stored; causal attention skips
    the tiles past each block's last query row.
  }];
  let dependentDialects = ["mlir::vector::VectorDialect", "mlir::scf::SCFDialect",
                           "mlir::memref::MemRefDialect", "mlir::arith::ArithDialect",
                           "mlir::math::MathDialect", "mlir::linalg::LinalgDialect"];
}

def LowerConvolutionPass : Pass<"kiln-lower-convolution", "mlir::func::FuncOp"> {
  let summary = "Direct convolution loops, vectorized along output rows";
  let description = [{
    Runs on bufferized kernels. Each `kiln_kernel.conv2d` becomes one loop
    over the N * OH output rows, the kernel's workgroup extent. Vectors are
    as wide as the module's `kiln_kernel.target` says. In a row,
    tiles of 6 output channels by two vectors of columns stay in registers
    across the reduction over input channels and kernel taps, which reads
    the padded input in place (vector loads, or gathers for strides > 1):
    no im2col buffer. Ragged columns are masked. The op's epilogue (batch
    norm, activation, residual add: scalar arith and math ops) is recreated
    on vectors and applied to each accumulator before its store; a kernel
    that holds another loop nest besides the convolution is refused.
  }];
  let dependentDialects = ["mlir::vector::VectorDialect", "mlir::scf::SCFDialect",
                           "mlir::memref::MemRefDialect", "mlir::arith::ArithDialect"];
}

#endif // KILN_TARGET_CPU_PASSES
