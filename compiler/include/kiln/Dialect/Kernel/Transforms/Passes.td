#ifndef KILN_KERNEL_PASSES
#define KILN_KERNEL_PASSES

include "mlir/Pass/PassBase.td"

def FormKernelsPass : Pass<"kiln-form-kernels", "mlir::func::FuncOp"> {
  let summary = "Fuse kiln_graph ops into kiln_kernel.kernel launches";
  let description = [{
    Greedy producer-consumer fusion in program order. Every kernel has a
    leading parallel dimension of size `workgroup_extent` that all its ops
    share, and an op may consume a value produced inside the same kernel only
    when it reads that value at the same leading index ("aligned"): then each
    workgroup can run the whole kernel on its slice of rows with no
    communication. Pointwise chains, broadcasts, reductions over inner dims,
    softmax and layer norm rows and matmul epilogues fuse; a matmul always
    starts a new kernel; reductions over the leading dim, and reshapes that
    change it, end one. Reshapes between kernels become plan views (free).
  }];
  let dependentDialects = ["kiln::kernel::KernelDialect", "kiln::graph::GraphDialect"];
}

def OverlapCollectivesPass : Pass<"kiln-overlap-collectives", "mlir::func::FuncOp"> {
  let summary = "Order kernels to run while the function's collectives are in flight";
  let description = [{
    A list schedule of the kernel-level function (after kiln-form-kernels):
    each `kiln_graph.collective` as soon as its operand is ready, then, in
    program order, the units that do not use the memory of a collective in
    flight before one that does. The runtime starts a collective at its
    place and waits for it before the first launch that uses its memory, so
    the units moved in between overlap it. Collectives keep their relative
    order; ops with side effects other than kernels stay between their
    neighbours; a function without collectives is left unchanged.
  }];
  let dependentDialects = ["kiln::kernel::KernelDialect", "kiln::graph::GraphDialect"];
}

def RecognizeAttentionPass : Pass<"kiln-recognize-attention", "mlir::func::FuncOp"> {
  let summary = "Attention written out as ops becomes kiln_graph.attention";
  let description = [{
    softmax(q @ kᵀ · scale + mask) @ v, as models write it by hand (the heads
    folded into the batch of two matmuls, k read transposed or permuted, the
    scale a constant multiplier or divisor, the additive mask broadcast to
    the scores), becomes one `kiln_graph.attention` (with `masked_rows_nan`,
    so a row whose keys are all masked gives NaN, as softmax does). The
    scores and probabilities must have no other use. Run after canonicalize
    and before it again: the ops the match replaces are erased, the reshapes
    and permutes left without users are dead.
  }];
  let dependentDialects = ["kiln::graph::GraphDialect"];
}

def WidenHalfPrecisionPass : Pass<"kiln-widen-half-precision", "mlir::func::FuncOp"> {
  let summary = "Compute float16 and bfloat16 ops in float32, rounding each result once";
  let description = [{
    Every kiln_graph op that computes on float16 or bfloat16 tensors takes
    them converted to float32 and converts its half results back, so the
    arithmetic (and the accumulation of matmuls, reductions, softmax and
    norms) is float32 and each op's result rounds once to its dtype, as in
    PyTorch's CPU kernels. Ops located at the same FX node (one ATen op the
    importer spelled as several, such as addmm's matmul and add) pass each
    other float32, so that op too rounds once. Ops that only move elements (reshape, permute,
    expand, slice, concat, pad, index, gather, embedding, clone, where,
    scatter without a reduction) stay in half precision. A convert between
    float16 and bfloat16 goes through float32. Run before kernels form: the
    converts fuse into the kernels around them.

    With half-matmul-operands (GPU targets), a matmul keeps its half
    operands and gives a float32 result: its kernel reads the halves
    (tensor cores multiply them) and accumulates in float32, which rounds
    the same as widening them first.
  }];
  let options = [
    Option<"halfMatmulOperands", "half-matmul-operands", "bool", /*default=*/"false",
           "Matmuls take float16 and bfloat16 operands as they are">,
  ];
  let dependentDialects = ["kiln::graph::GraphDialect"];
}

