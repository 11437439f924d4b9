#ifndef KILN_GRAPH_OPS
#define KILN_GRAPH_OPS

include "kiln/Dialect/Graph/IR/GraphDialect.td"
include "kiln/Dialect/Graph/IR/GraphEnums.td"
include "kiln/Dialect/Graph/IR/GraphInterfaces.td"
include "mlir/IR/BuiltinAttributes.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"

//===----------------------------------------------------------------------===//
// Constants
//===----------------------------------------------------------------------===//

def Graph_ConstantOp : Graph_Op<"constant", [ConstantLike, Pure,
    AllTypesMatch<["value", "result"]>]> {
  let summary = "A constant tensor (aten.full, scalar operands, tensor literals)";
  let arguments = (ins ElementsAttr:$value);
  let results = (outs Graph_Tensor:$result);
  let assemblyFormat = "attr-dict $value";
  let hasFolder = 1;
}

def Graph_SizeOp : Graph_Op<"size", [Pure]> {
  let summary = "A size of the graph as a value: a 0-d integer or float tensor";
  let description = [{
    `size` is an expression over the graph's size symbols (an affine map with
    no dims and one result), as in symbolic tensor types. It is how a SymInt
    becomes a value: the bound of an index check on a symbolic dim, or a
    SymInt used as a scalar operand, in the element type it is used in. Like
    a constant, it is rematerialized in every kernel that reads it (kernels
    take the size symbols as arguments).

      %n = kiln_graph.size affine_map<()[s0, s1] -> (s0 * s1)> : tensor<i64>
      %f = kiln_graph.size affine_map<()[s0] -> (s0)> : tensor<f32>
  }];
  let arguments = (ins AffineMapAttr:$size);
  let results = (outs 0DTensorOf<[I64, I32, F32, F64]>:$result);
  let assemblyFormat = "$size attr-dict `:` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Elementwise ops (NumPy broadcasting between operands)
//===----------------------------------------------------------------------===//

// The Elementwise trait verifies broadcasting and, unless another trait below
// says otherwise, that every operand has the result's element type.
class Graph_ElementwiseOp<string mnemonic, list<Trait> traits = []>
    : Graph_Op<mnemonic, !listconcat(traits, [Pure, Graph_Elementwise,
                                              Graph_FusableOpInterface])>;

