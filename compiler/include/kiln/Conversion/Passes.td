#ifndef KILN_CONVERSION_PASSES
#define KILN_CONVERSION_PASSES

include "mlir/Pass/PassBase.td"

def ConvertGraphToLinalgPass : Pass<"convert-kiln-graph-to-linalg"> {
  let summary = "Lower kiln_graph ops to linalg, tensor and arith on tensors";
  let description = [{
    Elementwise ops become one `linalg.generic` each (broadcasts in the
    indexing maps), reductions become generics with reduction iterators,
    softmax and layer norm become their row reductions plus a pointwise
    generic that recomputes cheap terms instead of storing them, matmul
    becomes a generic iterating (i, k, j) so the innermost loop is unit-stride
    over both B and C, and data-movement ops become tensor ops or generics.
  }];
  let dependentDialects = ["mlir::linalg::LinalgDialect", "kiln::kernel::KernelDialect",
                           "mlir::tensor::TensorDialect",
                           "mlir::arith::ArithDialect",
                           "mlir::math::MathDialect",
                           "mlir::scf::SCFDialect"];
}

def OutlineKernelsPass : Pass<"kiln-outline-kernels", "mlir::ModuleOp"> {
  let summary = "Turn kiln_kernel.kernel ops into kernel functions and a kiln_plan host plan";
  let description = [{
    Each kernel becomes `func.func private @name(%wg: index, %wgc: index,
    inputs..., outputs...)` on memrefs (its body still on tensors, bridged with
    bufferization.to_tensor / materialize_in_destination), and the graph
    function becomes the plan: allocs for kernel results, launches with a
    workgroup count sized to the kernel's work, views for reshapes between
    kernels, and the returned buffers.

    Graphs with symbolic sizes (`kiln_graph.symbols`) keep `?` dims in their
    buffers, each described by a `dims` map over the symbols (on allocs,
    views and as the `kiln_plan.dims` argument attribute); their kernels take
    the symbol values as trailing `index` arguments, receive symbolic buffers
    as `memref<1xT>` base pointers reinterpreted with the computed sizes, and
    are launched with a workgroup count the runtime computes from the
    symbolic extent and work.
  }];
  let options = [
    Option<"minWorkPerWorkgroup", "min-work-per-workgroup", "int64_t",
           /*default=*/"262144",
           "Smallest amount of work (elements, plus multiply-adds / 16) worth a workgroup">,
    Option<"maxWorkgroups", "max-workgroups", "int64_t", /*default=*/"64",
           "Upper bound on workgroups per launch">,
  ];
  let dependentDialects = ["kiln::plan::PlanDialect",
                           "mlir::arith::ArithDialect",
                           "mlir::bufferization::BufferizationDialect",
                           "mlir::memref::MemRefDialect",
                           "mlir::tensor::TensorDialect"];
}

def WriteInputsInPlacePass : Pass<"kiln-write-inputs-in-place", "mlir::ModuleOp"> {
  let summary = "Compute a graph's new values of its inputs in the inputs' own buffers";
  let description = [{
    For each [result, input] pair of the plan's `kiln_graph.input_writes`
    (the result is the input's new value), binds the input's buffer in place
    of the result's, when that is safe: the result is a buffer of the input's
    type that one launch writes; that launch reads the input only through
    operands its kernel's `kiln_kernel.in_place_operands` (kiln-mark-in-place-operands)
    pairs with the result's; no later launch, view or returned value reads
    the input; and no cached launch reads it. The plan then returns the input
    itself for that result, and the caller finds nothing to copy back. Pairs
    that are not safe keep their own buffer.
  }];
}

def ResolveWorkgroupsPass : Pass<"kiln-resolve-workgroups", "mlir::ModuleOp"> {
  let summary = "Settle each launch's workgroup count from its kernel's distribution";
  let description = [{
    Runs on the host plan once its kernel functions carry what code
    generation decided (`kiln_kernel.workgroup_alignment`, and
    `kiln_kernel.column_extent` for a kernel that splits its columns; the
    compiler copies them from the kernels it lowered). Chunks of rows are
    aligned, so the plan's count can exceed the chunks there are: a static
    launch's count becomes the number of workgroups that get rows (one for a
    kernel that splits nothing; unchanged for a column-splitting kernel,
    whose grid is computed from it). A symbolic launch gets the kernel's
    `alignment` and `grid`, from which the runtime computes its count
    (clamp(work, 1, min(extent, workgroups)), lowered the same way).
  }];
  let dependentDialects = ["kiln::plan::PlanDialect"];
}

#endif // KILN_CONVERSION_PASSES
