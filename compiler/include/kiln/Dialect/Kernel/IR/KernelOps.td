#ifndef KILN_KERNEL_OPS
#define KILN_KERNEL_OPS

include "mlir/IR/OpBase.td"
include "mlir/IR/BuiltinAttributes.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"
include "mlir/Interfaces/DestinationStyleOpInterface.td"

include "kiln/Dialect/Kernel/IR/KernelDialect.td"
include "kiln/Dialect/Kernel/IR/KernelAttrs.td"


class Kernel_Op<string mnemonic, list<Trait> traits = []>
    : Op<Kernel_Dialect, mnemonic, traits>;

def Kernel_KernelOp : Kernel_Op<"kernel", [IsolatedFromAbove,
    SingleBlockImplicitTerminator<"YieldOp">, RecursiveMemoryEffects]> {
  let summary = "A fused group of graph ops that runs as one launch";
  let arguments = (ins Variadic<AnyRankedTensor>:$inputs, StrAttr:$kernel_name,
                       I64Attr:$workgroup_extent,
                       OptionalAttr<AffineMapAttr>:$symbolic_extent);
  let results = (outs Variadic<AnyRankedTensor>:$results);
  let regions = (region SizedRegion<1>:$body);
  let extraClassDeclaration = [{
    /// The extent as an expression: a constant, or the symbolic size.
    ::mlir::AffineExpr getExtentExpr();
  }];
  let assemblyFormat = [{
    $kernel_name `extent` `(` custom<Extent>($workgroup_extent, $symbolic_extent) `)`
    (`ins` `(` $inputs^ `:` type($inputs) `)`)? attr-dict-with-keyword
    (`->` `(` type($results)^ `)`)? $body
  }];
  let hasVerifier = 1;
}

def Kernel_YieldOp : Kernel_Op<"yield", [Pure, Terminator, ReturnLike,
    HasParent<"KernelOp">]> {
  let summary = "The values a kernel produces";
  let arguments = (ins Variadic<AnyRankedTensor>:$values);
  let assemblyFormat = "($values^ `:` type($values))? attr-dict";
  let builders = [OpBuilder<(ins), [{ /* empty yield */ }]>];
}

def Kernel_AttentionOp : Kernel_Op<"attention", [DestinationStyleOpInterface, DeclareOpInterfaceMethods<MemoryEffectsOpInterface>]> {
  let summary = "Fused attention inside a kernel, on tensors or on buffers";
  let description = [{
    `kiln_graph.attention` (same operands, same semantics) in destination
    style, so that bufferization places its results in `init` and
    `logsumexp_init`: on tensors it returns them written, on buffers it
    writes them and returns nothing. The CPU target lowers the buffer form to
    the fused loops.
  }];
  let arguments = (ins AnyShaped:$q, AnyShaped:$k, AnyShaped:$v, Optional<AnyShaped>:$mask,
                       AnyShaped:$init, AnyShaped:$logsumexp_init, F64Attr:$scale,
                       BoolAttr:$is_causal,
                       DefaultValuedAttr<BoolAttr, "false">:$masked_rows_nan);
  let results = (outs Variadic<AnyRankedTensor>:$results);
  let assemblyFormat = [{
    $q `,` $k `,` $v (`mask` $mask^)? `into` $init `,` $logsumexp_init attr-dict `:`
    type($q) `,` type($k) `,` type($v) (`,` type($mask)^)? `into` type($init) `,`
    type($logsumexp_init) (`->` type($results)^)?
  }];
  let extraClassDeclaration = [{
    /// init and logsumexp_init, the last two operands.
    mlir::MutableOperandRange getDpsInitsMutable() {
      return mlir::MutableOperandRange(getOperation(), getOperation()->getNumOperands() - 2, 2);
    }
  }];
  let hasVerifier = 1;
}