class Graph_UnaryOp<string mnemonic, list<Trait> traits = []>
    : Graph_ElementwiseOp<mnemonic, traits> {
  let arguments = (ins Graph_Tensor:$input);
  let results = (outs Graph_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
}

class Graph_BinaryOp<string mnemonic, list<Trait> traits = []>
    : Graph_ElementwiseOp<mnemonic, traits> {
  let arguments = (ins Graph_Tensor:$lhs, Graph_Tensor:$rhs);
  let results = (outs Graph_Tensor:$result);
  let assemblyFormat =
      "$lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)";
}

def Graph_AddOp : Graph_BinaryOp<"add", [Commutative]> {
  let summary = "aten.add (alpha folded in by the importer)";
  let hasFolder = 1;
}
def Graph_SubOp : Graph_BinaryOp<"sub"> { let summary = "aten.sub"; let hasFolder = 1; }
def Graph_MulOp : Graph_BinaryOp<"mul", [Commutative]> {
  let summary = "aten.mul";
  let hasFolder = 1;
}
def Graph_DivOp : Graph_BinaryOp<"div", [Graph_FloatOnly]> {
  let summary = "aten.div (true division; integer division is a float op after promotion)";
}
def Graph_PowOp : Graph_BinaryOp<"pow"> { let summary = "aten.pow"; }
def Graph_MaximumOp : Graph_BinaryOp<"maximum", [Commutative]> {
  let summary = "aten.maximum (NaN-propagating; clamp's lower bound)";
}
def Graph_MinimumOp : Graph_BinaryOp<"minimum", [Commutative]> {
  let summary = "aten.minimum (NaN-propagating; clamp's upper bound)";
}

def Graph_FmodOp : Graph_BinaryOp<"fmod"> {
  let summary = "aten.fmod: the remainder of truncated division (sign of lhs)";
  let description = [{
    An integer divisor of 0 gives 0 here; the importer adds an assert that
    raises ATen's error for it, so no kernel ever traps.
  }];
}
def Graph_RemainderOp : Graph_BinaryOp<"remainder"> {
  let summary = "aten.remainder: the remainder of floored division (sign of rhs)";
  let description = [{ As fmod for an integer divisor of 0. }];
}

def Graph_Atan2Op : Graph_BinaryOp<"atan2", [Graph_FloatOnly]> {
  let summary = "aten.atan2: the angle of the point (rhs, lhs)";
}
def Graph_DivRoundOp : Graph_BinaryOp<"div_round"> {
  let summary = "aten.div with rounding_mode trunc or floor";
  let description = [{
    The quotient rounded toward zero (`trunc`) or toward negative infinity
    (`floor`, Python's `//`). Floats follow ATen: trunc(lhs / rhs), and for
    floor the exact `(lhs - fmod(lhs, rhs)) / rhs` rounded as ATen rounds it.
    An integer divisor of 0 gives 0 here (the importer's assert raises
    ATen's error first); INT_MIN divided by -1 wraps, as in ATen.
  }];
  let arguments = (ins Graph_Tensor:$lhs, Graph_Tensor:$rhs, Graph_RoundingModeAttr:$rounding_mode);
}

class Graph_BitwiseOp<string mnemonic> : Graph_BinaryOp<mnemonic, [Commutative, Graph_IntegerOnly]> {
  let summary = "aten.bitwise_" # mnemonic # " on integers (logical on bool)";
}
def Graph_BitwiseAndOp : Graph_BitwiseOp<"bitwise_and">;
def Graph_BitwiseOrOp : Graph_BitwiseOp<"bitwise_or">;
def Graph_BitwiseXorOp : Graph_BitwiseOp<"bitwise_xor">;

class Graph_CompareOp<string mnemonic> : Graph_BinaryOp<mnemonic, [Graph_Comparison]> {
  let summary = "aten." # mnemonic # " producing a bool (i1) tensor";
}
def Graph_EqOp : Graph_CompareOp<"eq">;
def Graph_NeOp : Graph_CompareOp<"ne">;
def Graph_LtOp : Graph_CompareOp<"lt">;
def Graph_LeOp : Graph_CompareOp<"le">;
def Graph_GtOp : Graph_CompareOp<"gt">;
def Graph_GeOp : Graph_CompareOp<"ge">;

def Graph_WhereOp : Graph_ElementwiseOp<"where", [Graph_OwnElementTypes]> {
  let hasVerifier = 1;
  let summary = "aten.where.self: select between two tensors by a bool tensor";
  let arguments = (ins Graph_Tensor:$condition, Graph_Tensor:$on_true,
                       Graph_Tensor:$on_false);
  let results = (outs Graph_Tensor:$result);
  let assemblyFormat = [{
    $condition `,` $on_true `,` $on_false attr-dict `:` type($condition) `,`
    type($on_true) `,` type($on_false) `->` type($result)
  }];
}

def Graph_NegOp : Graph_UnaryOp<"neg"> { let summary = "aten.neg"; }
def Graph_BitwiseNotOp : Graph_UnaryOp<"bitwise_not", [Graph_IntegerOnly]> {
  let summary = "aten.bitwise_not (logical not on bool)";
}
def Graph_ReluOp : Graph_UnaryOp<"relu"> { let summary = "aten.relu"; }
def Graph_TanhOp : Graph_UnaryOp<"tanh", [Graph_FloatOnly]> { let summary = "aten.tanh"; }
def Graph_ExpOp : Graph_UnaryOp<"exp", [Graph_FloatOnly]> { let summary = "aten.exp"; }
def Graph_LogOp : Graph_UnaryOp<"log", [Graph_FloatOnly]> { let summary = "aten.log"; }
def Graph_SqrtOp : Graph_UnaryOp<"sqrt", [Graph_FloatOnly]> { let summary = "aten.sqrt"; }
def Graph_RsqrtOp : Graph_UnaryOp<"rsqrt", [Graph_FloatOnly]> { let summary = "aten.rsqrt"; }
def Graph_SigmoidOp : Graph_UnaryOp<"sigmoid", [Graph_FloatOnly]> { let summary = "aten.sigmoid"; }
def Graph_AbsOp : Graph_UnaryOp<"abs"> { let summary = "aten.abs"; }
def Graph_SinOp : Graph_UnaryOp<"sin", [Graph_FloatOnly]> { let summary = "aten.sin"; }
def Graph_CosOp : Graph_UnaryOp<"cos", [Graph_FloatOnly]> { let summary = "aten.cos"; }
def Graph_FloorOp : Graph_UnaryOp<"floor", [Graph_FloatOnly]> { let summary = "aten.floor"; }
def Graph_CeilOp : Graph_UnaryOp<"ceil", [Graph_FloatOnly]> { let summary = "aten.ceil"; }
def Graph_TruncOp : Graph_UnaryOp<"trunc", [Graph_FloatOnly]> { let summary = "aten.trunc"; }
def Graph_SignOp : Graph_UnaryOp<"sign"> { let summary = "aten.sign ((x > 0) - (x < 0); NaN gives 0)"; }
def Graph_FracOp : Graph_UnaryOp<"frac", [Graph_FloatOnly]> { let summary = "aten.frac: x - trunc(x)"; }
def Graph_Exp2Op : Graph_UnaryOp<"exp2", [Graph_FloatOnly]> { let summary = "aten.exp2"; }
def Graph_Expm1Op : Graph_UnaryOp<"expm1", [Graph_FloatOnly]> { let summary = "aten.expm1"; }
def Graph_Log1pOp : Graph_UnaryOp<"log1p", [Graph_FloatOnly]> { let summary = "aten.log1p"; }
def Graph_Log2Op : Graph_UnaryOp<"log2", [Graph_FloatOnly]> { let summary = "aten.log2"; }
def Graph_Log10Op : Graph_UnaryOp<"log10", [Graph_FloatOnly]> { let summary = "aten.log10"; }
def Graph_ErfOp : Graph_UnaryOp<"erf", [Graph_FloatOnly]> { let summary = "aten.erf"; }
def Graph_TanOp : Graph_UnaryOp<"tan", [Graph_FloatOnly]> { let summary = "aten.tan"; }
def Graph_AtanOp : Graph_UnaryOp<"atan", [Graph_FloatOnly]> { let summary = "aten.atan"; }
def Graph_SinhOp : Graph_UnaryOp<"sinh", [Graph_FloatOnly]> { let summary = "aten.sinh"; }
def Graph_CoshOp : Graph_UnaryOp<"cosh", [Graph_FloatOnly]> { let summary = "aten.cosh"; }
def Graph_AsinOp : Graph_UnaryOp<"asin", [Graph_FloatOnly]> { let summary = "aten.asin"; }
def Graph_AcosOp : Graph_UnaryOp<"acos", [Graph_FloatOnly]> { let summary = "aten.acos"; }
def Graph_AsinhOp : Graph_UnaryOp<"asinh", [Graph_FloatOnly]> { let summary = "aten.asinh"; }
def Graph_AcoshOp : Graph_UnaryOp<"acosh", [Graph_FloatOnly]> { let summary = "aten.acosh"; }
def Graph_AtanhOp : Graph_UnaryOp<"atanh", [Graph_FloatOnly]> { let summary = "aten.atanh"; }
def Graph_RoundOp : Graph_UnaryOp<"round", [Graph_FloatOnly]> {
  let summary = "aten.round: to the nearest integer, halves to even";
}
def Graph_CloneOp : Graph_UnaryOp<"clone"> {
  let summary = "aten.clone: a fresh copy of the input";
}
def Graph_ConvertOp : Graph_UnaryOp<"convert", [Graph_OwnElementTypes]> {
  let summary = "aten._to_copy with a dtype: element type conversion";
  let description = [{
    Float to integer truncates toward zero; anything to bool is `!= 0`;
    bool to a number is 0 or 1 (ATen semantics).
  }];
  let hasFolder = 1;
}
def Graph_GeluOp : Graph_ElementwiseOp<"gelu", [Graph_FloatOnly]> {
  let summary = "aten.gelu with approximate = none (erf) or tanh";
  let arguments = (ins Graph_Tensor:$input,
                       DefaultValuedAttr<Graph_GeluApproximationAttr,
                                         "::kiln::graph::GeluApproximation::None">:$approximate);
  let results = (outs Graph_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
}

//===----------------------------------------------------------------------===//
// Reductions and normalizations
//===----------------------------------------------------------------------===//

// An op with its own FusableOpInterface rule (GraphOps.cpp).
defvar Graph_OwnLeadingDim = DeclareOpInterfaceMethods<Graph_FusableOpInterface, ["getLeadingDim"]>;

class Graph_ReduceOp<string mnemonic> : Graph_Op<mnemonic, [Pure, Graph_OwnLeadingDim]> {
  let summary = "aten." # mnemonic # ".dim_IntList over `dims` (empty: all dims)";
  let arguments = (ins Graph_Tensor:$input, DenseI64ArrayAttr:$dims,
                       DefaultValuedAttr<BoolAttr, "false">:$keepdim);
  let results = (outs Graph_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The reduced dims, normalized: sorted, non-negative, all dims if empty.
    llvm::SmallVector<int64_t> getReducedDims() {
      return ::kiln::graph::reducedDims(getInput(), getDims());
    }
  }];
  let extraClassDefinition = [{
    ::mlir::LogicalResult $cppClass::verify() {
      return ::kiln::graph::verifyReduce(*this, getInput(), getDims(), getKeepdim());
    }
    ::kiln::graph::LeadingDim $cppClass::getLeadingDim() {
      return ::kiln::graph::reduceLeadingDim(*this, getReducedDims());
    }
  }];
}
def Graph_SumOp : Graph_ReduceOp<"sum">;
def Graph_MeanOp : Graph_ReduceOp<"mean">;
def Graph_AmaxOp : Graph_ReduceOp<"amax">;
def Graph_AminOp : Graph_ReduceOp<"amin">;
def Graph_ProdOp : Graph_ReduceOp<"prod">;
// Boolean reductions (the importer converts the input to i1 first).
def Graph_AllOp : Graph_ReduceOp<"all">;
def Graph_AnyOp : Graph_ReduceOp<"any">;

class Graph_ArgReduceOp<string mnemonic> : Graph_Op<mnemonic, [Pure, Graph_OwnLeadingDim]> {
  let summary = "aten." # mnemonic # " along `dim`: the index (i64) of the first extreme value";
  let description = [{
    NaN counts as the extreme value, as in ATen. The importer flattens the
    input for `dim=None` and refuses an empty reduced dim (ATen raises).
  }];
  let arguments = (ins Graph_Tensor:$input, I64Attr:$dim,
                       DefaultValuedAttr<BoolAttr, "false">:$keepdim);
  let results = (outs Graph_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let extraClassDefinition = [{
    ::mlir::LogicalResult $cppClass::verify() {
      return ::kiln::graph::verifyArgReduce(*this, getInput(), getDim(), getKeepdim());
    }
    ::kiln::graph::LeadingDim $cppClass::getLeadingDim() {
      return ::kiln::graph::reduceLeadingDim(*this, {(int64_t)getDim()});
    }
  }];
}
def Graph_ArgmaxOp : Graph_ArgReduceOp<"argmax">;
def Graph_ArgminOp : Graph_ArgReduceOp<"argmin">;

class Graph_SoftmaxLikeOp<string mnemonic> : Graph_Op<mnemonic, [Pure, Graph_OwnLeadingDim]> {
  let summary = "aten._" # mnemonic # " along `dim`";
  let arguments = (ins Graph_Tensor:$input, I64Attr:$dim);
  let results = (outs Graph_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// `dim` counted from the front (negative dims count from the back).
    int64_t getNormalizedDim() {
      int64_t dim = (int64_t)getDim();
      return dim < 0 ? dim + std::max<int64_t>(getInput().getType().getRank(), 1) : dim;
    }
  }];
}
def Graph_SoftmaxOp : Graph_SoftmaxLikeOp<"softmax">;
def Graph_LogSoftmaxOp : Graph_SoftmaxLikeOp<"log_softmax">;

def Graph_LayerNormOp : Graph_Op<"layer_norm", [Pure, Graph_OwnLeadingDim]> {
  let summary = "aten.native_layer_norm over the trailing `normalized_rank` dims";
  let description = [{
    Returns the normalized output, and the mean and reciprocal standard
    deviation, each shaped like the input with the normalized dims set to 1.
  }];
  let arguments = (ins Graph_Tensor:$input, Graph_Tensor:$weight,
                       Graph_Tensor:$bias, I64Attr:$normalized_rank,
                       F64Attr:$eps);
  let results = (outs Graph_Tensor:$result, Graph_Tensor:$mean,
                      Graph_Tensor:$rstd);
  let assemblyFormat = [{
    $input `,` $weight `,` $bias attr-dict `:` type($input) `,` type($weight)
    `,` type($bias) `->` type($result) `,` type($mean) `,` type($rstd)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Contractions
//===----------------------------------------------------------------------===//

def Graph_MatmulOp : Graph_Op<"matmul", [Pure, Graph_OwnLeadingDim]> {
  let summary = "aten.mm ([M,K]x[K,N]) and aten.bmm ([B,M,K]x[B,K,N])";
  let description = [{
    With `transpose_rhs`, the right operand is given transposed ([N,K] or
    [B,N,K]): `x @ w.t()` (every nn.Linear) reads `w` in place instead of
    materializing its transpose.
  }];
  let arguments = (ins Graph_Tensor:$lhs, Graph_Tensor:$rhs,
                       DefaultValuedAttr<BoolAttr, "false">:$transpose_rhs);
  let results = (outs Graph_Tensor:$result);
  let assemblyFormat =
      "$lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)";
  let hasVerifier = 1;
  let hasCanonicalizer = 1;
}

// Ops that run alone in their kernel: nothing joins them and they join
// nothing, because their workgroups split an iteration space of their own
// (kiln-form-kernels).
def Graph_OwnKernel : NativeOpTrait<"OwnKernel"> { let cppNamespace = "::kiln::graph"; }
// An OwnKernel op whose lowering applies a chain of elementwise consumers to
// its result in registers (an epilogue): they may join its kernel.
def Graph_TakesEpilogue : NativeOpTrait<"TakesEpilogue"> { let cppNamespace = "::kiln::graph"; }

def Graph_AttentionOp : Graph_Op<"attention", [Pure, Graph_OwnKernel, Graph_OwnLeadingDim]> {
  let summary = "scaled_dot_product_attention: softmax(q kᵀ · scale + mask) v, and logsumexp";
  let description = [{
    `q` is [B, H, L, E], `k` [B, Hkv, S, E], `v` [B, Hkv, S, Ev] and the
    result [B, H, L, Ev]. Grouped-query heads: query head h reads key and
    value head h / (H / Hkv). The optional additive `mask` is [Bm, Hm, Lm, Sm]
    with every dim either 1 (broadcast) or the full size. `is_causal` lets
    query i see keys 0..i (top-left aligned, as PyTorch). A row whose keys
    are all masked gives 0 and logsumexp 0, as ATen's CPU flash attention;
    with `masked_rows_nan` it gives NaN, as softmax does (attention that was
    written out as ops, kiln-recognize-attention).
    `logsumexp` [B, H, L] is the log of each row's softmax denominator (what
    the backward of ATen's CPU flash attention reads).

    Lowered to one fused kernel: online softmax over tiles of keys, so the
    [L, S] scores are never materialized. Its workgroups split B * H.
  }];
  let arguments = (ins Graph_Tensor:$q, Graph_Tensor:$k, Graph_Tensor:$v,
                       Optional<Graph_Tensor>:$mask, F64Attr:$scale,
                       DefaultValuedAttr<BoolAttr, "false">:$is_causal,
                       DefaultValuedAttr<BoolAttr, "false">:$masked_rows_nan);
  let results = (outs Graph_Tensor:$result, Graph_Tensor:$logsumexp);
  let assemblyFormat = [{
    $q `,` $k `,` $v (`mask` $mask^)? attr-dict `:` type($q) `,` type($k) `,` type($v)
    (`,` type($mask)^)? `->` type($result) `,` type($logsumexp)
  }];
  let hasVerifier = 1;
}

def Graph_Conv2dOp : Graph_Op<"conv2d", [Pure, Graph_OwnKernel, Graph_TakesEpilogue,
    Graph_OwnLeadingDim]> {
  let summary = "aten.convolution (2-D, grouped) of an already padded input";
  let description = [{
    `input` [N, C, H, W] (padding is a `kiln_graph.pad` before it), `weight`
    [O, C / groups, KH, KW] and the optional `bias` [O] give the result [N, O,
    OH, OW] with OH = (H - dilation_h * (KH - 1) - 1) / stride_h + 1 (and so
    for W). With `groups` G, output channel o reads the input channels of its
    group, [g * C / G, (g + 1) * C / G) for g = o / (O / G) (G = C: depthwise).
    Lowered to a direct convolution vectorized along output rows (no im2col
    buffer); its workgroups split the N * OH output rows. Elementwise ops
    that consume its result (batch norm, activation, residual) join its
    kernel and are applied in registers before the store (TakesEpilogue).
  }];
  let arguments = (ins Graph_Tensor:$input, Graph_Tensor:$weight, Optional<Graph_Tensor>:$bias,
                       DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$dilations,
                       DefaultValuedAttr<I64Attr, "1">:$groups);
  let results = (outs Graph_Tensor:$result);
  let assemblyFormat = [{
    $input `,` $weight (`bias` $bias^)? attr-dict `:` type($input) `,` type($weight)
    (`,` type($bias)^)? `->` type($result)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Shape and data movement
//===----------------------------------------------------------------------===//

def Graph_ReshapeOp : Graph_Op<"reshape", [Pure, Graph_OwnLeadingDim]> {
  let summary = "aten.view / _unsafe_view / reshape / squeeze / unsqueeze";
  let description = [{
    Row-major reinterpretation with the same number of elements. On a
    contiguous buffer it is free: between kernels it becomes a plan view.
  }];
  let arguments = (ins Graph_Tensor:$input);
  let results = (outs Graph_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Graph_PermuteOp : Graph_Op<"permute", [Pure, Graph_OwnLeadingDim]> {
  let summary = "aten.permute: result dim i is input dim dims[i]";
  let arguments = (ins Graph_Tensor:$input, DenseI64ArrayAttr:$dims);
  let results = (outs Graph_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Graph_ExpandOp : Graph_Op<"expand", [Pure, Graph_OwnLeadingDim]> {
  let summary = "aten.expand: broadcast size-1 (or missing leading) dims";
  let arguments = (ins Graph_Tensor:$input);
  let results = (outs Graph_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Graph_SliceOp : Graph_Op<"slice", [Pure, Graph_OwnLeadingDim]> {
  let summary = "aten.slice.Tensor along `dim` with start and step (result size from the type)";
  let arguments = (ins Graph_Tensor:$input, I64Attr:$dim, I64Attr:$start,
                       I64Attr:$step);
  let results = (outs Graph_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Graph_ConcatOp : Graph_Op<"concat", [Pure, Graph_OwnLeadingDim]> {
  let summary = "aten.cat along `dim`";
  let arguments = (ins Variadic<Graph_Tensor>:$inputs, I64Attr:$dim);
  let results = (outs Graph_Tensor:$result);
  let assemblyFormat = "$inputs attr-dict `:` type($inputs) `->` type($result)";
  let hasVerifier = 1;
}

def Graph_EmbeddingOp : Graph_Op<"embedding", [Pure, Graph_OwnLeadingDim]> {
  let summary = "aten.embedding: rows of `weight` gathered by int64 `indices`";
  let description = [{
    The importer guards it with a `kiln_graph.assert` that every index is in
    range, which raises ATen's IndexError at run time. The kernel itself
    clamps indices, so that it never reads out of bounds before the
    assertion fails (its result is then discarded).
  }];
  let arguments = (ins Graph_Tensor:$weight, Graph_Tensor:$indices);
  let results = (outs Graph_Tensor:$result);
  let assemblyFormat =
      "$weight `,` $indices attr-dict `:` type($weight) `,` type($indices) `->` type($result)";
  let hasVerifier = 1;
}

def Graph_IotaOp : Graph_Op<"iota", [Pure, Graph_OwnLeadingDim]> {
  let summary = "aten.arange: result[i] = start + i * step (1-D)";
  let description = [{
    `start` and `step` are f64 attributes for a floating-point result (the
    value is computed in f64 and rounded once, as ATen does) and i64 ones for
    an integer result.
  }];
  let arguments = (ins TypedAttrInterface:$start, TypedAttrInterface:$step);
  let results = (outs Graph_Tensor:$result);
  let assemblyFormat = "attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Graph_PadOp : Graph_Op<"pad", [Pure, Graph_OwnLeadingDim]> {
  let summary = "aten.constant_pad_nd: `low`/`high` elements per dim (negative crops)";
  let arguments = (ins Graph_Tensor:$input, DenseI64ArrayAttr:$low,
                       DenseI64ArrayAttr:$high, F64Attr:$value);
  let results = (outs Graph_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Graph_IndexOp : Graph_Op<"index", [Pure, Graph_OwnLeadingDim]> {
  let summary = "aten.index.Tensor with integer index tensors";
  let description = [{
    `indices[k]` (i64; together they broadcast, NumPy style, to a shape B)
    indexes input dim `indexed_dims[k]` (sorted). As in NumPy advanced indexing, the result is
    the input shape with the indexed dims replaced by B: in place of the
    first indexed dim when the indexed dims are adjacent, else in front.
    Negative indices count from the back. The importer guards the indices
    with a kiln_graph.assert; the kernel clamps them so that it never reads
    out of bounds.
  }];
  let arguments = (ins Graph_Tensor:$input, Variadic<Graph_Tensor>:$indices,
                       DenseI64ArrayAttr:$indexed_dims);
  let results = (outs Graph_Tensor:$result);
  let assemblyFormat = [{
    $input `[` $indices `]` attr-dict `:` type($input) `,` type($indices) `->` type($result)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// Result dim where B starts (0 unless the indexed dims are adjacent).
    int64_t getBroadcastStart();
    /// B, the broadcast shape of the indices.
    /// The index tensors' broadcast shape, symbolic dims as expressions.
    llvm::SmallVector<mlir::AffineExpr> getBroadcastShape();
  }];
}

def Graph_GatherOp : Graph_Op<"gather", [Pure, Graph_OwnLeadingDim]> {
  let summary = "aten.gather: result[..., j, ...] = input[..., index[..., j, ...], ...] along `dim`";
  let description = [{
    `index` (i64) has the result's shape and the input's rank; its other
    dims are at most the input's. The importer guards it with an assert
    (ATen accepts no negative index here); the kernel clamps.
  }];
  let arguments = (ins Graph_Tensor:$input, Graph_Tensor:$index, I64Attr:$dim);
  let results = (outs Graph_Tensor:$result);
  let assemblyFormat = [{
    $input `[` $index `]` attr-dict `:` type($input) `,` type($index) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Graph_CumsumOp : Graph_Op<"cumsum", [Pure, Graph_OwnLeadingDim]> {
  let summary = "aten.cumsum along `dim` (inclusive scan, in the result's type)";
  let description = [{
    A sequential scan over `dim` whose steps are vectorized over the other
    dims. Rows before `dim` are independent, so the op is parallel along dim
    0 unless it scans dim 0.
  }];
  let arguments = (ins Graph_Tensor:$input, I64Attr:$dim);
  let results = (outs Graph_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Graph_SortOp : Graph_Op<"sort", [Pure, Graph_OwnKernel, Graph_OwnLeadingDim]> {
  let summary = "aten.sort along `dim` (stable): the sorted values and their indices (i64)";
  let description = [{
    Ascending, or largest first with `descending`; NaN sorts as the largest
    value (last ascending, first descending), and equal values keep their
    order (a stable sort: every target sorts by (value, index), a total
    order, so any sorting network gives ATen's stable answer). Lowered to
    kiln_kernel.sort: a merge sort per row on a CPU, a bitonic network on a
    GPU, O(n log^2 n) compare-exchanges in With `k` (aten.topk), the results
    are the first k along `dim` only. Rows before `dim` are independent, so
    the op is parallel along dim 0 unless it sorts dim 0.
  }];
  let arguments = (ins Graph_Tensor:$input, I64Attr:$dim,
                       DefaultValuedAttr<BoolAttr, "false">:$descending,
                       OptionalAttr<I64Attr>:$k);
  let results = (outs Graph_Tensor:$values, Graph_Tensor:$indices);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($values) `,` type($indices)";
  let hasVerifier = 1;
}

def Graph_ScatterOp : Graph_Op<"scatter", [Pure, Graph_OwnLeadingDim]> {
  let summary = "aten.scatter / scatter_reduce: gather's inverse, into a copy of the input";
  let description = [{
    For each position p of `index` (i64, the input's rank, at most the
    input's size in the other dims), the result at p with dim `dim` replaced
    by index[p] becomes src[p] (`reduce` = "none", the last write winning) or
    combines with it ("sum", "prod", "amax", "amin"). Without `include_self`
    the positions written start from the reduction's identity instead of the
    input. `src` has the index's shape. A sequential loop (one workgroup);
    the importer guards the indices with an assert and the kernel clamps them.
    A float sum may add the updates of one element in any order (a GPU adds
    them by atomics, as ATen's CUDA scatter_add does) unless `ordered`: then
    they add in the index's order, the same bits every run (the importer sets
    it under `torch.use_deterministic_algorithms(True)`).
  }];
  let arguments = (ins Graph_Tensor:$input, Graph_Tensor:$index, Graph_Tensor:$src,
                       I64Attr:$dim,
                       DefaultValuedAttr<Graph_ScatterReductionAttr,
                                         "::kiln::graph::ScatterReduction::None">:$reduce,
                       DefaultValuedAttr<BoolAttr, "true">:$include_self,
                       UnitAttr:$ordered);
  let results = (outs Graph_Tensor:$result);
  let assemblyFormat = [{
    $input `[` $index `]` `,` $src attr-dict `:` type($input) `,` type($index) `,` type($src)
    `->` type($result)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Run-time checks
//===----------------------------------------------------------------------===//

def Graph_AssertOp : Graph_Op<"assert"> {
  let summary = "Fail the graph's run with `message` when `condition` is false";
  let description = [{
    How kernels report errors that ATen raises, such as an index out of range:
    the condition is computed by ordinary ops (and fused into kernels like
    them); the assert itself stays outside kernels and becomes a
    `kiln_plan.check` that the runtime evaluates after the launch that
    computes it. `kind` picks the exception: "index" raises IndexError,
    "runtime" RuntimeError. The op has side effects, so it is never erased.

    ```mlir
    kiln_graph.assert %in_range {kind = #kiln_graph.check_kind<index>,
        message = "index out of range in aten.embedding at model.py:12"} : tensor<i1>
    ```
  }];
  let arguments = (ins Graph_Tensor:$condition, StrAttr:$message,
                       DefaultValuedAttr<Graph_CheckKindAttr,
                                         "::kiln::graph::CheckKind::Runtime">:$kind);
  let assemblyFormat = "$condition attr-dict `:` type($condition)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Collectives
//===----------------------------------------------------------------------===//

def Graph_CollectiveOp : Graph_Op<"collective", [Graph_OwnKernel]> {
  let summary = "A collective across the ranks of a process group";
  let description = [{
    torch's functional collectives (`_c10d_functional.all_reduce`,
    `all_gather_into_tensor`, `reduce_scatter_tensor`, `all_to_all_single`
    with even splits) in a compiled distributed program. `group` is the
    process group's name and `group_size` its ranks; gathers and scatters
    work along dim 0. Fusion gives it a unit of its own (OwnKernel), which
    stays outside kernels and becomes a
    `kiln_plan.collective`, which the runtime runs between launches, in
    program order, through the caller's communicator. It has side effects
    (every rank must issue it), so it is never erased or merged.

    ```mlir
    %sum = kiln_graph.collective %partial {kind = #kiln_graph.collective<all_reduce>,
        reduce_op = #kiln_graph.reduce_op<sum>, group = "0", group_size = 2}
        : tensor<4x32xf32> -> tensor<4x32xf32>
    ```
  }];
  let arguments = (ins Graph_Tensor:$input, Graph_CollectiveKindAttr:$kind,
                       DefaultValuedAttr<Graph_ReduceOpAttr, "::kiln::graph::ReduceOp::Sum">:$reduce_op,
                       StrAttr:$group, I64Attr:$group_size);
  let results = (outs Graph_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

#endif // KILN_GRAPH_OPS