def MarkInPlaceOperandsPass
    : Pass<"kiln-mark-in-place-operands", "mlir::func::FuncOp"> {
  let summary = "Find the kernel inputs an output may overwrite as it is computed";
  let description = [{
    Runs on kernel functions (`kiln_kernel.kernel`) in linalg on tensors, before
    bufferization. An input `p` and an output `q` of the same type are an
    in-place pair when the kernel reads `p` only at the index it writes `q`
    at, and no later than it writes `q`: every op reading `p` is an
    all-parallel `linalg.generic` reading it and writing its results through
    identity maps over `p`'s shape, at or before the generic whose result is
    written into `q` (or `p` is copied into `q` as it is). Then each
    workgroup reads each element of `p` before it writes the same element of
    `q`, and the plan may bind one buffer to both (a graph input that the
    graph overwrites, kiln-write-inputs-in-place). The pairs are recorded as
    `kiln_kernel.in_place_operands`, binding indices [p0, q0, p1, q1, ...].
  }];
}

def DistributeWorkgroupsPass
    : Pass<"kiln-distribute-workgroups", "mlir::func::FuncOp"> {
  let summary = "Split each kernel's outermost loops across its workgroups";
  let description = [{
    Runs on kernel functions (`kiln_kernel.kernel`) after linalg became loops. Every
    top-level `scf.for` iterates the kernel's leading dimension
    [0, workgroup_extent); each becomes the workgroup's contiguous chunk,
    computed from the function's first two arguments (workgroup id, count).
  }];
  let dependentDialects = ["mlir::arith::ArithDialect", "mlir::scf::SCFDialect"];
}

def LowerSortPass : Pass<"kiln-lower-sort", "mlir::func::FuncOp"> {
  let summary = "Lower kiln_kernel.sort on buffers to a merge sort or a bitonic network";
  let description = [{
    Both order (value, index) pairs, a total order, so either gives the
    stable sort.

    By default (a CPU core), where the op sorts a dim after the first, a
    loop over the first dim (the rows the workgroups split) encloses it
    all, and each row is sorted alone by a bottom-up merge
    sort: copied with its positions into a run buffer, merged in ceil(log2
    n) passes of runs of 1, 2, 4, ... between two run buffers (a branchless
    merge: the cursors advance by the comparison), copied into the outputs.
    O(n log n) work; the four run buffers are the kernel's temporaries.

    With `parallel-steps` (a GPU), the input and the positions are written
    into the values and indices buffers, which a bitonic network sorts in
    place: for each stage t < ceil(log2 n), a step of compare-exchanges
    between mirrored positions of each block of 2^(t+1) ("flip") and steps
    between positions 2^s apart for s = t-1 .. 0. Pairs whose second
    position is past n are skipped, as if the row were padded to a power of
    two with values after every other, which no step moves. The copy and
    each step are scf.parallel loops marked `kiln_kernel.writes_apart` over
    every row's pairs at once (a GPU target spreads each over its threads,
    with a barrier after it); the stage and step loops run in order around
    them, the stage loop marked `kiln_kernel.steps_over_rows` where the
    steps' first dimension is the rows the workgroups split. O(n log^2 n)
    work in log^2 n steps.
  }];
  let options = [Option<"parallelSteps", "parallel-steps", "bool", "false",
                        "A bitonic network of parallel steps instead of a merge sort per row">];
  let dependentDialects = ["mlir::arith::ArithDialect", "mlir::math::MathDialect",
                           "mlir::memref::MemRefDialect", "mlir::scf::SCFDialect"];
}

def PromoteAccumulatorsPass
    : Pass<"kiln-promote-accumulators", "mlir::func::FuncOp"> {
  let summary = "Keep loop-carried values of kernel-local buffers in registers";
  let description = [{
    Runs after linalg became loops. A reduction's loop loads its accumulator
    from a buffer and stores it back on every iteration; when the buffer is
    a memref.alloc or alloca that no view and no other op of the loop
    touches, the load moves before the loop, the store after it, and the
    value is carried by the loop (an iter_arg). LLVM then sees a plain
    reduction and vectorizes it: it cannot prove on its own that two such
    buffers (a layer norm's sum and sum of squares, aligned through integer
    arithmetic) do not alias.
  }];
  let dependentDialects = ["mlir::memref::MemRefDialect", "mlir::scf::SCFDialect"];
}

