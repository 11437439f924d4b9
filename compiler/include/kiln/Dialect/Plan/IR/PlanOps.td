#ifndef KILN_PLAN_OPS
#define KILN_PLAN_OPS

include "mlir/IR/OpBase.td"
include "mlir/IR/BuiltinAttributes.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def Plan_Dialect : Dialect {
  let name = "kiln_plan";
  let cppNamespace = "::kiln::plan";
  let summary = "The host schedule the runtime executes";
  let description = [{
    A plan is a `func.func` marked `kiln_plan.entry` whose arguments are the
    graph inputs (contiguous memrefs). In a graph with symbolic sizes (its
    `kiln_graph.symbols` attribute names them), a `?` dim of a buffer is the
    expression given by the `dims` map of the op or argument (`kiln_plan.dims`)
    that makes it; the runtime evaluates them from the input shapes. It allocates buffers, creates
    views, launches kernels and returns buffers. It is serialized into the
    artifact; the runtime executes it without MLIR.
  }];
}

class Plan_Op<string mnemonic, list<Trait> traits = []>
    : Op<Plan_Dialect, mnemonic, traits>;

def Plan_AllocOp : Plan_Op<"alloc"> {
  let summary = "A new buffer from the runtime's allocator";
  let description = [{
    With `persistent`, the buffer outlives calls: the runtime allocates it
    once, `cached` launches write it, and every call reads it.
  }];
  let arguments = (ins OptionalAttr<AffineMapAttr>:$dims, UnitAttr:$persistent);
  let results = (outs Res<AnyMemRef, "", [MemAlloc]>:$buffer);
  let assemblyFormat = "attr-dict `:` type($buffer)";
  let hasVerifier = 1;
}

def Plan_ViewOp : Plan_Op<"view", [Pure]> {
  let summary = "Reinterpret a contiguous buffer's bytes with another shape";
  let arguments = (ins AnyMemRef:$source,
                       DefaultValuedAttr<I64Attr, "0">:$byte_offset,
                       OptionalAttr<AffineMapAttr>:$dims);
  let results = (outs AnyMemRef:$result);
  let assemblyFormat = "$source attr-dict `:` type($source) `to` type($result)";
  let hasVerifier = 1;
}

def Plan_LaunchOp : Plan_Op<"launch", [DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "Run a kernel over `workgroups` workgroups";
  let description = [{
    `bindings` are the kernel's inputs followed by its outputs. The kernel
    is a function `(index workgroup_id, index workgroup_count, memref...,
    index symbols...)`. With `symbolic_extent` and `symbolic_work` the count
    is computed at launch, clamp(work, 1, min(extent, workgroups)).

    A `cached` launch reads only graph inputs (the entry's arguments) and
    writes only `persistent` buffers; the runtime runs it again only when
    those inputs changed (their data pointers or version counters) since it
    last ran. Packed weights are made so.

    Once the kernel's code is generated, `kiln-resolve-workgroups` settles
    the count: a static launch gets the number of workgroups that receive
    rows; a symbolic one gets `alignment` (its row chunks are multiples of
    it) and `grid` (the kernel splits its columns too, so the count is not
    capped by the rows), from which the runtime computes the count.
  }];
  let arguments = (ins FlatSymbolRefAttr:$kernel, I64Attr:$workgroups,
                       I64Attr:$num_inputs,
                       Variadic<AnyMemRef>:$bindings,
                       OptionalAttr<AffineMapAttr>:$symbolic_extent,
                       OptionalAttr<AffineMapAttr>:$symbolic_work,
                       UnitAttr:$cached,
                       OptionalAttr<I64Attr>:$alignment,
                       UnitAttr:$grid);
  let assemblyFormat = [{
    $kernel `[` $workgroups `]` `(` $bindings `)` attr-dict `:` type($bindings)
  }];
  let hasVerifier = 1;
}

def Plan_CheckOp : Plan_Op<"check"> {
  let summary = "Fail the run with `message` unless the bool in `condition` is true";
  let description = [{
    Evaluated by the runtime once every launch before it has finished (so
    after the kernel that wrote `condition`). `kind` names the error the
    caller raises: "index" (IndexError) or "runtime" (RuntimeError).
  }];
  let arguments = (ins AnyStaticShapeMemRef:$condition, StrAttr:$message,
                       StrAttr:$kind);
  let assemblyFormat = "$condition attr-dict `:` type($condition)";
  let hasVerifier = 1;
}

def Plan_CollectiveOp : Plan_Op<"collective"> {
  let summary = "Run a collective of the graph's process group between launches";
  let description = [{
    Reads `input` and writes `output` (a buffer of its own) once the
    launches before it have run: `kind` is "all_reduce", "all_gather",
    "reduce_scatter" or "all_to_all" (gathers and scatters along dim 0),
    `reduce_op` "sum", "avg", "product", "min" or "max", over the
    `group_size` ranks of the process group named `group`. The runtime calls
    the communicator its caller gives (kiln/runtime/Communicator.h).
  }];
  let arguments = (ins AnyMemRef:$input, AnyMemRef:$output, StrAttr:$kind,
                       StrAttr:$reduce_op, StrAttr:$group, I64Attr:$group_size);
  let assemblyFormat = "$input `,` $output attr-dict `:` type($input) `,` type($output)";
  let hasVerifier = 1;
}

#endif // KILN_PLAN_OPS