def Kernel_SortOp : Kernel_Op<"sort", [DestinationStyleOpInterface,
    DeclareOpInterfaceMethods<MemoryEffectsOpInterface>]> {
  let summary = "A stable sort along `dim` inside a kernel, on tensors or on buffers";
  let description = [{
    `kiln_graph.sort` (same semantics) in destination style: bufferization
    places the sorted values in `values_init` and their indices along `dim`
    in `indices_init` (i64). On buffers, `kiln-lower-sort` writes the input
    and the positions there and sorts both in place with a bitonic network
    whose compare-exchanges order (value, index): ascending, or largest
    first with `descending`, NaN as the largest value, integers unsigned
    with `kiln_kernel.unsigned` (and for i1). With `k` (a top-k), only the
    first k positions along `dim` need to be right: a target may select
    them without sorting the rest.
  }];
  let arguments = (ins AnyShaped:$input, AnyShaped:$values_init, AnyShaped:$indices_init,
                       I64Attr:$dim, DefaultValuedAttr<BoolAttr, "false">:$descending,
                       OptionalAttr<I64Attr>:$k);
  let results = (outs Variadic<AnyRankedTensor>:$results);
  let assemblyFormat = [{
    $input `into` $values_init `,` $indices_init attr-dict `:` type($input) `into`
    type($values_init) `,` type($indices_init) (`->` type($results)^)?
  }];
  let extraClassDeclaration = [{
    /// values_init and indices_init, the last two operands.
    mlir::MutableOperandRange getDpsInitsMutable() {
      return mlir::MutableOperandRange(getOperation(), 1, 2);
    }
  }];
  let hasVerifier = 1;
}

def Kernel_Conv2dOp : Kernel_Op<"conv2d", [AttrSizedOperandSegments,
    DestinationStyleOpInterface, DeclareOpInterfaceMethods<MemoryEffectsOpInterface>]> {
  let summary = "Direct 2-D convolution inside a kernel, on tensors or on buffers";
  let description = [{
    `kiln_graph.conv2d` (same operands, same semantics) in destination style,
    as `kiln_kernel.attention`: bufferization places the result in `init`, and
    the CPU target lowers the buffer form (kiln-lower-convolution).

    The optional `epilogue` is an elementwise computation applied to each
    result element before it is stored, as a linalg.generic body: its block
    takes the convolution's value and one element of each `epilogue_inputs`
    operand, read at `epilogue_maps` of the output index (n, o, y, x), and
    yields the result (kiln_kernel.epilogue_yield). Batch norm, activations
    and residual additions after a convolution become its epilogue
    (kiln-fuse-elementwise), computed in registers.
  }];
  let arguments = (ins AnyShaped:$input, AnyShaped:$weight, Optional<AnyShaped>:$bias,
                       AnyShaped:$init, Variadic<AnyShaped>:$epilogue_inputs,
                       DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$dilations,
                       OptionalAttr<AffineMapArrayAttr>:$epilogue_maps,
                       DefaultValuedAttr<I64Attr, "1">:$groups);
  let results = (outs Variadic<AnyRankedTensor>:$results);
  let regions = (region AnyRegion:$epilogue);
  let assemblyFormat = [{
    $input `,` $weight (`bias` $bias^)? (`epilogue` `(` $epilogue_inputs^ `:` type($epilogue_inputs) `)`)?
    `into` $init attr-dict `:` type($input) `,` type($weight) (`,` type($bias)^)? `into` type($init)
    (`->` type($results)^)? ($epilogue^)?
  }];
  let extraClassDeclaration = [{
    mlir::MutableOperandRange getDpsInitsMutable() { return getInitMutable(); }
  }];
  let hasVerifier = 1;
}

def Kernel_EpilogueYieldOp : Kernel_Op<"epilogue_yield", [Pure, Terminator, ReturnLike,
    HasParent<"Conv2dOp">]> {
  let summary = "The value a convolution's epilogue stores";
  let arguments = (ins AnyType:$value);
  let assemblyFormat = "$value attr-dict `:` type($value)";
}

#endif // KILN_KERNEL_OPS