def VersionInPlacePass : Pass<"kiln-version-in-place", "mlir::func::FuncOp"> {
  let summary = "A second body for a kernel called with an output that is an input";
  let description = [{
    Runs on kernel functions (`kiln_kernel.kernel`) after linalg became
    loops. An input and an output of the same memref type may be one buffer
    at run time: an eager in-place op (`x.mul_(2)`, an optimizer's
    `_foreach_addcdiv_`), or a plan that binds a graph input to an output
    (`kiln_kernel.in_place_operands`). LLVM cannot tell, so it vectorizes the
    loop behind a run-time check that the two do not overlap, and a call in
    place takes the scalar loop. For each such pair (the marked pairs; in a
    kernel with symbolic sizes also an argument loaded in the same block as
    another of its type is stored), the body is wrapped in `scf.if` on the two
    aligned pointers being equal: the then-branch is a copy of the body
    reading the output argument in place of the input, which is the same
    memory, so the loads and stores share a base pointer and LLVM sees that
    each element is read before it is written. At most three pairs a kernel,
    tried in order.
  }];
  let dependentDialects = ["mlir::arith::ArithDialect", "mlir::memref::MemRefDialect",
                           "mlir::scf::SCFDialect"];
}

def StackTemporariesPass : Pass<"kiln-stack-temporaries", "mlir::func::FuncOp"> {
  let summary = "Put a kernel's small temporary buffers on the stack";
  let description = [{
    Runs on kernel functions right after bufferization, before deallocations
    are placed. The `memref.alloc`s of the function's entry block with static
    shapes (row statistics, small tiles) become `memref.alloca`s while their
    sizes sum to at most `max-bytes`, so a launch calls malloc and free only
    for large temporaries, and LLVM sees memory that no other pointer can
    alias (it may keep such buffers in registers). Allocations inside loops
    and dynamically sized ones stay on the heap.
  }];
  let options = [Option<"maxBytes", "max-bytes", "int64_t", "32768",
                        "Most bytes of stack a kernel's temporaries may take">];
  let dependentDialects = ["mlir::memref::MemRefDialect"];
}

def BufferizeKernelsPass : Pass<"kiln-bufferize-kernels", "mlir::ModuleOp"> {
  let summary = "One-Shot Bufferize kernel functions into their output buffers";
  let description = [{
    Eliminates tensor.empty ops that feed a kernel output so results are
    computed in place in the output buffers, then bufferizes. Copies become
    `linalg.copy` so that they turn into loops like every other op.
  }];
  let dependentDialects = ["mlir::bufferization::BufferizationDialect",
                           "mlir::memref::MemRefDialect",
                           "mlir::linalg::LinalgDialect"];
}

def FuseElementwisePass : Pass<"kiln-fuse-elementwise", "mlir::func::FuncOp"> {
  let summary = "Fuse elementwise linalg producers into their consumers";
  let description = [{
    Upstream elementwise fusion without reshape propagation: propagating
    reshapes through generics could change a kernel's outermost loop, which
    workgroup distribution relies on. Then the pointwise generic reading a
    kiln_kernel.conv2d's result becomes the convolution's epilogue.
  }];
  let dependentDialects = ["mlir::linalg::LinalgDialect", "mlir::tensor::TensorDialect",
                           "kiln::kernel::KernelDialect"];
}

def ExtractKernelsPass : Pass<"kiln-extract-kernels", "mlir::ModuleOp"> {
  let summary = "Keep only the kernel functions of a module";
  let description = [{
    Erases every function that is not a kernel (`kiln_kernel.kernel`), such as the
    host plan, so that kernel code generation can run on the output of
    kiln-outline-kernels (a dump's 02-plan.mlir) directly.
  }];
}

#endif // KILN_KERNEL_PASSES
